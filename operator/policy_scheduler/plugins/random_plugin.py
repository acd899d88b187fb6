"""Random: chance as a predicate and as a priority (no kube-scheduler counterpart; for chaos
testing, and as a baseline to compare real policies against).

Filter args: ``{probability: p}`` (default 0.5, between 0 and 1): each node passes with
probability ``p``, otherwise fails with "node(s) were rejected at random". Score: a uniform
integer in 0..100. Randomness comes only from the cycle's ``rng``, so a seeded cycle decides the
same way every time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from policy_scheduler.framework.args import Args, ArgsError, FieldError, no_args, unknown_fields
from policy_scheduler.framework.interface import FITS, MAX_NODE_SCORE, Filter, Scorer
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView

NAME = "Random"

DEFAULT_PROBABILITY = 0.5
_REASONS = ("node(s) were rejected at random",)


class _RandomFilter(Filter[random.Random]):
    name = NAME
    draws_random = True

    def __init__(self, probability: float) -> None:
        self._probability = probability

    def pre_filter(self, cycle: Cycle) -> random.Random:
        return cycle.rng

    def filter(self, state: random.Random, pod: PodView, node: NodeInfo) -> Sequence[str]:
        # random() < 1.0 always and < 0.0 never, so the bounds mean "all" and "none" exactly.
        return FITS if state.random() < self._probability else _REASONS


class _RandomScorer(Scorer[random.Random]):
    name = NAME

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> random.Random:
        return cycle.rng

    def score(self, state: random.Random, pod: PodView, node: NodeInfo) -> int:
        return state.randint(0, MAX_NODE_SCORE)


def new_filter(args: Args, path: str) -> Filter[random.Random]:
    errors = unknown_fields(args, ("probability",), path)
    probability = args.get("probability", DEFAULT_PROBABILITY)
    if isinstance(probability, bool) or not isinstance(probability, int | float):
        errors.append(FieldError(f"{path}.probability", "must be a number between 0 and 1"))
    elif not 0 <= probability <= 1:
        errors.append(FieldError(f"{path}.probability", "must be between 0 and 1"))
    if errors:
        raise ArgsError(errors)
    return _RandomFilter(float(probability))


def new_scorer(args: Args, path: str) -> Scorer[random.Random]:
    no_args(NAME, args, path)
    return _RandomScorer()
