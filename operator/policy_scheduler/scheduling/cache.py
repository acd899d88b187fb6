"""The scheduler's cache: the live cluster state, with the pods it has decided on but the API
server has not yet confirmed ("assumed").

Assuming is what lets the scheduling loop move on without waiting for a bind: the next decision
already sees the assumed pod's requests, so two quick decisions cannot overcommit one node. The
watch confirms the assumption when the bound pod arrives; a failed bind forgets it. Pods seen on a
node the cache does not know yet are kept aside and counted once the node appears, as the watch of
pods and the watch of nodes are not ordered with respect to each other.

A cycle decides on :meth:`SchedulerCache.snapshot`: the live state itself, typed as the read-only
:class:`~policy_scheduler.model.nodeinfo.Snapshot`, not a copy. A cycle's filtering and scoring
run without yielding to the event loop, so no watch event can change the state under it; copying
thousands of NodeInfos per cycle, as kube-scheduler's snapshot does for its concurrent informers,
would buy nothing here. Pods nominated to a node (:meth:`SchedulerCache.nominated`) are added
only while a filter looks at that node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.volumes import StorageObject
from policy_scheduler.scheduling.kinds import STORES, Stored


class SchedulerCache:
    """Nodes and assigned pods, assumed or confirmed, and the objects of the other kinds that
    decisions read. Single-threaded: owned by one event loop."""

    def __init__(self) -> None:
        self._state = ClusterState()
        self._placed: dict[str, str] = {}  # pod uid -> node name it is counted on
        self._assumed: set[str] = set()
        self._orphans: dict[str, dict[str, PodView]] = {}  # node name -> pods seen before the node
        # The nodes whose pods changed, or that came or went, since touched() last told them.
        self._touched: set[str] = set()

    def __repr__(self) -> str:
        return f"SchedulerCache(nodes={len(self._state)}, pods={len(self._placed)})"

    @property
    def snapshot(self) -> Snapshot:
        """What a cycle decides on (see the module's docstring)."""
        return self._state

    @property
    def pod_count(self) -> int:
        return len(self._placed) + sum(map(len, self._orphans.values()))

    def touched(self) -> set[str]:
        """The nodes whose pods changed (added, replaced, removed), or that came or went, since
        the last call: what the loop asks again about the preemptors waiting on them
        (:class:`~.waiting.WaitingBook`, the one caller)."""
        touched, self._touched = self._touched, set()
        return touched

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def node_of(self, uid: str) -> str | None:
        """The node a pod is counted on (bound or assumed), if any."""
        return self._placed.get(uid)

    def pod(self, uid: str) -> PodView | None:
        """The assigned pod ``uid`` as counted, if it is."""
        node = self._placed.get(uid)
        return None if node is None else self._state.nodes[node].pods.get(uid)

    def set_node(self, raw: Mapping[str, Any]) -> tuple[NodeView | None, NodeView]:
        """A node was added or changed; its pods stay counted. The node before (None when it is
        new) and after."""
        node = NodeView(raw)
        info = self._state.get(node.name)
        if info is None:
            info = NodeInfo(node, self._orphans.pop(node.name, {}).values())
            self._state.add_node(info)
            self._touched.add(node.name)
            for uid in info.pods:
                self._placed[uid] = node.name
            return None, node
        before = info.node
        self._state.replace_node(info, node)
        return before, node

    def delete_node(self, name: str) -> NodeView | None:
        """A node is gone; its pods wait aside until they are deleted or the node comes back."""
        info = self._state.remove_node(name)
        if info is None:
            return None
        self._touched.add(name)
        for uid in info.pods:
            del self._placed[uid]
        self._orphans[name] = info.pods
        return info.node

    def set_pod(self, pod: PodView) -> PodView | None:
        """An assigned pod as the API server has it; confirms an assumption about it. The pod as
        it was counted before, if it was. On the node it is counted on already (an assumption
        confirmed where it was made, a status update), the state replaces the view it holds,
        which costs next to nothing when nothing it counts changed
        (:meth:`~policy_scheduler.model.nodeinfo.ClusterState.add_pod`)."""
        before = self.pod(pod.uid)
        if pod.terminated or not pod.node_name:
            self.delete_pod(pod.uid)
            return before
        self._assumed.discard(pod.uid)
        if self._placed.get(pod.uid) != pod.node_name:
            self._remove(pod.uid)
        self._place(pod, pod.node_name)
        return before

    def delete_pod(self, uid: str) -> PodView | None:
        """The pod is gone; the pod as it was counted, if it was."""
        self._assumed.discard(uid)
        return self._remove(uid)

    def set_object(self, kind: str, raw: Mapping[str, Any]) -> Stored:
        """An object of ``kind``, one the cache keeps in a store (:data:`~policy_scheduler.
        scheduling.kinds.STORES`: a Service's selector, a Namespace's labels, a claim, ...), was
        added or changed: the object as it was and as now kept, for the event it raises."""
        return STORES[kind].set(self._state, raw)

    def delete_object(self, kind: str, raw: Mapping[str, Any]) -> StorageObject | None:
        """An object of ``kind`` (as :meth:`set_object`'s) was deleted: the object as it was
        kept, for the event it raises (None: not known, or a kind that raises none)."""
        return STORES[kind].delete(self._state, raw)

    def assume(self, pod: PodView, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` now, before the API server confirms the bind."""
        self._remove(pod.uid)
        self._place(pod, node_name)
        self._assumed.add(pod.uid)

    def forget(self, uid: str) -> PodView | None:
        """Undo an assumption whose bind failed; a confirmed pod is left alone. The forgotten
        pod, if it was assumed."""
        if uid not in self._assumed:
            return None
        self._assumed.discard(uid)
        return self._remove(uid)

    def holding_room(self, pod: PodView, nominated: Iterable[PodView]) -> list[tuple[str, PodView]]:
        """Of ``nominated`` (pending pods a preemption nominated to a node), those that hold
        their node's room against ``pod``, each with its node: those of at least its priority,
        as kube-scheduler counts them when it filters. One this cache counts already (assumed
        by this scheduler) is left out: it counts where it was assumed."""
        return [
            (other.nominated_node_name, other)
            for other in nominated
            if other.uid != pod.uid
            and other.priority >= pod.priority
            and other.uid not in self._placed
        ]

    @contextmanager
    def nominated(self, pods: Iterable[tuple[str, PodView]]) -> Iterator[None]:
        """Count each (node, pod) while the block runs: pods nominated to a node, while a
        cycle's filters look at it. Pods of nodes the cache does not know are left out."""
        added = []
        for node_name, pod in pods:
            info = self._state.get(node_name)
            if info is not None and pod.uid not in info.pods:
                self._state.add_pod(info, pod)
                added.append((info, pod.uid))
        try:
            yield
        finally:
            for info, uid in added:
                self._state.remove_pod(info, uid)

    def _place(self, pod: PodView, node_name: str) -> None:
        info = self._state.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pod.uid] = pod
        else:
            self._state.add_pod(info, pod)
            self._placed[pod.uid] = node_name
            self._touched.add(node_name)

    def _remove(self, uid: str) -> PodView | None:
        node_name = self._placed.pop(uid, None)
        if node_name is not None:
            self._touched.add(node_name)
            return self._state.remove_pod(self._state.nodes[node_name], uid)
        for name, pods in self._orphans.items():
            pod = pods.pop(uid, None)
            if pod is not None:
                if not pods:
                    del self._orphans[name]
                return pod
        return None
