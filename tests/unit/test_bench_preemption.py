"""The in-process preemption benchmark (bench/bench_preemption.py): its figure per preemptor,
and its workload, in which every preemptor evicts one whole node's low-priority pods whether
the preemptions before it are done or still pending."""

from __future__ import annotations

import pytest
from bench_preemption import (
    POLICY_FILE,
    VICTIMS_PER_NODE,
    build_cache,
    microseconds_each,
    run,
    run_loop,
)

from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.policy.load import read_policy_file

PER_PREEMPTOR = {
    "one preemptor": (0.002, 1, 2000.0),
    "spread over four": (0.002, 4, 500.0),
    "nothing spent": (0.0, 3, 0.0),
}


@pytest.mark.parametrize("seconds, preemptors, us", PER_PREEMPTOR.values(), ids=PER_PREEMPTOR)
def test_microseconds_per_preemptor(seconds: float, preemptors: int, us: float) -> None:
    assert microseconds_each(seconds, preemptors) == pytest.approx(us)


def test_no_preemptor_has_no_figure() -> None:
    with pytest.raises(ValueError, match="count must be positive, got 0"):
        microseconds_each(1.0, 0)


LAGS = {"each done at once": 0, "one pending": 1, "all pending": 4}


@pytest.mark.parametrize("lag", LAGS.values(), ids=LAGS)
def test_each_preemptor_evicts_one_whole_node(lag: int) -> None:
    policy = compile_policy(read_policy_file(POLICY_FILE)[0])
    totals = run(policy, build_cache(2, 4), 4, lag, seed=1)
    assert totals.preemptors == 4
    assert totals.victims == 4 * VICTIMS_PER_NODE


# Preemptors waiting at each one's deletions: with lag 1, the first three are done while two
# wait, the last alone; with all pending, 4, 3, 2 then 1 wait.
WAITING = {
    "each done at once": (0, 4 * 1),
    "one pending": (1, 2 + 2 + 2 + 1),
    "all pending": (4, 4 + 3 + 2 + 1),
}


@pytest.mark.parametrize("lag, waiting", WAITING.values(), ids=WAITING)
def test_through_the_loop_each_victim_is_deleted_once_and_each_preemptor_bound(
    lag: int, waiting: int
) -> None:
    deletions = run_loop(2, 4, lag, seed=1)
    assert (deletions.preemptors, deletions.deletions, deletions.bound) == (4, 40, 4)
    assert deletions.waiting == waiting * VICTIMS_PER_NODE
