"""Per-node accounting (what is requested, which ports are taken, which pods run there) and the
cluster snapshot that one scheduling decision reads.

This mirrors kube-scheduler's ``framework.NodeInfo``: the cache keeps one per node and updates it
as pods are assumed, bound and deleted; plugins only read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from policy_scheduler.model.objects import HostPort, NodeView, PodView, Resources, add_into
from policy_scheduler.model.quantity import CPU, MEMORY

LabelGroup = tuple[str, bool, frozenset[tuple[str, str]]]


def _subtract(total: Resources, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) - amount


class NodeInfo:
    """A node and the pods on it (assumed or bound), with their summed requests."""

    __slots__ = (
        "affinity_pods",
        "label_groups",
        "node",
        "nonzero_requested",
        "pods",
        "requested",
        "used_ports",
    )

    def __init__(self, node: NodeView, pods: Iterable[PodView] = ()) -> None:
        self.node = node
        self.pods: dict[str, PodView] = {}
        self.requested: Resources = {}
        # Only CPU and memory have scoring defaults; the other resources score as requested.
        self.nonzero_requested: Resources = {CPU: 0, MEMORY: 0}
        self.used_ports: list[HostPort] = []
        # The pods with pod (anti-)affinity terms: InterPodAffinity reads only these unless the
        # incoming pod has terms of its own, and they are few next to all pods.
        self.affinity_pods: dict[str, PodView] = {}
        # The pods per PodView.label_group, as [one of them, how many]: selectors are matched
        # once per group instead of once per pod (a node's pods mostly share a few label sets).
        self.label_groups: dict[LabelGroup, list[Any]] = {}
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
        if pod.has_pod_affinity:
            self.affinity_pods[pod.uid] = pod
        group = self.label_groups.get(pod.label_group)
        if group is None:
            self.label_groups[pod.label_group] = [pod, 1]
        else:
            group[1] += 1

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
        self.affinity_pods.pop(uid, None)
        group = self.label_groups[pod.label_group]
        group[1] -= 1
        if not group[1]:
            del self.label_groups[pod.label_group]
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

    def count_matching(self, matches: Callable[[PodView], bool]) -> Iterator[tuple[NodeInfo, int]]:
        """Each node with how many of its pods ``matches`` accepts (nodes with none left out).

        ``matches`` must depend only on what ``PodView.label_group`` holds (a label or namespace
        selector): it is asked once per group in the whole snapshot, not once per pod.
        """
        memo: dict[LabelGroup, bool] = {}
        for info in self.nodes.values():
            total = 0
            for key, (pod, count) in info.label_groups.items():
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = matches(pod)
                if hit:
                    total += count
            if total:
                yield info, total

    def affinity_pods(self) -> Iterator[tuple[NodeInfo, PodView]]:
        """The pods with pod (anti-)affinity terms (``PodView.has_pod_affinity``), with their
        node: all InterPodAffinity reads pod by pod; other pods it counts per label group."""
        for info in self.nodes.values():
            if info.affinity_pods:
                for pod in info.affinity_pods.values():
                    yield info, pod
