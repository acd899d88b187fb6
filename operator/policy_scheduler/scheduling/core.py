"""The scheduler's state and what every part of the scheduling loop shares (kube-scheduler's
Scheduler struct, pkg/scheduler/scheduler.go): the cache, queue, policies, nominated pods and
statuses; queueing a pod through the pre-enqueue plugins; moving the parked pods a cluster
event may help (queueing hints); and how a plugin's exception is told.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import BadInput, ObjectWriter, PreEnqueue
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.podgroups import GroupKey
from policy_scheduler.plugins.scheduling_gates import SchedulingGates
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling.cache import SchedulerCache
from policy_scheduler.scheduling.nominations import Nominations
from policy_scheduler.scheduling.policies import PolicyTable, Route
from policy_scheduler.scheduling.ports import (
    WARNING,
    Binder,
    Clock,
    EventRecorder,
    Evictor,
    MetricsSink,
    NoMetrics,
    PodConditions,
    SchedulerState,
    StatusStore,
    SystemClock,
    Watches,
)
from policy_scheduler.scheduling.queue import NO_EVENTS, QueuedPod, SchedulingQueue, Where
from policy_scheduler.scheduling.status import StatusWriter
from policy_scheduler.scheduling.waiting import Waiting, WaitingBook

if TYPE_CHECKING:
    from policy_scheduler.scheduling.schedule_one import PreBinding

logger = logging.getLogger(__name__)


BIND_CONCURRENCY = 64
"""Bind requests in flight at once. A binding cycle holds a slot only for its bind request: one
waiting in PreBind (VolumeBinding polling for its PVs) holds none, as kube-scheduler runs each
binding cycle on its own."""


_ALWAYS: tuple[PreEnqueue, ...] = (SchedulingGates(),)
"""Pre-enqueue plugins every policy runs, as kube-scheduler enables them in every profile."""


PREEMPTION_UNDER_WAY = "waiting for the preemption for this pod to be finished"
"""Why a preemptor waits, out of the active queue, while its victims are being evicted (kube's
DefaultPreemption PreEnqueue, with asynchronous preemption)."""


T = TypeVar("T")


def plugin_error(plugin: object, point: str, error: Exception) -> str:
    """Log a plugin's exception and say it as kube-scheduler says a plugin's error status."""
    name = getattr(plugin, "name", type(plugin).__name__)
    logger.error("%s plugin %s raised", point, name, exc_info=error)
    return f'running {point} plugin "{name}": {error}'


def guarded(plugin: object, point: str, call: Callable[..., T], *args: Any) -> T | str:
    """``call(*args)`` of ``plugin`` at extension point ``point``; if it raises, the error as
    :func:`plugin_error` says it, which the caller takes as the plugin's refusal."""
    try:
        return call(*args)
    except Exception as error:
        return plugin_error(plugin, point, error)


def _pre_enqueue_plugins(policy: CompiledPolicy | None) -> tuple[PreEnqueue, ...]:
    """The pre-enqueue plugins a pod of ``policy`` passes, in order."""
    return _ALWAYS if policy is None else _ALWAYS + policy.extensions.pre_enqueue


class SchedulerCore:
    """The scheduler's state (cache, queue, policies, nominated pods, policy statuses) and what
    every part of the loop shares: queueing a pod through the pre-enqueue plugins, and moving
    the parked pods a cluster event may help. Its methods for the watches, the cycles and
    preemption are in the mixins :class:`~.scheduler.Scheduler` is made of.
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
        watches: Watches | None = None,
    ) -> None:
        """``on_decision`` is told every decision as it is made (``simulate`` collects them).
        Without ``watches``, every kind's objects are at hand whatever the policies (``simulate``
        feeds a whole cluster dump)."""
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
        # Plugins' writes made in the background (a claim deallocated, a reservation undone).
        self._writes: set[asyncio.Task[None]] = set()
        # DryRun pods stay pending; once decided they wait here, with the policy that decided
        # them, until the policy serving them changes.
        self._dry_run_done: dict[str, tuple[PodView, CompiledPolicy]] = {}
        # Pending pods for scheduler names no policy has claimed (yet: at start-up pods are
        # listed before policies); a policy that claims their name takes them.
        self._unclaimed: dict[str, PodView] = {}
        # Pending pods of any scheduler that a preemption nominated to a node, by uid and node.
        self._nominated = Nominations()
        # The parked pods waiting for their victims, as the last deletion left them.
        self._waiting = WaitingBook()
        # The watches that have not shown the cluster since they started or last broke off.
        self._unconfirmed: set[str] = set()
        self._watches = watches
        # The kinds, of those not always watched, the served policies read, as the watches
        # were last told (None: not yet, before the policies are listed).
        self._watched: frozenset[str] | None = None
        # Preemptors, by uid, with their victims that the watch has not shown terminating or
        # gone yet; those whose evictions are under way; the tasks evicting. Such a pod waits
        # gated until its evictions are over and shown, so that a retry meanwhile does not
        # choose its victims again; then parked until an event helps it. An eviction that
        # failed lets it go at once.
        self._preempting: dict[str, set[str]] = {}
        self._evicting: set[str] = set()
        self._evictions: set[asyncio.Task[None]] = set()
        # Gangs whose passes fail: since when (monotonic), for their timeouts, and why the last
        # failure kept in the policy's status said, not to keep the same again at each retry.
        self._groups_failing: dict[GroupKey, tuple[float, str]] = {}
        # Pods whose binding cycle waits in a PreBind with work to do, by uid: a preemption
        # cancels such a victim's binding cycle instead of deleting it (kubernetes#135502).
        self._pre_binding: dict[str, PreBinding] = {}

    def _enqueue(self, pod: PodView, moves: bool = True) -> None:
        route = self.policies.route(pod.scheduler_name)
        if not route.ours:
            self._unclaimed[pod.uid] = pod
            return
        self._unclaimed.pop(pod.uid, None)
        held = self._pre_enqueue(pod, route)
        if held is not None:
            by, reason = held
            logger.debug("%s is not queued: %s", pod.key, reason)
            told = self.queue.get(pod.uid)
            self.queue.gate(pod, by.name if by else "", by.asks_again_on if by else NO_EVENTS)
            if isinstance(reason, BadInput) and (told is None or told.last_failure != reason):
                self._tell_held(pod, reason)
            # Otherwise, as kube-scheduler: no event, no condition (the API server set
            # SchedulingGated for a pod with gates).
            return
        self.queue.add(pod, self.clock.monotonic(), moves)
        self._wake.set()

    def _pre_enqueue(self, pod: PodView, route: Route) -> tuple[PreEnqueue | None, str] | None:
        """Which pre-enqueue plugin holds ``pod`` out of the active queue, and why (no plugin
        while its preemption is under way); None when none does."""
        if pod.uid in self._preempting:
            return None, PREEMPTION_UNDER_WAY
        for plugin in _pre_enqueue_plugins(route.policy):
            reason = guarded(plugin, "PreEnqueue", plugin.pre_enqueue, pod, self.cache.snapshot)
            if reason is not None:
                return plugin, reason
        return None

    def _tell_held(self, pod: PodView, reason: str) -> None:
        """Tell a pod held for bad input why, once: its event and condition."""
        entry = self.queue.get(pod.uid)
        if entry is not None:
            entry.last_failure = reason
        logger.warning("%s is held: %s", pod.key, reason)
        self.events.event(pod, WARNING, "FailedScheduling", reason, "Scheduling")
        self._conditions.unschedulable(pod, reason)

    def _ask_gated_again(self, event: ClusterEvent) -> None:
        """Queue again the gated pods that ``event`` may let through: those held by a
        pre-enqueue plugin that asks again on it, unless its hint rules the event out."""
        for entry in self.queue.gated(event.kind):
            plugins = _pre_enqueue_plugins(self.policies.route(entry.pod.scheduler_name).policy)
            plugin = next((p for p in plugins if p.name == entry.gated_by), None)
            if plugin is not None and plugin.pre_enqueue_hint(entry.pod, event):
                self._enqueue(entry.pod)

    def _forget_pending(self, uid: str) -> None:
        self.queue.delete(uid)
        self._unclaimed.pop(uid, None)
        self._dry_run_done.pop(uid, None)

    def _policies_changed(self) -> None:
        """A policy came, went or changed: pods it may now serve are queued, DryRun pods whose
        policy changed are decided again, and every parked pod is tried again."""
        for pod in list(self._unclaimed.values()):
            self._enqueue(pod)
        # The policy serving a gated pod may hold it no more, or another plugin may.
        for entry in self.queue.gated():
            self._enqueue(entry.pod)
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

        def policy_of(name: str) -> CompiledPolicy | None:
            if name not in serving:
                serving[name] = self.policies.route(name).policy
            return serving[name]

        waiting = asked = None
        if event.kind == EventKind.POD_DELETED:
            waiting = Waiting(self.cache, self._nominated, self._rng, event)
            asked = self._waiting.asked(waiting, self.queue, self.cache.touched(), policy_of)

        def helps(entry: QueuedPod) -> bool:
            policy = policy_of(entry.pod.scheduler_name)
            if waiting is not None and policy is not None and waiting.still(entry, policy):
                return False
            return self._helps(entry, policy, event)

        if self.queue.move(self.clock.monotonic(), helps, asked):
            self._wake.set()
        self._ask_gated_again(event)

    @staticmethod
    def _helps(entry: QueuedPod, policy: CompiledPolicy | None, event: ClusterEvent) -> bool:
        if policy is None:
            return False  # it waits for a policy, not for the cluster
        if not entry.rejected_by:
            # No filter said no: there was no node at all.
            return bool(event.kind & EventKind.NODE_ADDED)
        for name in entry.rejected_by:
            plugin = policy.pipeline.filter_named(name)
            if plugin is not None:
                if event.kind & (plugin.wakes_on | plugin.wakes_on_if_watched) and (
                    plugin.queueing_hint(entry.pod, event)
                ):
                    return True
                continue
            # A pre-enqueue plugin that also rejects in the cycle (a gang's pass): the events
            # it asks its held pods again on help the pods it rejected alike.
            held_by = next((p for p in policy.extensions.pre_enqueue if p.name == name), None)
            if held_by is None or (
                event.kind & held_by.asks_again_on and held_by.pre_enqueue_hint(entry.pod, event)
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
