"""BalancedAllocation: prefer nodes whose resources the pod leaves used more evenly than it found
them (kube-scheduler v1.37's NodeResourcesBalancedAllocation), so that no node runs out of one
resource while others idle.

A node's balance is ``int((1 - std) * 100)``, with ``std`` the population standard deviation of
the fractions ``used / allocatable``, each capped at 1 (``|f1 - f2| / 2`` for two; 0 for fewer),
in float64 as kube computes it; it lies in 50..100. The score compares the balance with the pod
placed there (``used`` the plain requests of the node's pods plus the pod's) and without it
(the node's pods alone): ``50 + (50 + with - without) // 2``, so 75 when the pod changes nothing,
towards 100 when it evens the node out and towards 50 when it tips it. (v1.34 scored the balance
with the pod alone: since v1.36 a pod is steered to the node it balances, not to the node that
happens to be balanced.) The requests are plain (no non-zero defaults), and the pod's pod-level
requests count, unlike with the other resource scorers.
A pod that requests none of the resources (best effort) is not scored: every node gets 0, as
kube-scheduler skips the plugin for it. Args: ``resources: [{name}]`` (default cpu and memory;
a weight, if given, must be 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args
from policy_scheduler.framework.interface import MAX_NODE_SCORE, Scores
from policy_scheduler.model.nodetable import Array
from policy_scheduler.plugins.resource_allocation import (
    Amount,
    ResourceAllocationScorer,
    parse_resources,
)

NAME = "BalancedAllocation"

_Floats = npt.NDArray[np.float64]


def _balance(amounts: Sequence[Amount], size: int) -> Scores:
    with_pod = _balance_of(amounts, size, [_fraction(a.requested, a) for a in amounts])
    without_pod = _balance_of(amounts, size, [_fraction(a.allocated, a) for a in amounts])
    # Both balances lie in 50..100, so the sum is never negative and the floor division is
    # Go's truncating one.
    with_pod += MAX_NODE_SCORE // 2
    with_pod -= without_pod
    with_pod //= 2
    with_pod += MAX_NODE_SCORE // 2
    return with_pod


def _fraction(used: Array, amount: Amount) -> _Floats:
    """``used / allocatable`` per node, capped at 1."""
    fraction = used.astype(np.float64)
    fraction /= amount.allocatable
    return np.minimum(fraction, 1.0, out=fraction)


def _balance_of(amounts: Sequence[Amount], size: int, fractions: Sequence[_Floats]) -> Scores:
    """``int((1 - std) * 100)`` per node over the ``fractions`` (one per amount); only the
    resources that count for a node take part. The float operations are Go's, in its order
    (plain left-to-right additions, not a compensated sum)."""
    if len(amounts) == 2:
        # The default (cpu and memory): a node where both count has |f1 - f2| / 2, any other
        # none. The same as below, in a quarter of the array operations, done in place to
        # spare allocating more arrays as long as the cluster (this runs twice per pod).
        std = fractions[0]
        std -= fractions[1]
        std /= 2
        np.abs(std, out=std)
        std[~(amounts[0].counts & amounts[1].counts)] = 0.0
    else:
        counted = np.zeros(size, np.int64)
        first: _Floats = np.zeros(size)
        second: _Floats = np.zeros(size)
        total: _Floats = np.zeros(size)
        for amount, fraction in zip(amounts, fractions, strict=True):
            first = np.where(amount.counts & (counted == 0), fraction, first)
            second = np.where(amount.counts & (counted == 1), fraction, second)
            total = np.where(amount.counts, total + fraction, total)
            counted += amount.counts
        divisor = np.maximum(counted, 1)
        mean = total / divisor
        squares: _Floats = np.zeros(size)
        for amount, fraction in zip(amounts, fractions, strict=True):
            squares = np.where(
                amount.counts, squares + (fraction - mean) * (fraction - mean), squares
            )
        std = np.where(
            counted == 2,
            np.abs((first - second) / 2),
            np.where(counted > 2, np.sqrt(squares / divisor), 0.0),
        )
    np.subtract(1, std, out=std)
    std *= MAX_NODE_SCORE
    return std.astype(np.int64)


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    return ResourceAllocationScorer(
        NAME,
        parse_resources(args, path, weighted=False),
        _balance,
        use_requested=True,
        skip_best_effort=True,
    )
