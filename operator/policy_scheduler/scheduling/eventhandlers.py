"""The watches' feeds into the scheduler (kube-scheduler's pkg/scheduler/eventhandlers.go): nodes,
pods, policies and the objects of every other kind declared (:mod:`~.kinds`) update the cache and
the policy table, and raise the cluster events that move parked pods; and which kinds are watched
(kube-scheduler's informers for the events its plugins register and the listers they take).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.scheduling import kinds
from policy_scheduler.scheduling.preemption import Preemptor

Handler = Callable[[Mapping[str, Any]], None]

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

    The ``*_changed``/``*_deleted`` methods (:meth:`feed`) take watch events, leading or not,
    so a standby that takes over starts deciding at once.

    With a :class:`~.ports.Watches` port, the kinds not always watched are watched only while
    a served policy reads them (:func:`~.kinds.needed`): from the policies' first listing on,
    the port is told which whenever that changes. A kind that comes to be needed holds every
    decision until its watch has listed (:meth:`watch_confirmed`); one no longer needed holds
    none.
    """

    def feed(self, kind: kinds.Kind) -> tuple[Handler, Handler]:
        """Where the watch of ``kind`` hands a change and a deletion."""
        if kind is kinds.NODES:
            return self.node_changed, self.node_deleted
        if kind is kinds.PODS:
            return self.pod_changed, self.pod_deleted
        if kind is kinds.POLICIES:
            return self.policy_changed, self.policy_deleted
        name = kind.name
        return functools.partial(self.changed, name), functools.partial(self.deleted, name)

    def watch_confirmed(self, source: str, confirmed: bool) -> None:
        """Whether the watch of ``source`` (nodes, pods, policies, ...) is current: False when it
        starts or breaks off, True once it has listed again. No pod is decided while any
        watch is not current: what changed during the gap (a pod bound by another scheduler,
        a node shrunk) is not in the cache yet, and a decision on it could overcommit a node."""
        if confirmed:
            self._unconfirmed.discard(source)
            self._wake.set()
            if source == kinds.POLICIES.watch:
                self._watch_needed()
        else:
            self._unconfirmed.add(source)

    def _watch_needed(self) -> None:
        """Tell the :class:`~.ports.Watches` port which kinds the served policies read, once
        the policies have been listed (until then, every kind counts as needed)."""
        if self._watches is None or kinds.POLICIES.watch in self._unconfirmed:
            return
        needed = kinds.needed(self.policies.served())
        before = self._watched if self._watched is not None else kinds.OPTIONAL
        if needed == before and self._watched is not None:
            return
        for name in needed - before:
            self._unconfirmed.add(kinds.NAMED[name].watch)
        for name in before - needed:
            self._unconfirmed.discard(kinds.NAMED[name].watch)
        self._watched = needed
        self._watches.need(needed)
        self._wake.set()

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
        joined = self.cache.snapshot.group_members.set(pod)
        if joined is not None:
            # A gang's held members may now be enough (kube's gang plugin registers pod adds).
            self._cluster_event(ClusterEvent(EventKind.POD_GROUP_CHANGED, pod=pod))
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
        self.cache.snapshot.group_members.delete(pod.uid)
        self._victim_gone(pod.uid)
        self._nominated.pop(pod.uid, None)
        self._forget_pending(pod.uid)
        node_name = self.cache.node_of(pod.uid)
        before = self.cache.delete_pod(pod.uid)
        if before is not None and node_name is not None:
            self._cluster_event(self._pod_cluster_event(EventKind.POD_DELETED, before, node_name))

    def changed(self, kind: str, raw: Mapping[str, Any]) -> None:
        """An object of ``kind`` (one of :data:`~.kinds.STORES`: a Service's selector, a
        Namespace's labels, a claim, a PodDisruptionBudget, ...) was added or changed. It counts
        from the next decision on, and the parked pods whose filters registered for the events
        it raises, if any, are moved: none for the kinds no filter of kube's registers for."""
        before, after = self.cache.set_object(kind, raw)
        events = kinds.NAMED[kind].events
        if events:
            self._cluster_event(ClusterEvent(events, storage=after, old_storage=before))

    def deleted(self, kind: str, raw: Mapping[str, Any]) -> None:
        """An object of ``kind`` (as :meth:`changed`'s) was deleted. It no longer counts from the
        next decision on, and the parked pods whose filters registered for the events its
        deletion raises, if any, are moved: none for most kinds, as in kube-scheduler."""
        gone = self.cache.delete_object(kind, raw)
        events = kinds.NAMED[kind].deleted
        if events and gone is not None:
            self._cluster_event(ClusterEvent(events, old_storage=gone))

    def policy_changed(self, raw: Mapping[str, Any]) -> None:
        entry, changed = self.policies.apply(raw)
        history = entry.compiled.history if entry.compiled else 0
        self.status.adopt(entry.name, entry.uid, raw.get("status") or {}, history)
        self._update_conditions()
        if changed:
            self._policies_changed()
            self._watch_needed()

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
        self._watch_needed()

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
            self._watch_needed()
