"""Per-node accounting (what is requested, which ports are taken, which pods run there) and the
cluster snapshot that one scheduling decision reads.

This mirrors kube-scheduler's ``framework.NodeInfo``: the cache keeps one per node and updates it
as pods are assumed, bound and deleted; plugins only read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from policy_scheduler.model.objects import HostPort, NodeView, PodView, Resources, add_into
from policy_scheduler.model.quantity import CPU, MEMORY


def _subtract(total: Resources, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) - amount


class NodeInfo:
    """A node and the pods on it (assumed or bound), with their summed requests."""

    __slots__ = ("node", "nonzero_requested", "pods", "requested", "used_ports")

    def __init__(self, node: NodeView, pods: Iterable[PodView] = ()) -> None:
        self.node = node
        self.pods: dict[str, PodView] = {}
        self.requested: Resources = {}
        # Only CPU and memory have scoring defaults; the other resources score as requested.
        self.nonzero_requested: Resources = {CPU: 0, MEMORY: 0}
        self.used_ports: list[HostPort] = []
        for pod in pods:
            self.add_pod(pod)

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"

    def add_pod(self, pod: PodView) -> None:
        if pod.uid in self.pods:
            self.remove_pod(pod.uid)
        self.pods[pod.uid] = pod
        add_into(self.requested, pod.requests)
        nonzero = pod.nonzero_requests
        self.nonzero_requested[CPU] += nonzero.get(CPU, 0)
        self.nonzero_requested[MEMORY] += nonzero.get(MEMORY, 0)
        self.used_ports.extend(pod.host_ports)

    def remove_pod(self, uid: str) -> PodView | None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return None
        _subtract(self.requested, pod.requests)
        nonzero = pod.nonzero_requests
        self.nonzero_requested[CPU] -= nonzero.get(CPU, 0)
        self.nonzero_requested[MEMORY] -= nonzero.get(MEMORY, 0)
        for port in pod.host_ports:
            self.used_ports.remove(port)
        return pod


class Snapshot:
    """All nodes with their pods, in a stable order, as one decision sees them."""

    def __init__(self, nodes: Iterable[NodeInfo] = ()) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        for info in nodes:
            self.nodes[info.name] = info

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)

    def pods(self) -> Iterator[tuple[NodeInfo, PodView]]:
        """Every pod on every node, with the node it is on."""
        for info in self.nodes.values():
            for pod in info.pods.values():
                yield info, pod
