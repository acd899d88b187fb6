"""A gang's pass as a what-if, for ``explain``: the group's pending members decided in turn on a
snapshot, each one placed counted on its node for the next, until the group reaches its minimum or
cannot any more (kube's PlacementFeasible: :func:`~policy_scheduler.plugins.gang_scheduling.
place_in_turn`), as the scheduling loop's group pass decides them
(:mod:`~policy_scheduler.scheduling.group_cycle`), but on a snapshot of its own, which it changes:
nothing is reserved and nothing is bound.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from policy_scheduler.framework.cycle_state import CycleState
from policy_scheduler.model.nodeinfo import ClusterState
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.gang_scheduling import NONE_FIT, place_in_turn
from policy_scheduler.runtime.schedule_one import Pipeline


@dataclass(frozen=True, slots=True)
class GroupWhatIf:
    """Where the pending members went in the pass, which fit nowhere and why, and the verdict
    ("" when the group would be placed)."""

    fit: tuple[tuple[str, str], ...]
    """Members placed, ``namespace/name``, with their node, in the order decided."""
    blocked: tuple[tuple[str, str], ...]
    """Members that fit nowhere, with their FailedScheduling message."""
    verdict: str


def what_if_group(
    pipeline: Pipeline,
    state: ClusterState,
    pending: Sequence[PodView],
    min_member: int,
    placed_before: int,
) -> GroupWhatIf:
    """Decide ``pending`` (in queue order) as a pass would, on ``state``, counting
    ``placed_before`` members placed already."""
    fit: list[tuple[str, str]] = []
    blocked: list[tuple[str, str]] = []
    rng = random.Random(0)

    def place(pod: PodView) -> bool:
        decision = pipeline.decide(pod, state, rng, CycleState())
        if decision.node is None:
            blocked.append((pod.key, decision.message))
            return False
        spec = {**pod.spec, "nodeName": decision.node}
        state.add_pod(state.nodes[decision.node], PodView({**pod.raw, "spec": spec}))
        fit.append((pod.key, decision.node))
        return True

    verdict = place_in_turn(pending, min_member, placed_before, place)
    if not verdict and not fit:
        verdict = NONE_FIT
    return GroupWhatIf(tuple(fit), tuple(blocked), verdict)
