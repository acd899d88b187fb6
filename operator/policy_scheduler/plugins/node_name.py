"""NodeName: a pod that names its node in ``spec.nodeName`` fits only there (kube-scheduler's
NodeName).

As kube-scheduler v1.37's, its pre-filter names that node alone
(:meth:`~policy_scheduler.framework.interface.Filter.pre_filter_result`), so the pipeline
filters only it and counts every other node as "node(s) didn't satisfy plugin(s) [NodeName]"
(the plugins that named nodes, sorted), UnschedulableAndUnresolvable; a name the cluster lacks
leaves no node to filter. Its filter, asked about any other node, says "node(s) didn't match
the requested node name", the text a post-filter's what-if gets.

kube-scheduler never schedules a pod with ``spec.nodeName`` (it is bound already, and a pod bound
here is treated as such too), so this is seen where a pod is decided as it is written: simulate
and explain.
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    Filter,
    PreFilterResult,
    Rejections,
    filter_each,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView

NAME = "NodeName"

_REASONS = ("node(s) didn't match the requested node name",)


class _NodeNameFilter(Filter[str]):
    """The state is the pod's ``spec.nodeName``, empty when it names no node."""

    name = NAME
    wakes_on = EventKind.NODE_ADDED
    # UnschedulableAndUnresolvable in kube-scheduler: no eviction renames a node.
    unresolvable_reasons = frozenset(_REASONS)

    def pre_filter(self, cycle: Cycle) -> str:
        return cycle.pod.node_name

    def pre_filter_result(self, state: str) -> PreFilterResult:
        return PreFilterResult(frozenset((state,))) if state else ANY_NODE

    def filter(self, state: str, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if state and state != node.name:
            return _REASONS
        return FITS

    def filter_nodes(self, state: str, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Nodes are asked only for a pod that names one; any other pod fits everywhere.
        return filter_each(self, state, pod, nodes) if state else {}


def new_filter(args: Args, path: str) -> Filter[str]:
    no_args(NAME, args, path)
    return _NodeNameFilter()
