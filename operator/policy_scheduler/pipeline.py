"""One scheduling decision: filter -> score -> normalize -> weight -> select, with its breakdown.

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
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import Indices, NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.base import (
    FITS,
    MAX_NODE_SCORE,
    NO_NOMINATED,
    SKIP,
    ClusterEvent,
    Cycle,
    CycleState,
    EventKind,
    Filter,
    NodeStatuses,
    NominatedPods,
    Scorer,
    Scores,
    WhatIf,
    failure_message,
)

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


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    """A policy's priority: the scorer and its weight in the total."""

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
    :meth:`~.plugins.base.Filter.unresolvable`); None when not asked."""

    @property
    def message(self) -> str:
        """The FailedScheduling message for an unschedulable pod."""
        return failure_message(self.total_nodes, self.reasons, self.pre_filter_rejection)

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


class _NodePool(Filter[LabelSelector]):
    """The policy's node pool, run as the first filter. Its queueing hint, as NodeAffinity's for
    the scheduler-enforced affinity it resembles: only a node added to the pool, or whose labels
    changed so that it is in the pool now and was not before, can help."""

    name = NODE_POOL_FILTER
    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_LABELS

    def __init__(self, selector: LabelSelector) -> None:
        self.selector = selector

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        node, old = event.node, event.old_node
        if node is None:
            return True
        return self.selector.matches(node.labels) and (
            old is None or not self.selector.matches(old.labels)
        )

    # No eviction brings a node into the policy's pool.
    unresolvable_reasons = frozenset(_OUTSIDE_NODE_POOL_REASONS)

    def filter(self, state: LabelSelector, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return FITS if state.matches(node.node.labels) else _OUTSIDE_NODE_POOL_REASONS


def _pre_filter(
    pool: _NodePool | None, filters: Sequence[Filter[Any]], cycle: Cycle
) -> tuple[FilterStates, list[str]]:
    """Each filter's per-pod state, the policy's node pool first, and the names of the filters
    that skip this pod."""
    states: FilterStates = [] if pool is None else [(pool, pool.selector)]
    skipped: list[str] = []
    for plugin in filters:
        state = plugin.pre_filter(cycle)
        if state is SKIP:
            skipped.append(plugin.name)
        else:
            states.append((plugin, state))
    return states, skipped


@dataclass(frozen=True, slots=True)
class _PreFilterOutcome:
    """What the filters' pre-filters said of the cluster for the pod, merged as kube-scheduler's
    RunPreFilterPlugins merges PreFilterResults."""

    positions: Indices | None = None
    """The nodes left to filter, in snapshot order; None: every node."""
    left_out: str = ""
    """The reason of the nodes not left to filter."""
    plugins: tuple[str, ...] = ()
    """The filters whose pre-filter named nodes or rejected the pod."""
    rejection: str = ""
    """Why no node fits the pod at all, when a pre-filter said so."""


def _pre_filter_outcome(states: FilterStates, snapshot: Snapshot) -> _PreFilterOutcome:
    """The first pre-filter rejection, else the nodes that every pre-filter naming nodes names (a
    name the snapshot lacks is no node); when no name is common to them all, that rejects the
    pod, in kube-scheduler's words."""
    names: frozenset[str] | None = None
    naming: list[str] = []
    for plugin, state in states:
        result = plugin.pre_filter_result(state)
        if result.rejection:
            return _PreFilterOutcome(plugins=(plugin.name,), rejection=result.rejection)
        if result.node_names is None:
            continue
        naming.append(plugin.name)
        names = result.node_names if names is None else names & result.node_names
        if not names:
            rejection = (
                f"node(s) didn't satisfy plugin {naming[0]}"
                if len(naming) == 1
                else f"node(s) didn't satisfy plugin(s) {_go_list(naming)} simultaneously"
            )
            return _PreFilterOutcome(plugins=tuple(naming), rejection=rejection)
    if names is None:
        return _PreFilterOutcome()
    table = snapshot.table
    found = [table.position(info) for info in map(snapshot.get, names) if info is not None]
    reason = f"node(s) didn't satisfy plugin(s) {_go_list(naming)}"
    return _PreFilterOutcome(np.sort(np.array(found, np.intp)), reason, tuple(naming))


def _go_list(names: Sequence[str]) -> str:
    """Plugin names as kube-scheduler prints a sorted set of them: "[A B]"."""
    return f"[{' '.join(sorted(names))}]"


def _drawing(states: FilterStates) -> int:
    """How many of the filters draw random numbers (see :attr:`Filter.draws_random`)."""
    return sum(plugin.draws_random for plugin, _ in states)


Rejected = list[tuple[str, tuple[str, ...], Indices]]
"""(filter, reasons, the indices into the block of the nodes it rejected for them)."""


def _filter_block(states: FilterStates, pod: PodView, block: NodeBlock) -> tuple[Indices, Rejected]:
    """The indices into ``block`` of the nodes that pass every filter, and each other node's
    first failing filter with its reasons; a node rejected by one filter is not asked by the
    next."""
    rejected: Rejected = []
    remaining = np.arange(len(block))
    for plugin, state in states:
        if not len(block):
            break
        rejections = plugin.filter_nodes(state, pod, block)
        if rejections:
            keep = np.ones(len(block), bool)
            for reasons, indices in rejections.items():
                keep[indices] = False
                rejected.append((plugin.name, reasons, remaining[indices]))
            remaining = remaining[keep]
            block = block.take(keep)
    return remaining, rejected


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
    block = _block_of(cycle.snapshot, info)
    if _filter_node(states, cycle.pod, block) or _with_nominated(states, cycle, info, nominated):
        return None
    return block


def _nominated_positions(snapshot: Snapshot, nominated: NominatedPods) -> Indices:
    """The table positions of the nodes that have nominated pods."""
    table = snapshot.table
    infos = (snapshot.get(name) for name in nominated.by_node)
    return np.array([table.position(info) for info in infos if info is not None], np.intp)


def _block_of(snapshot: Snapshot, info: NodeInfo) -> NodeBlock:
    table = snapshot.table
    return table.block(np.array([table.position(info)], np.intp))


def _first_failing(
    states: FilterStates, pod: PodView, node: NodeBlock
) -> tuple[str, tuple[str, ...]] | None:
    """What :func:`_filter_block` says of a block of one node, ``node``: the first failing
    filter and its reasons, or None when every filter passes it; each filter asked as cheaply as
    it answers for one node (:meth:`~.plugins.base.Filter.filter_one`), without the block's
    masks."""
    for plugin, state in states:
        reasons = plugin.filter_one(state, pod, node)
        if reasons:
            return plugin.name, tuple(reasons)
    return None


def _filter_node(states: FilterStates, pod: PodView, node: NodeBlock) -> tuple[str, ...]:
    """The first failing filter's reasons on the one node of ``node``, or FITS."""
    failing = _first_failing(states, pod, node)
    return FITS if failing is None else failing[1]


def _with_nominated(
    states: FilterStates, cycle: Cycle, info: NodeInfo, nominated: NominatedPods
) -> tuple[str, tuple[str, ...]] | None:
    """kube-scheduler's first pass of RunFilterPluginsWithNominatedPods on ``info``: the first
    filter that fails it with the pods nominated there counted on it, and in the states of the
    filters that count pods (``add_pod``, for those pods alone), with its reasons; None when it
    passes them, or has no such pods."""
    pods = nominated.by_node.get(info.name)
    if not pods:
        return None
    with nominated.counted([(info.name, pod) for pod in pods]):
        counted = [
            (
                plugin,
                _adding(plugin, state, cycle, pods, info)
                if plugin.pre_filter_counts_pods
                else state,
            )
            for plugin, state in states
        ]
        return _first_failing(counted, cycle.pod, _block_of(cycle.snapshot, info))


def _adding(
    plugin: Filter[Any], state: Any, cycle: Cycle, pods: Sequence[PodView], info: NodeInfo
) -> Any:
    """``state`` with ``pods`` counted on ``info`` (the filter's ``add_pod``, pod by pod)."""
    for pod in pods:
        state = plugin.add_pod(state, cycle, pod, info)
    return state


def _nominated_pass(
    states: FilterStates,
    cycle: Cycle,
    block: NodeBlock,
    filtered: tuple[Indices, Rejected],
    *,
    nominated: NominatedPods,
    at: Indices,
) -> tuple[Indices, Rejected]:
    """:func:`_filter_block`'s answer for ``block`` (``filtered``), with each node that has
    nominated pods (at the table positions ``at``) filtered with them too
    (:func:`_with_nominated`): a node that fails then is rejected for that failure, whatever the
    filters said of it without them."""
    passed, rejected = filtered
    here = np.flatnonzero(np.isin(block.positions, at))
    found: Rejected = []
    if not any(plugin.pre_filter_counts_pods for plugin, _ in states):
        # No filter of this pod counts pods beyond a node (Filter.pre_filter_counts_pods): all
        # those nodes filtered at once, each with its own nominated pods counted, get the
        # verdict each would get alone, for one pass over the block instead of one per node.
        nodes = block.take(here)
        by_node = nominated.by_node
        with nominated.counted([(info.name, pod) for info in nodes for pod in by_node[info.name]]):
            found = [
                (name, reasons, here[indices])
                for name, reasons, indices in _filter_block(states, cycle.pod, nodes)[1]
            ]
    else:
        failures: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i in here.tolist():
            failing = _with_nominated(states, cycle, block[i], nominated)
            if failing is not None:
                failures.setdefault(failing, []).append(i)
        found = [(name, reasons, np.array(i, np.intp)) for (name, reasons), i in failures.items()]
    if not found:
        return passed, rejected
    # Grouped by filter and reasons, as _filter_block groups them: _unresolvable asks a group once.
    moved = np.concatenate([indices for _, _, indices in found])
    kept = [
        (name, reasons, indices[~np.isin(indices, moved)]) for name, reasons, indices in rejected
    ]
    return passed[~np.isin(passed, moved)], [
        *(rejection for rejection in kept if len(rejection[2])),
        *found,
    ]


class _WhatIf(WhatIf):
    """The pipeline's :class:`~.plugins.base.WhatIf`: every pre-filter runs once, on the
    snapshot as it is when the what-if starts; the states that count pods
    (:attr:`~.plugins.base.Filter.pre_filter_counts_pods`) then follow each pod taken out or
    put back through their filter's ``remove_pod`` and ``add_pod``, as kube-scheduler's
    SelectVictimsOnNode runs the PreFilterExtensions, and what the pre-filters say of the
    cluster is merged anew after such a change. A verdict filters the one node; the rotating
    start index of the pipeline is left alone."""

    __slots__ = (
        "_changed",
        "_counting",
        "_cycle",
        "_nominated",
        "_outcome",
        "_positions",
        "_states",
    )

    def __init__(
        self,
        pool: _NodePool | None,
        filters: Sequence[Filter[Any]],
        cycle: Cycle,
        nominated: NominatedPods,
    ) -> None:
        self._cycle = cycle
        self._nominated = nominated
        self._states, _ = _pre_filter(pool, filters, cycle)
        # The indices into _states of those that count pods (a filter that skipped the pod
        # has none, and stays skipped).
        self._counting = [
            i for i, (plugin, _) in enumerate(self._states) if plugin.pre_filter_counts_pods
        ]
        self._changed = True
        self._outcome = _PreFilterOutcome()
        self._positions: frozenset[int] | None = None

    def removed(self, node: NodeInfo, pod: PodView) -> None:
        for i in self._counting:
            plugin, state = self._states[i]
            self._states[i] = (plugin, plugin.remove_pod(state, self._cycle, pod, node))
            self._changed = True

    def added(self, node: NodeInfo, pod: PodView) -> None:
        for i in self._counting:
            plugin, state = self._states[i]
            self._states[i] = (plugin, plugin.add_pod(state, self._cycle, pod, node))
            self._changed = True

    def rejects_with(self, node: NodeInfo, pod: PodView) -> bool:
        """Whether a filter would surely reject the cycle's pod with ``pod`` also on ``node``:
        any filter's own answer, the pre-filters' states being those of the snapshot now."""
        return any(
            plugin.rejects_with(state, self._cycle.pod, node, pod) for plugin, state in self._states
        )

    def verdict(self, node: NodeInfo) -> tuple[str, ...]:
        """FITS, or the first failing filter's reasons (a pre-filter's rejection, or its
        leaving the node out, gives its reason); on a node with nominated pods, those of the
        filters with them counted, if one fails then."""
        snapshot = self._cycle.snapshot
        if self._changed:
            self._changed = False
            self._outcome = _pre_filter_outcome(self._states, snapshot)
            positions = self._outcome.positions
            self._positions = None if positions is None else frozenset(positions.tolist())
        outcome = self._outcome
        if outcome.rejection:
            return (outcome.rejection,)
        position = snapshot.table.position(node)
        if self._positions is not None and position not in self._positions:
            return (outcome.left_out,)
        with_nominated = _with_nominated(self._states, self._cycle, node, self._nominated)
        if with_nominated is not None:
            return with_nominated[1]
        block = snapshot.table.block(np.array([position], np.intp))
        return _filter_node(self._states, self._cycle.pod, block)


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
    _pool: _NodePool | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._pool = None if self.node_pool is None else _NodePool(self.node_pool)

    def filter_named(self, name: str) -> Filter[Any] | None:
        """The filter of that name (``nodeSelector``: the policy's pool), if the policy has it."""
        if name == NODE_POOL_FILTER:
            return self._pool
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
        feasible, rejection = self._find_feasible(
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
            )
        totals, columns = self._score(cycle, feasible)
        chosen = select_host(totals)
        weight_sum = self.weight_sum
        report = len(totals) if self.candidates_to_report is None else self.candidates_to_report
        candidates = tuple(
            _candidate(feasible[i].name, int(totals[i]), weight_sum, columns, i)
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
    ) -> tuple[NodeBlock, str]:
        """The feasible nodes found, and why a pre-filter rejected the pod (or ""); the names
        of the nodes rejected for unresolvable reasons are added to ``unresolvable``, if
        given (a pre-filter's rejection, or its leaving a node out, is unresolvable)."""
        table = cycle.snapshot.table
        states, _ = _pre_filter(self._pool, self.filters, cycle)
        if cycle_state is not None:
            for plugin, state in states:
                cycle_state.write(plugin, state)
        count = len(table)
        outcome = _pre_filter_outcome(states, cycle.snapshot)
        rejected_by.update(outcome.plugins)
        if outcome.rejection:
            if count:
                reasons[outcome.rejection] = count
            if unresolvable is not None:
                unresolvable.extend(info.name for info in table.infos)
            return table.block(np.arange(0)), outcome.rejection
        on_nominated = _nominated_node(states, cycle, nominated)
        if on_nominated is not None:
            return on_nominated, ""
        nominated_at = _nominated_positions(cycle.snapshot, nominated)
        to_filter = np.arange(count) if outcome.positions is None else outcome.positions
        left = len(to_filter)
        if left < count:
            reasons[outcome.left_out] = count - left
            if unresolvable is not None:
                named = set(to_filter.tolist())
                unresolvable.extend(
                    info.name for i, info in enumerate(table.infos) if i not in named
                )
        drawing = _drawing(states)
        wanted = feasible_nodes_to_find(left, self.percentage_of_nodes_to_score)
        start = self._next_start % left if left else 0
        # The nodes in visiting order: from the rotating start to the end, then from the start.
        order = to_filter[np.concatenate((np.arange(start, left), np.arange(start)))]
        feasible: list[Indices] = []
        found = processed = 0
        while found < wanted and processed < left:
            # With one filter that draws, no node past the last one needed may be asked.
            size = still = wanted - found
            if drawing > 1:
                size = 1
            elif not drawing:
                # Enough nodes to find the rest at the rate found so far, and a margin: the
                # nodes past the last one needed cost little, another block costs more.
                if processed:
                    size = -(-still * processed // max(found, 1))
                size += size // 8 + 16
            block = table.block(order[processed : processed + size])
            passed, rejected = _filter_block(states, cycle.pod, block)
            if len(nominated_at):
                passed, rejected = _nominated_pass(
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
        return table.block(np.concatenate(feasible) if feasible else order[:0]), ""

    def refilter(self, cycle: Cycle, node: NodeInfo) -> tuple[str, ...]:
        """The policy's verdict on ``cycle.pod`` for one node of ``cycle.snapshot`` as it is
        now: the pre-filters run anew, then the filters on that node; FITS, or the first
        failing filter's reasons (a pre-filter's rejection, or its leaving the node out, gives
        its reason). The rotating start index is left alone. Post-filters ask a
        :class:`~.plugins.base.WhatIf` instead (:meth:`what_if`), which runs the pre-filters
        once for many such questions."""
        return _WhatIf(self._pool, self.filters, cycle, NO_NOMINATED).verdict(node)

    def what_if(self, cycle: Cycle, nominated: NominatedPods = NO_NOMINATED) -> WhatIf:
        """A what-if for ``cycle``'s pod on its snapshot as it is now (see
        :class:`~.plugins.base.WhatIf`), counting the ``nominated`` pods as :meth:`decide`
        does."""
        return _WhatIf(self._pool, self.filters, cycle, nominated)

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

    def _score(
        self, cycle: Cycle, feasible: NodeBlock
    ) -> tuple[Scores, list[tuple[str, Scores | None]]]:
        """Each node's weighted total, and per scorer (in policy order) its name and normalized
        scores, None for a scorer that skipped this pod (it counts 0)."""
        totals: Scores = np.zeros(len(feasible), np.int64)
        columns: list[tuple[str, Scores | None]] = []
        pod = cycle.pod
        for weighted in self.scorers:
            scorer = weighted.scorer
            state = scorer.pre_score(cycle, feasible)
            if state is SKIP:
                columns.append((scorer.name, None))
                continue
            scores = scorer.score_nodes(state, pod, feasible)
            scorer.normalize(state, scores)
            outside = np.flatnonzero((scores < 0) | (scores > MAX_NODE_SCORE))
            if len(outside):
                i = int(outside[0])
                raise ValueError(
                    f"plugin {scorer.name} scored node {feasible[i].name} {scores[i]}, "
                    f"outside 0..{MAX_NODE_SCORE}"
                )
            totals += weighted.weight * scores
            columns.append((scorer.name, scores))
        return totals, columns


def _candidate(
    node: str, total: int, weight_sum: int, columns: Sequence[tuple[str, Scores | None]], i: int
) -> Candidate:
    """The ``i``-th scored node's report: its weighted total and each scorer's score (0 for a
    scorer that skipped the pod), from what :meth:`Pipeline._score` returned."""
    return Candidate(
        node,
        round(total / weight_sum, 2),
        {name: 0 if scores is None else int(scores[i]) for name, scores in columns},
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
    states, skipped_filters = _pre_filter(pipeline._pool, pipeline.filters, cycle)
    skipped = [f"Filter {name}" for name in skipped_filters]
    table = snapshot.table
    nodes = table.infos
    outcome = _pre_filter_outcome(states, snapshot)
    by_pre_filter = (", ".join(outcome.plugins), (outcome.rejection or outcome.left_out,))
    to_filter = np.arange(len(nodes)) if outcome.positions is None else outcome.positions
    if outcome.rejection:
        to_filter = to_filter[:0]
    rejections = dict.fromkeys(set(range(len(nodes))) - set(to_filter.tolist()), by_pre_filter)
    # Every node left is visited, node by node when filters that draw random numbers must be.
    size = 1 if _drawing(states) > 1 else max(len(to_filter), 1)
    passed: list[Indices] = []
    for begin in range(0, len(to_filter), size):
        block = table.block(to_filter[begin : begin + size])
        remaining, rejected = _filter_block(states, pod, block)
        passed.append(block.positions[remaining])
        for name, reasons, indices in rejected:
            rejections.update(dict.fromkeys(block.positions[indices].tolist(), (name, reasons)))
    feasible = table.block(np.concatenate(passed) if passed else np.arange(0))
    candidates: dict[str, Candidate] = {}
    if len(feasible):
        totals, columns = pipeline._score(cycle, feasible)
        skipped += [f"Score {name}" for name, scores in columns if scores is None]
        weight_sum = pipeline.weight_sum
        candidates = {
            node.name: _candidate(node.name, int(totals[i]), weight_sum, columns, i)
            for i, node in enumerate(feasible)
        }
    verdicts = tuple(
        NodeVerdict(node.name, None, (), candidates[node.name])
        if i not in rejections
        else NodeVerdict(node.name, rejections[i][0], rejections[i][1], None)
        for i, node in enumerate(nodes)
    )
    return Explanation(pod.key, verdicts, tuple(skipped), outcome.rejection)
