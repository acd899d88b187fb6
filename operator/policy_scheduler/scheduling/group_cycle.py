"""The group pass: a gang's pending members placed in one scheduling cycle, all or nothing
(kube-scheduler v1.37's pod group cycle, ``schedule_one_podgroup.go``, with its GangScheduling
plugin's PlacementFeasible).

When the loop pops a member of a gang (a pod of a policy with the GangScheduling plugin, whose
group is a gang: :func:`~policy_scheduler.plugins.gang_scheduling.gang_of`), it takes the group's
other pending members of that policy out of the queue and decides them one by one, in queue order,
on the snapshot: each member placed is assumed on its node and reserved (Reserve and Permit), so
that the next members see it. Members already assumed or bound count as placed. As kube's, the
pass stops as soon as the group cannot reach its minimum any more (placed, plus members left to
try, below it): ``minCount (8) cannot be satisfied: 5 scheduled, 0 remaining``.

- At least the minimum placed, one of them by this pass: each member placed goes on to its binding
  cycle; a member that fit nowhere is parked with its own reasons and joins the group later.
- Otherwise everything the pass reserved is undone in reverse order, so nothing stays held; a
  member that fit nowhere is parked with its own reasons, every other member with the group's
  (``pod group is unschedulable, minCount ...``, kube's words). Each is parked with the filters
  that rejected any member: an event that may help one moves them all back, and the next pass
  takes them together, each backing off as its attempts say.

Competing groups cannot deadlock: a pass holds nothing once it ends, and each group is placed
whole or not at all. A group not placed for longer than its timeout
(:meth:`~policy_scheduler.plugins.gang_scheduling.GangScheduling.timeout_of`, counted from the
first pass that failed) says so in its members' message and its status, and is still tried on
every event that may help it. A DryRun policy decides the group and undoes it, binding nothing.

Each pass writes the group's status as its API's own scheduler does
(:func:`~policy_scheduler.model.podgroups.status_patch`) and is kept in the policy's status as
one decision (:class:`~policy_scheduler.runtime.decision.GroupDecision`).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from policy_scheduler.framework.cycle_state import CycleState
from policy_scheduler.framework.interface import Preemption, StatusError
from policy_scheduler.model.podgroups import (
    GroupOutcome,
    PodGroup,
    group_key,
    status_patch,
    status_ref,
)
from policy_scheduler.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from policy_scheduler.plugins.dynamic_resources import GROUP_CLAIMS_RELEASED
from policy_scheduler.plugins.dynamic_resources import NAME as DYNAMIC_RESOURCES
from policy_scheduler.plugins.gang_scheduling import (
    NAME,
    NONE_FIT,
    GangScheduling,
    gang_of,
    place_in_turn,
)
from policy_scheduler.policy.compiler import CompiledPolicy, Mode
from policy_scheduler.runtime.decision import Decision, GroupDecision
from policy_scheduler.scheduling.group_preemption import (
    GROUP_PREEMPTION,
    GroupPreemption,
    GroupPreemptor,
    Placements,
)
from policy_scheduler.scheduling.ports import (
    NORMAL,
    SCHEDULED,
    UNSCHEDULABLE,
    WAITING_ON_PREEMPTION,
    WARNING,
)
from policy_scheduler.scheduling.queue import QueuedPod

logger = logging.getLogger(__name__)

GROUP_UNSCHEDULABLE = "pod group is unschedulable"


@dataclass(frozen=True, slots=True)
class Told:
    """What the members of a group not placed are told: those the pass tried, and those it
    did not (it stopped once the group could not reach its minimum)."""

    group: str
    untried: str


@dataclass(slots=True)
class _Member:
    """A member decided in the pass: where it goes (its decision), or why not."""

    entry: QueuedPod
    states: CycleState
    decision: Decision | None = None
    refusal: str = ""
    """A plugin's error, or a Reserve or Permit refusal (the decision found a node)."""

    @property
    def placed(self) -> bool:
        return self.node is not None and not self.refusal

    @property
    def node(self) -> str | None:
        return None if self.decision is None else self.decision.node


class GroupCycle(GroupPreemptor):
    """The scheduling cycle, with a gang's members decided together (see the module)."""

    def schedule_one(self, entry: QueuedPod, now: float) -> None:
        pod = entry.pod
        policy = self.policies.route(pod.scheduler_name).policy
        gang = None if policy is None or pod.deleting else _gang_plugin(policy)
        group = None if gang is None else gang_of(pod, self.cache.snapshot)
        if policy is None or gang is None or group is None:
            super().schedule_one(entry, now)
            return
        if isinstance(group, str) or gang.pre_enqueue(pod, self.cache.snapshot) is not None:
            # The group went, or lost members, since the pod was queued: held again.
            self.queue.delete(pod.uid)
            self._enqueue(pod)
            return
        self._schedule_group(entry, policy, gang, group, now)

    def _schedule_group(
        self,
        entry: QueuedPod,
        policy: CompiledPolicy,
        gang: GangScheduling,
        group: PodGroup,
        now: float,
    ) -> None:
        started = self.clock.monotonic()
        members = self._take_members(entry, policy, group)
        placed_before = self._placed_before(group)
        decided, verdict = self._place_group(policy, group, members, reserve=True)
        algorithm = self.clock.monotonic() - started
        self.metrics.algorithm(algorithm)
        placed = [member for member in decided if member.placed]
        # kube's pass also fails when it placed none (every member left fit nowhere), with no
        # verdict of its own: each member then tells its own reasons.
        failed = bool(verdict) or not placed
        if failed or policy.mode is Mode.DRY_RUN:
            for member in reversed(placed):
                self._unplace(member, policy)
        preemption: GroupPreemption | None = None
        post = ""
        if failed:
            post, preemption = self._post_filter_group(policy, group, members)
        timed_out = self._timed_out(group, gang, failed, now)
        suffix = f"; not placed within its timeout of {gang.timeout_of(group):g}s" * timed_out
        # kube's words: the group's condition says the pass's verdict and its post-filters'; a
        # member the pass placed is told both, after "pod group is unschedulable"; a member
        # it did not try, the verdict alone.
        said = ", ".join(part for part in (verdict, post) if part)
        told = Told(
            group=", ".join((GROUP_UNSCHEDULABLE, said)) + suffix if said else GROUP_UNSCHEDULABLE,
            untried=verdict + suffix,
        )
        if self._on_decision is not None:
            self._report_decisions(members, decided, told if failed else None)
        self._tell_members(
            policy,
            group,
            members,
            decided,
            told=told,
            failed=failed,
            started=started,
            now=now,
            preemption=preemption,
        )
        why = f"{said or NONE_FIT}{suffix}" if failed else ""
        known = self.cache.snapshot.group_members
        scheduled = placed_before + (0 if failed else len(placed))
        # A failure is kept once while it says the same, as a pod's is told once.
        failing = self._groups_failing.get(group.key)
        if failing is not None:
            repeated, self._groups_failing[group.key] = failing[1] == why, (failing[0], why)
        if failing is None or not repeated:
            self.status.record_group(
                policy.name,
                GroupDecision(
                    str(group.key),
                    group.key.api,
                    group.min_member,
                    known.count(group.key),
                    scheduled,
                    tuple(m.decision for m in decided if m.decision is not None),
                    why,
                ),
                policy.mode is Mode.DRY_RUN,
            )
        if policy.mode is not Mode.DRY_RUN:
            outcome = GroupOutcome(not failed, scheduled, known.count(group.key), why, timed_out)
            self._write_group_status(group, outcome)
            result = SCHEDULED
            if failed:
                waits = preemption is not None and bool(preemption.plan)
                result = WAITING_ON_PREEMPTION if waits else UNSCHEDULABLE
            took = self.clock.monotonic() - started
            self.metrics.group_attempt(result, policy.name, took, algorithm)

    def _post_filter_group(
        self, policy: CompiledPolicy, group: PodGroup, members: list[QueuedPod]
    ) -> tuple[str, GroupPreemption | None]:
        """The policy's post-filters for a group not placed, in their order, as kube's
        RunPodGroupPostFilterPlugins runs them: DynamicResources' words, then the group's
        preemption, whose success (or that it found no victim) is all that is said; and the
        preemption, if it ran."""
        reasons: list[str] = []
        preemption: GroupPreemption | None = None
        for plugin in policy.extensions.post_filter:
            if plugin.name == DYNAMIC_RESOURCES:
                reasons.append(GROUP_CLAIMS_RELEASED)
            elif plugin.name == DEFAULT_PREEMPTION:

                def what_if() -> Placements | str:
                    tried, why_not = self._place_group(policy, group, members, reserve=False)
                    fit = [member for member in tried if member.placed]
                    for member in reversed(fit):
                        self._unplace(member, policy, reserved=False)
                    if why_not or not fit:
                        return why_not or NONE_FIT
                    return [(member.entry, str(member.node)) for member in fit]

                preemption = self._preempt_for_group(policy, group, members, what_if)
                said = f"{GROUP_PREEMPTION}{preemption.message}"
                if preemption.final:
                    return said, preemption
                reasons.append(said)
        return ", ".join(reasons), preemption

    def _report_decisions(
        self, members: list[QueuedPod], decided: list[_Member], told: Told | None
    ) -> None:
        """Tell ``on_decision`` each member's decision: as the filters made it, but for a group
        not placed (``told`` says why), where the members that fit, and those the pass did not
        decide, go nowhere."""
        assert self._on_decision is not None
        outcome_of = {member.entry.pod.uid: member.decision for member in decided}
        total = len(self.cache.snapshot)
        for entry in members:
            decision = outcome_of.get(entry.pod.uid)
            if told is not None and decision is None:
                decision = Decision(entry.pod.key, None, None, (), {}, total, 0)
                decision = dataclasses.replace(decision, overruled=told.untried)
            elif told is not None and decision is not None and decision.node is not None:
                decision = dataclasses.replace(
                    decision, node=None, score=None, candidates=(), overruled=told.group
                )
            if decision is not None:
                self._on_decision(decision)

    def _placed_before(self, group: PodGroup) -> int:
        """The group's members assumed or bound already."""
        members = self.cache.snapshot.group_members.of(group.key)
        return sum(1 for uid in members if self.cache.node_of(uid) is not None)

    def _place_group(
        self, policy: CompiledPolicy, group: PodGroup, members: list[QueuedPod], *, reserve: bool
    ) -> tuple[list[_Member], str]:
        """Decide ``members`` in order, each placed one assumed (and, with ``reserve`` and
        unless the policy is DryRun, reserved) so that the next see it, until the group cannot
        reach its minimum any more (kube's PlacementFeasible): the members decided, and that
        verdict ("" when the minimum is reached or may still be)."""
        decided: list[_Member] = []

        def place(entry: QueuedPod) -> bool:
            decided.append(self._decide_member(entry, policy, reserve=reserve))
            return decided[-1].placed

        verdict = place_in_turn(members, group.min_member, self._placed_before(group), place)
        return decided, verdict

    def _take_members(
        self, entry: QueuedPod, policy: CompiledPolicy, group: PodGroup
    ) -> list[QueuedPod]:
        """The popped member and the group's others waiting in the queue for the same policy,
        out of the queue (in flight), in queue order."""
        members = [entry]
        for uid, pod in self.cache.snapshot.group_members.of(group.key).items():
            if uid == entry.pod.uid or self.policies.route(pod.scheduler_name).policy is not policy:
                continue
            taken = self.queue.take(uid)
            if taken is not None:
                members.append(taken)
        members.sort(key=lambda member: member.pod.scheduling_order)
        return members

    def _decide_member(self, entry: QueuedPod, policy: CompiledPolicy, *, reserve: bool) -> _Member:
        """Decide one member on the snapshot, and assume it where it fits (and reserve it, with
        ``reserve`` and unless the policy is DryRun)."""
        pod = entry.pod
        member = _Member(entry, CycleState())
        try:
            member.decision = policy.pipeline.decide(
                pod, self.cache.snapshot, self._rng, member.states, self._holding_room(pod)
            )
        except StatusError as error:  # a plugin's Error status, in kube's words
            member.refusal = str(error)
            return member
        except Exception as error:  # a plugin's bug must cost the group a retry, not the loop
            logger.exception("policy %s failed on pod %s", policy.name, pod.key)
            member.refusal = f"internal error: {error}"
            return member
        if member.decision.node is None:
            return member
        if not reserve or policy.mode is Mode.DRY_RUN:
            # A DryRun policy reserves nothing; assumed, the member counts for the next ones.
            self.cache.assume(pod, member.decision.node)
        else:
            member.refusal = (
                self._assume_and_reserve(pod, policy, member.decision, member.states) or ""
            )
        return member

    def _unplace(self, member: _Member, policy: CompiledPolicy, *, reserved: bool = True) -> None:
        """Undo what the pass did for a member it placed (``reserved``: with its Reserve
        plugins, as a pass of a policy in Enforce reserves)."""
        assert member.decision is not None and member.decision.node is not None
        pod = member.entry.pod
        if not reserved or policy.mode is Mode.DRY_RUN:
            self.cache.forget(pod.uid)  # only assumed: nothing happened in the cluster
        else:
            self._undo(pod, policy, member.states, member.decision.node)

    def _timed_out(self, group: PodGroup, gang: GangScheduling, failed: bool, now: float) -> bool:
        """Whether ``group``, failed again, has not been placed for longer than its timeout."""
        if not failed:
            self._groups_failing.pop(group.key, None)
            return False
        since, _ = self._groups_failing.setdefault(group.key, (now, ""))
        return now - since >= gang.timeout_of(group)

    def _tell_members(
        self,
        policy: CompiledPolicy,
        group: PodGroup,
        members: list[QueuedPod],
        decided: list[_Member],
        *,
        told: Told,
        failed: bool,
        started: float,
        now: float,
        preemption: GroupPreemption | None,
    ) -> None:
        """Bind each member placed, or park it (``told`` what, when the group was not placed;
        nominated where the ``preemption`` makes it room); each told as kube tells it. A member
        the group's failure parks waits for any event that may help a member that fit nowhere,
        or its group (GangScheduling's hint)."""
        rejected_by = frozenset({NAME}).union(
            *(m.decision.rejected_by for m in decided if m.decision is not None and not m.placed)
        )
        outcome_of = {member.entry.pod.uid: member for member in decided}
        for entry in members:
            pod = entry.pod
            member = outcome_of.get(pod.uid)
            if member is not None and member.refusal:
                self._failed(pod, policy, started, member.refusal, "Scheduling")
            elif member is not None and member.decision is not None and not member.placed:
                decision = member.decision
                self._park(
                    entry,
                    policy,
                    decision.message,
                    decision.rejected_by,
                    now=now,
                    preemption=preemption,
                )
            elif failed:
                message = told.group if member is not None else told.untried
                self._park(entry, policy, message, rejected_by, now=now, preemption=preemption)
            elif policy.mode is Mode.DRY_RUN:
                assert member is not None and member.decision is not None
                self.queue.delete(pod.uid)
                self._dry_run_done[pod.uid] = (pod, policy)
                self.events.event(
                    pod,
                    NORMAL,
                    "DryRunScheduled",
                    f"SchedulingPolicy {policy.name} (DryRun) would assign {pod.key} to "
                    f"{member.decision.node} ({member.decision.chosen_by}), with its pod "
                    f"group {group.key}; nothing was bound",
                    "Scheduling",
                )
            else:
                assert member is not None and member.decision is not None
                self._start_binding(
                    entry, policy, member.decision, member.states, started, record=False
                )
            if failed:
                self.metrics.attempt(UNSCHEDULABLE, policy.name, self.clock.monotonic() - started)

    def _park(
        self,
        entry: QueuedPod,
        policy: CompiledPolicy,
        message: str,
        rejected_by: frozenset[str],
        *,
        now: float,
        preemption: GroupPreemption | None,
    ) -> None:
        """Park a member until an event may help the group, told once per distinct message.
        Where the group's ``preemption`` made it room, its victims are evicted and it is
        nominated to its node, where it waits for them; otherwise a nomination it had is
        cleared, as kube does for a pod group's members."""
        pod = entry.pod
        dry_run = policy.mode is Mode.DRY_RUN
        room = None if preemption is None else preemption.plan.get(pod.uid)
        nominated: str | None = None
        if room is None and not dry_run and pod.uid in self._nominated:
            del self._nominated[pod.uid]
            nominated = ""
        waits_on = "" if room is None or dry_run else room[0]
        repeated = entry.last_failure == message and nominated is None and room is None
        self.queue.unschedulable(pod.uid, message, now, rejected_by, waits_on)
        if repeated:
            return
        self.events.event(pod, WARNING, "FailedScheduling", message, "Scheduling")
        if room is not None:
            node, victims = room
            made = Preemption(node, victims, why=f"room for its pod group {group_key(pod)}")
            if dry_run:
                self._tell_preemption(pod, policy, made)
            else:
                assert preemption is not None
                self._preempt(
                    pod, policy, made, DEFAULT_PREEMPTION, now, group_uid=preemption.group_uid
                )
                nominated = node
        self._conditions.unschedulable(pod, message, nominated)

    def _write_group_status(self, group: PodGroup, outcome: GroupOutcome) -> None:
        """Write the group's status as its API's own scheduler would, in the background."""
        patch = status_patch(group, outcome, self.clock.now())
        if patch is not None:
            call = self._objects.patch(status_ref(group), patch)
            self._background(self._logged(NAME, "status", call), self._writes)


def _preempts(policy: CompiledPolicy) -> bool:
    return any(plugin.name == DEFAULT_PREEMPTION for plugin in policy.extensions.post_filter)


def _gang_plugin(policy: CompiledPolicy) -> GangScheduling | None:
    return next((p for p in policy.extensions.pre_enqueue if isinstance(p, GangScheduling)), None)
