"""One scheduling decision: filter -> score -> normalize -> weight -> select, with its breakdown.

The order of work follows kube-scheduler's scheduling cycle, so a policy that mirrors its default
profile places pods as it does:

- filters run in the policy's order, and a node's first failing filter gives its reasons;
- on large clusters only enough feasible nodes are looked for (``percentageOfNodesToScore``, with
  kube-scheduler's adaptive default), starting where the previous decision stopped so that every
  node gets its turn;
- each scorer's scores are normalized to 0..100 and summed with the policy's weights;
- the highest total wins, ties broken uniformly at random.

Unlike kube-scheduler, the result keeps the evidence: every feasible node's per-plugin scores (the
top few are reported) and, when nothing fits, the count of each reason.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.base import MAX_NODE_SCORE, Cycle, Filter, Scorer

# kube-scheduler's bounds for the adaptive percentageOfNodesToScore (pkg/scheduler/schedule_one.go).
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

OUTSIDE_NODE_POOL = "node(s) didn't match the policy's nodeSelector"


def feasible_nodes_to_find(all_nodes: int, percentage: int) -> int:
    """How many feasible nodes to look for before scoring; ``percentage`` 0 means adaptive."""
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if percentage == 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def reason_counts(reasons: Mapping[str, int]) -> str:
    """The "<count> <reason>" strings ("2 Insufficient cpu"), sorted as strings as kube-scheduler
    sorts them, joined with commas."""
    return ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))


def failure_message(total_nodes: int, reasons: Mapping[str, int]) -> str:
    """kube-scheduler's FitError text: "0/5 nodes are available: 2 Insufficient cpu, ..."."""
    message = f"0/{total_nodes} nodes are available:"
    return f"{message} {reason_counts(reasons)}." if reasons else message


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    scorer: Scorer[Any]
    weight: int


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

    @property
    def message(self) -> str:
        """The FailedScheduling message for an unschedulable pod."""
        return failure_message(self.total_nodes, self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """The decision as plain data, as ``status.decisions`` holds it (the status writer adds
        the time) and ``policy-scheduler simulate -o json`` prints it. Node and score are None,
        and the FailedScheduling ``message`` is added, when no node fit; ``reasons`` counts why
        the other nodes did not fit."""
        record: dict[str, Any] = {"pod": self.pod, "node": self.node, "score": self.score}
        if self.node is None:
            record["message"] = self.message
        record["candidates"] = [
            {"node": c.node, "score": c.score, "scores": dict(c.scores)} for c in self.candidates
        ]
        record["reasons"] = dict(self.reasons)
        return record


@dataclass(slots=True)
class Pipeline:
    """A compiled policy's decision procedure. Holds the rotating start index between decisions."""

    filters: Sequence[Filter[Any]]
    scorers: Sequence[WeightedScorer]
    percentage_of_nodes_to_score: int = 0
    node_pool: LabelSelector | None = None
    candidates_to_report: int = 3
    _next_start: int = field(default=0, init=False)

    def decide(self, pod: PodView, snapshot: Snapshot, rng: random.Random) -> Decision:
        cycle = Cycle(pod, snapshot, rng)
        nodes = list(snapshot)
        reasons: dict[str, int] = {}
        feasible = self._find_feasible(cycle, nodes, reasons)
        if not feasible:
            return Decision(pod.key, None, None, (), reasons, len(nodes), 0)
        totals, per_plugin = self._score(cycle, feasible)
        chosen = _select(totals, rng)
        weight_sum = sum(ws.weight for ws in self.scorers) or 1
        ranked = sorted(range(len(feasible)), key=lambda i: (-totals[i], i != chosen))
        candidates = tuple(
            Candidate(feasible[i].name, round(totals[i] / weight_sum, 2), per_plugin[i])
            for i in ranked[: self.candidates_to_report]
        )
        return Decision(
            pod.key,
            feasible[chosen].name,
            round(totals[chosen] / weight_sum, 2),
            candidates,
            reasons,
            len(nodes),
            len(feasible),
        )

    def _find_feasible(
        self, cycle: Cycle, nodes: Sequence[NodeInfo], reasons: dict[str, int]
    ) -> list[NodeInfo]:
        pod = cycle.pod
        states = [(f, f.pre_filter(cycle)) for f in self.filters]
        wanted = feasible_nodes_to_find(len(nodes), self.percentage_of_nodes_to_score)
        pool = self.node_pool
        feasible: list[NodeInfo] = []
        start = self._next_start % len(nodes) if nodes else 0
        processed = 0
        for offset in range(len(nodes)):
            if len(feasible) >= wanted:
                break
            node = nodes[(start + offset) % len(nodes)]
            processed += 1
            if pool is not None and not pool.matches(node.node.labels):
                reasons[OUTSIDE_NODE_POOL] = reasons.get(OUTSIDE_NODE_POOL, 0) + 1
                continue
            for plugin, state in states:
                rejected = plugin.filter(state, pod, node)
                if rejected:
                    for reason in rejected:
                        reasons[reason] = reasons.get(reason, 0) + 1
                    break
            else:
                feasible.append(node)
        if nodes:
            self._next_start = (start + processed) % len(nodes)
        return feasible

    def _score(
        self, cycle: Cycle, feasible: Sequence[NodeInfo]
    ) -> tuple[list[int], list[dict[str, int]]]:
        totals = [0] * len(feasible)
        per_plugin: list[dict[str, int]] = [{} for _ in feasible]
        pod = cycle.pod
        for weighted in self.scorers:
            scorer = weighted.scorer
            state = scorer.pre_score(cycle, feasible)
            scores = [scorer.score(state, pod, node) for node in feasible]
            scorer.normalize(state, scores)
            for i, score in enumerate(scores):
                if not 0 <= score <= MAX_NODE_SCORE:
                    raise ValueError(
                        f"plugin {scorer.name} scored node {feasible[i].name} {score}, "
                        f"outside 0..{MAX_NODE_SCORE}"
                    )
                totals[i] += weighted.weight * score
                per_plugin[i][scorer.name] = score
        return totals, per_plugin


def _select(totals: Sequence[int], rng: random.Random) -> int:
    """Index of the highest total; equal totals are equally likely (reservoir sampling)."""
    best = 0
    ties = 1
    for i in range(1, len(totals)):
        if totals[i] > totals[best]:
            best, ties = i, 1
        elif totals[i] == totals[best]:
            ties += 1
            if rng.randrange(ties) == 0:
                best = i
    return best
