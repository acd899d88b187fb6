"""NodeName keeps a pod that names its node off every other node."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.plugins import node_name
from policy_scheduler.plugins.base import FITS, ArgsError, Cycle

WRONG_NODE = "node(s) didn't match the requested node name"


def run_filter(spec: dict[str, object], node: str) -> Sequence[str]:
    pod = PodView({"metadata": {"name": "p"}, "spec": spec})
    info = NodeInfo(NodeView({"metadata": {"name": node}}))
    plugin = node_name.new_filter({}, "spec.predicates[0].args")
    return plugin.filter(plugin.pre_filter(Cycle(pod, Snapshot([info]))), pod, info)


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


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match=r"^spec\.predicates\[0\]\.args: NodeName takes no args"):
        node_name.new_filter({"x": 1}, "spec.predicates[0].args")
