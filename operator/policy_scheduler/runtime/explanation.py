"""Every node's verdict for one pod, for ``policy-scheduler explain``: which filter rejected each
node and why, and every feasible node's scores, under the same plugins and order as a decision
(:mod:`~.runtime.schedule_one`) but looking at every node.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.framework.interface import Explains
from policy_scheduler.framework.types import Cycle, failure_message
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.nodetable import Indices
from policy_scheduler.model.objects import PodView
from policy_scheduler.runtime.decision import Candidate, candidate
from policy_scheduler.runtime.framework import (
    drawing,
    explained_choice,
    filter_block,
    pre_filter_outcome,
    run_pre_filter,
    run_score,
)
from policy_scheduler.runtime.schedule_one import Pipeline


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
    detail: str = ""
    """Why in detail, when the filter that rejected the node says more than its reasons
    (:class:`~.framework.interface.Explains`: which device request failed and why)."""
    chosen: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For a feasible node, what those filters chose on it: each ResourceClaim's devices."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Every node's verdict for one pod, in snapshot order, and the plugins that skipped it."""

    pod: str
    verdicts: tuple[NodeVerdict, ...]
    skipped: tuple[str, ...]
    """"Filter X"/"Score X" for each plugin whose pre_filter/pre_score returned SKIP: the filter
    passed every node, the scorer counted 0 everywhere."""
    pre_filter_rejection: str = ""
    """Why a pre-filter rejected the pod before any node was filtered, as in a Decision."""

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
        return failure_message(len(self.verdicts), self.reasons, self.pre_filter_rejection)

    @property
    def best(self) -> tuple[Candidate, ...]:
        """The feasible nodes with the highest total: the pod goes to one of them, which one
        depending on the order the scheduler finds them in (see :func:`select_host`)."""
        candidates = [v.candidate for v in self.verdicts if v.candidate is not None]
        top = max((c.score for c in candidates), default=None)
        return tuple(c for c in candidates if c.score == top)


def explain(
    pipeline: Pipeline, pod: PodView, snapshot: Snapshot, rng: random.Random | None = None
) -> Explanation:
    """Every node's verdict for ``pod`` under ``pipeline``, with the evidence :meth:`decide`
    does not keep: which filter rejected each node, and every feasible node's scores.

    Unlike :meth:`decide`, every node left to filter is examined (no ``percentageOfNodesToScore``;
    on clusters of 100 nodes or more the scheduler may not look at all of them) and the rotating
    start index is left alone. The plugins run under the same contract: ``pre_filter`` once and
    SKIP honoured, what the pre-filters say of the whole cluster applied first (a node they leave
    out, or every node when they reject the pod, is rejected by them), the pool checked first and
    a node's first failing filter giving its reasons, and the scoring is :meth:`Pipeline._score`
    itself.
    """
    cycle = Cycle(pod, snapshot, rng or random.Random())
    states, skipped_filters = run_pre_filter(pipeline.pool, pipeline.filters, cycle)
    skipped = [f"Filter {name}" for name in skipped_filters]
    table = snapshot.table
    nodes = table.infos
    outcome = pre_filter_outcome(states, snapshot)
    by_pre_filter = (", ".join(outcome.plugins), (outcome.rejection or outcome.left_out,))
    to_filter = np.arange(len(nodes)) if outcome.positions is None else outcome.positions
    if outcome.rejection:
        to_filter = to_filter[:0]
    rejections = dict.fromkeys(set(range(len(nodes))) - set(to_filter.tolist()), by_pre_filter)
    # Every node left is visited, node by node when filters that draw random numbers must be.
    size = 1 if drawing(states) > 1 else max(len(to_filter), 1)
    passed: list[Indices] = []
    for begin in range(0, len(to_filter), size):
        block = table.block(to_filter[begin : begin + size])
        remaining, rejected = filter_block(states, pod, block)
        passed.append(block.positions[remaining])
        for name, reasons, indices in rejected:
            rejections.update(dict.fromkeys(block.positions[indices].tolist(), (name, reasons)))
    feasible = table.block(np.concatenate(passed) if passed else np.arange(0))
    candidates: dict[str, Candidate] = {}
    if len(feasible):
        totals, columns = run_score(pipeline.scorers, cycle, feasible)
        skipped += [f"Score {name}" for name, scores in columns if scores is None]
        weight_sum = pipeline.weight_sum
        candidates = {
            node.name: candidate(node.name, int(totals[i]), weight_sum, columns, i)
            for i, node in enumerate(feasible)
        }
    details = {
        (plugin.name, node): detail
        for plugin, state in states
        if isinstance(plugin, Explains)
        for node, detail in plugin.details(state).items()
    }
    verdicts = tuple(
        NodeVerdict(
            node.name,
            None,
            (),
            candidates[node.name],
            chosen=explained_choice(states, node.name),
        )
        if i not in rejections
        else NodeVerdict(
            node.name,
            rejections[i][0],
            rejections[i][1],
            None,
            details.get((rejections[i][0], node.name), ""),
        )
        for i, node in enumerate(nodes)
    )
    return Explanation(pod.key, verdicts, tuple(skipped), outcome.rejection)
