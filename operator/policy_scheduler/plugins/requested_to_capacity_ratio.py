"""RequestedToCapacityRatio: score nodes by a user-drawn curve over their utilization
(kube-scheduler's NodeResourcesFit scoring strategy RequestedToCapacityRatio).

Args: ``shape: [{utilization: 0..100, score: 0..10}]`` with strictly increasing utilization, and
``resources: [{name, weight}]`` (default cpu and memory, weight 1). Scores are scaled by 10 to
0..100. Per resource the utilization ``requested * 100 // allocatable`` (100 when overcommitted)
is mapped through the broken linear function through the points: flat before the first and after
the last, linear in between with Go's truncating integer division. The node's score is the
weighted average, rounded half away from zero, of the resources that score above 0 (a resource
scoring 0 does not count in the weights, as in kube-scheduler). The pod counts its containers'
requests (with the non-zero defaults), never its pod-level requests: kube-scheduler v1.37.2
scores so, as :mod:`policy_scheduler.plugins.resource_allocation` explains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.interface import MAX_NODE_SCORE, Scores
from policy_scheduler.model.nodetable import Array
from policy_scheduler.plugins.resource_allocation import (
    Amount,
    Combine,
    ResourceAllocationScorer,
    collect_resources,
)

NAME = "RequestedToCapacityRatio"

MAX_UTILIZATION = 100
MAX_SHAPE_SCORE = 10
"""kube-scheduler's MaxCustomPriorityScore: shape scores are given on 0..10."""

Shape = tuple[tuple[int, int], ...]
"""(utilization, score) points, score already scaled to 0..MAX_NODE_SCORE."""


def _int_field(point: Mapping[str, object], key: str, top: int, here: str) -> list[FieldError]:
    value = point.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return [FieldError(f"{here}.{key}", "must be an integer")]
    if not 0 <= value <= top:
        return [FieldError(f"{here}.{key}", f"must be between 0 and {top}")]
    return []


def parse_shape(raw: object, where: str, errors: list[FieldError]) -> Shape:
    """``shape``'s points, scores scaled to 0..MAX_NODE_SCORE; each problem added to ``errors``
    (VolumeBinding's priority takes the same shape)."""
    if not isinstance(raw, list) or not raw:
        errors.append(FieldError(where, "at least one point {utilization, score} is required"))
        return ()
    points: list[tuple[int, int]] = []
    for i, point in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(point, Mapping):
            errors.append(FieldError(here, "must be an object {utilization, score}"))
            continue
        problems = unknown_fields(point, ("utilization", "score"), here)
        problems += _int_field(point, "utilization", MAX_UTILIZATION, here)
        problems += _int_field(point, "score", MAX_SHAPE_SCORE, here)
        errors.extend(problems)
        if not problems:
            if points and point["utilization"] <= points[-1][0]:
                errors.append(
                    FieldError(
                        f"{here}.utilization",
                        "must be greater than the previous point's utilization",
                    )
                )
            points.append(
                (point["utilization"], point["score"] * (MAX_NODE_SCORE // MAX_SHAPE_SCORE))
            )
    return tuple(points)


def _truncating_div(numerator: Array, denominator: int) -> Array:
    """Go's integer division (rounds toward zero) for a positive denominator."""
    quotient = np.abs(numerator) // denominator
    return np.where(numerator >= 0, quotient, -quotient)


def broken_linear(shape: Shape) -> Callable[[Array], Array]:
    """kube-scheduler's BuildBrokenLinearFunction over ``shape``, for an array of utilizations."""

    def function(utilization: Array) -> Array:
        # Each utilization takes the segment of the first point at or above it.
        result: Array = np.full(len(utilization), shape[-1][1], np.int64)
        placed = np.zeros(len(utilization), bool)
        for i, (point, score) in enumerate(shape):
            here = ~placed & (utilization <= point)
            if i == 0:
                value: Array | int = score
            else:
                previous, previous_score = shape[i - 1]
                value = previous_score + _truncating_div(
                    (score - previous_score) * (utilization - previous), point - previous
                )
            result = np.where(here, value, result)
            placed |= here
        return result

    return function


def _combine(shape: Shape) -> Combine:
    curve = broken_linear(shape)

    def combine(amounts: Sequence[Amount], size: int) -> Scores:
        total: Array = np.zeros(size, np.int64)
        weights: Array = np.zeros(size, np.int64)
        for amount in amounts:
            requested, allocatable = amount.requested, amount.allocatable
            utilization = np.where(
                requested > allocatable,
                MAX_UTILIZATION,
                requested * MAX_UTILIZATION // allocatable,
            )
            score = curve(utilization)
            scored = amount.counts & (score > 0)
            total = total + np.where(scored, score * amount.weight, 0)
            weights = weights + scored * amount.weight
        # Exact integer form of Go's math.Round(total / weights): half away from zero.
        rounded = (2 * total + weights) // np.maximum(2 * weights, 1)
        return np.where(weights > 0, rounded, 0).astype(np.int64)

    return combine


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    errors: list[FieldError] = []
    resources = collect_resources(args, path, errors, other_fields=("shape",))
    shape = parse_shape(args.get("shape"), f"{path}.shape", errors)
    if errors:
        raise ArgsError(errors)
    return ResourceAllocationScorer(NAME, resources, _combine(shape))
