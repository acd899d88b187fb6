"""The scheduling benchmark's per-second timeline of a phase (bench/bench_scheduling.py's
``timeline``): where in a phase its pods waited, and whether the API server's answers slowed
with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from bench_scheduling import timeline

# Per pod: (created, answered, bound) seconds, None where it never was.
Times = Mapping[str, tuple[float, float | None, float | None]]

CASES: dict[str, tuple[Times, list[tuple[int, int, float | None, float | None, float | None]]]] = {
    "no pod created": ({}, []),
    "pods fall in the second they were created in, from the first": (
        {"a": (10.0, 10.001, 10.010), "b": (10.5, 10.502, 10.520), "c": (11.2, 11.203, 11.3)},
        [(0, 2, 10.0, 20.0, 2.0), (1, 1, 100.0, 100.0, 3.0)],
    ),
    "a second nothing was created in is kept, empty": (
        {"a": (0.0, 0.001, 0.002), "b": (2.1, 2.2, 2.3)},
        [(0, 1, 2.0, 2.0, 1.0), (1, 0, None, None, None), (2, 1, 200.0, 200.0, 100.0)],
    ),
    "a pod not bound counts as created, not in the latencies": (
        {"a": (0.0, 0.001, 0.004), "b": (0.1, 0.2, None)},
        [(0, 2, 4.0, 4.0, 100.0)],
    ),
}


@pytest.mark.parametrize(("times", "expected"), CASES.values(), ids=CASES.keys())
def test_timeline(
    times: Times, expected: list[tuple[int, int, float | None, float | None, float | None]]
) -> None:
    created = {name: t[0] for name, t in times.items()}
    answered = {name: t[1] for name, t in times.items() if t[1] is not None}
    bound = {name: t[2] for name, t in times.items() if t[2] is not None}
    rows: list[dict[str, Any]] = timeline(created, answered, bound)
    assert [
        (r["second"], r["created"], r["p50_ms"], r["max_ms"], r["create_max_ms"]) for r in rows
    ] == expected
