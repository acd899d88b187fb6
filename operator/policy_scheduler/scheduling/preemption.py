"""Acting on a preemption, as kube-scheduler's prepareCandidate and nominating do
(pkg/scheduler/framework/preemption/preemption.go): each victim evicted (the
:class:`~.ports.Evictor` port; one whose binding cycle waits in a PreBind has that cycle
cancelled instead, in memory), the pods of lower priority nominated to that node nominated no
more, and the preemptor nominated to the node, held gated until its evictions are over and
shown, then parked until an event may help it (:mod:`~.waiting`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from policy_scheduler.framework.interface import Preemption
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.scheduling.core import (
    SchedulerCore,
)
from policy_scheduler.scheduling.ports import NORMAL, PreemptedBy
from policy_scheduler.scheduling.queue import Where

PREEMPTION_CONDITION_MESSAGE = "{}: preempting to accommodate a higher priority {}"
"""The message of a victim's ``DisruptionTarget`` condition, with the preemptor's scheduler name
and kind (``pod``, ``podgroup``), as kube-scheduler writes it (its preemption executor)."""


VICTIMS_TOLD = 10
"""How many victims an event names; the others are counted ("and 3 more")."""


def nominated_to(pod: PodView, node: str) -> PodView:
    """``pod`` as its status will say once its ``nominatedNodeName`` is ``node`` ("": none)."""
    status = {k: v for k, v in (pod.raw.get("status") or {}).items() if k != "nominatedNodeName"}
    if node:
        status["nominatedNodeName"] = node
    return PodView({**pod.raw, "status": status})


def told_victims(preemption: Preemption) -> str:
    """The victims for an event: the first :data:`VICTIMS_TOLD` by name, the others counted,
    and how many of them a PodDisruptionBudget protects."""
    names = [victim.key for victim in preemption.victims[:VICTIMS_TOLD]]
    more = len(preemption.victims) - len(names)
    told = ", ".join(names) + (f" and {more} more" if more > 0 else "")
    if preemption.pdb_violations:
        told += f" ({preemption.pdb_violations} against a PodDisruptionBudget)"
    return told


class Preemptor(SchedulerCore):
    """Acting on a preemption a post-filter found (kube-scheduler's preemption.go
    prepareCandidate): the victims evicted or their binding cycles cancelled, the nominations
    moved, and the preemptor held until its victims are gone.
    """

    def _preempt(
        self,
        pod: PodView,
        policy: CompiledPolicy,
        preemption: Preemption,
        preempted_by: str,
        now: float,
        *,
        group_uid: str = "",
    ) -> None:
        """Act on a preemption as kube-scheduler's ``prepareCandidate`` and nominating do: evict
        the victims (a victim waiting in a PreBind has its binding cycle cancelled instead, in
        memory), take the nomination of this operator's pods of lower priority nominated to
        the node (they may fit it no more: they are tried again), and nominate ``pod`` to it at
        once, so that it holds the room against pods of lower priority before the watch shows
        the nomination (the caller writes it, with the pod's PodScheduled condition). With
        ``group_uid``, the pod's group preempts, and the victims are told so."""
        node = preemption.node
        by = PreemptedBy("pod", pod.uid, node)
        if group_uid:
            by = PreemptedBy("podgroup", group_uid, "cluster")
        condition = PREEMPTION_CONDITION_MESSAGE.format(pod.scheduler_name, by.kind)
        victims = tuple(
            victim
            for victim in preemption.victims
            if not self._cancel_pre_bind(victim, by, preempted_by)
        )
        if victims:
            self._preempting[pod.uid] = {victim.uid for victim in victims}
            self._evicting.add(pod.uid)
            task = asyncio.get_running_loop().create_task(self._evict(pod, victims, by, condition))
            self._evictions.add(task)
            task.add_done_callback(self._evictions.discard)
        for other in self._nominated.on(node):
            # Only pods this operator schedules, as kube-scheduler clears only those its queue
            # holds: another scheduler's nomination is that scheduler's (and one of lower
            # priority holds no room against this pod anyway).
            if (
                other.uid != pod.uid
                and other.priority < pod.priority
                and self.policies.route(other.scheduler_name).ours
            ):
                del self._nominated[other.uid]
                self._conditions.nominate(other, "")
                # Its status change alone would not move it; kube-scheduler's does.
                if other.uid in self.queue:
                    self.queue.add(nominated_to(other, ""), now)
                    self._wake.set()
        self._nominated[pod.uid] = nominated_to(pod, node)
        if victims:
            self.queue.gate(self._nominated[pod.uid])
        self.events.event(
            pod,
            NORMAL,
            "Preempting",
            f"SchedulingPolicy {policy.name} nominated {pod.key} to {node} and evicts "
            f"{told_victims(preemption)} there: {preemption.why or 'room for it'}",
            "Preempting",
        )

    def _cancel_pre_bind(self, victim: PodView, by: PreemptedBy, preempted_by: str) -> bool:
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
            f"{by.event} (in kube-scheduler memory).",
            "Preempting",
        )
        return True

    async def _evict(
        self, pod: PodView, victims: Sequence[PodView], by: PreemptedBy, condition: str
    ) -> None:
        """Evict the victims at once; ``pod``, which waits gated meanwhile, is let go once each
        is evicted and the watch shows it terminating or gone (see :meth:`_release`), and is
        decided again at once when an eviction failed (it may then choose again) or a victim
        left while it was held (the deletion moved nothing then)."""
        evicted = False
        try:
            evicted = all(
                await asyncio.gather(
                    *(self._evictor.preempt(victim, pod, by, condition) for victim in victims)
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
            f"SchedulingPolicy {policy.name} (DryRun) would evict {told_victims(preemption)} on "
            f"{preemption.node} to make room for {pod.key}"
            + (f": {preemption.why}" if preemption.why else "")
            + "; nothing was evicted",
            "Preempting",
        )
