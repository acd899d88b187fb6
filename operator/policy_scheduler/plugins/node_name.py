"""NodeName: a pod that names its node in ``spec.nodeName`` fits only there (kube-scheduler's
NodeName); every other node rejects it with "node(s) didn't match the requested node name".
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.base import (
    FITS,
    Args,
    EventKind,
    Filter,
    Rejections,
    filter_each,
    no_args,
)

NAME = "NodeName"

_REASONS = ("node(s) didn't match the requested node name",)


class _NodeNameFilter(Filter[None]):
    name = NAME
    wakes_on = EventKind.NODE_ADDED
    # UnschedulableAndUnresolvable in kube-scheduler: no eviction renames a node.
    unresolvable_reasons = frozenset(_REASONS)

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if pod.node_name and pod.node_name != node.name:
            return _REASONS
        return FITS

    def filter_nodes(self, state: None, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Nodes are asked only for a pod that names one; any other pod fits everywhere.
        return filter_each(self, state, pod, nodes) if pod.node_name else {}


def new_filter(args: Args, path: str) -> Filter[None]:
    no_args(NAME, args, path)
    return _NodeNameFilter()
