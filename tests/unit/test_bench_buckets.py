"""The scheduling benchmark's reading of a latency histogram between two scrapes of a scheduler's
/metrics page (bench/bench_scheduling.py's ``bucket_percentiles``): the pages are made by
prometheus_client, as the operator's are."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from bench_scheduling import ATTEMPT_DURATION, bucket_percentiles
from harness.metrics import Samples, samples_of
from prometheus_client import CollectorRegistry, Histogram, generate_latest

# (result, profile, seconds) per observation.
Observations = Sequence[tuple[str, str, float]]


def page(observations: Observations) -> Samples:
    registry = CollectorRegistry()
    histogram = Histogram(
        ATTEMPT_DURATION,
        "attempts",
        ["result", "profile"],
        registry=registry,
        buckets=(0.001, 0.002, 0.004),
    )
    for result, profile, seconds in observations:
        histogram.labels(result, profile).observe(seconds)
    return samples_of(generate_latest(registry).decode())


def scheduled(seconds: float, times: int, profile: str = "a") -> Observations:
    return [("scheduled", profile, seconds)] * times


CASES = {
    "nothing observed between the scrapes": (scheduled(0.0015, 3), [], (None, None)),
    "each percentile is the upper bound of its bucket": (
        [],
        [*scheduled(0.0005, 50), *scheduled(0.0015, 48), *scheduled(0.003, 2)],
        (1.0, 4.0),
    ),
    "observations before the first scrape do not count": (
        scheduled(0.0005, 100),
        scheduled(0.003, 10),
        (4.0, 4.0),
    ),
    "above the largest finite bound is not known": (
        [],
        [*scheduled(0.0005, 98), *scheduled(1.0, 2)],
        (1.0, None),
    ),
    "only the result asked for counts, over every profile": (
        [],
        [
            *scheduled(0.0005, 5, "a"),
            *scheduled(0.0015, 5, "b"),
            *[("unschedulable", "a", 0.003)] * 90,
        ],
        (1.0, 2.0),
    ),
}


@pytest.mark.parametrize(("before", "between", "expected"), CASES.values(), ids=CASES.keys())
def test_bucket_percentiles(
    before: Observations, between: Observations, expected: tuple[float | None, float | None]
) -> None:
    found = bucket_percentiles(
        page(before), page([*before, *between]), ATTEMPT_DURATION, (50, 99), result="scheduled"
    )
    assert found == {"p50": expected[0], "p99": expected[1]}
