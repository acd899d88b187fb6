"""NodeName keeps a pod that names its node off every other node: its pre-filter names that node
alone, so the other nodes count as left out by NodeName, as kube-scheduler v1.37 counts them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import filter_node, make_node, make_pod

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.interface import ANY_NODE, FITS, SKIP, PreFilterResult
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.plugins import node_name
from policy_scheduler.plugins.registry import FILTERS
from policy_scheduler.runtime.schedule_one import Pipeline

WRONG_NODE = "node(s) didn't match the requested node name"
LEFT_OUT = "node(s) didn't satisfy plugin(s) [NodeName]"
UNSCHEDULABLE = "node(s) were unschedulable"


def run_filter(spec: dict[str, Any], node: str) -> Sequence[str]:
    plugin = node_name.new_filter({}, "spec.predicates[0].args")
    return filter_node(plugin, make_pod(**spec), make_node(node))


@pytest.mark.parametrize(
    ("spec", "node", "reasons"),
    [
        pytest.param({}, "a", FITS, id="no nodeName fits anywhere"),
        pytest.param({"nodeName": ""}, "a", FITS, id="empty nodeName fits anywhere"),
        pytest.param({"nodeName": "a"}, "a", FITS, id="the named node"),
        pytest.param({"nodeName": "a"}, "b", (WRONG_NODE,), id="another node"),
        pytest.param({"nodeName": "a"}, "A", (WRONG_NODE,), id="names are case sensitive"),
    ],
)
def test_filter(spec: dict[str, object], node: str, reasons: Sequence[str]) -> None:
    assert tuple(run_filter(spec, node)) == reasons


@pytest.mark.parametrize(
    ("spec", "result"),
    [
        pytest.param({}, ANY_NODE, id="no nodeName leaves every node to the filters"),
        pytest.param({"nodeName": ""}, ANY_NODE, id="an empty nodeName names no node"),
        pytest.param(
            {"nodeName": "a"}, PreFilterResult(frozenset({"a"})), id="a nodeName names its node"
        ),
    ],
)
def test_pre_filter_result(spec: dict[str, Any], result: PreFilterResult) -> None:
    plugin = node_name.new_filter({}, "spec.predicates[0].args")
    state = plugin.pre_filter(Cycle(make_pod(**spec), Snapshot([make_node("a")])))
    assert state is not SKIP
    assert plugin.pre_filter_result(state) == result


def nodes() -> list[NodeInfo]:
    cordoned = {"unschedulable": True}
    return [make_node("a"), make_node("b", spec=cordoned), make_node("c")]


@pytest.mark.parametrize(
    ("spec", "feasible", "reasons"),
    [
        pytest.param(
            {"nodeName": "c"}, {"c"}, {LEFT_OUT: 2}, id="the named node fits, the only one filtered"
        ),
        pytest.param(
            {"nodeName": "b"},
            set(),
            {UNSCHEDULABLE: 1, LEFT_OUT: 2},
            id="the named node cordoned: the others count as left out by NodeName",
        ),
        pytest.param(
            {"nodeName": "gone"},
            set(),
            {LEFT_OUT: 3},
            id="a name the cluster lacks leaves every node out",
        ),
        pytest.param({}, {"a", "c"}, {UNSCHEDULABLE: 1}, id="no nodeName: every node filtered"),
    ],
)
def test_in_kubes_default_order(
    spec: dict[str, Any], feasible: set[str], reasons: dict[str, int]
) -> None:
    """NodeName first, then NodeUnschedulable, as in kube-scheduler v1.37's default profile."""
    pipeline = Pipeline([FILTERS[name]({}, "") for name in ("NodeName", "NodeUnschedulable")], [])
    the_pod = make_pod("p", "default", **spec)
    decision = pipeline.decide(the_pod, Snapshot(nodes()), random.Random(0))
    # The only feasible node is taken unscored: no candidates are reported then.
    assert ({c.node for c in decision.candidates} or {decision.node} - {None}) == feasible
    assert decision.reasons == reasons


def test_the_message_when_the_named_node_does_not_fit() -> None:
    pipeline = Pipeline([FILTERS[name]({}, "") for name in ("NodeName", "NodeUnschedulable")], [])
    the_pod = make_pod("p", "default", nodeName="b")
    decision = pipeline.decide(the_pod, Snapshot(nodes()), random.Random(0))
    assert decision.message == f"0/3 nodes are available: 1 {UNSCHEDULABLE}, 2 {LEFT_OUT}."


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match=r"^spec\.predicates\[0\]\.args: NodeName takes no args"):
        node_name.new_filter({"x": 1}, "spec.predicates[0].args")
