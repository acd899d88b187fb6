"""The pending pods a preemption nominated to a node (kube-scheduler's nominator), by uid and by
node.

Every cycle's filters count the nominated pods that hold room against its pod, on any node; but
a deletion of an assigned pod asks only about its own node, once per waiting preemptor
(:mod:`~.waiting`), and a preemption clears only the nominations of its own node. Kept by node
as well, those read one node's nominations instead of scanning them all.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from policy_scheduler.model.objects import PodView


class Nominations(MutableMapping[str, PodView]):
    """Pods nominated to a node, by uid (the pod's view says where: ``nominated_node_name``),
    and by node, the two kept in step."""

    def __init__(self) -> None:
        self._pods: dict[str, PodView] = {}
        self._by_node: dict[str, dict[str, PodView]] = {}

    def __getitem__(self, uid: str) -> PodView:
        return self._pods[uid]

    def __setitem__(self, uid: str, pod: PodView) -> None:
        before = self._pods.get(uid)
        if before is not None and before.nominated_node_name != pod.nominated_node_name:
            self._unindex(uid, before.nominated_node_name)
        self._pods[uid] = pod
        self._by_node.setdefault(pod.nominated_node_name, {})[uid] = pod

    def __delitem__(self, uid: str) -> None:
        pod = self._pods.pop(uid)
        self._unindex(uid, pod.nominated_node_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def __len__(self) -> int:
        return len(self._pods)

    def on(self, node: str) -> list[PodView]:
        """The pods nominated to ``node``."""
        pods = self._by_node.get(node)
        return [] if pods is None else list(pods.values())

    def _unindex(self, uid: str, node: str) -> None:
        pods = self._by_node[node]
        del pods[uid]
        if not pods:
            del self._by_node[node]
