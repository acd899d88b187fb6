"""NodeName keeps a pod that names its node off every other node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import filter_node, make_node, make_pod

from policy_scheduler.plugins import node_name
from policy_scheduler.plugins.base import FITS, ArgsError

WRONG_NODE = "node(s) didn't match the requested node name"


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


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match=r"^spec\.predicates\[0\]\.args: NodeName takes no args"):
        node_name.new_filter({"x": 1}, "spec.predicates[0].args")
