"""What one decision reports: the chosen node and its total, the best feasible nodes with each
scorer's score, and for the nodes that did not fit how many were rejected for each reason (the
breakdown kube-scheduler does not keep; ``status.decisions`` and ``simulate`` show it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.framework.interface import (
    Scores,
)
from policy_scheduler.framework.types import failure_message


@dataclass(frozen=True, slots=True)
class Candidate:
    """A feasible node with its weighted total (0..100) and each scorer's normalized score."""

    node: str
    score: float
    scores: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a pod goes (or why it goes nowhere), and the evidence."""

    pod: str
    node: str | None
    score: float | None
    candidates: tuple[Candidate, ...]
    reasons: Mapping[str, int]
    total_nodes: int
    feasible_nodes: int
    rejected_by: frozenset[str] = frozenset()
    """The filters that rejected at least one node (``nodeSelector`` for the policy's pool),
    or whose pre-filter named the only nodes to filter or rejected the pod: what a cluster event
    must be able to change for the pod to be tried again."""
    pre_filter_rejection: str = ""
    """Why a pre-filter rejected the pod before any node was filtered (``reasons`` then counts
    it for every node)."""
    unresolvable: frozenset[str] | None = None
    """When no node fits and :meth:`Pipeline.decide` was asked to tell (a policy with
    post-filters), the nodes rejected for a reason no preemption can help (see
    :meth:`~.framework.interface.Filter.unresolvable`); None when not asked."""
    details: Mapping[str, int] = field(default_factory=dict)
    """How many nodes each detailed reason rejected (the filters that explain themselves,
    :class:`~.framework.interface.Explains`: which device request failed and why)."""
    chosen: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """What those filters chose on the chosen node: each ResourceClaim's devices."""
    overruled: str = ""
    """Why the pod goes nowhere although the filters found it a node, or were not asked (its
    gang was not placed): what it is told. ``node`` is then None."""

    @property
    def chosen_by(self) -> str:
        """How the node was chosen, for the messages that name it: its score, or that it was
        the only node that fits (then not scored, as kube-scheduler does not score it)."""
        return "the only node that fits" if self.score is None else f"score {self.score}"

    @property
    def message(self) -> str:
        """The FailedScheduling message for an unschedulable pod."""
        if self.overruled:
            return self.overruled
        return failure_message(self.total_nodes, self.reasons, self.pre_filter_rejection)

    def to_dict(self) -> dict[str, Any]:
        """The decision as plain data, as ``status.decisions`` holds it (the status writer adds
        the time) and ``policy-scheduler simulate -o json`` prints it. Node and score are None,
        and the FailedScheduling ``message`` is added, when no node fit; ``reasons`` counts why
        the other nodes did not fit; ``details`` how many each detailed reason rejected, and
        ``devices`` what was allocated on the node, per claim, where there are any."""
        record: dict[str, Any] = {"pod": self.pod, "node": self.node, "score": self.score}
        if self.node is None:
            record["message"] = self.message
        record["candidates"] = [
            {"node": c.node, "score": c.score, "scores": dict(c.scores)} for c in self.candidates
        ]
        record["reasons"] = dict(self.reasons)
        # Only for the pods they concern: other decisions keep their keys as they were.
        if self.details:
            record["details"] = dict(self.details)
        if self.chosen:
            record["devices"] = {name: list(devices) for name, devices in self.chosen.items()}
        return record


def candidate(
    node: str, total: int, weight_sum: int, columns: Sequence[tuple[str, Scores | None]], i: int
) -> Candidate:
    """The ``i``-th scored node's report: its weighted total and each scorer's score (0 for a
    scorer that skipped the pod), from what :meth:`Pipeline._score` returned."""
    return Candidate(
        node,
        round(total / weight_sum, 2),
        {name: 0 if scores is None else int(scores[i]) for name, scores in columns},
    )


@dataclass(frozen=True, slots=True)
class GroupDecision:
    """A gang's pass, as one decision: each member decided in it, and whether the group was
    placed (at least its minimum count of members placed, with those already assumed or
    bound) or why not."""

    group: str
    """The group, as ``namespace/name``."""
    api: str
    """Which API the group is written in (:data:`~policy_scheduler.model.podgroups.APIS`)."""
    min_member: int
    members: int
    """How many pods are members of the group."""
    scheduled: int
    """How many members are placed: by this pass, if it placed the group, and before it."""
    pods: tuple[Decision, ...]
    """The members decided in this pass, in the order they were; those after the pass found the
    group could not be placed are not."""
    message: str = ""
    """Why the group was not placed ("" when it was)."""

    def to_dict(self) -> dict[str, Any]:
        """The group's pass as ``status.decisions`` holds it (the status writer adds the time):
        the group, its minimum and its counts, and each member's node and score (or, for one
        that fit nowhere, its FailedScheduling message); ``message`` when the group was not
        placed."""
        record: dict[str, Any] = {
            "podGroup": {
                "name": self.group,
                "api": self.api,
                "minMember": self.min_member,
                "members": self.members,
                "scheduled": self.scheduled,
                "pods": [_member(decision) for decision in self.pods],
            }
        }
        if self.message:
            record["podGroup"]["message"] = self.message
        return record


def _member(decision: Decision) -> dict[str, Any]:
    if decision.node is None:
        return {"pod": decision.pod, "message": decision.message}
    if decision.score is None:
        return {"pod": decision.pod, "node": decision.node}
    return {"pod": decision.pod, "node": decision.node, "score": decision.score}
