"""BalancedAllocation: prefer nodes whose resources would be used evenly (kube-scheduler v1.34's
NodeResourcesBalancedAllocation), so that no node runs out of one resource while others idle.

Per resource the fraction ``requested / allocatable``, capped at 1, where ``requested`` is the
plain requests of the node's pods plus the pod's (no non-zero defaults, and the pod-level
requests counted, unlike the other resource scorers); the score is ``int((1 - std) * 100)``
with ``std`` the population standard deviation of the fractions (``|f1 - f2| / 2`` for two; 0
for fewer), in float64 as kube computes it.
A pod that requests none of the resources (best effort) is not scored: every node gets 0, as
kube-scheduler skips the plugin for it. Args: ``resources: [{name}]`` (default cpu and memory;
a weight, if given, must be 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from policy_scheduler.plugins.base import MAX_NODE_SCORE, Args, Scores
from policy_scheduler.plugins.resource_allocation import (
    Amount,
    ResourceAllocationScorer,
    parse_resources,
)

NAME = "BalancedAllocation"

_Floats = npt.NDArray[np.float64]


def _balance(amounts: Sequence[Amount], size: int) -> Scores:
    # Per node, only the resources that count for it have a fraction; the float operations are
    # Go's, in its order (plain left-to-right additions, not a compensated sum).
    if len(amounts) == 2:
        # The default (cpu and memory): a node where both count has |f1 - f2| / 2, any other
        # none. The same as below, in a quarter of the array operations.
        first_amount, second_amount = amounts
        std = np.where(
            first_amount.counts & second_amount.counts,
            np.abs((_fraction(first_amount) - _fraction(second_amount)) / 2),
            0.0,
        )
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    counted = np.zeros(size, np.int64)
    first: _Floats = np.zeros(size)
    second: _Floats = np.zeros(size)
    total: _Floats = np.zeros(size)
    fractions = []
    for amount in amounts:
        fraction = _fraction(amount)
        fractions.append((fraction, amount.counts))
        first = np.where(amount.counts & (counted == 0), fraction, first)
        second = np.where(amount.counts & (counted == 1), fraction, second)
        total = np.where(amount.counts, total + fraction, total)
        counted += amount.counts
    divisor = np.maximum(counted, 1)
    mean = total / divisor
    squares: _Floats = np.zeros(size)
    for fraction, counts in fractions:
        squares = np.where(counts, squares + (fraction - mean) * (fraction - mean), squares)
    std = np.where(
        counted == 2,
        np.abs((first - second) / 2),
        np.where(counted > 2, np.sqrt(squares / divisor), 0.0),
    )
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def _fraction(amount: Amount) -> _Floats:
    """``requested / allocatable`` per node, capped at 1."""
    return np.minimum(
        amount.requested.astype(np.float64) / amount.allocatable.astype(np.float64), 1.0
    )


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    return ResourceAllocationScorer(
        NAME,
        parse_resources(args, path, weighted=False),
        _balance,
        use_requested=True,
        skip_best_effort=True,
    )
