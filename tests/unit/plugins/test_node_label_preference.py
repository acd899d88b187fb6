"""NodeLabelPreference scores 100 for nodes whose label has a wanted value (or exists), else 0."""

from __future__ import annotations

from typing import Any

import pytest
from plugin_harness import make_node, make_pod, score_nodes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.plugins import node_label_preference

PATH = "spec.priorities[1].args"
ZONE = "topology.kubernetes.io/zone"


def run_scorer(args: dict[str, Any], labels: list[dict[str, str]]) -> list[int]:
    nodes = [make_node(f"n{i}", node_labels) for i, node_labels in enumerate(labels)]
    return score_nodes(node_label_preference.new_scorer(args, PATH), make_pod(), nodes)


@pytest.mark.parametrize(
    ("args", "labels", "scores"),
    [
        pytest.param(
            {"label": ZONE, "values": ["a", "b"]},
            [{ZONE: "a"}, {ZONE: "b"}, {ZONE: "c"}, {}],
            [100, 100, 0, 0],
            id="value in values",
        ),
        pytest.param(
            {"label": ZONE},
            [{ZONE: "c"}, {ZONE: ""}, {"other": "a"}],
            [100, 100, 0],
            id="without values: the label is present",
        ),
        pytest.param(
            {"label": "spot", "values": [""]},
            [{"spot": ""}, {"spot": "x"}, {}],
            [100, 0, 0],
            id="the empty value",
        ),
        pytest.param(
            {"label": ZONE, "values": ["a"]},
            [{ZONE: "b"}, {ZONE: "c"}],
            [0, 0],
            id="no node matches",
        ),
    ],
)
def test_score(args: dict[str, Any], labels: list[dict[str, str]], scores: list[int]) -> None:
    assert run_scorer(args, labels) == scores


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param(
            {}, [f"{PATH}.label: required: the label key to prefer nodes by"], id="no label"
        ),
        pytest.param(
            {"label": 5},
            [f"{PATH}.label: required: the label key to prefer nodes by"],
            id="label not a string",
        ),
        pytest.param(
            {"label": "a b", "values": []},
            [
                f"{PATH}.label: invalid label key 'a b': the name must be at most 63 "
                "alphanumeric characters, '-', '_' or '.', starting and ending with an "
                "alphanumeric character",
                f"{PATH}.values: must be a non-empty list of label values (omit it to "
                "prefer any value)",
            ],
            id="bad key and empty values",
        ),
        pytest.param(
            {"label": ZONE, "values": ["a", 1, "-x"], "presence": True},
            [
                f"{PATH}.presence: unknown field; expected one of ['label', 'values']",
                f"{PATH}.values[1]: must be a string",
                f"{PATH}.values[2]: invalid label value '-x': must be at most 63 "
                "alphanumeric characters, '-', '_' or '.', starting and ending with an "
                "alphanumeric character",
            ],
            id="every problem with its path",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], errors: list[str]) -> None:
    with pytest.raises(ArgsError) as caught:
        node_label_preference.new_scorer(args, PATH)
    assert [str(error) for error in caught.value.errors] == errors
