"""NodeUnschedulable keeps pods off cordoned nodes unless they tolerate the unschedulable taint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import filter_node, make_node, make_pod

from policy_scheduler.plugins import node_unschedulable
from policy_scheduler.plugins.base import FITS, ArgsError

CORDONED = ("node(s) were unschedulable",)
KEY = "node.kubernetes.io/unschedulable"


def run_filter(tolerations: list[dict[str, Any]], unschedulable: bool) -> Sequence[str]:
    pod = make_pod(tolerations=tolerations)
    info = make_node("n", spec={"unschedulable": unschedulable})
    return filter_node(node_unschedulable.new_filter({}, "args"), pod, info)


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "reasons"),
    [
        pytest.param([], False, FITS, id="schedulable node"),
        pytest.param([], True, CORDONED, id="cordoned node"),
        pytest.param(
            [{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}],
            True,
            FITS,
            id="tolerated with Exists",
        ),
        pytest.param(
            [{"key": KEY}], True, FITS, id="tolerated with the default Equal and empty value"
        ),
        pytest.param(
            [{"key": KEY, "operator": "Exists"}], True, FITS, id="tolerated for every effect"
        ),
        pytest.param([{"operator": "Exists"}], True, FITS, id="tolerates every taint"),
        pytest.param(
            [{"key": KEY, "operator": "Equal", "value": "true"}],
            True,
            CORDONED,
            id="a value the taint does not have",
        ),
        pytest.param(
            [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}],
            True,
            CORDONED,
            id="another effect",
        ),
        pytest.param([{"key": "other", "operator": "Exists"}], True, CORDONED, id="another key"),
    ],
)
def test_filter(
    tolerations: list[dict[str, Any]], unschedulable: bool, reasons: Sequence[str]
) -> None:
    assert tuple(run_filter(tolerations, unschedulable)) == reasons


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError):
        node_unschedulable.new_filter({"x": 1}, "args")
