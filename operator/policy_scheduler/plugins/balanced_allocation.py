"""BalancedAllocation: prefer nodes whose resources would be used evenly (kube-scheduler v1.34's
NodeResourcesBalancedAllocation), so that no node runs out of one resource while others idle.

Per resource the fraction ``requested / allocatable``, capped at 1, where ``requested`` is the
plain requests of the node's pods plus the pod's (no non-zero defaults, unlike the other resource
scorers); the score is ``int((1 - std) * 100)`` with ``std`` the population standard deviation
of the fractions (``|f1 - f2| / 2`` for two; 0 for fewer), in float64 as kube computes it.
A pod that requests none of the resources (best effort) is not scored: every node gets 0, as
kube-scheduler skips the plugin for it. Args: ``resources: [{name}]`` (default cpu and memory;
a weight, if given, must be 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from policy_scheduler.plugins.base import MAX_NODE_SCORE, Args
from policy_scheduler.plugins.resource_allocation import (
    Amount,
    ResourceAllocationScorer,
    parse_resources,
)

NAME = "BalancedAllocation"


def _balance(amounts: Sequence[Amount]) -> int:
    fractions = [
        min(float(requested) / float(allocatable), 1.0) for requested, allocatable, _ in amounts
    ]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        # Plain left-to-right float additions as in Go: sum() compensates rounding since 3.12.
        total = 0.0
        for fraction in fractions:
            total += fraction
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares += (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    return ResourceAllocationScorer(
        NAME,
        parse_resources(args, path, weighted=False),
        _balance,
        use_requested=True,
        skip_best_effort=True,
    )
