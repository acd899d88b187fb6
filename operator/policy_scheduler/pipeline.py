"""One scheduling decision: filter -> score -> normalize -> weight -> select, with its breakdown.

The order of work follows kube-scheduler's scheduling cycle, so a policy that mirrors its default
profile places pods as it does:

- filters run in the policy's order, and a node's first failing filter gives its reasons;
- on large clusters only enough feasible nodes are looked for (``percentageOfNodesToScore``, with
  kube-scheduler's adaptive default), starting where the previous decision stopped so that every
  node gets its turn;
- a plugin whose ``pre_filter``/``pre_score`` returns SKIP is left out for this pod, as
  kube-scheduler skips it: every node passes the filter, the scorer adds 0 (shown as 0);
- each scorer's scores are normalized to 0..100 and summed with the policy's weights;
- the highest total wins, ties broken uniformly at random.

Unlike kube-scheduler, the result keeps the evidence: every feasible node's per-plugin scores (the
top few are reported) and, when nothing fits, the count of each reason.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.base import MAX_NODE_SCORE, SKIP, Cycle, Filter, Scorer

# kube-scheduler's bounds for the adaptive percentageOfNodesToScore (pkg/scheduler/schedule_one.go).
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

OUTSIDE_NODE_POOL = "node(s) didn't match the policy's nodeSelector"
NODE_POOL_FILTER = "nodeSelector"
"""The name :func:`explain` gives the policy's node pool when it rejects a node."""


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


FilterStates = list[tuple[Filter[Any], Any]]
_OUTSIDE_NODE_POOL_REASONS = (OUTSIDE_NODE_POOL,)


def _pre_filter(filters: Sequence[Filter[Any]], cycle: Cycle) -> tuple[FilterStates, list[str]]:
    """Each filter's per-pod state, and the names of the filters that skip this pod."""
    states: FilterStates = []
    skipped: list[str] = []
    for plugin in filters:
        state = plugin.pre_filter(cycle)
        if state is SKIP:
            skipped.append(plugin.name)
        else:
            states.append((plugin, state))
    return states, skipped


def _first_rejection(
    pool: LabelSelector | None, states: FilterStates, pod: PodView, node: NodeInfo
) -> tuple[str, Sequence[str]] | None:
    """The first filter that rejects ``node`` and its reasons, or None when the node fits.
    The policy's node pool counts as the first filter."""
    if pool is not None and not pool.matches(node.node.labels):
        return NODE_POOL_FILTER, _OUTSIDE_NODE_POOL_REASONS
    for plugin, state in states:
        rejected = plugin.filter(state, pod, node)
        if rejected:
            return plugin.name, rejected
    return None


@dataclass(slots=True)
class Pipeline:
    """A compiled policy's decision procedure. Holds the rotating start index between decisions."""

    filters: Sequence[Filter[Any]]
    scorers: Sequence[WeightedScorer]
    percentage_of_nodes_to_score: int = 0
    node_pool: LabelSelector | None = None
    candidates_to_report: int = 3
    _next_start: int = field(default=0, init=False)

    @property
    def weight_sum(self) -> int:
        """What weighted totals are divided by to lie in 0..100 (1 without priorities)."""
        return sum(ws.weight for ws in self.scorers) or 1

    def decide(self, pod: PodView, snapshot: Snapshot, rng: random.Random) -> Decision:
        cycle = Cycle(pod, snapshot, rng)
        nodes = list(snapshot)
        reasons: dict[str, int] = {}
        feasible = self._find_feasible(cycle, nodes, reasons)
        if not feasible:
            return Decision(pod.key, None, None, (), reasons, len(nodes), 0)
        totals, columns = self._score(cycle, feasible)
        chosen = _select(totals, rng)
        weight_sum = self.weight_sum
        # Only the reported candidates are ranked and get their per-plugin breakdown; nsmallest
        # orders as sorted()[:k] would, for far less work than sorting every feasible node.
        ranked = heapq.nsmallest(
            self.candidates_to_report,
            range(len(feasible)),
            key=lambda i: (-totals[i], i != chosen),
        )
        candidates = tuple(
            _candidate(feasible[i].name, totals[i], weight_sum, columns, i) for i in ranked
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
        states, _ = _pre_filter(self.filters, cycle)
        count = len(nodes)
        wanted = feasible_nodes_to_find(count, self.percentage_of_nodes_to_score)
        pool = self.node_pool
        feasible: list[NodeInfo] = []
        append = feasible.append
        start = self._next_start % count if nodes else 0
        processed = 0
        # The nodes in visiting order: from the rotating start to the end, then from the start.
        for node in itertools.chain(
            itertools.islice(nodes, start, None), itertools.islice(nodes, start)
        ):
            if len(feasible) >= wanted:
                break
            processed += 1
            rejection = _first_rejection(pool, states, pod, node)
            if rejection is None:
                append(node)
            else:
                for reason in rejection[1]:
                    reasons[reason] = reasons.get(reason, 0) + 1
        if nodes:
            self._next_start = (start + processed) % count
        return feasible

    def _score(
        self, cycle: Cycle, feasible: Sequence[NodeInfo]
    ) -> tuple[list[int], list[tuple[str, list[int] | None]]]:
        """Each node's weighted total, and per scorer (in policy order) its name and normalized
        scores, None for a scorer that skipped this pod (it counts 0)."""
        totals = [0] * len(feasible)
        columns: list[tuple[str, list[int] | None]] = []
        pod = cycle.pod
        for weighted in self.scorers:
            scorer = weighted.scorer
            state = scorer.pre_score(cycle, feasible)
            if state is SKIP:
                columns.append((scorer.name, None))
                continue
            score = scorer.score
            scores = [score(state, pod, node) for node in feasible]
            scorer.normalize(state, scores)
            if min(scores) < 0 or max(scores) > MAX_NODE_SCORE:
                i = next(i for i, s in enumerate(scores) if not 0 <= s <= MAX_NODE_SCORE)
                raise ValueError(
                    f"plugin {scorer.name} scored node {feasible[i].name} {scores[i]}, "
                    f"outside 0..{MAX_NODE_SCORE}"
                )
            weight = weighted.weight
            totals = [total + weight * s for total, s in zip(totals, scores, strict=True)]
            columns.append((scorer.name, scores))
        return totals, columns


def _candidate(
    node: str, total: int, weight_sum: int, columns: Sequence[tuple[str, list[int] | None]], i: int
) -> Candidate:
    """The ``i``-th scored node's report: its weighted total and each scorer's score (0 for a
    scorer that skipped the pod), from what :meth:`Pipeline._score` returned."""
    return Candidate(
        node,
        round(total / weight_sum, 2),
        {name: 0 if scores is None else scores[i] for name, scores in columns},
    )


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


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One node's answer for a pod: the filter that rejected it and why, or its scores."""

    node: str
    rejected_by: str | None
    """The first filter that failed (``nodeSelector`` for a node outside the policy's pool), or
    None when the node is feasible."""
    reasons: tuple[str, ...]
    candidate: Candidate | None
    """A feasible node's weighted total and per-plugin scores."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Every node's verdict for one pod, in snapshot order, and the plugins that skipped it."""

    pod: str
    verdicts: tuple[NodeVerdict, ...]
    skipped: tuple[str, ...]
    """"Filter X"/"Score X" for each plugin whose pre_filter/pre_score returned SKIP: the filter
    passed every node, the scorer counted 0 everywhere."""

    @property
    def reasons(self) -> dict[str, int]:
        """How many nodes each reason rejected, as a Decision counts them."""
        counts: dict[str, int] = {}
        for verdict in self.verdicts:
            for reason in verdict.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    @property
    def message(self) -> str:
        """The FailedScheduling message, when no node is feasible."""
        return failure_message(len(self.verdicts), self.reasons)

    @property
    def best(self) -> tuple[Candidate, ...]:
        """The feasible nodes with the highest total: the pod goes to one of them, at random."""
        candidates = [v.candidate for v in self.verdicts if v.candidate is not None]
        top = max((c.score for c in candidates), default=None)
        return tuple(c for c in candidates if c.score == top)


def explain(
    pipeline: Pipeline, pod: PodView, snapshot: Snapshot, rng: random.Random | None = None
) -> Explanation:
    """Every node's verdict for ``pod`` under ``pipeline``, with the evidence :meth:`decide`
    does not keep: which filter rejected each node, and every feasible node's scores.

    Unlike :meth:`decide`, every node is examined (no ``percentageOfNodesToScore``; on clusters of
    100 nodes or more the scheduler may not look at all of them) and the rotating start index is
    left alone. The plugins run under the same contract: ``pre_filter`` once and SKIP honoured,
    the pool checked first and a node's first failing filter giving its reasons, and the scoring
    is :meth:`Pipeline._score` itself.
    """
    cycle = Cycle(pod, snapshot, rng or random.Random())
    states, skipped_filters = _pre_filter(pipeline.filters, cycle)
    skipped = [f"Filter {name}" for name in skipped_filters]
    nodes = list(snapshot)
    rejections = [_first_rejection(pipeline.node_pool, states, pod, node) for node in nodes]
    feasible = [node for node, rejection in zip(nodes, rejections, strict=True) if not rejection]
    candidates: dict[str, Candidate] = {}
    if feasible:
        totals, columns = pipeline._score(cycle, feasible)
        skipped += [f"Score {name}" for name, scores in columns if scores is None]
        weight_sum = pipeline.weight_sum
        candidates = {
            node.name: _candidate(node.name, totals[i], weight_sum, columns, i)
            for i, node in enumerate(feasible)
        }
    verdicts = tuple(
        NodeVerdict(node.name, None, (), candidates[node.name])
        if rejection is None
        else NodeVerdict(node.name, rejection[0], tuple(rejection[1]), None)
        for node, rejection in zip(nodes, rejections, strict=True)
    )
    return Explanation(pod.key, verdicts, tuple(skipped))
