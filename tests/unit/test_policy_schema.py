"""The SchedulingPolicy CRD and its schema as policy_scheduler.policy.schema applies it: the CRD's
shape, its agreement with the plugin registry, defaulting, and every kind of error message."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.framework.interface import Permit, PostBind, PreBind, PreEnqueue, Reserve
from policy_scheduler.plugins.registry import (
    EXTENSIONS,
    FILTER_ALIASES,
    FILTERS,
    POST_FILTERS,
    SCORER_ALIASES,
    SCORERS,
)
from policy_scheduler.policy import schema

REPO = Path(__file__).resolve().parents[2]
CRD: dict[str, Any] = yaml.safe_load((REPO / "crds" / "schedulingpolicy.yaml").read_text())
OPENAPI: dict[str, Any] = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
SPEC = OPENAPI["properties"]["spec"]["properties"]


def policy(spec: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "spread"},
        "spec": {} if spec is None else spec,
    }
    obj.update(top)
    return obj


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(error) for error in schema.validate(obj)]


# --- The CRD ------------------------------------------------------------------------------------


def test_the_schema_is_read_from_the_checkouts_crd() -> None:
    assert schema.crd_path() == REPO / "crds" / "schedulingpolicy.yaml"
    assert schema.openapi_schema() == OPENAPI


def test_crd_names_and_version() -> None:
    spec = CRD["spec"]
    assert CRD["metadata"]["name"] == "schedulingpolicies.policy-scheduler.dev"
    assert (spec["group"], spec["scope"]) == (schema.GROUP, "Cluster")
    assert spec["names"] == {
        "kind": schema.KIND,
        "listKind": "SchedulingPolicyList",
        "plural": "schedulingpolicies",
        "singular": "schedulingpolicy",
        "shortNames": ["spol"],
        "categories": ["scheduling"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (schema.VERSION, True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns() -> None:
    columns = CRD["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"]) for c in columns] == [
        ("Scheduler", ".status.schedulerName"),
        ("Mode", ".spec.mode"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Scheduled", ".status.scheduled"),
        ("Unschedulable", ".status.unschedulable"),
        ("Last-Node", ".status.lastDecision.node"),
        ("Age", ".metadata.creationTimestamp"),
    ]


def _undescribed(node: dict[str, Any], path: str) -> list[str]:
    missing = [] if node.get("description") else [path or "(root)"]
    for key, sub in node.get("properties", {}).items():
        missing += _undescribed(sub, f"{path}.{key}")
    if "items" in node:
        missing += _undescribed(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        missing += _undescribed(node["additionalProperties"], f"{path}{{}}")
    return missing


def test_every_field_is_described_for_kubectl_explain() -> None:
    # The API server forbids anything but the type for metadata; explain describes ObjectMeta.
    assert _undescribed(OPENAPI, "") == [".metadata"]


def test_every_plugin_args_are_documented() -> None:
    predicate_args = SPEC["predicates"]["items"]["properties"]["args"]["description"]
    priority_args = SPEC["priorities"]["items"]["properties"]["args"]["description"]
    for name in ("NodeResourcesFit", "NodeAffinity", "PodTopologySpread", "NodeLabel", "Random"):
        assert f"{name}: {{" in predicate_args
    for name in (
        "RequestedToCapacityRatio",
        "BalancedAllocation",
        "NodeAffinity",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeLabelPreference",
    ):
        assert f"{name}: {{" in priority_args
    assert "LeastAllocated, MostAllocated: {" in priority_args


@pytest.mark.parametrize(
    ("field", "factories", "aliases"),
    [("predicates", FILTERS, FILTER_ALIASES), ("priorities", SCORERS, SCORER_ALIASES)],
    ids=["predicates", "priorities"],
)
def test_plugin_names_and_legacy_pairs_are_the_registrys(
    field: str, factories: dict[str, Any], aliases: dict[str, str]
) -> None:
    enum = SPEC[field]["items"]["properties"]["name"]["enum"]
    assert sorted(enum) == sorted([*factories, *aliases])
    [legacy_rule] = [
        r["rule"] for r in SPEC[field]["x-kubernetes-validations"] if "pair" in r["rule"]
    ]
    assert dict(re.findall(r"\['(\w+)', '(\w+)'\]", legacy_rule)) == aliases
    # The CEL rule forbids each (legacy, current) pair; that means "each plugin once" only while
    # no two legacy names stand for the same plugin.
    assert len(set(aliases.values())) == len(aliases)


def test_post_filter_names_are_the_registrys_and_each_is_listed_once() -> None:
    post_filters = SPEC["postFilters"]
    assert post_filters["items"]["properties"]["name"]["enum"] == sorted(POST_FILTERS)
    assert post_filters["maxItems"] >= len(POST_FILTERS)
    assert "DefaultPreemption: {" in post_filters["items"]["properties"]["args"]["description"]
    [rule] = post_filters["x-kubernetes-validations"]
    assert rule["rule"] == "self.all(p, self.exists_one(q, q.name == p.name))"


POINTS = {
    "preEnqueue": PreEnqueue,
    "reserve": Reserve,
    "permit": Permit,
    "preBind": PreBind,
    "postBind": PostBind,
}


@pytest.mark.parametrize(("field", "point"), POINTS.items(), ids=POINTS.keys())
def test_each_extension_point_lists_the_registrys_plugins_that_implement_it(
    field: str, point: type
) -> None:
    points = SPEC["plugins"]["properties"]
    assert list(points) == list(EXTENSIONS) == list(POINTS)
    names = sorted({name for plugins in EXTENSIONS.values() for name in plugins})
    assert points[field]["items"]["properties"]["name"]["enum"] == names
    unique, implements = points[field]["x-kubernetes-validations"]
    assert unique["rule"] == "self.all(p, self.exists_one(q, q.name == p.name))"
    assert re.findall(r"'(\w+)'", implements["rule"]) == list(EXTENSIONS[field])
    args = points[field]["items"]["properties"]["args"]["description"]
    for name, factory in EXTENSIONS[field].items():
        assert isinstance(factory({}, "args"), point)
        assert f"{name}: {{" in args


def test_a_decisions_preemption_has_room_for_the_victims_the_status_keeps() -> None:
    from policy_scheduler.scheduling.status import VICTIMS_LIMIT  # noqa: PLC0415

    decision = OPENAPI["properties"]["status"]["properties"]["decisions"]["items"]
    preemption = decision["properties"]["preemption"]["properties"]
    assert set(preemption) == {"node", "victims", "victimCount", "pdbViolations", "why"}
    assert preemption["victims"]["maxItems"] == VICTIMS_LIMIT


# --- Conversion to JSON Schema -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("openapi", "expected"),
    [
        pytest.param(
            {"type": "string", "nullable": True},
            {"type": ["string", "null"], "nullable": True},
            id="nullable",
        ),
        pytest.param(
            {"type": "string", "enum": ["A"], "nullable": True},
            {"type": ["string", "null"], "enum": ["A", None], "nullable": True},
            id="nullable-enum",
        ),
        pytest.param(
            {"x-kubernetes-int-or-string": True},
            {"x-kubernetes-int-or-string": True, "type": ["integer", "string"]},
            id="int-or-string",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "additionalProperties": False,
            },
            id="unknown-fields-rejected",
        ),
        pytest.param(
            {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"a": {"type": "integer"}},
            },
            {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"a": {"type": "integer"}},
            },
            id="preserve-unknown-fields",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "integer", "nullable": True}},
            {
                "type": "object",
                "additionalProperties": {"type": ["integer", "null"], "nullable": True},
            },
            id="map-values-converted",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "object", "properties": {}}},
            {
                "type": "array",
                "items": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            id="items-converted",
        ),
    ],
)
def test_to_json_schema(openapi: dict[str, Any], expected: dict[str, Any]) -> None:
    assert schema.to_json_schema(openapi) == expected


def test_a_cel_rule_that_does_not_compile_is_refused() -> None:
    rule = {"rule": "self.size( < 3", "message": "too long"}
    with pytest.raises(
        ValueError, match=r"CEL rule 'self.size\( < 3' of the CRD: compilation failed"
    ):
        schema.to_json_schema({"type": "array", "x-kubernetes-validations": [rule]})


RULES = {
    "message": (
        {"rule": "self.size() < 2", "message": " too many "},
        [1, 2],
        "Invalid value: too many",
    ),
    "no-message": (
        {"rule": "self.size() < 2"},
        [1, 2],
        "Invalid value: failed rule: self.size() < 2",
    ),
    "message-expression": (
        {
            "rule": "self.size() < 2",
            "message": "m",
            "messageExpression": "'has ' + string(self.size())",
        },
        [1, 2],
        "Invalid value: has 2",
    ),
    "message-expression-failing": (
        {"rule": "self.size() < 2", "message": "m", "messageExpression": "self[5]"},
        [1, 2],
        "Invalid value: m",
    ),
    "scalar-value-shown": (
        {"rule": "self != 'x'", "message": "not x"},
        "x",
        'Invalid value: "x": not x',
    ),
    "reason-forbidden": (
        {"rule": "self.size() < 2", "message": "no", "reason": "FieldValueForbidden"},
        [1, 2],
        "Forbidden: no",
    ),
    "reason-required": (
        {"rule": "self.size() < 2", "message": "no", "reason": "FieldValueRequired"},
        [1, 2],
        "Required value: no",
    ),
    "runtime-error": (
        {"rule": "self[3] == 1", "message": "m"},
        [1, 2],
        "Invalid value: index out of range evaluating rule: self[3] == 1",
    ),
}


@pytest.mark.parametrize(("rule", "value", "expected"), RULES.values(), ids=RULES.keys())
def test_cel_rules_are_reported_in_the_api_servers_words(
    rule: dict[str, str], value: Any, expected: str
) -> None:
    validator = schema._KubernetesValidator(
        schema.to_json_schema({"x-kubernetes-validations": [rule]})
    )
    assert [schema._message(e) for e in validator.iter_errors(value)] == [expected]


# --- Defaulting ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {},
            {"mode": "Enforce", "percentageOfNodesToScore": 0, "history": 20},
            id="empty-spec",
        ),
        pytest.param(
            {"mode": "DryRun", "percentageOfNodesToScore": 50, "history": 0},
            {"mode": "DryRun", "percentageOfNodesToScore": 50, "history": 0},
            id="explicit-values-kept",
        ),
        pytest.param(
            {"priorities": [{"name": "LeastAllocated"}, {"name": "ImageLocality", "weight": 3}]},
            {
                "mode": "Enforce",
                "percentageOfNodesToScore": 0,
                "history": 20,
                "priorities": [
                    {"name": "LeastAllocated", "weight": 1},
                    {"name": "ImageLocality", "weight": 3},
                ],
            },
            id="priority-weight-in-every-item",
        ),
        pytest.param(
            {"mode": None, "history": None, "predicates": [{"name": "NodeName", "args": None}]},
            {
                "mode": "Enforce",
                "percentageOfNodesToScore": 0,
                "history": 20,
                "predicates": [{"name": "NodeName"}],
            },
            id="null-dropped-then-defaulted",
        ),
    ],
)
def test_defaults(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    assert schema.apply_defaults(policy(spec))["spec"] == expected


def test_defaulting_keeps_null_where_nullable_and_leaves_the_input_alone() -> None:
    obj = policy(status={"decisions": [{"pod": "ns/p", "node": None, "score": None}]})
    defaulted = schema.apply_defaults(obj)
    assert defaulted["status"]["decisions"] == [{"pod": "ns/p", "node": None, "score": None}]
    assert obj["spec"] == {}
    assert schema.validate(obj) == []


# --- Validation ------------------------------------------------------------------------------

PREDICATES = ", ".join(f'"{n}"' for n in SPEC["predicates"]["items"]["properties"]["name"]["enum"])
DNS_SUBDOMAIN = (
    "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending "
    "with a letter or digit"
)
READY = {
    "type": "Ready",
    "status": "True",
    "lastTransitionTime": "2025-01-01T00:00:00Z",
    "reason": "Serving",
    "message": "",
}

SELECTOR_VALUES = (
    "spec.nodeSelector.matchExpressions[0].values: Invalid value: values must be non-empty for "
    "operators In and NotIn, and empty for Exists and DoesNotExist"
)

VALIDATION_CASES = [
    pytest.param(
        policy(
            {
                "schedulerName": "spread.example.com",
                "mode": "DryRun",
                "nodeSelector": {
                    "matchLabels": {"pool": "batch"},
                    "matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["a", "b"]},
                        {"key": "gpu", "operator": "DoesNotExist"},
                    ],
                },
                "predicates": [
                    {"name": "NodeResourcesFit"},
                    {"name": "NodeAffinity"},
                    {"name": "NodeLabel", "args": {"present": ["disk=ssd"]}},
                ],
                "priorities": [
                    {"name": "NodeAffinity", "weight": 100},
                    {"name": "LeastRequestedPriority"},
                ],
            }
        ),
        [],
        id="valid",
    ),
    pytest.param(
        policy({"priorities": [{"name": "LeastAllocated", "weight": 0}]}),
        ["spec.priorities[0].weight: must be between 1 and 100"],
        id="weight-0",
    ),
    pytest.param(
        policy({"priorities": [{"name": "LeastAllocated", "weight": 101}]}),
        ["spec.priorities[0].weight: must be between 1 and 100"],
        id="weight-101",
    ),
    pytest.param(
        policy({"priorities": [{"name": "LeastAllocated", "weight": "2"}]}),
        ["spec.priorities[0].weight: must be an integer"],
        id="weight-string",
    ),
    pytest.param(
        policy({"history": -1}), ["spec.history: must be between 0 and 100"], id="history-negative"
    ),
    pytest.param(
        policy({"percentageOfNodesToScore": 101}),
        ["spec.percentageOfNodesToScore: must be between 0 and 100"],
        id="percentage-101",
    ),
    pytest.param(
        policy({"mode": "dryrun"}),
        [
            'spec.mode: unsupported value "dryrun" (did you mean "DryRun"?); '
            'supported values: "Enforce", "DryRun"'
        ],
        id="mode-typo",
    ),
    pytest.param(
        policy({"predicates": [{"name": "LeastAllocated"}]}),
        [
            'spec.predicates[0].name: unsupported value "LeastAllocated"; '
            f"supported values: {PREDICATES}"
        ],
        id="priority-name-as-predicate",
    ),
    pytest.param(
        policy({"predicates": [{"name": "NodeResourceFit"}]}),
        [
            'spec.predicates[0].name: unsupported value "NodeResourceFit" (did you mean '
            f'"NodeResourcesFit"?); supported values: {PREDICATES}'
        ],
        id="unknown-predicate-near-miss",
    ),
    pytest.param(
        policy({"predicates": [{"args": {}}]}),
        ["spec.predicates[0].name: required"],
        id="name-missing",
    ),
    pytest.param(
        policy({"predicates": [{"name": "NodeLabel", "args": ["disk"]}]}),
        ["spec.predicates[0].args: must be an object"],
        id="args-not-object",
    ),
    pytest.param(
        policy({"predicates": "NodeName"}),
        ["spec.predicates: must be a list"],
        id="predicates-not-list",
    ),
    pytest.param(policy({"priorites": []}), ["spec.priorites: unknown field"], id="unknown-field"),
    pytest.param(
        {"apiVersion": "policy-scheduler.dev/v1alpha1", "kind": "SchedulingPolicy", "specs": {}},
        ["spec: required", "specs: unknown field"],
        id="spec-misspelt",
    ),
    pytest.param(
        policy({"schedulerName": "Spread_1"}),
        [f'spec.schedulerName: invalid value "Spread_1": {DNS_SUBDOMAIN}'],
        id="scheduler-name-not-dns",
    ),
    pytest.param(
        policy({"schedulerName": "a" * 254}),
        ["spec.schedulerName: must be at most 253 characters"],
        id="scheduler-name-too-long",
    ),
    pytest.param(
        policy(
            {"predicates": [{"name": "NodeLabel"}, {"name": "NodeName"}, {"name": "NodeLabel"}]}
        ),
        ["spec.predicates: Invalid value: each predicate may be listed only once"],
        id="duplicate-predicate",
    ),
    pytest.param(
        policy({"predicates": [{"name": "NodeResourcesFit"}, {"name": "PodFitsResources"}]}),
        [
            "spec.predicates: Invalid value: a legacy name and its current name are the same "
            "predicate; list it only once"
        ],
        id="legacy-after-current",
    ),
    pytest.param(
        policy({"predicates": [{"name": "PodFitsResources"}, {"name": "NodeResourcesFit"}]}),
        [
            "spec.predicates: Invalid value: a legacy name and its current name are the same "
            "predicate; list it only once"
        ],
        id="current-after-legacy",
    ),
    pytest.param(
        policy(
            {
                "predicates": [
                    {"name": "PodFitsResources"},
                    {"name": "NodeResourcesFit"},
                    {"name": "NodeResourcesFit"},
                ]
            }
        ),
        [
            "spec.predicates: Invalid value: each predicate may be listed only once",
            "spec.predicates: Invalid value: a legacy name and its current name are the same "
            "predicate; list it only once",
        ],
        id="legacy-and-exact-duplicates",
    ),
    pytest.param(
        policy({"priorities": [{"name": "NodeLabelPriority"}, {"name": "NodeLabelPreference"}]}),
        [
            "spec.priorities: Invalid value: a legacy name and its current name are the same "
            "priority; list it only once"
        ],
        id="legacy-priority",
    ),
    pytest.param(
        policy(
            {
                "predicates": [{"name": "TaintToleration"}],
                "priorities": [{"name": "TaintToleration"}],
            }
        ),
        [],
        id="same-plugin-as-predicate-and-priority",
    ),
    pytest.param(
        policy({"plugins": {"permit": [{"name": "BindRateLimit", "args": {"qps": 1}}]}}),
        [],
        id="plugin-at-a-point-it-implements",
    ),
    pytest.param(
        policy({"plugins": {"reserve": [{"name": "BindRateLimit"}]}}),
        [
            "spec.plugins.reserve: Invalid value: each plugin listed under reserve must implement "
            "Reserve"
        ],
        id="plugin-at-a-point-it-does-not-implement",
    ),
    pytest.param(
        policy({"plugins": {"permit": [{"name": "VolumeBinding"}]}}),
        [
            'spec.plugins.permit[0].name: unsupported value "VolumeBinding"; supported values: '
            '"BindRateLimit", "GangScheduling"'
        ],
        id="plugin-unknown-at-spec-plugins",
    ),
    pytest.param(
        policy({"plugins": {"permit": [{"name": "BindRateLimit"}, {"name": "BindRateLimit"}]}}),
        [
            "spec.plugins.permit: Invalid value: each plugin may be listed only once at an "
            "extension point"
        ],
        id="plugin-twice-at-a-point",
    ),
    pytest.param(
        policy({"plugins": {"bind": [{"name": "DefaultBinder"}], "permit": [{}]}}),
        ["spec.plugins.bind: unknown field", "spec.plugins.permit[0].name: required"],
        id="plugins-unknown-point-and-nameless-entry",
    ),
    pytest.param(
        policy({"nodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}),
        [SELECTOR_VALUES],
        id="selector-in-without-values",
    ),
    pytest.param(
        policy(
            {
                "nodeSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]
                }
            }
        ),
        [SELECTOR_VALUES],
        id="selector-exists-with-values",
    ),
    pytest.param(
        policy({"nodeSelector": {"matchExpressions": [{"key": "zone", "operator": "Gt"}]}}),
        [
            'spec.nodeSelector.matchExpressions[0].operator: unsupported value "Gt"; '
            'supported values: "In", "NotIn", "Exists", "DoesNotExist"'
        ],
        id="selector-operator",
    ),
    pytest.param(
        policy({"nodeSelector": {"matchExpressions": [{"key": "", "operator": "Exists"}]}}),
        ["spec.nodeSelector.matchExpressions[0].key: must not be empty"],
        id="selector-key-empty",
    ),
    pytest.param(
        policy({"nodeSelector": {"matchLabels": {"topology.kubernetes.io/zone": 1}}}),
        ["spec.nodeSelector.matchLabels[topology.kubernetes.io/zone]: must be a string"],
        id="selector-label-value-not-string",
    ),
    pytest.param(
        policy(status={"conditions": [READY, READY]}),
        ['status.conditions[1]: duplicate entry with type "Ready"'],
        id="status-condition-twice",
    ),
    pytest.param(
        policy(status={"conditions": [{**READY, "status": "Yes"}]}),
        [
            'status.conditions[0].status: unsupported value "Yes"; '
            'supported values: "True", "False", "Unknown"'
        ],
        id="status-condition-status",
    ),
    pytest.param(
        policy(status={"decisions": [{"reasons": {"Insufficient cpu": "3"}}]}),
        ["status.decisions[0].reasons[Insufficient cpu]: must be an integer"],
        id="status-reason-count",
    ),
    pytest.param(
        policy(status={"decisions": [{"score": "high"}]}),
        ["status.decisions[0].score: must be a number or null"],
        id="status-score-nullable-number",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), VALIDATION_CASES)
def test_validate(obj: dict[str, Any], expected: list[str]) -> None:
    assert errors(obj) == expected


def test_all_errors_at_once_in_field_order() -> None:
    obj = policy(
        {
            "mode": "Shadow",
            "history": 101,
            "predicates": [{"name": "NodeLabel"}, {"name": "NodeLabel"}],
            "priorities": [{"name": "Random", "weight": 0}, {"name": "Random", "weight": 1.5}],
            "extra": True,
        }
    )
    assert errors(obj) == [
        "spec.extra: unknown field",
        "spec.history: must be between 0 and 100",
        'spec.mode: unsupported value "Shadow"; supported values: "Enforce", "DryRun"',
        "spec.priorities[0].weight: must be between 1 and 100",
        "spec.priorities[1].weight: must be an integer",
    ]
    # As the API server, the CEL rules are checked once no blocking error (here the unsupported
    # mode, the weight of the wrong type) is left.
    obj["spec"] = {
        **obj["spec"],
        "mode": "Enforce",
        "history": 1,
        "priorities": [{"name": "Random"}] * 2,
    }
    del obj["spec"]["extra"]
    assert errors(obj) == [
        "spec.predicates: Invalid value: each predicate may be listed only once",
        "spec.priorities: Invalid value: each priority may be listed only once",
    ]


def test_list_indexes_are_ordered_as_numbers() -> None:
    priorities = [{"name": name, "weight": 0} for name in list(SCORERS)[:11]]
    assert [e.path for e in schema.validate(policy({"priorities": priorities}))] == [
        f"spec.priorities[{i}].weight" for i in range(11)
    ]


def test_too_many_predicates() -> None:
    predicates = [{"name": "Random"}] * 33
    assert "spec.predicates: must have at most 32 items" in errors(
        policy({"predicates": predicates})
    )
