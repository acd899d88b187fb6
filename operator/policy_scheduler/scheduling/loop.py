"""The scheduling loop: kube-scheduler's ``scheduleOne`` with its extension points, fed by watch
events and talking to the world only through :mod:`~policy_scheduler.scheduling.ports`.

One pod at a time, in queue order, :meth:`Scheduler.schedule_one` runs the scheduling cycle:

1. **pre-enqueue** (before the pod is queued at all): scheduling gates and the policy's
   PreEnqueue plugins; a held pod waits as ``gated`` and costs nothing until it changes;
2. **filter** and **score** (the policy's
   :class:`~policy_scheduler.runtime.schedule_one.Pipeline`, with pods nominated to a node counted against it while that node is filtered:
   :class:`~policy_scheduler.framework.types.NominatedPods`);
3. **post-filter** when no node fits; the pod is then parked with the filters that rejected it,
   and only an event one of them registered for moves it back (queueing hints). A post-filter
   that finds room by preemption (:class:`~policy_scheduler.framework.interface.Preemption`) has it
   acted on as kube-scheduler's ``prepareCandidate`` and nominating do: each victim evicted
   (the :class:`~.ports.Evictor` port; one whose binding cycle waits in a PreBind has that
   cycle cancelled instead, in memory), the pods of lower priority nominated to that node
   nominated no more, and the pod nominated to the node, where it then holds the room against
   pods of lower priority. It waits gated (kube-scheduler's asynchronous preemption) until
   its victims are evicted and the watch shows them terminating or gone, so that no retry
   chooses them twice; then it waits parked, as kube-scheduler's preemptor does, until an
   event may help it: the deletion of its last victim, or of a pod whose node then fits it
   (:mod:`~.waiting`: no other deletion moves it while its victims terminate), and binds once
   their room is free;
4. **reserve** (the cache assumes the pod on its node; then the Reserve plugins) and **permit**;

and then, in a task of its own so that the next cycle starts at once, the binding cycle:
**pre-bind**, **bind** (the :class:`~.ports.Binder` port), **post-bind**. A failure after
reserve runs **unreserve** of every Reserve plugin in reverse order and forgets the assumed pod.

A policy in ``mode: DryRun`` stops after scoring: it records and tells, and binds nothing; its
pods are decided again whenever the policy that serves them changes. A DryRun preemption evicts
and nominates nothing: whom it would evict is recorded and told.

A plugin that raises is what kube-scheduler's plugin returning an error status is: the pod's
attempt ends in error (``running Reserve plugin "X": ...``, its ``FailedScheduling`` event), what
was reserved is unreserved, the pod backs off and is tried again, and the loop goes on with the
next pod. (A PreEnqueue plugin that raises holds its pod as gated; a PostBind or Unreserve plugin
that raises is logged, as kube-scheduler's have no status to fail with.) The loop stamps
:attr:`Scheduler.heartbeat` every turn, at least every :data:`HEARTBEAT` seconds even when idle,
for the liveness probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from policy_scheduler.framework.cycle_state import CycleState
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import ObjectWriter, Preemption, PreEnqueue
from policy_scheduler.framework.types import NO_NOMINATED, Cycle, NominatedPods
from policy_scheduler.model import volumes
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.plugins.scheduling_gates import SchedulingGates
from policy_scheduler.policy.compiler import CompiledPolicy, Mode
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling.cache import SchedulerCache
from policy_scheduler.scheduling.policies import PolicyTable, Route
from policy_scheduler.scheduling.ports import (
    ERROR,
    NORMAL,
    SCHEDULED,
    UNSCHEDULABLE,
    WARNING,
    Binder,
    Clock,
    EventRecorder,
    Evictor,
    MetricsSink,
    NoMetrics,
    Outcome,
    PodConditions,
    SchedulerState,
    StatusStore,
    SystemClock,
)
from policy_scheduler.scheduling.queue import QueuedPod, SchedulingQueue, Where
from policy_scheduler.scheduling.status import StatusWriter
from policy_scheduler.scheduling.waiting import Waiting

logger = logging.getLogger(__name__)

BIND_CONCURRENCY = 64
"""Bind requests in flight at once. A binding cycle holds a slot only for its bind request: one
waiting in PreBind (VolumeBinding polling for its PVs) holds none, as kube-scheduler runs each
binding cycle on its own."""

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

_ALWAYS: tuple[PreEnqueue, ...] = (SchedulingGates(),)
"""Pre-enqueue plugins every policy runs, as kube-scheduler enables them in every profile."""

PREEMPTION_CONDITION_MESSAGE = "{}: preempting to accommodate a higher priority pod"
"""The message of a victim's ``DisruptionTarget`` condition, with the preemptor's scheduler name,
as kube-scheduler writes it (pkg/scheduler/framework/preemption/preemption.go)."""
PREEMPTION_UNDER_WAY = "waiting for the preemption for this pod to be finished"
"""Why a preemptor waits, out of the active queue, while its victims are being evicted (kube's
DefaultPreemption PreEnqueue, with asynchronous preemption)."""
VICTIMS_TOLD = 10
"""How many victims an event names; the others are counted ("and 3 more")."""
HEARTBEAT = 5.0
"""Seconds the loop may wait for work before it stamps its heartbeat anyway."""

T = TypeVar("T")

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


class Scheduler:
    """The scheduler's state (cache, queue, policies, nominated pods, policy statuses) and the
    loop that turns pending pods into bindings.

    The ``*_changed``/``*_deleted`` methods take watch events, leading or not, so a standby that
    takes over starts deciding at once; :meth:`run` and :meth:`StatusWriter.run
    <policy_scheduler.scheduling.status.StatusWriter.run>` do the work while leading.
    """

    def __init__(
        self,
        binder: Binder,
        events: EventRecorder,
        conditions: PodConditions,
        status: StatusStore,
        objects: ObjectWriter,
        *,
        evictor: Evictor,
        clock: Clock | None = None,
        seed: int | None = None,
        metrics: MetricsSink | None = None,
        on_decision: Callable[[Decision], None] | None = None,
    ) -> None:
        """``on_decision`` is told every decision as it is made (``simulate`` collects them)."""
        self.cache = SchedulerCache()
        self.queue = SchedulingQueue()
        self.policies = PolicyTable()
        self.clock = clock if clock is not None else SystemClock()
        self.metrics = metrics if metrics is not None else NoMetrics()
        self.metrics.read_state(self._metrics_state)
        self.status = StatusWriter(status, self.unschedulable_counts, self.clock, self.metrics)
        self.events = events
        self._binder = binder
        self._conditions = conditions
        self._objects = objects
        self._evictor = evictor
        self._rng = random.Random(seed)
        self._on_decision = on_decision
        self._wake = asyncio.Event()
        self.heartbeat = self.clock.monotonic()
        """When :meth:`run` last went round (by :attr:`clock`): what the liveness probe reads."""
        self._bind_slots = asyncio.Semaphore(BIND_CONCURRENCY)
        self._binds: set[asyncio.Task[None]] = set()
        # DryRun pods stay pending; once decided they wait here, with the policy that decided
        # them, until the policy serving them changes.
        self._dry_run_done: dict[str, tuple[PodView, CompiledPolicy]] = {}
        # Pending pods for scheduler names no policy has claimed (yet: at start-up pods are
        # listed before policies); a policy that claims their name takes them.
        self._unclaimed: dict[str, PodView] = {}
        # Pending pods of any scheduler that a preemption nominated to a node, by uid.
        self._nominated: dict[str, PodView] = {}
        # The watches that have not shown the cluster since they started or last broke off.
        self._unconfirmed: set[str] = set()
        # Preemptors, by uid, with their victims that the watch has not shown terminating or
        # gone yet; those whose evictions are under way; the tasks evicting. Such a pod waits
        # gated until its evictions are over and shown, so that a retry meanwhile does not
        # choose its victims again; then parked until an event helps it. An eviction that
        # failed lets it go at once.
        self._preempting: dict[str, set[str]] = {}
        self._evicting: set[str] = set()
        self._evictions: set[asyncio.Task[None]] = set()
        # Pods whose binding cycle waits in a PreBind with work to do, by uid: a preemption
        # cancels such a victim's binding cycle instead of deleting it (kubernetes#135502).
        self._pre_binding: dict[str, _PreBinding] = {}

    # --- feeds from the watches ---------------------------------------------------------------

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

    def _enqueue(self, pod: PodView, moves: bool = True) -> None:
        route = self.policies.route(pod.scheduler_name)
        if not route.ours:
            self._unclaimed[pod.uid] = pod
            return
        self._unclaimed.pop(pod.uid, None)
        gated = self._pre_enqueue(pod, route)
        if gated is not None:
            # As kube-scheduler: no event, no condition (the API server set SchedulingGated).
            logger.debug("%s is not queued: %s", pod.key, gated)
            self.queue.gate(pod)
            return
        self.queue.add(pod, self.clock.monotonic(), moves)
        self._wake.set()

    def _pre_enqueue(self, pod: PodView, route: Route) -> str | None:
        """Why ``pod`` may not enter the active queue, if a pre-enqueue plugin says so, or its
        preemption is under way."""
        if pod.uid in self._preempting:
            return PREEMPTION_UNDER_WAY
        plugins = _ALWAYS
        if route.policy is not None:
            plugins += route.policy.extensions.pre_enqueue
        for plugin in plugins:
            reason = _guarded(plugin, "PreEnqueue", plugin.pre_enqueue, pod)
            if reason is not None:
                return reason
        return None

    def _forget_pending(self, uid: str) -> None:
        self.queue.delete(uid)
        self._unclaimed.pop(uid, None)
        self._dry_run_done.pop(uid, None)

    def _policies_changed(self) -> None:
        """A policy came, went or changed: pods it may now serve are queued, DryRun pods whose
        policy changed are decided again, and every parked pod is tried again."""
        for pod in list(self._unclaimed.values()):
            self._enqueue(pod)
        for uid, (pod, decided_by) in list(self._dry_run_done.items()):
            if self.policies.route(pod.scheduler_name).policy is not decided_by:
                del self._dry_run_done[uid]
                self._enqueue(pod)
        self.queue.move(self.clock.monotonic())
        self._wake.set()

    def _pod_cluster_event(self, kind: EventKind, pod: PodView, node_name: str) -> ClusterEvent:
        info = self.cache.snapshot.get(node_name)
        return ClusterEvent(kind, node=None if info is None else info.node, pod=pod)

    def _cluster_event(self, event: ClusterEvent) -> None:
        """Move back the parked pods that ``event`` may help: those rejected by a filter that
        registered for it and whose hint does not rule it out."""
        # One lookup per scheduler name, not per parked pod: an event comes with every bind.
        serving: dict[str, CompiledPolicy | None] = {}
        waiting = None
        if event.kind == EventKind.POD_DELETED:
            waiting = Waiting(self.cache, self._nominated, self._rng, event)

        def helps(entry: QueuedPod) -> bool:
            name = entry.pod.scheduler_name
            if name not in serving:
                serving[name] = self.policies.route(name).policy
            policy = serving[name]
            if waiting is not None and policy is not None and waiting.still(entry, policy):
                return False
            return self._helps(entry, policy, event)

        if self.queue.move(self.clock.monotonic(), helps):
            self._wake.set()

    @staticmethod
    def _helps(entry: QueuedPod, policy: CompiledPolicy | None, event: ClusterEvent) -> bool:
        if policy is None:
            return False  # it waits for a policy, not for the cluster
        if not entry.rejected_by:
            # No filter said no: there was no node at all.
            return bool(event.kind & EventKind.NODE_ADDED)
        for name in entry.rejected_by:
            plugin = policy.pipeline.filter_named(name)
            if plugin is None or (
                event.kind & plugin.wakes_on and plugin.queueing_hint(entry.pod, event)
            ):
                return True
        return False

    def _update_conditions(self) -> None:
        for entry in self.policies:
            self.status.set_conditions(
                entry.name, entry.generation, entry.scheduler_name, self.policies.conditions(entry)
            )

    def unschedulable_counts(self) -> dict[str, int]:
        """Pods waiting as unschedulable, per serving policy (the status's ``unschedulable``)."""
        counts: dict[str, int] = {}
        for entry in self.queue.entries(Where.UNSCHEDULABLE):
            owner = self.policies.owner(entry.pod.scheduler_name)
            if owner is not None:
                counts[owner.name] = counts.get(owner.name, 0) + 1
        return counts

    def _metrics_state(self) -> SchedulerState:
        return SchedulerState(
            pending_pods=self.queue.counts(),
            binds_in_flight=len(self._binds),
            nodes=len(self.cache.snapshot),
            pods=self.cache.pod_count,
            policies_valid={entry.name: entry.compiled is not None for entry in self.policies},
        )

    # --- the scheduling loop ------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule pods as they become ready, for as long as the task runs."""
        while True:
            self.heartbeat = self.clock.monotonic()
            if not self.schedule_next():
                now = self.heartbeat
                # A watch's confirmation wakes the loop; until then no timer is due.
                wakeup = None if self._unconfirmed else self.queue.next_wakeup(now)
                wait = HEARTBEAT if wakeup is None else min(max(wakeup - now, 0.0), HEARTBEAT)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                continue
            # Let the watches run between decisions: they confirm binds and bring new pods.
            await asyncio.sleep(0)

    async def run_until_idle(self) -> None:
        """Decide every pod that is ready now, and let their binding cycles finish: a run whose
        clock stands still (``simulate``, the loop's tests) decides each pending pod once."""
        while self.schedule_next():
            await asyncio.sleep(0)
        await self.drain()

    def schedule_next(self) -> bool:
        """Run one scheduling cycle if a pod is ready and every watch is current; False when
        none is, or a watch is not."""
        if self._unconfirmed:
            return False
        now = self.clock.monotonic()
        entry = self.queue.pop(now)
        if entry is None:
            return False
        self.schedule_one(entry, now)
        return True

    def schedule_one(self, entry: QueuedPod, now: float) -> None:
        """The scheduling cycle of one popped pod; a bind it decides runs as a task."""
        pod = entry.pod
        route = self.policies.route(pod.scheduler_name)
        if route.policy is None:
            if route.waiting is None:
                self.queue.delete(pod.uid)
            else:
                self._wait(entry, route.waiting, now, "NoSchedulingPolicy", None)
            return
        policy = route.policy
        if pod.deleting:
            # kube-scheduler's skipPodSchedule: no attempt, no condition, one event.
            self.queue.delete(pod.uid)
            self.events.event(
                pod,
                WARNING,
                "FailedScheduling",
                f"skip schedule deleting pod: {pod.key}",
                "Scheduling",
            )
            return
        started = self.clock.monotonic()
        states = CycleState()
        # Once for the cycle: it does not yield, so no watch event changes them meanwhile.
        nominated = self._holding_room(pod)
        try:
            decision = policy.pipeline.decide(
                pod,
                self.cache.snapshot,
                self._rng,
                states,
                nominated,
                statuses=bool(policy.extensions.post_filter),
            )
        except Exception as error:  # a plugin's bug must cost one pod a retry, not the loop
            self.metrics.algorithm(self.clock.monotonic() - started)
            logger.exception("policy %s failed on pod %s", policy.name, pod.key)
            self._failed(pod, policy, started, f"internal error: {error}", "Scheduling")
            return
        self.metrics.algorithm(self.clock.monotonic() - started)
        if self._on_decision is not None:
            self._on_decision(decision)
        if decision.node is None:
            message = decision.message
            cycle = Cycle(pod, self.cache.snapshot, self._rng)
            preemption: Preemption | None = None
            preempted_by = ""
            said: list[str] = []
            waits_on = ""
            # kube-scheduler clears a pod's nomination when no post-filter could run, or one
            # found that preemption cannot help it.
            clears = not policy.extensions.post_filter
            statuses = policy.pipeline.node_statuses(decision, nominated)
            for plugin in policy.extensions.post_filter:
                try:
                    result = plugin.post_filter(states.read(plugin), cycle, statuses)
                except Exception as error:
                    self._failed(
                        pod,
                        policy,
                        started,
                        _plugin_error(plugin, "PostFilter", error),
                        "Scheduling",
                    )
                    return
                waits_on = waits_on or result.waits_on
                clears = clears or result.clears_nomination
                if result.final:
                    said = [result.message] if result.message else []
                    break
                if result.message:
                    said.append(result.message)
                if result.preemption is not None:
                    # As kube-scheduler's RunPostFilterPlugins: the first that made room ends
                    # them, and its success is all the status says.
                    preemption = result.preemption
                    preempted_by = plugin.name
                    said = [result.message] if result.message else []
                    break
            if said:
                message = f"{message} {', '.join(said)}"
            self._wait(
                entry,
                message,
                now,
                "FailedScheduling",
                (policy, decision),
                preemption=preemption,
                preempted_by=preempted_by,
                waits_on=waits_on,
                clears=clears,
            )
            self.metrics.attempt(UNSCHEDULABLE, policy.name, self.clock.monotonic() - started)
        elif policy.mode is Mode.DRY_RUN:
            self.queue.delete(pod.uid)
            self._dry_run_done[pod.uid] = (pod, policy)
            self.status.record(policy.name, decision, dry_run=True)
            self.events.event(
                pod,
                NORMAL,
                "DryRunScheduled",
                f"SchedulingPolicy {policy.name} (DryRun) would assign {pod.key} to "
                f"{decision.node} (score {decision.score}); nothing was bound",
                "Scheduling",
            )
        else:
            self._reserve(entry, policy, decision, states, started)

    def _holding_room(self, pod: PodView) -> NominatedPods:
        """The pods nominated to nodes that hold their room against ``pod``, for its filters."""
        by_node: dict[str, list[PodView]] = {}
        for node, other in self.cache.holding_room(pod, self._nominated.values()):
            by_node.setdefault(node, []).append(other)
        return NominatedPods(by_node, self.cache.nominated) if by_node else NO_NOMINATED

    def _reserve(
        self,
        entry: QueuedPod,
        policy: CompiledPolicy,
        decision: Decision,
        states: CycleState,
        started: float,
    ) -> None:
        """Assume, reserve and permit; then the binding cycle, in a task."""
        pod, node = entry.pod, str(decision.node)
        self.cache.assume(pod, node)
        refusal = None
        for plugin in policy.extensions.reserve:
            refusal = _guarded(plugin, "Reserve", plugin.reserve, states.read(plugin), pod, node)
            if refusal is not None:
                break
        else:
            for permit in policy.extensions.permit:
                refusal = _guarded(permit, "Permit", permit.permit, states.read(permit), pod, node)
                if refusal is not None:
                    break
        if refusal is not None:
            self._undo(pod, policy, states, node)
            self._failed(pod, policy, started, refusal, "Scheduling")
            return
        task = asyncio.get_running_loop().create_task(
            self._bind(
                pod, decision, policy, states=states, attempts=entry.attempts, started=started
            )
        )
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)

    def _undo(self, pod: PodView, policy: CompiledPolicy, states: CycleState, node: str) -> None:
        """Unreserve and forget the assumed pod. Every Reserve plugin is told, in reverse order,
        also those whose reserve did not run or failed, as kube-scheduler does: unreserve must
        cope with what it did not reserve."""
        for plugin in reversed(policy.extensions.reserve):
            _guarded(plugin, "Unreserve", plugin.unreserve, states.read(plugin), pod, node)
        forgotten = self.cache.forget(pod.uid)
        if forgotten is not None:
            self._cluster_event(self._pod_cluster_event(EventKind.POD_DELETED, forgotten, node))

    def _failed(
        self, pod: PodView, policy: CompiledPolicy, started: float, message: str, action: str
    ) -> None:
        """An error (not a verdict) ended the pod's attempt: it backs off and is tried again,
        told as kube-scheduler tells it (the event, ``PodScheduled=False`` with reason
        SchedulerError) and nominated nowhere."""
        self.queue.retry_later(pod.uid, self.clock.monotonic())
        self._nominated.pop(pod.uid, None)
        self.events.event(pod, WARNING, "FailedScheduling", message, action)
        self._conditions.scheduler_error(pod, message)
        self.metrics.attempt(ERROR, policy.name, self.clock.monotonic() - started)

    def _wait(
        self,
        entry: QueuedPod,
        message: str,
        now: float,
        reason: str,
        decision: tuple[CompiledPolicy, Decision] | None,
        *,
        preemption: Preemption | None = None,
        preempted_by: str = "",
        waits_on: str = "",
        clears: bool = False,
    ) -> None:
        """Park an unschedulable pod; tell its story once per distinct message, and act on
        every preemption a post-filter (``preempted_by``) found for it (a DryRun one, which
        changes nothing and so comes back at each try, is told once while it stays the same).
        A pod that preempts, or may not while its victims on ``waits_on`` terminate, waits for
        them (:mod:`~.waiting`). With ``clears``, a nomination the pod had is cleared."""
        dry_run = decision is not None and decision[0].mode is Mode.DRY_RUN
        nominated: str | None = None
        if clears and not dry_run and entry.pod.uid in self._nominated:
            del self._nominated[entry.pod.uid]
            nominated = ""
        story = message
        if preemption is not None:
            story += f"\n{preemption.node}: {_victims(preemption)}"
            waits_on = "" if dry_run else preemption.node
        repeated = (
            entry.last_failure == story and (preemption is None or dry_run) and nominated is None
        )
        rejected_by = decision[1].rejected_by if decision is not None else frozenset()
        self.queue.unschedulable(entry.pod.uid, story, now, rejected_by, waits_on)
        if repeated:
            return
        self.events.event(entry.pod, WARNING, reason, message, "Scheduling")
        if decision is not None:
            policy, result = decision
            if preemption is not None:
                if dry_run:
                    self._tell_preemption(entry.pod, policy, preemption)
                else:
                    self._preempt(entry.pod, policy, preemption, preempted_by, now)
                    nominated = preemption.node
            self._conditions.unschedulable(entry.pod, message, nominated)
            self.status.record(policy.name, result, dry_run=dry_run, preemption=preemption)

    def _preempt(
        self,
        pod: PodView,
        policy: CompiledPolicy,
        preemption: Preemption,
        preempted_by: str,
        now: float,
    ) -> None:
        """Act on a preemption as kube-scheduler's ``prepareCandidate`` and nominating do: evict
        the victims (a victim waiting in a PreBind has its binding cycle cancelled instead, in
        memory), take the nomination of this operator's pods of lower priority nominated to
        the node (they may fit it no more: they are tried again), and nominate ``pod`` to it at
        once, so that it holds the room against pods of lower priority before the watch shows
        the nomination (the caller writes it, with the pod's PodScheduled condition)."""
        node = preemption.node
        condition = PREEMPTION_CONDITION_MESSAGE.format(pod.scheduler_name)
        victims = tuple(
            victim
            for victim in preemption.victims
            if not self._cancel_pre_bind(victim, pod, node, preempted_by)
        )
        if victims:
            self._preempting[pod.uid] = {victim.uid for victim in victims}
            self._evicting.add(pod.uid)
            task = asyncio.get_running_loop().create_task(
                self._evict(pod, victims, node, condition)
            )
            self._evictions.add(task)
            task.add_done_callback(self._evictions.discard)
        for other in list(self._nominated.values()):
            # Only pods this operator schedules, as kube-scheduler clears only those its queue
            # holds: another scheduler's nomination is that scheduler's (and one of lower
            # priority holds no room against this pod anyway).
            if (
                other.uid != pod.uid
                and other.nominated_node_name == node
                and other.priority < pod.priority
                and self.policies.route(other.scheduler_name).ours
            ):
                del self._nominated[other.uid]
                self._conditions.nominate(other, "")
                # Its status change alone would not move it; kube-scheduler's does.
                if other.uid in self.queue:
                    self.queue.add(_nominated_to(other, ""), now)
                    self._wake.set()
        self._nominated[pod.uid] = _nominated_to(pod, node)
        if victims:
            self.queue.gate(self._nominated[pod.uid])
        self.events.event(
            pod,
            NORMAL,
            "Preempting",
            f"SchedulingPolicy {policy.name} nominated {pod.key} to {node} and evicts "
            f"{_victims(preemption)} there: {preemption.why or 'room for it'}",
            "Preempting",
        )

    def _cancel_pre_bind(
        self, victim: PodView, preemptor: PodView, node: str, preempted_by: str
    ) -> bool:
        """Preempt ``victim`` in memory if its binding cycle waits in a PreBind, as
        kube-scheduler v1.36+ does: the cycle ends in error (it backs off), its room is freed
        when the cycle has undone its reservation, and nothing is deleted."""
        binding = self._pre_binding.get(victim.uid)
        if binding is None or not binding.cancel(f"preempted by {preempted_by}"):
            return False
        self.events.event(
            victim,
            NORMAL,
            "Preempted",
            f"Preempted by pod {preemptor.uid} on node {node} (in kube-scheduler memory).",
            "Preempting",
        )
        return True

    async def _evict(
        self, pod: PodView, victims: Sequence[PodView], node: str, condition: str
    ) -> None:
        """Evict the victims at once; ``pod``, which waits gated meanwhile, is let go once each
        is evicted and the watch shows it terminating or gone (see :meth:`_release`), and is
        decided again at once when an eviction failed (it may then choose again) or a victim
        left while it was held (the deletion moved nothing then)."""
        evicted = False
        try:
            evicted = all(
                await asyncio.gather(
                    *(self._evictor.preempt(victim, pod, node, condition) for victim in victims)
                )
            )
        finally:
            self._evicting.discard(pod.uid)
            if not evicted:
                self._preempting[pod.uid] = set()
            left = any(self.cache.node_of(victim.uid) is None for victim in victims)
            self._release(pod.uid, again=not evicted or left)

    def _victim_gone(self, uid: str) -> None:
        """The watch shows the pod ``uid`` terminating or deleted: no preemptor waits for it."""
        for preemptor, victims in list(self._preempting.items()):
            if uid in victims:
                victims.discard(uid)
                self._release(preemptor)

    def _release(self, preemptor: str, *, again: bool = False) -> None:
        """Let the preemptor go once its evictions are over and shown. It waits parked, with
        the filters that rejected it, until an event may help it, as kube-scheduler's: its
        DefaultPreemption PreEnqueue lets the pod through then, but moves nothing, and tried
        now the pod would only find its victims terminating. With ``again`` it is decided
        again as soon as it is its turn."""
        if preemptor in self._evicting or self._preempting.get(preemptor):
            return
        self._preempting.pop(preemptor, None)
        entry = self.queue.get(preemptor)
        if entry is None or entry.where is not Where.GATED:
            return
        if again:
            self._enqueue(entry.pod)
        else:
            self.queue.unschedulable(
                preemptor,
                entry.last_failure,
                self.clock.monotonic(),
                entry.rejected_by,
                entry.waits_on,
            )

    def _tell_preemption(
        self, pod: PodView, policy: CompiledPolicy, preemption: Preemption
    ) -> None:
        """A DryRun policy's preemption: told, evicting and nominating nothing."""
        self.events.event(
            pod,
            NORMAL,
            "DryRunPreempted",
            f"SchedulingPolicy {policy.name} (DryRun) would evict {_victims(preemption)} on "
            f"{preemption.node} to make room for {pod.key}"
            + (f": {preemption.why}" if preemption.why else "")
            + "; nothing was evicted",
            "Preempting",
        )

    async def _bind(
        self,
        pod: PodView,
        decision: Decision,
        policy: CompiledPolicy,
        *,
        states: CycleState,
        attempts: int,
        started: float,
    ) -> None:
        """The binding cycle: pre-bind, bind, post-bind, and report; ``attempts`` and
        ``started`` (the attempt's start) are for metrics."""
        node = str(decision.node)
        pre_binds = policy.extensions.pre_bind
        if any(
            _guarded(plugin, "PreBindPreFlight", plugin.pre_flight, states.read(plugin), pod, node)
            is True
            for plugin in pre_binds
        ):
            if pod.nominated_node_name != node:
                # v1.35+ (NominatedNodeNameForExpectation): where the pod is going, told before
                # a PreBind that waits; the API server clears it when the pod is bound.
                self._conditions.nominate(pod, node)
            binding = self._pre_binding[pod.uid] = _PreBinding()
            try:
                refusal = await self._pre_bind(pod, node, policy, states, binding)
            finally:
                del self._pre_binding[pod.uid]
        else:
            refusal = await self._pre_bind(pod, node, policy, states, None)
        if refusal is not None:
            self._undo(pod, policy, states, node)
            self._failed(pod, policy, started, refusal, "Binding")
            self._wake.set()
            return
        async with self._bind_slots:
            called = self.clock.monotonic()
            result = await self._binder.bind(pod, node)
            self.metrics.bind(result.outcome.value, self.clock.monotonic() - called)
        if result.outcome is Outcome.BOUND:
            for post in policy.extensions.post_bind:
                _guarded(post, "PostBind", post.post_bind, states.read(post), pod, node)
            self.metrics.attempt(SCHEDULED, policy.name, self.clock.monotonic() - started)
            self.metrics.pod_scheduled(attempts)
            self.queue.delete(pod.uid)
            self.status.record(policy.name, decision, dry_run=False)
            self.events.event(
                pod,
                NORMAL,
                "Scheduled",
                f"Successfully assigned {pod.key} to {node} "
                f"(SchedulingPolicy {policy.name}, score {decision.score})",
                "Binding",
            )
        else:
            self._undo(pod, policy, states, node)
            # What the watch has confirmed stays counted after the undo: the pod is assigned
            # (by us before a restart, or by another scheduler). A 409 alone does not say so:
            # the API server answers 409 for other failures too, an etcd error among them.
            if result.outcome is Outcome.GONE or self.cache.node_of(pod.uid) is not None:
                logger.info("not binding %s: %s", pod.key, result.message)
                self.queue.delete(pod.uid)
                # Not a failure of ours, but not a schedule either: kube-scheduler's error too.
                self.metrics.attempt(ERROR, policy.name, self.clock.monotonic() - started)
            else:
                logger.warning("binding %s to %s failed: %s", pod.key, node, result.message)
                message = f"Binding rejected: {result.message}"
                self._failed(pod, policy, started, message, "Binding")
        self._wake.set()

    async def _pre_bind(
        self,
        pod: PodView,
        node: str,
        policy: CompiledPolicy,
        states: CycleState,
        binding: _PreBinding | None,
    ) -> str | None:
        """Run the PreBind plugins in order: the first refusal, or none. With ``binding``, a
        preemption may cancel them (:meth:`_cancel_pre_bind`), also after the last has
        finished and before the bind, as kube-scheduler's ``MarkPrebound`` lets it."""
        for plugin in policy.extensions.pre_bind:
            call = plugin.pre_bind(states.read(plugin), pod, node, self._objects)
            try:
                refusal = await (call if binding is None else binding.run(call))
            except _PreemptedError as cancelled:
                return f'running PreBind plugin "{plugin.name}": {cancelled}'
            except Exception as error:
                refusal = _plugin_error(plugin, "PreBind", error)
            if refusal is not None:
                return refusal
        return binding.finish() if binding is not None else None

    async def drain(self) -> None:
        """Let running binding cycles and evictions finish and report, and the events be
        posted."""
        if self._binds or self._evictions:
            await asyncio.gather(*self._binds, *self._evictions, return_exceptions=True)
        await self.events.drain()


class _PreemptedError(Exception):
    """A preemption cancelled the binding cycle; the message says by whom."""


class _PreBinding:
    """A binding cycle waiting in its PreBind plugins, which a preemption may cancel until the
    bind starts (kube-scheduler's ``podInPreBind``)."""

    def __init__(self) -> None:
        self._cancelled = asyncio.Event()
        self._reason = ""
        self._finished = False

    def cancel(self, reason: str) -> bool:
        """Cancel the cycle, unless its PreBind plugins are over: whether it is cancelled."""
        if self._finished:
            return False
        if not self._cancelled.is_set():
            self._reason = reason
            self._cancelled.set()
        return True

    async def run(self, call: Awaitable[T]) -> T:
        """Await ``call``; raise :class:`_PreemptedError` (and cancel it) if the cycle is cancelled
        first."""
        task = asyncio.ensure_future(call)
        cancelled = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait((task, cancelled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
        if self._cancelled.is_set():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise _PreemptedError(self._reason)
        return task.result()

    def finish(self) -> str | None:
        """The PreBind plugins are over: the reason if the cycle was cancelled meanwhile, else
        none, and it can be cancelled no more."""
        if self._cancelled.is_set():
            return self._reason
        self._finished = True
        return None


def _plugin_error(plugin: object, point: str, error: Exception) -> str:
    """Log a plugin's exception and say it as kube-scheduler says a plugin's error status."""
    name = getattr(plugin, "name", type(plugin).__name__)
    logger.error("%s plugin %s raised", point, name, exc_info=error)
    return f'running {point} plugin "{name}": {error}'


def _guarded(plugin: object, point: str, call: Callable[..., T], *args: Any) -> T | str:
    """``call(*args)`` of ``plugin`` at extension point ``point``; if it raises, the error as
    :func:`_plugin_error` says it, which the caller takes as the plugin's refusal."""
    try:
        return call(*args)
    except Exception as error:
        return _plugin_error(plugin, point, error)


def _nominated_to(pod: PodView, node: str) -> PodView:
    """``pod`` as its status will say once its ``nominatedNodeName`` is ``node`` ("": none)."""
    status = {k: v for k, v in (pod.raw.get("status") or {}).items() if k != "nominatedNodeName"}
    if node:
        status["nominatedNodeName"] = node
    return PodView({**pod.raw, "status": status})


def _victims(preemption: Preemption) -> str:
    """The victims for an event: the first :data:`VICTIMS_TOLD` by name, the others counted,
    and how many of them a PodDisruptionBudget protects."""
    names = [victim.key for victim in preemption.victims[:VICTIMS_TOLD]]
    more = len(preemption.victims) - len(names)
    told = ", ".join(names) + (f" and {more} more" if more > 0 else "")
    if preemption.pdb_violations:
        told += f" ({preemption.pdb_violations} against a PodDisruptionBudget)"
    return told
