"""One scheduling decision, kube-scheduler's schedulePod (pkg/scheduler/schedule_one.go): filter ->
score -> normalize -> weight -> select, with its breakdown.

The order of work follows kube-scheduler's scheduling cycle, so a policy that mirrors its default
profile places pods as it does:

- filters run in the policy's order, and a node's first failing filter gives its reasons;
- before any node is filtered, what the filters' pre-filters say of the whole cluster
  (:meth:`~.plugins.base.Filter.pre_filter_result`) is applied, as kube-scheduler applies its
  PreFilterResult: only the nodes they name are filtered, and every other node counts once as
  "node(s) didn't satisfy plugin(s) [<the filters that named nodes>]", whatever the filters would
  have said of it; a pre-filter that rejects the pod leaves every node unfiltered, and the
  FailedScheduling message gives its reason without a count, as kube-scheduler's does;
- a pod nominated to a node by an earlier preemption (``status.nominatedNodeName``) is tried
  there first, as kube-scheduler's evaluateNominatedNode does: when every filter passes that
  node it is the only feasible node, and no other is filtered;
- on large clusters only enough feasible nodes are looked for (``percentageOfNodesToScore``, with
  kube-scheduler's adaptive default, of the nodes left to filter), starting where the previous
  decision stopped so that every node gets its turn;
- a plugin whose ``pre_filter``/``pre_score`` returns SKIP is left out for this pod, as
  kube-scheduler skips it: every node passes the filter, the scorer adds 0 (shown as 0);
- each scorer's scores are normalized to 0..100 and summed with the policy's weights;
- the highest total wins; among equal totals, the one kube-scheduler v1.37 picks from the same
  order of feasible nodes: the first in a pre-order walk of the binary max-heap it builds over
  them (see :func:`select_host`). No random draw: kube-scheduler's own order of feasible nodes
  depends on which of its parallel filter workers finishes first, ours is the visiting order.

The scheduling loop names the pods nominated to nodes that hold their room against the pod
(:class:`~.plugins.base.NominatedPods`): as kube-scheduler's RunFilterPluginsWithNominatedPods, a
node with such pods fits only if every filter passes it with them counted there (only there: the
pre-filter states that count pods are updated for that node's pods alone) and without them, and
a failure with them is the one told; its filters are asked twice, as kube-scheduler asks them,
but without them first. The scorers never count them. The loop gets each filter's
``pre_filter`` state back in a :class:`~.plugins.base.CycleState`, for the plugins' later
extension points.

For a policy with post-filters the loop asks :meth:`Pipeline.decide` for ``statuses``: a decision
that finds no node then also names the nodes rejected for a reason no preemption can help
(kube-scheduler's UnschedulableAndUnresolvable, as each filter declares it: see
:meth:`~.plugins.base.Filter.unresolvable`), and :meth:`Pipeline.node_statuses` hands that, with
:meth:`Pipeline.what_if` (the filters asked again about one node after a post-filter took pods
out of the snapshot, the pre-filters run once and their pod counts kept up to date by the
filters' ``add_pod``/``remove_pod``, as kube-scheduler's PreFilterExtensions), to the
post-filters. Other policies' pods pay nothing for it.

Unlike kube-scheduler, the result keeps the evidence: every feasible node's per-plugin scores (the
best few are reported, or all of them) and, when nothing fits, the count of each reason.

The nodes are visited in blocks (:class:`~policy_scheduler.model.nodetable.NodeBlock`), each
filter answering for a whole block, and the scorers score all feasible nodes at once; that
changes nothing of the above. A block may reach past the node where enough feasible nodes are
found: what the filters said about the nodes after it is dropped, as if they had not been
visited, and the reasons are counted in visiting order. A filter that draws random numbers must
not be asked about nodes the walk does not visit, nor in another order: with one, no block is
larger than the feasible nodes still wanted; with more, blocks have one node.

How each extension point runs the policy's plugins is :mod:`~.runtime.framework`; the what-if
post-filters ask is :mod:`~.runtime.preemption`; what a decision reports, :mod:`~.runtime.decision`.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.cycle_state import CycleState
from policy_scheduler.framework.interface import (
    Filter,
    NodeStatuses,
    Scores,
    WhatIf,
)
from policy_scheduler.framework.types import NO_NOMINATED, Cycle, NominatedPods
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import Indices, NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.runtime.decision import Decision, candidate
from policy_scheduler.runtime.framework import (
    NODE_POOL_FILTER,
    FilterStates,
    NodePool,
    Rejected,
    WeightedScorer,
    block_of,
    drawing,
    explained_choice,
    explained_details,
    filter_block,
    filter_node,
    nominated_pass,
    pre_filter_outcome,
    run_pre_filter,
    run_score,
    with_nominated,
)
from policy_scheduler.runtime.preemption import PipelineWhatIf

# kube-scheduler's bounds for the adaptive percentageOfNodesToScore (pkg/scheduler/schedule_one.go).
MIN_FEASIBLE_NODES_TO_FIND = 100


MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def feasible_nodes_to_find(all_nodes: int, percentage: int) -> int:
    """How many feasible nodes to look for before scoring; ``percentage`` 0 means adaptive."""
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if percentage == 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _visited_until(rejected: Rejected, last: int) -> Rejected:
    """The rejections of the nodes up to index ``last`` of the block."""
    kept = []
    for name, reasons, indices in rejected:
        visited = indices[: np.searchsorted(indices, last, side="right")]
        if len(visited):
            kept.append((name, reasons, visited))
    return kept


def _unresolvable(
    states: FilterStates, pod: PodView, block: NodeBlock, rejected: Rejected
) -> list[str]:
    """The names of the nodes of ``block`` that their filter rejected for a reason no
    preemption can help; asked once per group of reasons."""
    plugins = {plugin.name: plugin for plugin, _ in states}
    names: list[str] = []
    for name, reasons, indices in rejected:
        nodes = block.take(indices)
        names.extend(
            node.name for node in nodes.take(plugins[name].unresolvable(pod, nodes, reasons))
        )
    return names


def _count_reasons(reasons: dict[str, int], rejected: Rejected) -> None:
    """Add each reason's count of nodes; new reasons join in the order of the first node (in
    visiting order) giving them, as counting node by node would insert them."""
    for _, group, indices in sorted(rejected, key=lambda rejection: int(rejection[2][0])):
        for reason in group:
            reasons[reason] = reasons.get(reason, 0) + len(indices)


def _nominated_node(
    states: FilterStates, cycle: Cycle, nominated: NominatedPods
) -> NodeBlock | None:
    """The pod's nominated node (``status.nominatedNodeName``, set by an earlier preemption) as
    the only feasible node when every filter passes it (with and without the pods nominated
    there that hold room against it), as kube-scheduler's evaluateNominatedNode tries it before
    any other node: there its room was made. None when the pod has none, the node left, or a
    filter rejects it; what it said then is forgotten, as the walk over all the nodes visits it
    again."""
    name = cycle.pod.nominated_node_name
    info = cycle.snapshot.get(name) if name else None
    if info is None:
        return None
    block = block_of(cycle.snapshot, info)
    if filter_node(states, cycle.pod, block) or with_nominated(states, cycle, info, nominated):
        return None
    return block


def _nominated_positions(snapshot: Snapshot, nominated: NominatedPods) -> Indices:
    """The table positions of the nodes that have nominated pods."""
    table = snapshot.table
    infos = (snapshot.get(name) for name in nominated.by_node)
    return np.array([table.position(info) for info in infos if info is not None], np.intp)


@dataclass(slots=True)
class Pipeline:
    """A compiled policy's decision procedure. Holds the rotating start index between decisions."""

    filters: Sequence[Filter[Any]]
    scorers: Sequence[WeightedScorer]
    percentage_of_nodes_to_score: int = 0
    node_pool: LabelSelector | None = None
    candidates_to_report: int | None = 3
    """How many feasible nodes a decision reports, best first; None: all of them."""
    _next_start: int = field(default=0, init=False)
    pool: NodePool | None = field(default=None, init=False)
    """The policy's node pool as the filter that rejects nodes outside it."""

    def __post_init__(self) -> None:
        self.pool = None if self.node_pool is None else NodePool(self.node_pool)

    def filter_named(self, name: str) -> Filter[Any] | None:
        """The filter of that name (``nodeSelector``: the policy's pool), if the policy has it."""
        if name == NODE_POOL_FILTER:
            return self.pool
        return next((f for f in self.filters if f.name == name), None)

    @property
    def weight_sum(self) -> int:
        """What weighted totals are divided by to lie in 0..100 (1 without priorities)."""
        return sum(ws.weight for ws in self.scorers) or 1

    def decide(
        self,
        pod: PodView,
        snapshot: Snapshot,
        rng: random.Random,
        states: CycleState | None = None,
        nominated: NominatedPods = NO_NOMINATED,
        *,
        statuses: bool = False,
    ) -> Decision:
        """Where ``pod`` goes; each filter's pre-filter state is written into ``states``, and
        the filters (not the scorers) count the ``nominated`` pods as the module's docstring
        says. With ``statuses`` (for a policy with post-filters), a decision that finds no node
        also says which nodes were rejected for reasons no preemption can help
        (:attr:`Decision.unresolvable`)."""
        cycle = Cycle(pod, snapshot, rng)
        total_nodes = len(snapshot.table)
        reasons: dict[str, int] = {}
        rejected_by: set[str] = set()
        unresolvable: list[str] | None = [] if statuses else None
        feasible, rejection, filter_states = self._find_feasible(
            cycle,
            reasons,
            rejected_by,
            states,
            nominated=nominated,
            unresolvable=unresolvable,
        )
        if not len(feasible):
            return Decision(
                pod.key,
                None,
                None,
                (),
                reasons,
                total_nodes,
                0,
                frozenset(rejected_by),
                rejection,
                None if unresolvable is None else frozenset(unresolvable),
                details=explained_details(filter_states),
            )
        if len(feasible) == 1 and not any(ws.scorer.chooses_on_node for ws in self.scorers):
            # As kube-scheduler's schedulePod: the only node the filters left is taken without
            # PreScore or Score, which could not change the choice (unless a scorer also
            # chooses what the pod gets on the node).
            return Decision(
                pod.key,
                feasible[0].name,
                None,
                (),
                reasons,
                total_nodes,
                1,
                frozenset(rejected_by),
                details=explained_details(filter_states),
                chosen=explained_choice(filter_states, feasible[0].name),
            )
        totals, columns = run_score(self.scorers, cycle, feasible)
        chosen = select_host(totals)
        weight_sum = self.weight_sum
        report = len(totals) if self.candidates_to_report is None else self.candidates_to_report
        candidates = tuple(
            candidate(feasible[i].name, int(totals[i]), weight_sum, columns, i)
            for i in _ranked(totals, chosen, report)
        )
        return Decision(
            pod.key,
            feasible[chosen].name,
            round(int(totals[chosen]) / weight_sum, 2),
            candidates,
            reasons,
            total_nodes,
            len(feasible),
            frozenset(rejected_by),
            details=explained_details(filter_states),
            chosen=explained_choice(filter_states, feasible[chosen].name),
        )

    def _find_feasible(
        self,
        cycle: Cycle,
        reasons: dict[str, int],
        rejected_by: set[str],
        cycle_state: CycleState | None,
        *,
        nominated: NominatedPods,
        unresolvable: list[str] | None = None,
    ) -> tuple[NodeBlock, str, FilterStates]:
        """The feasible nodes found, why a pre-filter rejected the pod (or ""), and the filters'
        states; the names
        of the nodes rejected for unresolvable reasons are added to ``unresolvable``, if
        given (a pre-filter's rejection, or its leaving a node out, is unresolvable; the nodes left
        out are named only when no node fits, the only decisions whose statuses are read)."""
        table = cycle.snapshot.table
        states, _ = run_pre_filter(self.pool, self.filters, cycle)
        if cycle_state is not None:
            for plugin, state in states:
                cycle_state.write(plugin, state)
        count = len(table)
        outcome = pre_filter_outcome(states, cycle.snapshot)
        rejected_by.update(outcome.plugins)
        if outcome.rejection:
            if count:
                reasons[outcome.rejection] = count
            if unresolvable is not None:
                unresolvable.extend(info.name for info in table.infos)
            return table.block(np.arange(0)), outcome.rejection, states
        on_nominated = _nominated_node(states, cycle, nominated)
        if on_nominated is not None:
            return on_nominated, "", states
        nominated_at = _nominated_positions(cycle.snapshot, nominated)
        to_filter = np.arange(count) if outcome.positions is None else outcome.positions
        left = len(to_filter)
        if left < count:
            reasons[outcome.left_out] = count - left
        draws = drawing(states)
        wanted = feasible_nodes_to_find(left, self.percentage_of_nodes_to_score)
        start = self._next_start % left if left else 0
        # The nodes in visiting order: from the rotating start to the end, then from the start.
        order = to_filter[np.concatenate((np.arange(start, left), np.arange(start)))]
        feasible: list[Indices] = []
        found = processed = 0
        while found < wanted and processed < left:
            # With one filter that draws, no node past the last one needed may be asked.
            size = still = wanted - found
            if draws > 1:
                size = 1
            elif not draws:
                # Enough nodes to find the rest at the rate found so far, and a margin: the
                # nodes past the last one needed cost little, another block costs more.
                if processed:
                    size = -(-still * processed // max(found, 1))
                size += size // 8 + 16
            block = table.block(order[processed : processed + size])
            passed, rejected = filter_block(states, cycle.pod, block)
            if len(nominated_at):
                passed, rejected = nominated_pass(
                    states, cycle, block, (passed, rejected), nominated=nominated, at=nominated_at
                )
            visited = len(block)
            if len(passed) >= still:
                # The walk stops at the node that completes the wanted feasible nodes.
                passed = passed[:still]
                visited = int(passed[-1]) + 1
                rejected = _visited_until(rejected, visited - 1)
            _count_reasons(reasons, rejected)
            rejected_by.update(name for name, _, _ in rejected)
            if unresolvable is not None and rejected:
                unresolvable.extend(_unresolvable(states, cycle.pod, block, rejected))
            feasible.append(block.positions[passed])
            found += len(passed)
            processed += visited
        if count:
            # As kube-scheduler, the start moves on by the nodes filtered, over all the nodes.
            self._next_start = (self._next_start + processed) % count
        if unresolvable is not None and not found and left < count:
            # The nodes the pre-filters left out, named only when no node fits: a pod pinned to
            # one node of thousands would otherwise pay for naming all the others.
            named = set(to_filter.tolist())
            unresolvable.extend(info.name for i, info in enumerate(table.infos) if i not in named)
        return table.block(np.concatenate(feasible) if feasible else order[:0]), "", states

    def refilter(self, cycle: Cycle, node: NodeInfo) -> tuple[str, ...]:
        """The policy's verdict on ``cycle.pod`` for one node of ``cycle.snapshot`` as it is
        now: the pre-filters run anew, then the filters on that node; FITS, or the first
        failing filter's reasons (a pre-filter's rejection, or its leaving the node out, gives
        its reason). The rotating start index is left alone. Post-filters ask a
        :class:`~.framework.interface.WhatIf` instead (:meth:`what_if`), which runs the pre-filters
        once for many such questions."""
        return PipelineWhatIf(self.pool, self.filters, cycle, NO_NOMINATED).verdict(node)

    def what_if(self, cycle: Cycle, nominated: NominatedPods = NO_NOMINATED) -> WhatIf:
        """A what-if for ``cycle``'s pod on its snapshot as it is now (see
        :class:`~.framework.interface.WhatIf`), counting the ``nominated`` pods as :meth:`decide`
        does."""
        return PipelineWhatIf(self.pool, self.filters, cycle, nominated)

    def node_statuses(
        self, decision: Decision, nominated: NominatedPods = NO_NOMINATED
    ) -> NodeStatuses:
        """What the post-filters are told of a decision that found no node (decided with
        ``statuses``: otherwise no node counts as unresolvable but for a pre-filter's
        rejection), with :meth:`what_if` counting the ``nominated`` pods as the decision
        did."""
        pre_filtered = None
        if decision.pre_filter_rejection:
            # kube-scheduler's pre-filters stop at the first that rejects the pod.
            names = [f.name for f in self.filters]
            last = max(names.index(n) for n in decision.rejected_by if n in names)
            pre_filtered = frozenset(names[: last + 1])
        return NodeStatuses(
            decision.reasons,
            decision.total_nodes,
            decision.unresolvable or frozenset(),
            functools.partial(self.what_if, nominated=nominated),
            decision.pre_filter_rejection,
            pre_filtered,
        )


def select_host(totals: Scores) -> int:
    """Index of the highest total, as kube-scheduler v1.37's schedulePod chooses it: it heapifies
    the scored nodes (``container/heap``'s Init, a node above another only when its total is
    strictly higher: every extender-less node has the same tie-breaking ``Randomizer``, 0) and
    pops the root.

    Heapifying sifts each parent down past a child only when the child is strictly greater, and
    to its right child only when that one beats the left strictly; so the node left at the root
    is the first of the best in a pre-order walk of the heap's tree (node, left subtree, right
    subtree). With positions numbered from 1, pre-order is the order of the binary numbers
    padded with zeros to the tree's depth, a node before its descendants where those are equal.
    """
    best = np.flatnonzero(totals == totals.max())
    if len(best) == 1:
        return int(best[0])
    numbers = best + 1
    # frexp's exponent is the bit length, exact for integers below 2**53.
    lengths = np.frexp(numbers.astype(np.float64))[1].astype(np.int64)
    padded = numbers << (len(totals).bit_length() - lengths)
    return int(best[np.lexsort((lengths, padded))[0]])


def _ranked(totals: Scores, chosen: int, count: int) -> list[int]:
    """The ``count`` best nodes, best first: the chosen one, then by total and visiting order."""
    if count <= 0:
        return []
    order: npt.NDArray[np.intp] = np.argsort(-totals, kind="stable")
    others = [i for i in order[:count].tolist() if i != chosen]
    return [chosen, *others[: count - 1]]
