"""Random draws only from the cycle's rng, so a seed fixes every verdict and score."""

from __future__ import annotations

import random
from typing import Any

import pytest
from plugin_harness import filter_nodes, make_node, make_pod, score_nodes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.interface import FITS
from policy_scheduler.plugins import random_plugin

PATH = "spec.predicates[0].args"
REJECTED = ("node(s) were rejected at random",)
POD = make_pod()
NODES = [make_node(f"n{i}") for i in range(8)]


def run_filter(args: dict[str, Any], seed: int) -> list[tuple[str, ...]]:
    return filter_nodes(random_plugin.new_filter(args, PATH), POD, NODES, random.Random(seed))


def run_scorer(seed: int) -> list[int]:
    plugin = random_plugin.new_scorer({}, PATH)
    return score_nodes(plugin, POD, NODES, rng=random.Random(seed))


@pytest.mark.parametrize(
    ("args", "seed", "passing"),
    [
        # random.Random(1).random() draws 0.134, 0.847, 0.764, 0.255, 0.495, 0.449, 0.652, 0.789
        pytest.param(
            {},
            1,
            [True, False, False, True, True, True, False, False],
            id="default probability one half",
        ),
        pytest.param(
            {"probability": 0.8},
            1,
            [True, False, True, True, True, True, True, True],
            id="probability 0.8",
        ),
        pytest.param({"probability": 1}, 1, [True] * 8, id="probability 1 passes every node"),
        pytest.param({"probability": 0}, 1, [False] * 8, id="probability 0 passes none"),
    ],
)
def test_filter(args: dict[str, Any], seed: int, passing: list[bool]) -> None:
    assert run_filter(args, seed) == [FITS if p else REJECTED for p in passing]


def test_same_seed_same_verdicts() -> None:
    assert run_filter({"probability": 0.3}, 7) == run_filter({"probability": 0.3}, 7)


def test_scores_follow_the_seed() -> None:
    expected = random.Random(3)
    assert run_scorer(3) == [expected.randint(0, 100) for _ in NODES]
    assert run_scorer(3) == [30, 75, 69, 16, 47, 77, 60, 80]


def test_scores_stay_in_range() -> None:
    assert all(0 <= score <= 100 for seed in range(50) for score in run_scorer(seed))


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param(
            {"probability": 1.5}, [f"{PATH}.probability: must be between 0 and 1"], id="above 1"
        ),
        pytest.param(
            {"probability": -0.1}, [f"{PATH}.probability: must be between 0 and 1"], id="below 0"
        ),
        pytest.param(
            {"probability": float("nan")},
            [f"{PATH}.probability: must be between 0 and 1"],
            id="not a number",
        ),
        pytest.param(
            {"probability": "half", "seed": 1},
            [
                f"{PATH}.seed: unknown field; expected one of ['probability']",
                f"{PATH}.probability: must be a number between 0 and 1",
            ],
            id="a string and an unknown field",
        ),
        pytest.param(
            {"probability": True},
            [f"{PATH}.probability: must be a number between 0 and 1"],
            id="a boolean",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], errors: list[str]) -> None:
    with pytest.raises(ArgsError) as caught:
        random_plugin.new_filter(args, PATH)
    assert [str(error) for error in caught.value.errors] == errors


def test_scorer_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="Random takes no args"):
        random_plugin.new_scorer({"probability": 1}, PATH)
