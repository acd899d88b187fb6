"""How a compiled policy's plugins run at the filter and score extension points, kube-scheduler's
framework runtime (pkg/scheduler/framework/runtime/framework.go): the pre-filters and what they
say of the whole cluster, a block of nodes filtered (a node's first failing filter giving its
reasons), the filters run again with the pods nominated to a node counted there
(RunFilterPluginsWithNominatedPods), the scorers normalized and weighted; and the policy's
plugins by the extension points beyond filter and score (:class:`ExtensionPoints`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    FITS,
    MAX_NODE_SCORE,
    SKIP,
    Explains,
    Filter,
    Permit,
    PostBind,
    PostFilter,
    PreBind,
    PreEnqueue,
    Reserve,
    Scorer,
    Scores,
)
from policy_scheduler.framework.types import Cycle, NominatedPods
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import Indices, NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector

OUTSIDE_NODE_POOL = "node(s) didn't match the policy's nodeSelector"


NODE_POOL_FILTER = "nodeSelector"
"""The name :func:`explain` gives the policy's node pool when it rejects a node."""


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    """A policy's priority: the scorer and its weight in the total."""

    scorer: Scorer[Any]
    weight: int


FilterStates = list[tuple[Filter[Any], Any]]


def explained_details(states: FilterStates) -> dict[str, int]:
    """How many nodes each detailed reason of the filters that explain themselves
    (:class:`~policy_scheduler.framework.interface.Explains`) rejected in the cycle."""
    counts: dict[str, int] = {}
    for plugin, state in states:
        if isinstance(plugin, Explains):
            for detail in plugin.details(state).values():
                counts[detail] = counts.get(detail, 0) + 1
    return counts


def explained_choice(states: FilterStates, node: str) -> dict[str, tuple[str, ...]]:
    """What the filters that explain themselves chose for the pod on ``node``."""
    chosen: dict[str, tuple[str, ...]] = {}
    for plugin, state in states:
        if isinstance(plugin, Explains):
            chosen.update(plugin.chosen(state, node))
    return chosen


_OUTSIDE_NODE_POOL_REASONS = (OUTSIDE_NODE_POOL,)


class NodePool(Filter[LabelSelector]):
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


def run_pre_filter(
    pool: NodePool | None, filters: Sequence[Filter[Any]], cycle: Cycle
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
class PreFilterOutcome:
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


def pre_filter_outcome(states: FilterStates, snapshot: Snapshot) -> PreFilterOutcome:
    """The first pre-filter rejection, else the nodes that every pre-filter naming nodes names (a
    name the snapshot lacks is no node); when no name is common to them all, that rejects the
    pod, in kube-scheduler's words."""
    names: frozenset[str] | None = None
    naming: list[str] = []
    for plugin, state in states:
        result = plugin.pre_filter_result(state)
        if result.rejection:
            return PreFilterOutcome(plugins=(plugin.name,), rejection=result.rejection)
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
            return PreFilterOutcome(plugins=tuple(naming), rejection=rejection)
    if names is None:
        return PreFilterOutcome()
    table = snapshot.table
    found = [table.position(info) for info in map(snapshot.get, names) if info is not None]
    reason = f"node(s) didn't satisfy plugin(s) {_go_list(naming)}"
    return PreFilterOutcome(np.sort(np.array(found, np.intp)), reason, tuple(naming))


def _go_list(names: Sequence[str]) -> str:
    """Plugin names as kube-scheduler prints a sorted set of them: "[A B]"."""
    return f"[{' '.join(sorted(names))}]"


def drawing(states: FilterStates) -> int:
    """How many of the filters draw random numbers (see :attr:`Filter.draws_random`)."""
    return sum(plugin.draws_random for plugin, _ in states)


Rejected = list[tuple[str, tuple[str, ...], Indices]]
"""(filter, reasons, the indices into the block of the nodes it rejected for them)."""


def filter_block(states: FilterStates, pod: PodView, block: NodeBlock) -> tuple[Indices, Rejected]:
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


def block_of(snapshot: Snapshot, info: NodeInfo) -> NodeBlock:
    table = snapshot.table
    return table.block(np.array([table.position(info)], np.intp))


def _first_failing(
    states: FilterStates, pod: PodView, node: NodeBlock
) -> tuple[str, tuple[str, ...]] | None:
    """What :func:`filter_block` says of a block of one node, ``node``: the first failing
    filter and its reasons, or None when every filter passes it; each filter asked as cheaply as
    it answers for one node (:meth:`~.framework.interface.Filter.filter_one`), without the block's
    masks."""
    for plugin, state in states:
        reasons = plugin.filter_one(state, pod, node)
        if reasons:
            return plugin.name, tuple(reasons)
    return None


def filter_node(states: FilterStates, pod: PodView, node: NodeBlock) -> tuple[str, ...]:
    """The first failing filter's reasons on the one node of ``node``, or FITS."""
    failing = _first_failing(states, pod, node)
    return FITS if failing is None else failing[1]


def with_nominated(
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
        return _first_failing(counted, cycle.pod, block_of(cycle.snapshot, info))


def _adding(
    plugin: Filter[Any], state: Any, cycle: Cycle, pods: Sequence[PodView], info: NodeInfo
) -> Any:
    """``state`` with ``pods`` counted on ``info`` (the filter's ``add_pod``, pod by pod)."""
    for pod in pods:
        state = plugin.add_pod(state, cycle, pod, info)
    return state


def nominated_pass(
    states: FilterStates,
    cycle: Cycle,
    block: NodeBlock,
    filtered: tuple[Indices, Rejected],
    *,
    nominated: NominatedPods,
    at: Indices,
) -> tuple[Indices, Rejected]:
    """:func:`filter_block`'s answer for ``block`` (``filtered``), with each node that has
    nominated pods (at the table positions ``at``) filtered with them too
    (:func:`with_nominated`): a node that fails then is rejected for that failure, whatever the
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
                for name, reasons, indices in filter_block(states, cycle.pod, nodes)[1]
            ]
    else:
        failures: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i in here.tolist():
            failing = with_nominated(states, cycle, block[i], nominated)
            if failing is not None:
                failures.setdefault(failing, []).append(i)
        found = [(name, reasons, np.array(i, np.intp)) for (name, reasons), i in failures.items()]
    if not found:
        return passed, rejected
    # Grouped by filter and reasons, as filter_block groups them: _unresolvable asks a group once.
    moved = np.concatenate([indices for _, _, indices in found])
    kept = [
        (name, reasons, indices[~np.isin(indices, moved)]) for name, reasons, indices in rejected
    ]
    return passed[~np.isin(passed, moved)], [
        *(rejection for rejection in kept if len(rejection[2])),
        *found,
    ]


def run_score(
    scorers: Sequence[WeightedScorer], cycle: Cycle, feasible: NodeBlock
) -> tuple[Scores, list[tuple[str, Scores | None]]]:
    """Each node's weighted total, and per scorer (in policy order) its name and normalized
    scores, None for a scorer that skipped this pod (it counts 0)."""
    totals: Scores = np.zeros(len(feasible), np.int64)
    columns: list[tuple[str, Scores | None]] = []
    pod = cycle.pod
    for weighted in scorers:
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


@dataclass(frozen=True, slots=True)
class ExtensionPoints:
    """A policy's plugins by the loop's extension points beyond filter and score, each list in
    policy order. :meth:`of` puts a plugin in every list of the extension points it implements, as
    kube-scheduler's multiPoint; a policy's ``spec.plugins`` adds plugins at one point only, after
    those (:func:`~policy_scheduler.policy.compiler.extension_points`)."""

    pre_enqueue: tuple[PreEnqueue, ...] = ()
    post_filter: tuple[PostFilter[Any], ...] = ()
    reserve: tuple[Reserve[Any], ...] = ()
    permit: tuple[Permit[Any], ...] = ()
    pre_bind: tuple[PreBind[Any], ...] = ()
    post_bind: tuple[PostBind[Any], ...] = ()

    @classmethod
    def of(cls, plugins: Iterable[object]) -> ExtensionPoints:
        unique = list({id(plugin): plugin for plugin in plugins}.values())
        return cls(
            tuple(p for p in unique if isinstance(p, PreEnqueue)),
            tuple(p for p in unique if isinstance(p, PostFilter)),
            tuple(p for p in unique if isinstance(p, Reserve)),
            tuple(p for p in unique if isinstance(p, Permit)),
            tuple(p for p in unique if isinstance(p, PreBind)),
            tuple(p for p in unique if isinstance(p, PostBind)),
        )
