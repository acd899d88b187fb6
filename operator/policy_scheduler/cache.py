"""The scheduler's picture of the cluster: nodes and the pods assigned to them, including pods it
has decided on but the API server has not yet confirmed ("assumed").

Assuming is what lets the scheduling loop move on without waiting for a bind: the next decision
already sees the assumed pod's requests, so two quick decisions cannot overcommit one node. The
watch confirms the assumption when the bound pod arrives; a failed bind forgets it. Pods seen on a
node the cache does not know yet are kept aside and counted once the node appears, as the watch of
pods and the watch of nodes are not ordered with respect to each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView


class Cache:
    """Nodes and assigned pods. Single-threaded: owned by one event loop."""

    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self._placed: dict[str, str] = {}  # pod uid -> node name it is counted on
        self._assumed: set[str] = set()
        self._orphans: dict[str, dict[str, PodView]] = {}  # node name -> pods seen before the node

    def __repr__(self) -> str:
        return f"Cache(nodes={len(self.snapshot)}, pods={len(self._placed)})"

    @property
    def pod_count(self) -> int:
        return len(self._placed) + sum(map(len, self._orphans.values()))

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def node_of(self, uid: str) -> str | None:
        """The node a pod is counted on (bound or assumed), if any."""
        return self._placed.get(uid)

    def set_node(self, raw: Mapping[str, Any]) -> NodeInfo:
        """A node was added or changed; its pods stay counted."""
        node = NodeView(raw)
        info = self.snapshot.get(node.name)
        if info is None:
            info = NodeInfo(node, self._orphans.pop(node.name, {}).values())
            self.snapshot.add_node(info)
            for uid in info.pods:
                self._placed[uid] = node.name
        else:
            # Through the snapshot, so that its indexes of images and labels follow the change.
            self.snapshot.replace_node(info, node)
        return info

    def delete_node(self, name: str) -> None:
        """A node is gone; its pods wait aside until they are deleted or the node comes back."""
        info = self.snapshot.remove_node(name)
        if info is None:
            return
        for uid in info.pods:
            del self._placed[uid]
        self._orphans[name] = info.pods

    def set_pod(self, pod: PodView) -> None:
        """An assigned pod as the API server has it; confirms an assumption about it."""
        if pod.terminated or not pod.node_name:
            self.delete_pod(pod.uid)
            return
        self._assumed.discard(pod.uid)
        self._remove(pod.uid)
        self._place(pod, pod.node_name)

    def delete_pod(self, uid: str) -> None:
        self._assumed.discard(uid)
        self._remove(uid)

    def assume(self, pod: PodView, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` now, before the API server confirms the bind."""
        self._remove(pod.uid)
        self._place(pod, node_name)
        self._assumed.add(pod.uid)

    def forget(self, uid: str) -> None:
        """Undo an assumption whose bind failed; a confirmed pod is left alone."""
        if uid in self._assumed:
            self._assumed.discard(uid)
            self._remove(uid)

    def _place(self, pod: PodView, node_name: str) -> None:
        info = self.snapshot.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pod.uid] = pod
        else:
            info.add_pod(pod)
            self._placed[pod.uid] = node_name

    def _remove(self, uid: str) -> None:
        node_name = self._placed.pop(uid, None)
        if node_name is not None:
            self.snapshot.nodes[node_name].remove_pod(uid)
            return
        for name, pods in self._orphans.items():
            if pods.pop(uid, None) is not None:
                if not pods:
                    del self._orphans[name]
                return
