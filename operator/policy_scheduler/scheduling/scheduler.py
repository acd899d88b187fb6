"""The scheduling loop: kube-scheduler's ``scheduleOne`` with its extension points, fed by watch
events and talking to the world only through :mod:`~policy_scheduler.scheduling.ports`.

One pod at a time, in queue order, :meth:`Scheduler.schedule_one` runs the scheduling cycle
(:mod:`.schedule_one`):

1. **pre-enqueue** (before the pod is queued at all): scheduling gates and the policy's
   PreEnqueue plugins; a held pod waits as ``gated`` and costs nothing until it changes;
2. **filter** and **score** (the policy's
   :class:`~policy_scheduler.runtime.schedule_one.Pipeline`, with pods nominated to a node
   counted against it while that node is filtered:
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

from policy_scheduler.scheduling.eventhandlers import EventHandlers
from policy_scheduler.scheduling.group_cycle import GroupCycle

HEARTBEAT = 5.0
"""Seconds the loop may wait for work before it stamps its heartbeat anyway."""


class Scheduler(EventHandlers, GroupCycle):
    """The scheduler: its state (:class:`~.core.SchedulerCore`), the watches' feeds
    (:class:`~.eventhandlers.EventHandlers`), the cycles (:class:`~.schedule_one.ScheduleOne`,
    with a gang's members decided together: :class:`~.group_cycle.GroupCycle`)
    and preemption (:class:`~.preemption.Preemptor`), and the loop that turns pending pods
    into bindings.

    :meth:`run` and :meth:`StatusWriter.run
    <policy_scheduler.scheduling.status.StatusWriter.run>` do the work while leading.
    """

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

    async def drain(self) -> None:
        """Let running binding cycles and evictions finish and report, and the events be
        posted."""
        if self._binds or self._evictions or self._writes:
            await asyncio.gather(
                *self._binds, *self._evictions, *self._writes, return_exceptions=True
            )
        await self.events.drain()
