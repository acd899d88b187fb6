"""NodePorts: a pod's host ports must be free on the node (kube-scheduler's NodePorts).

The pod's wanted ports are (hostIP, protocol, hostPort) of its containers (and, since v1.34, of
its restartable "sidecar" init containers), with hostIP defaulting to 0.0.0.0 and protocol to
TCP. A wanted port conflicts with a port already used on the node when port and protocol match
and the IPs are equal or either is 0.0.0.0. Any conflict fails the node with
"node(s) didn't have free ports for the requested pod ports".
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, Filter, Rejections, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import HostPort, PodView
from policy_scheduler.plugins.helper import filter_where

NAME = "NodePorts"

_REASONS = ("node(s) didn't have free ports for the requested pod ports",)


class _NodePortsFilter(Filter[tuple[HostPort, ...]]):
    """The state is the pod's wanted host ports."""

    name = NAME
    wakes_on = EventKind.NODE_ADDED | EventKind.POD_DELETED

    def pre_filter(self, cycle: Cycle) -> tuple[HostPort, ...] | Skip:
        # As kube-scheduler's PreFilter: a pod without host ports fits every node.
        return cycle.pod.host_ports or SKIP

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """A deleted pod frees a port only if it held one the pod wants (kube's hint)."""
        if event.pod is None or not event.kind & EventKind.POD_DELETED:
            return True
        return any(w.conflicts(used) for w in pod.host_ports for used in event.pod.host_ports)

    def filter(self, state: tuple[HostPort, ...], pod: PodView, node: NodeInfo) -> Sequence[str]:
        for wanted in state:
            for used in node.used_ports:
                if wanted.conflicts(used):
                    return _REASONS
        return FITS

    def filter_nodes(
        self, state: tuple[HostPort, ...], pod: PodView, nodes: NodeBlock
    ) -> Rejections:
        return filter_where(self, state, pod, nodes, nodes.used_port_count() > 0)


def new_filter(args: Args, path: str) -> Filter[tuple[HostPort, ...]]:
    no_args(NAME, args, path)
    return _NodePortsFilter()
