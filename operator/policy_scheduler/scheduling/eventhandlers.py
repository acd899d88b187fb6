"""The watches' feeds into the scheduler (kube-scheduler's pkg/scheduler/eventhandlers.go): nodes,
pods, workloads, namespaces, storage objects, PodDisruptionBudgets and policies update the
cache and the policy table, and raise the cluster events that move parked pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.model import volumes
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.scheduling.preemption import Preemptor

STORAGE_EVENT_KINDS = {
    volumes.PVC: EventKind.PVC_CHANGED,
    volumes.PV: EventKind.PV_CHANGED,
    volumes.STORAGE_CLASS: EventKind.STORAGE_CLASS_CHANGED,
    volumes.CSI_NODE: EventKind.CSI_NODE_CHANGED,
    volumes.CSI_DRIVER: EventKind.CSI_DRIVER_CHANGED,
    volumes.CSI_STORAGE_CAPACITY: EventKind.CSI_STORAGE_CAPACITY_CHANGED,
    volumes.RESOURCE_CLAIM: EventKind.RESOURCE_CLAIM_CHANGED,
}
"""The event a change of each kind of storage object is, as :mod:`~.model.volumes` names them."""


# What of a pod's object can change its scheduling: not its status (our own PodScheduled patch,
# a nominated node) and not the bookkeeping of its metadata, as kube-scheduler's isPodUpdated.
_BOOKKEEPING = ("resourceVersion", "generation", "managedFields")


def _scheduling_view(raw: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """What of a pending pod, when it changes, may change its verdicts: its metadata but the
    bookkeeping, its spec, and the ResourceClaims its status names (made for its templates)."""
    metadata = raw.get("metadata") or {}
    return (
        {k: v for k, v in metadata.items() if k not in _BOOKKEEPING},
        raw.get("spec"),
        (raw.get("status") or {}).get("resourceClaimStatuses"),
    )


def node_event(before: NodeView | None, after: NodeView) -> EventKind:
    """What a node's update changed of what filters read; an empty flag for a heartbeat."""
    if before is None:
        return EventKind.NODE_ADDED
    kind = EventKind(0)
    if before.allocatable != after.allocatable:
        kind |= EventKind.NODE_ALLOCATABLE
    if before.labels != after.labels:
        kind |= EventKind.NODE_LABELS
    if before.taints != after.taints:
        kind |= EventKind.NODE_TAINTS
    if before.unschedulable != after.unschedulable:
        kind |= EventKind.NODE_UNSCHEDULABLE
    if before.declared_features != after.declared_features:
        kind |= EventKind.NODE_DECLARED_FEATURES
    return kind


def pod_event(before: PodView | None, after: PodView) -> EventKind:
    """What an assigned pod's arrival or update changed of what filters read."""
    if before is None:
        return EventKind.POD_ADDED
    kind = EventKind(0)
    if before.node_name and before.node_name != after.node_name:
        kind |= EventKind.POD_ADDED | EventKind.POD_DELETED
    if before.labels != after.labels:
        kind |= EventKind.POD_LABELS
    if any(after.requests.get(name, 0) < amount for name, amount in before.requests.items()):
        kind |= EventKind.POD_SCALED_DOWN
    return kind


class EventHandlers(Preemptor):
    """The watches' feeds (kube-scheduler's eventhandlers.go): each event updates the cache or
    the policies and raises the cluster event that moves the parked pods it may help.

    The ``*_changed``/``*_deleted`` methods take watch events, leading or not, so a standby that
    takes over starts deciding at once.
    """

    def watch_confirmed(self, source: str, confirmed: bool) -> None:
        """Whether the watch of ``source`` (nodes, pods, policies, ...) is current: False when it
        starts or breaks off, True once it has listed again. No pod is decided while any
        watch is not current: what changed during the gap (a pod bound by another scheduler,
        a node shrunk) is not in the cache yet, and a decision on it could overcommit a node."""
        if confirmed:
            self._unconfirmed.discard(source)
            self._wake.set()
        else:
            self._unconfirmed.add(source)

    def node_changed(self, raw: Mapping[str, Any]) -> None:
        before, after = self.cache.set_node(raw)
        kind = node_event(before, after)
        if kind:
            self._cluster_event(ClusterEvent(kind, node=after, old_node=before))

    def node_deleted(self, raw: Mapping[str, Any]) -> None:
        node = self.cache.delete_node(str((raw.get("metadata") or {}).get("name", "")))
        if node is not None:
            self._cluster_event(ClusterEvent(EventKind.NODE_DELETED, node=node))

    def pod_changed(self, raw: Mapping[str, Any]) -> None:
        pod = PodView(raw)
        # A pod in its binding cycle is assumed on its node already: the nomination written
        # before its PreBind (see _bind) must not count it twice (kube-scheduler's nominator
        # skips assumed pods too).
        if (
            pod.nominated_node_name
            and not pod.node_name
            and not pod.deleting
            and not self.cache.is_assumed(pod.uid)
        ):
            self._nominated[pod.uid] = pod
        else:
            self._nominated.pop(pod.uid, None)
        if pod.node_name:
            self._forget_pending(pod.uid)
            if pod.deleting or pod.terminated:
                self._victim_gone(pod.uid)
            # Our own bind confirmed: the pod arrives for the other pods' filters only now.
            assumed = self.cache.is_assumed(pod.uid)
            before = self.cache.set_pod(pod)
            if pod.terminated:
                kind = EventKind.POD_DELETED if before is not None else EventKind(0)
            else:
                kind = EventKind.POD_ADDED if assumed else pod_event(before, pod)
            if kind:
                self._cluster_event(self._pod_cluster_event(kind, pod, pod.node_name))
            return
        # A pending view of a pod the cache holds on a node is stale when the watch has shown
        # the pod bound, or when our bind of it succeeded (the watch may bring a write made
        # before the bind, our own PodScheduled patch, after it): keep the bound one. Deciding
        # it again would bind it twice, and the second bind's failure would free its room.
        if self.cache.node_of(pod.uid) is not None and pod.uid not in self.queue:
            return
        done = self._dry_run_done.get(pod.uid)
        if pod.terminated or (pod.deleting and done is not None):
            self._forget_pending(pod.uid)
            return
        # A pod being deleted (a finalizer holds it) stays queued, as in kube-scheduler, whose
        # cycle then skips it saying so (schedule_one).
        if done is not None:
            self._dry_run_done[pod.uid] = (pod, done[1])
            return
        queued = self.queue.get(pod.uid)
        before = queued.pod if queued is not None else self._unclaimed.get(pod.uid)
        changed = before is None or _scheduling_view(before.raw) != _scheduling_view(pod.raw)
        self._enqueue(pod, moves=changed)

    def pod_deleted(self, raw: Mapping[str, Any]) -> None:
        pod = PodView(raw)
        self._victim_gone(pod.uid)
        self._nominated.pop(pod.uid, None)
        self._forget_pending(pod.uid)
        node_name = self.cache.node_of(pod.uid)
        before = self.cache.delete_pod(pod.uid)
        if before is not None and node_name is not None:
            self._cluster_event(self._pod_cluster_event(EventKind.POD_DELETED, before, node_name))

    def workload_changed(self, kind: str, raw: Mapping[str, Any]) -> None:
        """A Service, ReplicationController, ReplicaSet or StatefulSet (``kind``) was added or
        changed. Its selector counts from the next decision on; like kube-scheduler, no parked
        pod is moved for it (no filter of kube's registers for these objects)."""
        self.cache.set_workload(kind, raw)

    def workload_deleted(self, kind: str, raw: Mapping[str, Any]) -> None:
        self.cache.delete_workload(kind, raw)

    def namespace_changed(self, raw: Mapping[str, Any]) -> None:
        """A Namespace was added or relabelled; as for workloads, no parked pod is moved."""
        self.cache.set_namespace(raw)

    def namespace_deleted(self, raw: Mapping[str, Any]) -> None:
        self.cache.delete_namespace(raw)

    def storage_changed(self, kind: str, raw: Mapping[str, Any]) -> None:
        """A PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver,
        CSIStorageCapacity or ResourceClaim (``kind``, as :mod:`~policy_scheduler.model.volumes`
        names it) was added or changed: the parked pods whose filters registered for it are
        moved."""
        before, view = self.cache.set_storage(kind, raw)
        event = ClusterEvent(STORAGE_EVENT_KINDS[kind], storage=view, old_storage=before)
        self._cluster_event(event)

    def storage_deleted(self, kind: str, raw: Mapping[str, Any]) -> None:
        """As kube-scheduler, no filter registers for these deletions: no pod is moved."""
        self.cache.delete_storage(kind, raw)

    def disruption_budget_changed(self, raw: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget was added or changed: preemption prefers victims it does not
        protect from the next decision on. As in kube-scheduler, no parked pod is moved for it
        (no filter registers for these objects)."""
        self.cache.set_disruption_budget(raw)

    def disruption_budget_deleted(self, raw: Mapping[str, Any]) -> None:
        self.cache.delete_disruption_budget(raw)

    def policy_changed(self, raw: Mapping[str, Any]) -> None:
        entry, changed = self.policies.apply(raw)
        history = entry.compiled.history if entry.compiled else 0
        self.status.adopt(entry.name, entry.uid, raw.get("status") or {}, history)
        self._update_conditions()
        if changed:
            self._policies_changed()

    def policy_deleted(self, raw: Mapping[str, Any]) -> None:
        """Retire the deleted policy, unless an object created since under its name took its
        place (a late deletion must not retire the new one)."""
        metadata = raw.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if not self.policies.remove(name, str(metadata.get("uid") or "")):
            return
        self.status.forget(name)
        self._update_conditions()
        self._policies_changed()

    def take_over(self, policies: Iterable[Mapping[str, Any]]) -> None:
        """This replica leads from now on: every policy's status continues from the object as
        just read (``policies``), whatever a standby saw before."""
        changed = False
        for raw in policies:
            entry, compiled = self.policies.apply(raw)
            changed = changed or compiled
            history = entry.compiled.history if entry.compiled else 0
            self.status.adopt(entry.name, entry.uid, raw.get("status") or {}, history, afresh=True)
        self._update_conditions()
        if changed:
            self._policies_changed()
