"""The scheduler: the cache, the queue and the policies, fed by watch events, and the one loop
that turns pending pods into bindings.

The loop pops a pod, asks its policy's pipeline for a decision against the cache, assumes the pod
onto the chosen node, and hands the bind to a background task: it never waits for the network, and
the next decision already counts the pod. Watch events confirm or correct what the loop assumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from policy_scheduler.cache import Cache
from policy_scheduler.kube.binder import Outcome, bind
from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.events import NORMAL, WARNING, Recorder
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.status import Condition, StatusWriter
from policy_scheduler.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, Metrics, SchedulerState
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.pipeline import Decision
from policy_scheduler.policy.compiler import CompiledPolicy, Mode
from policy_scheduler.queue import QueuedPod, SchedulingQueue, Where
from policy_scheduler.serving import PolicyEntry, PolicyTable

logger = logging.getLogger(__name__)

BIND_CONCURRENCY = 64

# kube-scheduler's informer drops finished pods too. Assigned pods of every scheduler must be
# seen (they use node resources), so the selector cannot narrow the watch to pending pods of our
# scheduler names: a field selector cannot OR several values.
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def _scheduling_fields(node: NodeView) -> tuple[Any, ...]:
    """What of a node can change a decision; kubelet heartbeats change none of it."""
    return (node.allocatable, dict(node.labels), node.taints, node.unschedulable)


class Scheduler:
    def __init__(
        self,
        kube: Kube,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics | None = None,
    ) -> None:
        self.cache = Cache()
        self.queue = SchedulingQueue()
        self.policies = PolicyTable()
        self.recorder = Recorder(kube)
        self.metrics = metrics if metrics is not None else Metrics()
        self.metrics.read_state(self._metrics_state)
        self.status = StatusWriter(kube, self.unschedulable_counts, metrics=self.metrics)
        self._kube = kube
        self._rng = random.Random(seed)
        self._clock = clock
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._bind_slots = asyncio.Semaphore(BIND_CONCURRENCY)
        self._binds: set[asyncio.Task[None]] = set()
        # DryRun pods stay pending; once decided they are not decided again in this process.
        self._dry_run_done: set[str] = set()
        # Pending pods for scheduler names no policy has claimed (yet: at start-up pods are
        # listed before policies); a policy that claims their name takes them.
        self._unclaimed: dict[str, PodView] = {}

    # --- feeds from the watches ---------------------------------------------------------------

    def node_changed(self, raw: Mapping[str, Any]) -> None:
        name = str((raw.get("metadata") or {}).get("name", ""))
        before = self.cache.snapshot.get(name)
        old = _scheduling_fields(before.node) if before is not None else None
        info = self.cache.set_node(raw)
        if old != _scheduling_fields(info.node):
            self._cluster_changed()

    def node_deleted(self, raw: Mapping[str, Any]) -> None:
        self.cache.delete_node(str((raw.get("metadata") or {}).get("name", "")))

    def pod_changed(self, raw: Mapping[str, Any]) -> None:
        pod = PodView(raw)
        if pod.node_name:
            self.cache.set_pod(pod)
            self.queue.delete(pod.uid)
            self._unclaimed.pop(pod.uid, None)
            return
        # A pending view of a pod the watch has already shown bound is stale; keep the bound one.
        if self.cache.node_of(pod.uid) is not None and not self.cache.is_assumed(pod.uid):
            return
        if pod.uid in self._dry_run_done or pod.deleting:
            return
        self._enqueue(pod)

    def _enqueue(self, pod: PodView) -> None:
        if self.policies.route(pod.scheduler_name).ours:
            self._unclaimed.pop(pod.uid, None)
            self.queue.add(pod, self._clock())
            self._wake.set()
        else:
            self._unclaimed[pod.uid] = pod

    def pod_deleted(self, raw: Mapping[str, Any]) -> None:
        pod = PodView(raw)
        counted = self.cache.node_of(pod.uid) is not None
        self.cache.delete_pod(pod.uid)
        self.queue.delete(pod.uid)
        self._dry_run_done.discard(pod.uid)
        self._unclaimed.pop(pod.uid, None)
        if counted:
            self._cluster_changed()

    def policy_changed(self, raw: Mapping[str, Any]) -> None:
        entry, changed = self.policies.apply(raw)
        history = entry.compiled.history if entry.compiled else 0
        self.status.adopt(entry.name, raw.get("status") or {}, history)
        self._update_conditions()
        if changed:
            for pod in list(self._unclaimed.values()):
                self._enqueue(pod)
            self._cluster_changed()

    def policy_deleted(self, name: str) -> None:
        self.policies.remove(name)
        self.status.forget(name)
        self._update_conditions()
        self._cluster_changed()

    async def watch(self) -> None:
        """Keep the cache and the queue current from the API server, leading or not (a standby
        that takes over starts deciding at once). Decisions wait for the first listing of both
        nodes and pods, so none is made on a partial picture."""
        informers = [
            Informer(self._kube, "/api/v1/nodes", self.node_changed, self.node_deleted),
            Informer(
                self._kube,
                "/api/v1/pods",
                self.pod_changed,
                self.pod_deleted,
                field_selector=UNFINISHED_PODS,
            ),
        ]
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(i.run(), name=f"watch {i.collection}") for i in informers]
        try:
            for informer in informers:
                await informer.synced.wait()
            self._ready.set()
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _cluster_changed(self) -> None:
        self.queue.cluster_changed(self._clock())
        self._wake.set()

    def _update_conditions(self) -> None:
        for entry in self.policies:
            self.status.set_conditions(
                entry.name, entry.generation, entry.scheduler_name, self._conditions(entry)
            )

    def _conditions(self, entry: PolicyEntry) -> list[Condition]:
        owner = self.policies.owner(entry.scheduler_name)
        valid = Condition("Valid", True, "Compiled")
        if entry.compiled is None:
            valid = Condition("Valid", False, "InvalidPolicy", "; ".join(entry.errors))
        conflict = Condition("Conflict", False, "NoConflict")
        if owner is not None and owner.name != entry.name:
            conflict = Condition(
                "Conflict",
                True,
                "SchedulerNameTaken",
                f"schedulerName {entry.scheduler_name} is served by SchedulingPolicy "
                f"{owner.name}, which is older",
            )
        if not valid.status:
            ready = Condition("Ready", False, "InvalidPolicy", "the policy does not compile")
        elif conflict.status:
            ready = Condition("Ready", False, "Conflict", conflict.message)
        else:
            ready = Condition(
                "Ready",
                True,
                "Serving",
                f"scheduling pods with schedulerName {entry.scheduler_name}",
            )
        return [ready, valid, conflict]

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
        await self._ready.wait()
        while True:
            now = self._clock()
            entry = self.queue.pop(now)
            if entry is None:
                wakeup = self.queue.next_wakeup(now)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._wake.wait(), None if wakeup is None else max(wakeup - now, 0.0)
                    )
                continue
            self.schedule_one(entry, now)
            # Let the watches run between decisions: they confirm binds and bring new pods.
            await asyncio.sleep(0)

    def schedule_one(self, entry: QueuedPod, now: float) -> None:
        pod = entry.pod
        route = self.policies.route(pod.scheduler_name)
        if route.policy is None:
            if route.waiting is None:
                self.queue.delete(pod.uid)
            else:
                self._wait(entry, route.waiting, now, reason="NoSchedulingPolicy", decision=None)
            return
        policy = route.policy
        started = self._clock()
        try:
            decision = policy.pipeline.decide(pod, self.cache.snapshot, self._rng)
        except Exception as error:  # a plugin's bug must cost one pod a retry, not the loop
            self.metrics.algorithm(self._clock() - started)
            logger.exception("policy %s failed on pod %s", policy.name, pod.key)
            self.queue.retry_later(pod.uid, now)
            self.recorder.event(
                pod, WARNING, "FailedScheduling", f"internal error: {error}", "Scheduling"
            )
            self.metrics.attempt(ERROR, policy.name, self._clock() - started)
            return
        self.metrics.algorithm(self._clock() - started)
        if decision.node is None:
            self._wait(entry, decision.message, now, "FailedScheduling", (policy, decision))
            self.metrics.attempt(UNSCHEDULABLE, policy.name, self._clock() - started)
        elif policy.mode is Mode.DRY_RUN:
            self.queue.delete(pod.uid)
            self._dry_run_done.add(pod.uid)
            self.status.record(policy.name, decision, dry_run=True)
            self.recorder.event(
                pod,
                NORMAL,
                "DryRunScheduled",
                f"SchedulingPolicy {policy.name} (DryRun) would assign {pod.key} to "
                f"{decision.node} (score {decision.score}); nothing was bound",
                "Scheduling",
            )
        else:
            self.cache.assume(pod, decision.node)
            task = asyncio.get_running_loop().create_task(
                self._bind(pod, decision, policy, entry.attempts, started)
            )
            self._binds.add(task)
            task.add_done_callback(self._binds.discard)

    def _wait(
        self,
        entry: QueuedPod,
        message: str,
        now: float,
        reason: str,
        decision: tuple[CompiledPolicy, Decision] | None,
    ) -> None:
        """Park an unschedulable pod; tell its story once per distinct message."""
        repeated = entry.last_failure == message
        self.queue.unschedulable(entry.pod.uid, message, now)
        if repeated:
            return
        self.recorder.event(entry.pod, WARNING, reason, message, "Scheduling")
        if decision is not None:
            policy, result = decision
            self.recorder.unschedulable(entry.pod, message)
            self.status.record(policy.name, result, dry_run=policy.mode is Mode.DRY_RUN)

    async def _bind(
        self,
        pod: PodView,
        decision: Decision,
        policy: CompiledPolicy,
        attempts: int,
        started: float,
    ) -> None:
        """Bind and report; ``attempts`` and ``started`` (the attempt's start) are for metrics."""
        node = str(decision.node)
        async with self._bind_slots:
            called = self._clock()
            result = await bind(self._kube, pod, node)
            self.metrics.bind(result.outcome.value, self._clock() - called)
        if result.outcome is Outcome.BOUND:
            self.metrics.attempt(SCHEDULED, policy.name, self._clock() - started)
            self.metrics.pod_scheduled(attempts)
            self.queue.delete(pod.uid)
            self.status.record(policy.name, decision, dry_run=False)
            self.recorder.event(
                pod,
                NORMAL,
                "Scheduled",
                f"Successfully assigned {pod.key} to {node} "
                f"(SchedulingPolicy {policy.name}, score {decision.score})",
                "Binding",
            )
        elif result.outcome is Outcome.FAILED:
            logger.warning("binding %s to %s failed: %s", pod.key, node, result.message)
            self.cache.forget(pod.uid)
            self.queue.retry_later(pod.uid, self._clock())
            self.recorder.event(
                pod, WARNING, "FailedScheduling", f"Binding rejected: {result.message}", "Binding"
            )
            self.metrics.attempt(ERROR, policy.name, self._clock() - started)
        else:
            # Bound by someone else, or deleted: the watch brings the truth; nothing to retry.
            logger.info("not binding %s: %s", pod.key, result.message)
            self.cache.forget(pod.uid)
            self.queue.delete(pod.uid)
            # Not a failure of ours, but not a schedule either: kube-scheduler's error too.
            self.metrics.attempt(ERROR, policy.name, self._clock() - started)
        self._wake.set()

    async def serve(self, election: LeaderElection | None, on_lost: Callable[[], None]) -> None:
        """Decide and write status while this process leads (always, without an election).

        Until then the watches keep the cache and the queue current, so a standby that takes
        over starts deciding at once. Losing the Lease stops the work and calls ``on_lost``.
        """
        if election is not None:
            await election.acquire()
        loop = asyncio.get_running_loop()
        work = [
            loop.create_task(self.run(), name="scheduling loop"),
            loop.create_task(self.status.run(), name="status writer"),
        ]
        try:
            if election is None:
                await asyncio.gather(*work)
            else:
                await election.hold()
                on_lost()
        finally:
            for task in work:
                task.cancel()
            await asyncio.gather(*work, return_exceptions=True)

    async def shutdown(self, election: LeaderElection | None) -> None:
        """Let running binds finish and report, write the last status, give up the Lease."""
        if self._binds:
            await asyncio.gather(*self._binds, return_exceptions=True)
        await self.recorder.drain()
        if election is None or election.leading:
            await self.status.flush()
        if election is not None:
            await election.release()
        await self._kube.close()
