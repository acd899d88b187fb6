"""Label selectors and node selector terms match as the API server's libraries do."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    RequiredNodeAffinity,
    SelectorError,
    label_key_problem,
    label_value_problem,
    parse_int64,
)

LABELS = {"app": "web", "tier": "front", "cores": "8"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param({}, True, id="empty selector matches everything"),
        pytest.param(None, False, id="null selector matches nothing"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="matchLabels"),
        pytest.param({"matchLabels": {"app": "db"}}, False, id="matchLabels other value"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]},
            True,
            id="In",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]},
            False,
            id="NotIn",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
            True,
            id="NotIn matches a missing label",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True, id="Exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
            False,
            id="DoesNotExist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}],
            },
            False,
            id="all requirements must hold",
        ),
    ],
)
def test_label_selector(selector: Any, matches: bool) -> None:
    assert LabelSelector.parse(selector).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("selector", "error"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "selector.matchExpressions[0]: values must be non-empty for operator In",
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "selector.matchExpressions[0]: values must be empty for operator Exists",
            id="Exists with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            "selector.matchExpressions[0].operator: 'Gt' is not one of",
            id="Gt is for nodes only",
        ),
        pytest.param(
            {"matchExpressions": [{"operator": "Exists"}]},
            "selector.matchExpressions[0].key: required",
            id="missing key",
        ),
    ],
)
def test_label_selector_errors(selector: Any, error: str) -> None:
    with pytest.raises(SelectorError) as raised:
        LabelSelector.parse(selector)
    assert str(raised.value).startswith(error)


def term(
    *expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"matchExpressions": list(expressions), "matchFields": fields or []}


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        pytest.param([term({"key": "cores", "operator": "Gt", "values": ["4"]})], True, id="Gt"),
        pytest.param(
            [term({"key": "cores", "operator": "Lt", "values": ["8"]})], False, id="Lt is strict"
        ),
        pytest.param(
            [term({"key": "app", "operator": "Gt", "values": ["1"]})],
            False,
            id="Gt on a non-integer label",
        ),
        pytest.param(
            [term(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}])],
            True,
            id="matchFields",
        ),
        pytest.param(
            [
                term({"key": "app", "operator": "In", "values": ["db"]}),
                term({"key": "tier", "operator": "Exists"}),
            ],
            True,
            id="terms are ORed",
        ),
        pytest.param([term()], False, id="an empty term matches nothing"),
        pytest.param([], False, id="no terms match nothing"),
    ],
)
def test_node_selector(terms: list[dict[str, Any]], matches: bool) -> None:
    selector = NodeSelector.parse({"nodeSelectorTerms": terms}, "required")
    assert selector.matches("n1", LABELS) is matches


def test_node_selector_rejects_unknown_field() -> None:
    with pytest.raises(SelectorError, match=r"matchFields\[0\].key: only metadata.name"):
        NodeSelector.parse(
            {
                "nodeSelectorTerms": [
                    term(fields=[{"key": "spec.podCIDR", "operator": "In", "values": ["x"]}])
                ]
            },
            "required",
        )


@pytest.mark.parametrize(
    ("selector", "error"),
    [
        pytest.param(
            {"matchLabels": {"bad key": "x"}},
            "selector.matchLabels: invalid label key 'bad key'",
            id="matchLabels key syntax",
        ),
        pytest.param(
            {"matchLabels": {"app": "-web"}},
            "selector.matchLabels: invalid label value '-web'",
            id="matchLabels value syntax",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "Example.com/app", "operator": "Exists"}]},
            "selector.matchExpressions[0].key: invalid label key 'Example.com/app': the prefix",
            id="upper-case prefix",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a" * 64, "operator": "Exists"}]},
            "selector.matchExpressions[0].key: invalid label key",
            id="name longer than 63",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]},
            "selector.matchExpressions[0].values[0]: invalid label value 'a b'",
            id="expression value syntax",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": "web"}]},
            "selector.matchExpressions[0].values: must be a list",
            id="values not a list",
        ),
        pytest.param(
            {"matchExpressions": {"key": "app"}},
            "selector.matchExpressions: must be a list",
            id="expressions not a list",
        ),
        pytest.param(["app"], "selector: must be an object", id="not an object"),
    ],
)
def test_label_selector_syntax(selector: Any, error: str) -> None:
    with pytest.raises(SelectorError) as raised:
        LabelSelector.parse(selector)
    assert str(raised.value).startswith(error)


def test_label_selector_error_lists_every_problem() -> None:
    with pytest.raises(SelectorError) as raised:
        LabelSelector.parse(
            {
                "matchLabels": {"ok": "-bad"},
                "matchExpressions": [{"key": "x/", "operator": "In", "values": ["v", "w!"]}],
            }
        )
    assert [error.path for error in raised.value.errors] == [
        "selector.matchLabels",
        "selector.matchExpressions[0].key",
        "selector.matchExpressions[0].values[1]",
    ]


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        pytest.param("disk", True, id="plain"),
        pytest.param("topology.kubernetes.io/zone", True, id="prefixed"),
        pytest.param("a" * 63, True, id="63 characters"),
        pytest.param("a" * 64, False, id="64 characters"),
        pytest.param("Disk_Type.v1", True, id="upper case, underscore and dot inside"),
        pytest.param("-disk", False, id="starts with a dash"),
        pytest.param("disk.", False, id="ends with a dot"),
        pytest.param("/disk", False, id="empty prefix"),
        pytest.param("example.com/", False, id="empty name"),
        pytest.param("Example.com/disk", False, id="upper-case prefix"),
        pytest.param("a/b/c", False, id="two slashes"),
        pytest.param(("a" * 63 + ".") * 4 + "a/x", False, id="prefix over 253 characters"),
    ],
)
def test_label_key_problem(key: str, valid: bool) -> None:
    assert (label_key_problem(key) is None) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("ssd", True, id="plain"),
        pytest.param("1.2_3-4", True, id="punctuation inside"),
        pytest.param("-5", False, id="leading dash"),
        pytest.param("a/b", False, id="slash"),
        pytest.param("a" * 64, False, id="too long"),
        pytest.param("_a", False, id="leading underscore"),
    ],
)
def test_label_value_problem(value: str, valid: bool) -> None:
    assert (label_value_problem(value) is None) is valid


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("42", 42, id="digits"),
        pytest.param("+7", 7, id="plus sign"),
        pytest.param("-7", -7, id="minus sign"),
        pytest.param("007", 7, id="leading zeros"),
        pytest.param(str(2**63 - 1), 2**63 - 1, id="int64 max"),
        pytest.param(str(-(2**63)), -(2**63), id="int64 min"),
        pytest.param(str(2**63), None, id="past int64"),
        pytest.param("1_000", None, id="underscore"),
        pytest.param(" 1", None, id="space"),
        pytest.param("\u0663", None, id="non-ASCII digit"),
        pytest.param("0x10", None, id="hex"),
        pytest.param("", None, id="empty"),
        pytest.param("-", None, id="sign alone"),
    ],
)
def test_parse_int64(text: str, value: int | None) -> None:
    assert parse_int64(text) == value


@pytest.mark.parametrize(
    ("operator", "bound", "label", "matches"),
    [
        pytest.param("Gt", "4", "5", True, id="Gt"),
        pytest.param("Gt", "4", "+5", True, id="node value with a sign"),
        pytest.param("Lt", "10", "0009", True, id="Lt leading zeros"),
        pytest.param("Gt", "4", "1_0", False, id="node value with underscore"),
        pytest.param("Gt", "4", " 9", False, id="node value with space"),
        pytest.param("Gt", "4", "\u0669", False, id="node value non-ASCII digit"),
        pytest.param("Gt", "4", str(2**63), False, id="node value past int64"),
        pytest.param("Lt", str(2**63 - 1), "1", True, id="bound int64 max"),
    ],
)
def test_numeric_operators_read_integers_as_go(
    operator: str, bound: str, label: str, matches: bool
) -> None:
    selector = NodeSelector.parse(
        {"nodeSelectorTerms": [term({"key": "n", "operator": operator, "values": [bound]})]},
        "required",
    )
    assert selector.matches("n1", {"n": label}) is matches


@pytest.mark.parametrize(
    ("requirement", "error"),
    [
        pytest.param(
            {"key": "n", "operator": "Gt", "values": [str(2**63)]},
            "required.nodeSelectorTerms[0].matchExpressions[0].values[0]: "
            "'9223372036854775808' is not an integer",
            id="Gt bound past int64",
        ),
        pytest.param(
            {"key": "n", "operator": "Lt", "values": ["1", "2"]},
            "required.nodeSelectorTerms[0].matchExpressions[0]: "
            "operator Lt needs exactly one value",
            id="Lt with two values",
        ),
        pytest.param(
            {"key": "n", "operator": "Gt", "values": ["-1"]},
            "required.nodeSelectorTerms[0].matchExpressions[0].values[0]: invalid label value '-1'",
            id="a negative bound is not a label value",
        ),
        pytest.param(
            {"key": "bad key", "operator": "Exists"},
            "required.nodeSelectorTerms[0].matchExpressions[0].key: invalid label key 'bad key'",
            id="node label key syntax",
        ),
    ],
)
def test_node_selector_expression_errors(requirement: dict[str, Any], error: str) -> None:
    with pytest.raises(SelectorError) as raised:
        NodeSelector.parse({"nodeSelectorTerms": [term(requirement)]}, "required")
    assert str(raised.value).startswith(error)


def name_field(operator: str, *values: str, key: str = "metadata.name") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("field", "error"),
    [
        pytest.param(
            name_field("In", "x", key="metadata.uid"),
            "key: only metadata.name is supported, not 'metadata.uid'",
            id="other field key",
        ),
        pytest.param(
            name_field("Exists"), "operator: 'Exists' is not one of ['In', 'NotIn']", id="Exists"
        ),
        pytest.param(
            name_field("Gt", "1"), "operator: 'Gt' is not one of ['In', 'NotIn']", id="Gt"
        ),
        pytest.param(name_field("In"), "values: must have exactly one element", id="no value"),
        pytest.param(
            name_field("NotIn", "a", "b"), "values: must have exactly one element", id="two values"
        ),
    ],
)
def test_match_fields_errors(field: dict[str, Any], error: str) -> None:
    with pytest.raises(SelectorError) as raised:
        NodeSelector.parse({"nodeSelectorTerms": [term(fields=[field])]}, "required")
    assert str(raised.value) == f"required.nodeSelectorTerms[0].matchFields[0].{error}"


@pytest.mark.parametrize(
    ("field", "node_name", "matches"),
    [
        pytest.param(name_field("In", "n1"), "n1", True, id="In"),
        pytest.param(name_field("In", "n1"), "n2", False, id="In other node"),
        pytest.param(name_field("NotIn", "n1"), "n1", False, id="NotIn"),
        pytest.param(name_field("NotIn", "n1"), "n2", True, id="NotIn other node"),
    ],
)
def test_match_fields(field: dict[str, Any], node_name: str, matches: bool) -> None:
    selector = NodeSelector.parse({"nodeSelectorTerms": [term(fields=[field])]}, "required")
    assert selector.matches(node_name, {}) is matches


GT_MANY = term({"key": "cores", "operator": "Gt", "values": ["many"]})
ZONE_A = term({"key": "zone", "operator": "In", "values": ["a"]})
MANY_ERROR = "r.nodeSelectorTerms[0].matchExpressions[0].values[0]: 'many' is not an integer"


@pytest.mark.parametrize(
    ("raw", "labels", "matches", "errors"),
    [
        pytest.param(
            {"nodeSelectorTerms": [GT_MANY, ZONE_A]},
            {"zone": "a"},
            True,
            [MANY_ERROR],
            id="the valid term still matches",
        ),
        pytest.param(
            {"nodeSelectorTerms": [GT_MANY, ZONE_A]},
            {"cores": "9"},
            False,
            [MANY_ERROR],
            id="the invalid term matches nothing",
        ),
        pytest.param(
            {"nodeSelectorTerms": [None, {}, ZONE_A]},
            {"zone": "a"},
            True,
            [],
            id="null and empty terms are skipped without error",
        ),
        pytest.param(
            {"nodeSelectorTerms": ["zone", ZONE_A]},
            {"zone": "a"},
            True,
            ["r.nodeSelectorTerms[0]: must be an object"],
            id="a term that is not an object",
        ),
        pytest.param(
            {"nodeSelectorTerms": "zone"},
            {"zone": "a"},
            False,
            ["r.nodeSelectorTerms: must be a list"],
            id="terms not a list",
        ),
        pytest.param([], {}, False, ["r: must be an object"], id="not an object"),
    ],
)
def test_node_selector_parse_lenient(
    raw: Any, labels: dict[str, str], matches: bool, errors: list[str]
) -> None:
    selector, found = NodeSelector.parse_lenient(raw, "r")
    assert selector.matches("n1", labels) is matches
    assert [str(error) for error in found] == errors


@pytest.mark.parametrize(
    ("selector", "empty"),
    [
        pytest.param({}, True, id="{} has no requirements"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, True, id="empty lists"),
        pytest.param(None, False, id="null selects nothing, is not empty"),
        pytest.param({"matchLabels": {"app": "web"}}, False, id="matchLabels"),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, False, id="expression"
        ),
    ],
)
def test_label_selector_empty(selector: Any, empty: bool) -> None:
    assert LabelSelector.parse(selector).empty is empty


@pytest.mark.parametrize(
    ("node_selector", "required", "node_name", "labels", "matches"),
    [
        pytest.param({}, None, "n1", {}, True, id="nothing required"),
        pytest.param({"disk": "ssd"}, None, "n1", {"disk": "ssd"}, True, id="nodeSelector"),
        pytest.param({"disk": "ssd"}, None, "n1", {"disk": "hdd"}, False, id="nodeSelector value"),
        pytest.param({"disk": ""}, None, "n1", {}, False, id="empty value needs the label"),
        pytest.param(
            {"disk": "ssd"},
            {"nodeSelectorTerms": [ZONE_A]},
            "n1",
            {"zone": "a"},
            False,
            id="nodeSelector AND affinity",
        ),
        pytest.param({}, {"nodeSelectorTerms": [ZONE_A]}, "n1", {"zone": "a"}, True, id="affinity"),
        pytest.param(
            {},
            {"nodeSelectorTerms": [term(fields=[name_field("In", "n2")])]},
            "n1",
            {},
            False,
            id="affinity on the node name",
        ),
        pytest.param({}, {"nodeSelectorTerms": []}, "n1", {}, False, id="no terms match nothing"),
    ],
)
def test_required_node_affinity(
    node_selector: dict[str, str],
    required: Any,
    node_name: str,
    labels: dict[str, str],
    matches: bool,
) -> None:
    affinity = RequiredNodeAffinity.parse(node_selector, required, "r")
    assert affinity.matches(node_name, labels) is matches


@pytest.mark.parametrize(
    ("raw", "keys"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
            frozenset({"zone"}),
            id="one expression",
        ),
        pytest.param(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]},
                    {"key": "cores", "operator": "Gt", "values": ["8"]},
                    {"key": "zone", "operator": "NotIn", "values": ["b"]},
                ]
            },
            frozenset({"zone", "cores"}),
            id="every key once",
        ),
        pytest.param(
            {
                "matchExpressions": [{"key": "zone", "operator": "Exists"}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
            },
            None,
            id="fields read the name too",
        ),
    ],
)
def test_the_labels_a_node_selector_term_reads(raw: Any, keys: frozenset[str] | None) -> None:
    term, errors = NodeSelectorTerm.parse_lenient(raw, "term")
    assert not errors and term is not None
    assert term.label_keys == keys
