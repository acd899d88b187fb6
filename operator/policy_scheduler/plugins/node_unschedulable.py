"""NodeUnschedulable: keep pods off cordoned nodes (kube-scheduler's NodeUnschedulable).

A node with ``spec.unschedulable: true`` rejects the pod with "node(s) were unschedulable", unless
the pod tolerates the taint ``node.kubernetes.io/unschedulable:NoSchedule`` (empty value), which
is how DaemonSet pods run on cordoned nodes.

Queueing hint, as kube-scheduler's: a pod this filter rejected waits for a node added that is not
cordoned, or a node uncordoned. (kube-scheduler registers the uncordoning as a taint change, the
event it reports it as; here it has an event of its own, and a change of taints alone cannot help.)
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, Filter, Rejections
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.helper import filter_where
from policy_scheduler.plugins.taint_toleration import (
    NO_SCHEDULE,
    parse_tolerations,
    tolerated,
)

NAME = "NodeUnschedulable"

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_REASONS = ("node(s) were unschedulable",)


class _UnschedulableFilter(Filter[bool]):
    """The state is whether the pod tolerates cordoned nodes."""

    name = NAME
    # UnschedulableAndUnresolvable in kube-scheduler: no eviction uncordons a node.
    unresolvable_reasons = frozenset({*_REASONS})
    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_UNSCHEDULABLE

    def pre_filter(self, cycle: Cycle) -> bool:
        tolerations = parse_tolerations(cycle.pod.tolerations)
        return tolerated(tolerations, UNSCHEDULABLE_TAINT, "", NO_SCHEDULE)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        # Of an update, only a change of spec.unschedulable is asked about: a node that is
        # schedulable now was cordoned before.
        return event.node is None or not event.node.unschedulable

    def filter(self, state: bool, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if node.node.unschedulable and not state:
            return _REASONS
        return FITS

    def filter_nodes(self, state: bool, pod: PodView, nodes: NodeBlock) -> Rejections:
        return filter_where(self, state, pod, nodes, nodes.unschedulable())


def new_filter(args: Args, path: str) -> Filter[bool]:
    no_args(NAME, args, path)
    return _UnschedulableFilter()
