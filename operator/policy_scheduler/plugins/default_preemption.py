"""DefaultPreemption: when no node fits a pod, find the node where evicting the fewest, least
important pods of lower priority makes room (kube-scheduler v1.37's DefaultPreemption PostFilter,
``pkg/scheduler/framework/plugins/defaultpreemption`` and ``framework/preemption``).

The steps, as kube-scheduler takes them:

1. **Eligibility**: a pod with ``preemptionPolicy: Never`` preempts nothing; nor does a pod whose
   nominated node (a preemption it made before) still has a pod of lower priority terminating by
   preemption there, unless the filters found that node hopeless (unresolvable) this time.
2. **Potential nodes**: those the filters rejected for a reason evicting pods may lift (kube's
   Unschedulable, not UnschedulableAndUnresolvable; see :class:`~.base.NodeStatuses`). None: the
   message counts every node as "Preemption is not helpful for scheduling".
3. **Dry run** over the potential nodes in snapshot order, from a random offset, until at least
   ``max(minCandidateNodesPercentage% of them, minCandidateNodesAbsolute)`` candidates are
   found of which one violates no PodDisruptionBudget. On each node: every pod of lower priority
   is taken out, and the pod must then pass every filter; then the pods are put back one at a
   time, most important first (higher priority, then earlier start), those a budget protects
   before the others, and each that the pod still fits beside stays (is reprieved); the rest are
   the victims. The pods are set aside from the live :class:`~.model.nodeinfo.ClusterState`
   (the node given a fresh count of the pods kept, its own holdings given back whole at the
   end, in a try/finally), as kube-scheduler works on a clone of the node.
   The filters answer through one :class:`~.base.WhatIf` for the whole dry run: the pre-filters
   run once, and the states that count pods across the snapshot (inter-pod affinity, topology
   spread, ReadWriteOncePod claims) follow each pod taken out or put back, as kube's
   PreFilterExtensions AddPod/RemovePod keep them.
4. **Pick** one candidate by kube's pickOneNodeForPreemption criteria, in order: fewest budget
   violations, lowest highest-victim priority, smallest sum of victim priorities (each offset by
   2^31, so fewer victims weigh first), fewest victims, latest start of the most important
   victims; then the first.

The result is a :class:`~.base.Preemption`, said as kube says it ("preemption: found a potential
placement for pod on node N, preempting K victims"); the loop evicts and nominates. With no
candidate, the message is kube's: "preemption: 0/N nodes are available: ..." counting each
node's reason.
Only pods that no node fits, of policies listing this post-filter, pay for any of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.interface import (
    NodeStatuses,
    PostFilter,
    PostFilterResult,
    Preemption,
    Reads,
    WhatIf,
)
from policy_scheduler.framework.types import Cycle, failure_message
from policy_scheduler.model import disruption
from policy_scheduler.model.disruption import DisruptionBudgets
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.objects import PodView

NAME = "DefaultPreemption"

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
"""kube-scheduler's defaults for DefaultPreemptionArgs."""

PREFIX = "preemption: "
FOUND = "found a potential placement for pod on node {node}, preempting {victims} victims"
"""What a successful preemption says since v1.37 (kube's Evaluator.Preempt): the end of the
preemptor's FailedScheduling message."""
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NO_NODES = "no nodes available"

_PRIORITY_OFFSET = 2**31  # kube adds math.MaxInt32+1 to each priority before summing


def importance(pod: PodView) -> tuple[int, float]:
    """Sort key putting the more important pod first, as kube's MoreImportantPod: higher
    priority, then the earlier start."""
    return (-pod.priority, pod.start_time)


def victims_terminating(pod: PodView, info: NodeInfo) -> bool:
    """Whether a pod of lower priority than ``pod`` is terminating by preemption on ``info``:
    on its nominated node, what keeps ``pod`` from preempting again."""
    preempted = info.preempted
    return bool(preempted) and min(preempted.values()) < pod.priority


def fit_error(total_nodes: int, statuses: Mapping[str, Sequence[str]]) -> str:
    """kube-scheduler's FitError text for a preemption that found no candidate: each reason of
    the nodes tried, the other nodes counted as "Preemption is not helpful for scheduling", the
    "<count> <reason>" strings sorted as strings."""
    counts: dict[str, int] = {}
    for reasons in statuses.values():
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if len(statuses) < total_nodes:
        counts[NOT_HELPFUL] = counts.get(NOT_HELPFUL, 0) + total_nodes - len(statuses)
    return failure_message(total_nodes, counts)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting ``victims`` (most important first) makes room; ``kept`` counts the
    pods of lower priority there that need not go."""

    node: str
    victims: tuple[PodView, ...]
    pdb_violations: int
    kept: int


_Criterion = tuple[str, Callable[[Candidate], float]]

# pickOneNodeForPreemption's score functions in their order, each higher for the better node,
# with the words ``why`` uses for them.
CRITERIA: tuple[_Criterion, ...] = (
    ("fewer PodDisruptionBudget violations", lambda c: -c.pdb_violations),
    ("a lower highest victim priority", lambda c: -c.victims[0].priority),
    (
        "a smaller sum of victim priorities",
        lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c.victims),
    ),
    ("fewer victims", lambda c: -len(c.victims)),
    ("a later start of its most important victims", lambda c: _latest_start(c.victims)),
)


def _latest_start(victims: Sequence[PodView]) -> float:
    """The earliest start among the victims of the highest priority (kube's
    GetEarliestPodStartTime): the later it is, the less work the victims lose."""
    top = max(v.priority for v in victims)
    return min(v.start_time for v in victims if v.priority == top)


def pick(candidates: Sequence[Candidate]) -> tuple[Candidate, str]:
    """The candidate kube's pickOneNodeForPreemption picks, and why, against the runner-up."""
    if len(candidates) == 1:
        return candidates[0], "the only node where evicting pods of lower priority makes room"
    left = list(candidates)
    for words, score in CRITERIA:
        scores = [score(c) for c in left]
        best = max(scores)
        kept = [c for c, s in zip(left, scores, strict=True) if s == best]
        if len(kept) == 1:
            runner_up = max(
                (c for c, s in zip(left, scores, strict=True) if s != best),
                key=score,
            )
            return kept[0], f"{words} than node {runner_up.node}"
        left = kept
    return left[0], f"the first of {len(left)} nodes equally good by every criterion"


def _why(chosen: Candidate, because: str, priority: int) -> str:
    victims = chosen.victims
    kept = f", keeping {chosen.kept} other pod(s) of lower priority" if chosen.kept else ""
    return (
        f"node {chosen.node}: {because}; evicting {len(victims)} pod(s) of priority below "
        f"{priority} (at most {victims[0].priority}), the least important first, is enough"
        f"{kept}."
    )


class _Victims:
    """The what-if on one node: its lower-priority pods taken out of the live state
    (:meth:`~.model.nodeinfo.ClusterState.set_aside`), and the node given back as it was however
    :meth:`without` ends; each change told to the :class:`~.base.WhatIf`."""

    def __init__(self, state: ClusterState, info: NodeInfo, what_if: WhatIf) -> None:
        self.state = state
        self.info = info
        self.what_if = what_if

    def remove(self, pod: PodView) -> None:
        self.state.remove_pod(self.info, pod.uid)
        self.what_if.removed(self.info, pod)

    def add(self, pod: PodView) -> None:
        self.state.add_pod(self.info, pod)
        self.what_if.added(self.info, pod)

    @contextlib.contextmanager
    def without(self, pods: Sequence[PodView]) -> Iterator[None]:
        info, what_if = self.info, self.what_if
        back: list[PodView] = []
        try:
            with self.state.set_aside(info, {pod.uid for pod in pods}) as out:
                for pod in out:
                    what_if.removed(info, pod)
                try:
                    yield
                finally:
                    # Those not put back by a reprieve come back when the node is given back.
                    back = [pod for pod in out if pod.uid not in info.pods]
        finally:
            for pod in back:
                what_if.added(info, pod)


class DefaultPreemption(PostFilter[None], Reads):
    """Preemption as kube-scheduler's default profile does it."""

    name = NAME
    # It spares the victims a PodDisruptionBudget protects where it can.
    reads = frozenset({disruption.KIND})

    def __init__(
        self,
        percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
        absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE,
    ) -> None:
        self.percentage = percentage
        self.absolute = absolute

    def candidates_wanted(self, potential: int) -> int:
        """kube's calculateNumCandidates."""
        return min(max(potential * self.percentage // 100, self.absolute), potential)

    def post_filter(self, state: None, cycle: Cycle, statuses: NodeStatuses) -> PostFilterResult:
        refusal = self.ineligible(cycle, statuses)
        if refusal:
            waits_on = cycle.pod.nominated_node_name if refusal == TERMINATING else ""
            return PostFilterResult(PREFIX + refusal, waits_on=waits_on)
        snapshot = cycle.snapshot
        if not isinstance(snapshot, ClusterState):
            raise TypeError("DefaultPreemption needs the live ClusterState as the snapshot")
        total = len(snapshot.table)
        if not total:
            return PostFilterResult(PREFIX + NO_NODES, clears_nomination=True)
        potential = [info for info in snapshot.table.infos if statuses.resolvable(info.name)]
        if not potential:
            return PostFilterResult(PREFIX + fit_error(total, {}), clears_nomination=True)
        what_if = statuses.start_what_if(cycle)
        candidates, failures, errors = self.dry_run(cycle, what_if, snapshot, potential)
        if not candidates:
            if errors:
                text = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
                return PostFilterResult(PREFIX + text)
            return PostFilterResult(PREFIX + fit_error(total, failures), clears_nomination=True)
        chosen, because = pick(candidates)
        why = _why(chosen, because, cycle.pod.priority)
        return PostFilterResult(
            PREFIX + FOUND.format(node=chosen.node, victims=len(chosen.victims)),
            Preemption(chosen.node, chosen.victims, chosen.pdb_violations, why),
        )

    def ineligible(self, cycle: Cycle, statuses: NodeStatuses) -> str:
        """Why the pod may not preempt (kube's PodEligibleToPreemptOthers), or ""."""
        pod = cycle.pod
        if pod.spec.get("preemptionPolicy") == "Never":
            return NEVER
        nominated = pod.nominated_node_name
        info = cycle.snapshot.get(nominated) if nominated else None
        # A nominated node the filters found hopeless this time may be given up for another.
        if info is not None and statuses.resolvable(nominated) and victims_terminating(pod, info):
            return TERMINATING
        return ""

    def dry_run(
        self,
        cycle: Cycle,
        what_if: WhatIf,
        state: ClusterState,
        potential: Sequence[NodeInfo],
    ) -> tuple[list[Candidate], dict[str, Sequence[str]], list[str]]:
        """kube's DryRunPreemption, node by node from a random offset: the candidates (those
        violating no budget first), each failed node's reasons, and errors."""
        wanted = self.candidates_wanted(len(potential))
        offset = cycle.rng.randrange(len(potential))
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        failures: dict[str, Sequence[str]] = {}
        errors: list[str] = []
        budgets = state.disruption_budgets
        for i in range(len(potential)):
            info = potential[(offset + i) % len(potential)]
            found = self.select_victims(cycle, what_if, state, info, budgets)
            if isinstance(found, Candidate):
                if not found.victims:
                    errors.append(f'expected at least one victim pod on node "{info.name}"')
                    continue
                # kube's candidate lists hold at most ``wanted`` each.
                listed = violating if found.pdb_violations else clean
                if len(listed) < wanted:
                    listed.append(found)
                if clean and len(clean) + len(violating) >= wanted:
                    break
            else:
                failures[info.name] = found
        return clean + violating, failures, errors

    def select_victims(
        self,
        cycle: Cycle,
        what_if: WhatIf,
        state: ClusterState,
        info: NodeInfo,
        budgets: DisruptionBudgets,
    ) -> Candidate | Sequence[str]:
        """kube's SelectVictimsOnNode: the candidate on ``info``, or why there is none."""
        pod = cycle.pod
        lower = [other for other in info.pods.values() if other.priority < pod.priority]
        if not lower:
            return (NO_VICTIMS,)
        victims_out = _Victims(state, info, what_if)
        with victims_out.without(lower):
            reasons = what_if.verdict(info)
            if reasons:
                return tuple(reasons)
            lower.sort(key=importance)
            protected, others = budgets.split_violating(lower)
            victims: list[PodView] = []
            violations = 0

            def reprieve(other: PodView) -> bool:
                # Asked first: putting a victim back and taking it out again costs more.
                if what_if.rejects_with(info, other):
                    victims.append(other)
                    return False
                victims_out.add(other)
                if not what_if.verdict(info):
                    return True
                victims_out.remove(other)
                victims.append(other)
                return False

            for other in protected:
                if not reprieve(other):
                    violations += 1
            for other in others:
                reprieve(other)
        if protected and others:
            victims.sort(key=importance)
        return Candidate(info.name, tuple(victims), violations, len(lower) - len(victims))


def _count(args: Args, key: str, default: int, path: str, errors: list[FieldError]) -> int:
    value: Any = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(FieldError(f"{path}.{key}", "must be an integer"))
        return default
    return value


def new_post_filter(args: Args, path: str) -> DefaultPreemption:
    """The plugin for ``args`` (DefaultPreemptionArgs), validated with kube's texts."""
    percentage_key, absolute_key = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"
    errors = unknown_fields(args, (percentage_key, absolute_key), path)
    percentage = _count(args, percentage_key, MIN_CANDIDATE_NODES_PERCENTAGE, path, errors)
    absolute = _count(args, absolute_key, MIN_CANDIDATE_NODES_ABSOLUTE, path, errors)
    percentage_path, absolute_path = f"{path}.{percentage_key}", f"{path}.{absolute_key}"
    if not 0 <= percentage <= 100:
        errors.append(
            FieldError(percentage_path, f"Invalid value: {percentage}: not in valid range [0, 100]")
        )
    if absolute < 0:
        errors.append(
            FieldError(absolute_path, f"Invalid value: {absolute}: not in valid range [0, inf)")
        )
    if percentage == 0 and absolute == 0:
        errors += [
            FieldError(
                percentage_path,
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            ),
            FieldError(
                absolute_path,
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ),
        ]
    if errors:
        raise ArgsError(errors)
    return DefaultPreemption(percentage, absolute)
