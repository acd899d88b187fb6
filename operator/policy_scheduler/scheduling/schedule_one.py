"""The scheduling cycle and the binding cycle of one pod (kube-scheduler's
pkg/scheduler/schedule_one.go): the decision, post-filters when no node fits, reserve and
permit; then, in a task of its own, pre-bind, bind and post-bind, and unreserve on failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any

from policy_scheduler.framework.cycle_state import CycleState
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import PostFilterResult, Preemption, StatusError
from policy_scheduler.framework.types import NO_NOMINATED, Cycle, NominatedPods
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import CompiledPolicy, Mode
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling.core import T, guarded, plugin_error
from policy_scheduler.scheduling.ports import (
    ERROR,
    NORMAL,
    SCHEDULED,
    UNSCHEDULABLE,
    WARNING,
    Outcome,
)
from policy_scheduler.scheduling.preemption import Preemptor, told_victims
from policy_scheduler.scheduling.queue import QueuedPod

logger = logging.getLogger(__name__)


class PreemptedError(Exception):
    """A preemption cancelled the binding cycle; the message says by whom."""


class PreBinding:
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
        """Await ``call``; raise :class:`PreemptedError` (and cancel it) if the cycle is cancelled
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
            raise PreemptedError(self._reason)
        return task.result()

    def finish(self) -> str | None:
        """The PreBind plugins are over: the reason if the cycle was cancelled meanwhile, else
        none, and it can be cancelled no more."""
        if self._cancelled.is_set():
            return self._reason
        self._finished = True
        return None


class ScheduleOne(Preemptor):
    """The scheduling cycle and the binding cycle of one pod (kube-scheduler's schedule_one.go)."""

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
        except StatusError as error:  # a plugin's Error status, in kube's words
            self.metrics.algorithm(self.clock.monotonic() - started)
            self._failed(pod, policy, started, str(error), "Scheduling")
            return
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
                        plugin_error(plugin, "PostFilter", error),
                        "Scheduling",
                    )
                    return
                waits_on = waits_on or result.waits_on
                clears = clears or result.clears_nomination
                if policy.mode is not Mode.DRY_RUN and (result.writes or result.deletes):
                    self._background(self._write(plugin.name, result), self._writes)
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
                f"{decision.node} ({decision.chosen_by}); nothing was bound",
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
        refusal = self._assume_and_reserve(entry.pod, policy, decision, states)
        if refusal is not None:
            self._failed(entry.pod, policy, started, refusal, "Scheduling")
            return
        self._start_binding(entry, policy, decision, states, started)

    def _assume_and_reserve(
        self, pod: PodView, policy: CompiledPolicy, decision: Decision, states: CycleState
    ) -> str | None:
        """Assume the pod on the decision's node, reserve and permit: the first refusal, with
        everything undone, or None."""
        node = str(decision.node)
        self.cache.assume(pod, node)
        refusal = None
        for plugin in policy.extensions.reserve:
            refusal = guarded(plugin, "Reserve", plugin.reserve, states.read(plugin), pod, node)
            if refusal is not None:
                break
        else:
            for permit in policy.extensions.permit:
                refusal = guarded(permit, "Permit", permit.permit, states.read(permit), pod, node)
                if refusal is not None:
                    break
        if refusal is not None:
            self._undo(pod, policy, states, node)
        return refusal

    def _start_binding(
        self,
        entry: QueuedPod,
        policy: CompiledPolicy,
        decision: Decision,
        states: CycleState,
        started: float,
        *,
        record: bool = True,
    ) -> None:
        """The binding cycle of a reserved pod, in a task (``record``: its decision goes to the
        policy's history once bound; it is counted either way)."""
        self._background(
            self._bind(
                entry.pod,
                decision,
                policy,
                states=states,
                attempts=entry.attempts,
                started=started,
                record=record,
            ),
            self._binds,
        )

    @staticmethod
    def _background(call: Coroutine[Any, Any, None], tasks: set[asyncio.Task[None]]) -> None:
        """Run ``call`` as a task of the loop's, which ``tasks`` keeps until it ends."""
        task = asyncio.get_running_loop().create_task(call)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _write(self, plugin: str, result: PostFilterResult) -> None:
        """A post-filter's writes and deletions, in the background, one after the other (a
        claim's finalizer goes before the claim)."""
        for ref, patch in result.writes:
            await self._logged(plugin, "PostFilter", self._objects.patch(ref, patch))
        for ref in result.deletes:
            await self._logged(plugin, "PostFilter", self._objects.delete(ref))

    @staticmethod
    async def _logged(plugin: str, point: str, call: Awaitable[object]) -> None:
        """Await a plugin's background write; its failure is logged, as kube logs it."""
        try:
            await call
        except Exception as error:
            logger.warning("%s plugin %s: write failed: %s", point, plugin, error)

    def _undo(self, pod: PodView, policy: CompiledPolicy, states: CycleState, node: str) -> None:
        """Unreserve and forget the assumed pod. Every Reserve plugin is told, in reverse order,
        also those whose reserve did not run or failed, as kube-scheduler does: unreserve must
        cope with what it did not reserve."""
        for plugin in reversed(policy.extensions.reserve):
            guarded(plugin, "Unreserve", plugin.unreserve, states.read(plugin), pod, node)
            writes = plugin.unreserve_writes(states.read(plugin), pod, node, self._objects)
            self._background(self._logged(plugin.name, "Unreserve", writes), self._writes)
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
            story += f"\n{preemption.node}: {told_victims(preemption)}"
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

    async def _bind(
        self,
        pod: PodView,
        decision: Decision,
        policy: CompiledPolicy,
        *,
        states: CycleState,
        attempts: int,
        started: float,
        record: bool = True,
    ) -> None:
        """The binding cycle: pre-bind, bind, post-bind, and report; ``attempts`` and
        ``started`` (the attempt's start) are for metrics; with ``record``, the decision goes to
        the policy's history once the pod is bound (it is counted either way)."""
        node = str(decision.node)
        pre_binds = policy.extensions.pre_bind
        if any(
            guarded(plugin, "PreBindPreFlight", plugin.pre_flight, states.read(plugin), pod, node)
            is True
            for plugin in pre_binds
        ):
            if pod.nominated_node_name != node:
                # v1.35+ (NominatedNodeNameForExpectation): where the pod is going, told before
                # a PreBind that waits; the API server clears it when the pod is bound.
                self._conditions.nominate(pod, node)
            binding = self._pre_binding[pod.uid] = PreBinding()
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
                guarded(post, "PostBind", post.post_bind, states.read(post), pod, node)
            self.metrics.attempt(SCHEDULED, policy.name, self.clock.monotonic() - started)
            self.metrics.pod_scheduled(attempts)
            self.queue.delete(pod.uid)
            self.status.record(policy.name, decision, dry_run=False, history=record)
            self.events.event(
                pod,
                NORMAL,
                "Scheduled",
                f"Successfully assigned {pod.key} to {node} "
                f"(SchedulingPolicy {policy.name}, {decision.chosen_by})",
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
        binding: PreBinding | None,
    ) -> str | None:
        """Run the PreBind plugins in order: the first refusal, or none. With ``binding``, a
        preemption may cancel them (:meth:`_cancel_pre_bind`), also after the last has
        finished and before the bind, as kube-scheduler's ``MarkPrebound`` lets it."""
        for plugin in policy.extensions.pre_bind:
            call = plugin.pre_bind(states.read(plugin), pod, node, self._objects)
            try:
                refusal = await (call if binding is None else binding.run(call))
            except PreemptedError as cancelled:
                return f'running PreBind plugin "{plugin.name}": {cancelled}'
            except Exception as error:
                refusal = plugin_error(plugin, "PreBind", error)
            if refusal is not None:
                return refusal
        return binding.finish() if binding is not None else None
