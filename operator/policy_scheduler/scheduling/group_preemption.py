"""Preemption for a gang: pods of lower priority evicted only when the whole group then fits
(kube-scheduler v1.37's pod group preemption, ``framework/preemption/podgrouppreemption.go``,
DefaultPreemption's PodGroupPostFilter).

When a group's pass fails and its policy has DefaultPreemption, every assigned pod of lower
priority than the group's members (not terminating, not of the group) is a potential victim.
With all of them taken out of the snapshot, the group is placed again (a what-if pass: members
assumed, nothing reserved). If it still cannot be placed, nothing is evicted and the pass's
verdict is told. Otherwise the victims are tried back, most important first (higher priority,
then earlier start, as kube's MoreImportantPod): one is spared when every member still fits on its
node with it back (the filters run anew, each member assumed after it passed, as kube's reprieve),
those a PodDisruptionBudget protects tried first.
Those not spared are evicted, each by the member placed on its node (or by the first member), and
every member is nominated to its node, as kube's executor does; the members wait for their
victims to terminate, as a single preemptor waits (:mod:`~.preemption`), and the next pass places
the group. Nothing is evicted while a member still waits for an earlier preemption of the group.

The words are kube's: ``pod group preemption: No preemption victims found for incoming
preemptor``, ``found a placement for podgroup, preempting 2 victims``, ``not eligible due to
preemptionPolicy=Never.``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.podgroups import PodGroup, group_key
from policy_scheduler.plugins.default_preemption import NEVER, importance
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.scheduling.queue import QueuedPod
from policy_scheduler.scheduling.schedule_one import ScheduleOne

GROUP_PREEMPTION = "pod group preemption: "
NO_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"


def found(victims: int) -> str:
    return f"found a placement for podgroup, preempting {victims} victims"


Placements = list[tuple[QueuedPod, str]]
"""Members and the nodes a what-if pass placed them on, in the order it decided them."""


@dataclass(frozen=True, slots=True)
class GroupPreemption:
    """What a group's preemption found: its words, and when it made room, each member's node
    and the victims it evicts there (by member uid)."""

    message: str
    plan: dict[str, tuple[str, tuple[PodView, ...]]] = field(default_factory=dict)
    final: bool = False
    """Whether it is all that is said of the group's post-filters (kube's Success, and the
    UnschedulableAndUnresolvable of finding no victim), not joined to the others' words."""
    group_uid: str = ""
    """The group's uid, whom the victims are told preempts them."""


class GroupPreemptor(ScheduleOne):
    """Preemption for a gang's pass (see the module)."""

    def _preempt_for_group(
        self,
        policy: CompiledPolicy,
        group: PodGroup,
        members: Sequence[QueuedPod],
        place: Callable[[], Placements | str],
    ) -> GroupPreemption:
        """Find the victims whose eviction lets the whole group fit; ``place`` is the what-if
        pass, on the snapshot as it is when called: the members placed, or why the group
        cannot be."""
        if any(member.pod.spec.get("preemptionPolicy") == "Never" for member in members):
            return GroupPreemption(NEVER)
        others = self.cache.snapshot.group_members.of(group.key)
        if any(uid in self._preempting for uid in others):
            return GroupPreemption(ONGOING, final=True)
        priority = max(member.pod.priority for member in members)
        state = self.cache.snapshot
        if not isinstance(state, ClusterState):
            raise TypeError("a group's preemption needs the live ClusterState as the snapshot")
        potential = [
            (info, pod)
            for info in state
            for pod in info.pods.values()
            if pod.priority < priority and not pod.deleting and group_key(pod) != group.key
        ]
        if not potential:
            return GroupPreemption(NO_VICTIMS, final=True)
        with _without(state, potential):
            placed = place()
            if isinstance(placed, str):
                return GroupPreemption(placed)
            node_of = {pod.uid: info for info, pod in potential}
            ordered = sorted((pod for _, pod in potential), key=importance)
            protected, unprotected = state.disruption_budgets.split_violating(ordered)
            victims = [
                (node_of[pod.uid], pod)
                for pod in (*protected, *unprotected)
                if not self._spared(policy, state, node_of[pod.uid], pod, placed)
            ]
        victims.sort(key=lambda victim: importance(victim[1]))
        return GroupPreemption(
            found(len(victims)), _plan(placed, victims), final=True, group_uid=group.uid
        )

    def _spared(
        self,
        policy: CompiledPolicy,
        state: ClusterState,
        info: NodeInfo,
        victim: PodView,
        placed: Placements,
    ) -> bool:
        """Put ``victim`` back; keep it there (spared) when every member still fits its node
        with it, each member assumed once it passed; else take it out again."""
        state.add_pod(info, victim)
        if info.name not in {node for _, node in placed} and not any(
            plugin.pre_filter_counts_pods for plugin in policy.pipeline.filters
        ):
            # No member is on its node, and no filter counts pods beyond a member's own node.
            return True
        assumed: list[str] = []
        try:
            for member, node in placed:
                cycle = Cycle(member.pod, state, self._rng)
                if policy.pipeline.refilter(cycle, state.nodes[node]):
                    state.remove_pod(info, victim.uid)
                    return False
                self.cache.assume(member.pod, node)
                assumed.append(member.pod.uid)
            return True
        finally:
            for uid in reversed(assumed):
                self.cache.forget(uid)


def _plan(
    placed: Placements, victims: Sequence[tuple[NodeInfo, PodView]]
) -> dict[str, tuple[str, tuple[PodView, ...]]]:
    """Each member's node and the victims it evicts: those on its node go to the first member
    placed there; those on a node no member took, to the first member."""
    by_node: dict[str, list[PodView]] = {}
    for info, pod in victims:
        by_node.setdefault(info.name, []).append(pod)
    first_on: dict[str, str] = {}
    for member, node in placed:
        first_on.setdefault(node, member.pod.uid)
    evicts: dict[str, list[PodView]] = {member.pod.uid: [] for member, _ in placed}
    for node, pods in by_node.items():
        evicts[first_on.get(node, placed[0][0].pod.uid)].extend(pods)
    return {member.pod.uid: (node, tuple(evicts[member.pod.uid])) for member, node in placed}


@contextmanager
def _without(state: ClusterState, pods: Sequence[tuple[NodeInfo, PodView]]) -> Iterator[None]:
    """``pods`` out of their nodes while the block runs; then every node's pods as they were,
    in their order (whichever of them the block put back)."""
    orders = {info.name: (info, list(info.pods.values())) for info, _ in pods}
    for info, pod in pods:
        state.remove_pod(info, pod.uid)
    try:
        yield
    finally:
        for info, order in orders.values():
            for pod in order:
                if pod.uid in info.pods:
                    state.remove_pod(info, pod.uid)
            for pod in order:
                state.add_pod(info, pod)
