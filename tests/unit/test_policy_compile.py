"""Compiling SchedulingPolicies (schema, then plugin args and node pool, all errors at once) and
reading them from YAML files."""

from __future__ import annotations

import copy
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from policy_scheduler.framework.args import Args, FieldError
from policy_scheduler.framework.interface import Permit, PreEnqueue
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.bind_rate_limit import BindRateLimit
from policy_scheduler.plugins.registry import EXTENSIONS, FILTER_ALIASES, SCORER_ALIASES
from policy_scheduler.policy.compiler import (
    CompiledPolicy,
    Mode,
    PolicyError,
    compile_policy,
    enabled_plugins,
    extension_points,
)
from policy_scheduler.policy.load import PolicyFileError, read_policy_file
from policy_scheduler.runtime.framework import ExtensionPoints

# The policy of ARCHITECTURE.md.
SPREAD: dict[str, Any] = {
    "apiVersion": "policy-scheduler.dev/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "spread", "generation": 3},
    "spec": {
        "nodeSelector": {"matchLabels": {"pool": "general"}},
        "predicates": [
            {"name": "NodeResourcesFit"},
            {"name": "TaintToleration"},
            {"name": "NodeLabel", "args": {"present": ["disk=ssd"], "absent": ["maintenance"]}},
        ],
        "priorities": [
            {
                "name": "LeastAllocated",
                "weight": 2,
                "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory"}]},
            },
            {
                "name": "NodeLabelPreference",
                "weight": 5,
                "args": {"label": "topology.kubernetes.io/zone", "values": ["zone-a"]},
            },
        ],
    },
}


def spread(**spec: Any) -> dict[str, Any]:
    """SPREAD with some spec fields replaced (None removes one)."""
    obj = copy.deepcopy(SPREAD)
    obj["spec"].update(spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    return obj


def compile_errors(obj: dict[str, Any]) -> list[str]:
    with pytest.raises(PolicyError) as raised:
        compile_policy(obj)
    assert str(raised.value) == "\n".join(map(str, raised.value.errors))
    return [str(error) for error in raised.value.errors]


# --- What a policy compiles to ---------------------------------------------------------------


def test_compiles_the_architecture_example() -> None:
    compiled = compile_policy(SPREAD)
    assert isinstance(compiled, CompiledPolicy)
    assert (compiled.name, compiled.scheduler_name, compiled.mode) == (
        "spread",
        "spread",
        "Enforce",
    )
    assert (compiled.history, compiled.generation, compiled.aliases) == (20, 3, ())
    pipeline = compiled.pipeline
    assert [f.name for f in pipeline.filters] == [
        "NodeResourcesFit",
        "TaintToleration",
        "NodeLabel",
    ]
    assert [(s.scorer.name, s.weight) for s in pipeline.scorers] == [
        ("LeastAllocated", 2),
        ("NodeLabelPreference", 5),
    ]
    assert pipeline.percentage_of_nodes_to_score == 0
    assert pipeline.node_pool is not None
    assert pipeline.node_pool.matches({"pool": "general"})
    assert not pipeline.node_pool.matches({"pool": "batch"})


def test_explicit_settings() -> None:
    compiled = compile_policy(
        spread(schedulerName="spread-v2", mode="DryRun", history=0, percentageOfNodesToScore=40)
    )
    assert (compiled.scheduler_name, compiled.mode, compiled.history) == (
        "spread-v2",
        Mode.DRY_RUN,
        0,
    )
    assert compiled.pipeline.percentage_of_nodes_to_score == 40


def test_an_empty_policy_uses_every_node() -> None:
    compiled = compile_policy(spread(nodeSelector=None, predicates=None, priorities=None))
    assert (compiled.pipeline.filters, compiled.pipeline.scorers) == ([], [])
    assert compiled.pipeline.node_pool is None


def test_a_read_only_object_from_the_api_is_compiled_and_left_alone() -> None:
    obj = copy.deepcopy(SPREAD)
    compiled = compile_policy(MappingProxyType(obj))
    assert compiled.generation == 3
    assert obj == SPREAD


REQUIRED_ARGS: dict[str, dict[str, Any]] = {
    "NodeLabel": {"present": ["disk"]},
    "NodeLabelPreference": {"label": "zone"},
    "RequestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}]},
}
"""The args without which these plugins do not compile."""


@pytest.mark.parametrize(
    ("field", "legacy", "current"),
    [
        *(pytest.param("predicates", k, v, id=f"predicate-{k}") for k, v in FILTER_ALIASES.items()),
        *(pytest.param("priorities", k, v, id=f"priority-{k}") for k, v in SCORER_ALIASES.items()),
    ],
)
def test_legacy_names_compile_to_the_current_plugin(field: str, legacy: str, current: str) -> None:
    args = REQUIRED_ARGS.get(current, {})
    compiled = compile_policy(spread(**{field: [{"name": legacy, "args": args}]}))
    plugins = (
        compiled.pipeline.filters
        if field == "predicates"
        else [s.scorer for s in compiled.pipeline.scorers]
    )
    assert [p.name for p in plugins] == [current]
    assert compiled.aliases == ((legacy, current),)


def test_aliases_are_listed_once_in_order_of_use() -> None:
    compiled = compile_policy(
        spread(
            predicates=[{"name": "PodToleratesNodeTaints"}, {"name": "PodFitsResources"}],
            priorities=[{"name": "TaintTolerationPriority"}, {"name": "LeastAllocated"}],
        )
    )
    assert compiled.aliases == (
        ("PodToleratesNodeTaints", "TaintToleration"),
        ("PodFitsResources", "NodeResourcesFit"),
        ("TaintTolerationPriority", "TaintToleration"),
    )


# --- Errors ----------------------------------------------------------------------------------

NAME_RULE = (
    "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
)

UNKNOWN_PREDICATE = (
    'spec.predicates[0].name: unsupported value "DiskPressure"; supported values: '
    '"NodeUnschedulable", "NodeName", "NodeResourcesFit", "NodePorts", "NodeAffinity", '
    '"TaintToleration", "PodTopologySpread", "InterPodAffinity", "NodeLabel", "Random", '
    '"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources", '
    '"NodeDeclaredFeatures", "CheckNodeUnschedulable", "HostName", "PodFitsResources", '
    '"PodFitsHostPorts", '
    '"MatchNodeSelector", "PodToleratesNodeTaints", "EvenPodsSpread", "MatchInterPodAffinity", '
    '"CheckNodeLabelPresence", "NoDiskConflict", "NoVolumeZoneConflict", "CheckVolumeBinding", '
    '"MaxCSIVolumeCountPred"'
)

ERROR_CASES = [
    pytest.param(
        spread(predicates=[{"name": "DiskPressure"}]), [UNKNOWN_PREDICATE], id="unknown-plugin-name"
    ),
    pytest.param(
        spread(priorities=[{"name": "LeastAllocated", "weight": 0}]),
        ["spec.priorities[0].weight: must be between 1 and 100"],
        id="weight-0",
    ),
    pytest.param(
        spread(predicates=[{"name": "NodeLabel", "args": {"present": "disk", "absnt": []}}]),
        [
            "spec.predicates[0].args.absnt: unknown field; expected one of ['absent', 'present']",
            'spec.predicates[0].args.present: must be a list of "key" or "key=value" strings',
        ],
        id="predicate-args",
    ),
    pytest.param(
        spread(priorities=[{"name": "NodeLabelPriority", "args": {"values": ["a"]}}]),
        ["spec.priorities[0].args.label: required: the label key to prefer nodes by"],
        id="priority-args-under-legacy-name",
    ),
    pytest.param(
        spread(predicates=[{"name": "TaintToleration", "args": {"strict": True}}]),
        ["spec.predicates[0].args: TaintToleration takes no args, got ['strict']"],
        id="args-for-plugin-without-args",
    ),
    pytest.param(
        spread(predicates=[{"name": "DiskPressure", "args": {"anything": 1}}]),
        [UNKNOWN_PREDICATE],
        id="args-of-unknown-plugin-not-checked",
    ),
    pytest.param(
        spread(nodeSelector={"matchLabels": {"Pool!": "a b"}}),
        [
            "spec.nodeSelector.matchLabels: invalid label key 'Pool!': the name must be at most "
            f"63 {NAME_RULE}",
            "spec.nodeSelector.matchLabels: invalid label value 'a b': must be at most "
            f"63 {NAME_RULE}",
        ],
        id="node-selector-label-syntax",
    ),
    pytest.param(
        spread(
            nodeSelector={
                "matchExpressions": [
                    {"key": "example.com/", "operator": "In", "values": ["ok", "-bad"]}
                ]
            }
        ),
        [
            "spec.nodeSelector.matchExpressions[0].key: invalid label key 'example.com/': the name "
            "must not be empty",
            "spec.nodeSelector.matchExpressions[0].values[1]: invalid label value '-bad': "
            f"must be at most 63 {NAME_RULE}",
        ],
        id="node-selector-expression-syntax",
    ),
    pytest.param(
        spread(nodeSelector={"matchExpressions": [{"key": "Bad Key", "operator": "In"}]}),
        [
            "spec.nodeSelector.matchExpressions[0].values: Invalid value: values must be non-empty "
            "for operators In and NotIn, and empty for Exists and DoesNotExist"
        ],
        id="node-selector-schema-error-reported-once",
    ),
    pytest.param(
        spread(
            predicates=[
                {"name": "NodeLabel", "args": {"present": ["disk"]}},
                {"name": "CheckNodeLabelPresence", "args": {"absent": ["gpu"]}},
            ]
        ),
        [
            "spec.predicates: Invalid value: a legacy name and its current name are the same "
            "predicate; list it only once"
        ],
        id="duplicate-via-legacy-name",
    ),
    pytest.param(
        {**spread(), "metadata": {}},
        ["metadata.name: required"],
        id="name-missing",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), ERROR_CASES)
def test_errors(obj: dict[str, Any], expected: list[str]) -> None:
    assert compile_errors(obj) == expected


def test_every_error_of_a_policy_at_once() -> None:
    obj = spread(
        mode="Shadow",
        nodeSelector={"matchLabels": {"zone": "a/b"}},
        predicates=[
            {"name": "Random", "args": {"probability": 2}},
            {"name": "NodeLabel", "args": {"present": ["disk=ssd"]}},
            {"name": "NodeLabel", "args": {"absent": ["gpu"]}},
        ],
        priorities=[
            {
                "name": "LeastAllocated",
                "weight": 0,
                "args": {"resources": [{"name": "cpu", "weight": 0}]},
            },
            {"name": "RequestedToCapacityRatio", "args": {}},
        ],
    )
    del obj["metadata"]["name"]
    assert compile_errors(obj) == [
        "metadata.name: required",
        'spec.mode: unsupported value "Shadow"; supported values: "Enforce", "DryRun"',
        "spec.priorities[0].weight: must be between 1 and 100",
        f"spec.nodeSelector.matchLabels: invalid label value 'a/b': must be at most 63 {NAME_RULE}",
        "spec.predicates[0].args.probability: must be between 0 and 1",
        "spec.priorities[0].args.resources[0].weight: must be between 1 and 100",
        "spec.priorities[1].args.shape: at least one point {utilization, score} is required",
    ]


# --- Files -----------------------------------------------------------------------------------

POLICY_YAML = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: %s}
spec: {}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_reads_every_document_and_list(tmp_path: Path) -> None:
    item = "- {apiVersion: policy-scheduler.dev/v1alpha1, kind: SchedulingPolicy, metadata: %s}"
    text = "\n".join(
        [
            "---",
            POLICY_YAML % "a",
            "---",
            "apiVersion: v1",
            "kind: List",
            "items:",
            item % "{name: b}",
            item % "{name: c}",
            "---",
            "apiVersion: policy-scheduler.dev/v1alpha1",
            "kind: SchedulingPolicyList",
            "items:",
            item % "{name: d}",
            "---",
        ]
    )
    policies = read_policy_file(write(tmp_path, text))
    assert [p["metadata"]["name"] for p in policies] == ["a", "b", "c", "d"]
    assert compile_policy(policies[0]).name == "a"


NOT_A_POLICY = "expected a SchedulingPolicy (a mapping with apiVersion and kind), got "

FILE_ERROR_CASES = [
    pytest.param(
        "kind: SchedulingPolicy\n  spec: {}\n",
        ["{path}:2:7: not valid YAML: mapping values are not allowed here"],
        id="not-yaml",
    ),
    pytest.param(
        "just some text\n",
        ["{path}: document 1: " + NOT_A_POLICY + "a string"],
        id="plain-text",
    ),
    pytest.param(
        "- a\n- b\n",
        ["{path}: document 1: " + NOT_A_POLICY + "a list"],
        id="a-list",
    ),
    pytest.param("", ["{path}: holds no SchedulingPolicy"], id="empty-file"),
    pytest.param("---\n---\n", ["{path}: holds no SchedulingPolicy"], id="empty-documents"),
    pytest.param(
        POLICY_YAML % "a"
        + "---\napiVersion: v1\nkind: Pod\n---\n"
        + POLICY_YAML.replace("v1alpha1", "v1") % "b",
        [
            "{path}: document 2: kind is 'Pod', expected SchedulingPolicy",
            "{path}: document 3: apiVersion is 'policy-scheduler.dev/v1', "
            "expected policy-scheduler.dev/v1alpha1",
        ],
        id="wrong-kind-and-version",
    ),
    pytest.param(
        "metadata: {name: a}\n",
        ["{path}: document 1: kind is missing, expected SchedulingPolicy"],
        id="kind-missing",
    ),
    pytest.param(
        "kind: SchedulingPolicy\n",
        ["{path}: document 1: apiVersion is missing, expected policy-scheduler.dev/v1alpha1"],
        id="api-version-missing",
    ),
    pytest.param(
        "kind: List\nitems: {}\n",
        ["{path}: document 1: items must be a list of SchedulingPolicy objects"],
        id="list-without-items",
    ),
    pytest.param(
        "kind: List\nitems: [{kind: Node}]\n",
        ["{path}: document 1, items[0]: kind is 'Node', expected SchedulingPolicy"],
        id="list-of-other-kind",
    ),
]


@pytest.mark.parametrize(("text", "expected"), FILE_ERROR_CASES)
def test_file_errors(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyFileError) as raised:
        read_policy_file(path)
    assert list(raised.value.problems) == [line.format(path=path) for line in expected]
    assert str(raised.value) == "\n".join(raised.value.problems)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"\xff\xfe\x00\x01garbage")
    with pytest.raises(PolicyFileError, match=rf"^{path}: not valid YAML: "):
        read_policy_file(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(PolicyFileError, match=rf"^{path}: No such file or directory$"):
        read_policy_file(path)


def test_post_filters_compile_in_order_into_the_extension_points() -> None:
    """Issue 14: ``spec.postFilters`` lists DefaultPreemption; without it a policy never
    preempts."""
    from policy_scheduler.plugins.default_preemption import DefaultPreemption  # noqa: PLC0415

    obj = copy.deepcopy(SPREAD)
    assert compile_policy(obj).extensions.post_filter == ()
    obj["spec"]["postFilters"] = [
        {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}
    ]
    (plugin,) = compile_policy(obj).extensions.post_filter
    assert isinstance(plugin, DefaultPreemption)


def test_post_filter_errors_come_with_the_others() -> None:
    obj = copy.deepcopy(SPREAD)
    obj["spec"]["postFilters"] = [
        {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 101}},
        {"name": "DefaultPreemption"},
        {"name": "Preempt"},
    ]
    with pytest.raises(PolicyError) as raised:
        compile_policy(obj)
    assert [str(error) for error in raised.value.errors] == [
        'spec.postFilters[2].name: unsupported value "Preempt"; supported values: '
        '"DefaultPreemption"',
        "spec.postFilters[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid "
        "range [0, 100]",
    ]
    # The CRD's CEL rules are checked once no blocking schema error is left, as the API server.
    del obj["spec"]["postFilters"][2]
    with pytest.raises(PolicyError) as raised:
        compile_policy(obj)
    assert [str(error) for error in raised.value.errors] == [
        "spec.postFilters: Invalid value: each post-filter may be listed only once",
        "spec.postFilters[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid "
        "range [0, 100]",
    ]


# --- spec.plugins: plugins enabled at one extension point -------------------------------------


def test_a_permit_plugin_is_enabled_at_permit_only_after_the_multi_point_plugins() -> None:
    """Issue 28: a Permit-only plugin, listed under ``spec.plugins.permit``, runs at Permit; the
    predicates still bring their own extension points, before it (kube's multiPoint order)."""
    obj = copy.deepcopy(SPREAD)
    without = compile_policy(obj).extensions
    obj["spec"]["predicates"].append({"name": "VolumeBinding"})
    obj["spec"]["plugins"] = {"permit": [{"name": "BindRateLimit", "args": {"qps": 2}}]}
    extensions = compile_policy(obj).extensions
    assert [p.name for p in extensions.reserve] == ["VolumeBinding"]
    assert [p.name for p in extensions.pre_bind] == ["VolumeBinding"]
    (permit,) = extensions.permit
    assert isinstance(permit, BindRateLimit)
    assert (extensions.pre_enqueue, extensions.post_filter, extensions.post_bind) == ((), (), ())
    assert without == ExtensionPoints()


def test_an_empty_plugins_field_changes_nothing() -> None:
    obj = copy.deepcopy(SPREAD)
    obj["spec"]["plugins"] = {"permit": []}
    assert compile_policy(obj).extensions == ExtensionPoints()


PLUGIN_ERRORS = {
    "bad args name the field": (
        {"permit": [{"name": "BindRateLimit", "args": {"qps": 0, "burts": 5}}]},
        [
            "spec.plugins.permit[0].args.burts: unknown field; expected one of ['burst', 'qps']",
            "spec.plugins.permit[0].args.qps: must be a number > 0",
        ],
    ),
    "a plugin at a point it does not implement": (
        {"postBind": [{"name": "BindRateLimit"}]},
        [
            "spec.plugins.postBind: Invalid value: each plugin listed under postBind must "
            "implement PostBind"
        ],
    ),
    "an unknown plugin": (
        {"permit": [{"name": "Coscheduling"}]},
        [
            'spec.plugins.permit[0].name: unsupported value "Coscheduling" (did you mean '
            '"GangScheduling"?); supported values: "BindRateLimit", "GangScheduling"'
        ],
    ),
    "a plugin twice at one point, its args checked once": (
        {"permit": [{"name": "BindRateLimit", "args": {"qps": -1}}, {"name": "BindRateLimit"}]},
        [
            "spec.plugins.permit: Invalid value: each plugin may be listed only once at an "
            "extension point",
            "spec.plugins.permit[0].args.qps: must be a number > 0",
        ],
    ),
    "args that differ between two entries of one plugin": (
        {
            "permit": [
                {"name": "BindRateLimit", "args": {"qps": 1}},
                {"name": "BindRateLimit", "args": {"qps": 2}},
            ]
        },
        [
            "spec.plugins.permit: Invalid value: each plugin may be listed only once at an "
            "extension point",
            "spec.plugins.permit[1].args: differ from spec.plugins.permit[0].args: a plugin "
            "listed more than once is one plugin, with one set of args",
        ],
    ),
}


@pytest.mark.parametrize(("plugins", "expected"), PLUGIN_ERRORS.values(), ids=PLUGIN_ERRORS.keys())
def test_plugin_errors(plugins: dict[str, Any], expected: list[str]) -> None:
    obj = copy.deepcopy(SPREAD)
    obj["spec"]["plugins"] = plugins
    assert compile_errors(obj) == expected


class Gang(PreEnqueue, Permit[None]):
    """A plugin at two extension points, as the gang-scheduling one will be."""

    name = "Gang"

    def __init__(self, args: Args, path: str) -> None:
        self.args, self.path = args, path

    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        return None

    def permit(self, state: None, pod: PodView, node: str) -> str | None:
        return None


def test_a_plugin_listed_under_two_points_is_one_plugin_with_the_args_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Registered here only: no plugin of the registry implements two of spec.plugins' points yet.
    monkeypatch.setitem(EXTENSIONS["preEnqueue"], "Gang", Gang)
    monkeypatch.setitem(EXTENSIONS["permit"], "Gang", Gang)
    errors: list[FieldError] = []
    plugins: dict[str, list[dict[str, Any]]] = {
        "preEnqueue": [{"name": "Gang"}],
        "permit": [{"name": "Gang", "args": {"min": 3}}],
    }
    enabled = enabled_plugins(plugins, errors)
    assert errors == []
    (gang,) = enabled["preEnqueue"]
    assert enabled["permit"] == [gang]
    assert isinstance(gang, Gang)
    assert (gang.args, gang.path) == ({"min": 3}, "spec.plugins.permit[0].args")
    # At the points it is listed under only; with them both, each at its own.
    only_permit = extension_points([], {**enabled, "preEnqueue": []})
    assert (only_permit.pre_enqueue, only_permit.permit) == ((), (gang,))
    both = extension_points([], enabled)
    assert (both.pre_enqueue, both.permit) == ((gang,), (gang,))

    plugins["preEnqueue"][0]["args"] = {"min": 2}
    enabled_plugins(plugins, errors)
    assert [str(error) for error in errors] == [
        "spec.plugins.permit[0].args: differ from spec.plugins.preEnqueue[0].args: a plugin "
        "listed more than once is one plugin, with one set of args"
    ]
