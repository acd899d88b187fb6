"""Label selectors and node selector terms match as the API server's libraries do."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model.selectors import LabelSelector, NodeSelector, SelectorError

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
