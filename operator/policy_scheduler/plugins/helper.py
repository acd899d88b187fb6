"""Helpers plugins build their block answers and scores with (kube-scheduler's
pkg/scheduler/framework/plugins/helper): asking ``filter`` or ``score`` only where the answer
is not known without it, grouping array checks into rejections, and the default normalization.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.interface import (
    MAX_NODE_SCORE,
    Filter,
    Rejections,
    Scorer,
    Scores,
    State,
    filter_each,
)
from policy_scheduler.model.nodetable import Indices, NodeBlock
from policy_scheduler.model.objects import PodView


def filter_where(
    plugin: Filter[State], state: State, pod: PodView, nodes: NodeBlock, where: npt.NDArray[Any]
) -> Rejections:
    """``filter`` per node, asked only of the nodes that ``where`` marks (the others pass)."""
    candidates = np.flatnonzero(where)
    if not len(candidates):
        return {}
    rejections = filter_each(plugin, state, pod, nodes.take(candidates))
    return {reasons: candidates[indices] for reasons, indices in rejections.items()}


def _kinds(kinds: npt.NDArray[Any], candidates: Indices) -> tuple[Indices, Indices]:
    """For :func:`filter_alike` and :func:`score_alike`, given the nodes of a kind other than -1
    (at least one): the index among the first nodes of each kind of each of them, and those
    first nodes."""
    present = kinds[candidates]
    distinct, first = np.unique(present, return_index=True)
    # The kinds in the order their first nodes come, as the node-by-node walk meets them.
    order = np.argsort(first, kind="stable")
    rank = np.zeros(int(distinct[-1]) + 1, np.intp)
    rank[distinct[order]] = np.arange(len(order))
    return rank[present], candidates[first[order]]


def filter_alike(
    plugin: Filter[State], state: State, pod: PodView, nodes: NodeBlock, kinds: npt.NDArray[Any]
) -> Rejections:
    """``filter`` asked once per kind of node: the nodes with equal ``kinds`` get the same
    verdict (that of the first of them); nodes of kind -1 pass without being asked."""
    candidates = np.flatnonzero(kinds != -1)
    if not len(candidates):
        # No node of a kind to ask about (for TaintToleration: a cluster without taints).
        return {}
    kind, firsts = _kinds(kinds, candidates)
    verdicts = filter_each(plugin, state, pod, nodes.take(firsts))
    rejected: Rejections = {}
    for reasons, alike in verdicts.items():
        chosen = np.zeros(len(firsts), bool)
        chosen[alike] = True
        rejected[reasons] = candidates[chosen[kind]]
    return rejected


def score_alike(
    plugin: Scorer[State], state: State, pod: PodView, nodes: NodeBlock, kinds: npt.NDArray[Any]
) -> Scores:
    """``score`` asked once per kind of node: the nodes with equal ``kinds`` score the same
    (as the first of them); nodes of kind -1 score 0 without being asked."""
    scores: Scores = np.zeros(len(nodes), np.int64)
    candidates = np.flatnonzero(kinds != -1)
    if len(candidates):
        kind, firsts = _kinds(kinds, candidates)
        alike = [plugin.score(state, pod, node) for node in nodes.take(firsts)]
        scores[candidates] = np.array(alike, np.int64)[kind]
    return scores


def group_failures(failing: Sequence[npt.NDArray[np.bool_]], reasons: Sequence[str]) -> Rejections:
    """Rejections from checks made over a block: ``failing[k]`` marks the nodes that fail the
    check whose reason is ``reasons[k]``; a node's reasons are those of the checks it fails, in
    order."""
    failed = [
        (reason, fails) for reason, fails in zip(reasons, failing, strict=True) if fails.any()
    ]
    if len(failed) <= 1:
        # The common case: one check fails, on its own nodes only.
        return {(reason,): np.flatnonzero(fails) for reason, fails in failed}
    rows = np.vstack([fails for _, fails in failed])
    rejected = np.flatnonzero(rows.any(axis=0))
    patterns = rows[:, rejected]
    # Sorting the nodes by their pattern of failures puts equal patterns next to each other.
    order = np.lexsort(patterns)
    ordered = patterns[:, order]
    starts = np.flatnonzero((ordered[:, 1:] != ordered[:, :-1]).any(axis=0)) + 1
    groups: Rejections = {}
    for members in np.split(order, starts):
        pattern = patterns[:, members[0]].tolist()
        key = tuple(reason for (reason, _), fails in zip(failed, pattern, strict=True) if fails)
        groups[key] = np.sort(rejected[members])
    return groups


def normalize_to_max(scores: Scores, reverse: bool = False) -> None:
    """kube-scheduler's DefaultNormalizeScore: scale so the highest score becomes 100.

    With ``reverse`` the scale is flipped, so the node with the highest raw score gets 0. When every
    score is 0, all become 0 (or all 100 when reversed).
    """
    highest = int(scores.max()) if len(scores) else 0
    if highest == 0:
        if reverse:
            scores[:] = MAX_NODE_SCORE
        return
    scaled = MAX_NODE_SCORE * scores // highest
    scores[:] = MAX_NODE_SCORE - scaled if reverse else scaled
