"""The scheduling benchmark's report over repeated runs (bench/scheduling_report.py): each run's
ratios pair policy-scheduler with kube-scheduler of the same run, and the spread over the runs
is each ratio's median, lowest and highest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scheduling_report import phase_ratios, ratio_spread, write_reports


def case(scheduler: str, nodes: int, repeat: int, pods_per_second: float) -> dict[str, Any]:
    """A run that bound its steady phase at ``pods_per_second``, its other figures alike."""
    steady = {
        "pods": 100,
        "bound": 100,
        "complete": True,
        "create_rate": 100.0,
        "throughput": pods_per_second,
        "latency_ms": {"p50": 10.0, "p90": 20.0, "p99": 40.0, "p100": 50.0},
        "cpu_ms_per_pod": 2.0,
        "api_requests_per_pod": 2.0,
        "attempts_per_pod": 1.0,
    }
    return {
        "scheduler": scheduler,
        "nodes": nodes,
        "repeat": repeat,
        "steady": steady,
        "correctness": {"ok": True},
    }


OURS, KUBE = "policy-scheduler", "kube-scheduler"


def runs(nodes: int, *rates: tuple[float, float | None]) -> list[dict[str, Any]]:
    """Per run, ours and kube's at ``nodes`` nodes with their pods/s (None: kube's run failed)."""
    cases = []
    for repeat, (ours, kube) in enumerate(rates):
        cases.append(case(OURS, nodes, repeat, ours))
        cases.append(
            case(KUBE, nodes, repeat, kube)
            if kube is not None
            else {"scheduler": KUBE, "nodes": nodes, "repeat": repeat, "error": "no warm-up"}
        )
    return cases


CASES: dict[str, tuple[list[dict[str, Any]], list[tuple[int, int, float | None]], Any]] = {
    "each run is divided by kube's of the same run": (
        runs(100, (90, 100), (120, 100), (100, 80)),
        [(100, 0, 0.9), (100, 1, 1.2), (100, 2, 1.25)],
        [(100, 3, {"median": 1.2, "min": 0.9, "max": 1.25})],
    ),
    "a run kube did not finish has no ratio and leaves the spread": (
        runs(100, (90, 100), (50, None)),
        [(100, 0, 0.9), (100, 1, None)],
        [(100, 2, {"median": 0.9, "min": 0.9, "max": 0.9})],
    ),
    "node counts are kept apart; a JSON of one run each reads as run 0": (
        [
            {k: v for k, v in case(OURS, 100, 0, 50).items() if k != "repeat"},
            {k: v for k, v in case(KUBE, 100, 0, 100).items() if k != "repeat"},
            case(OURS, 500, 0, 100),
            case(KUBE, 500, 0, 100),
        ],
        [(100, 0, 0.5), (500, 0, 1.0)],
        [
            (100, 1, {"median": 0.5, "min": 0.5, "max": 0.5}),
            (500, 1, {"median": 1.0, "min": 1.0, "max": 1.0}),
        ],
    ),
}


@pytest.mark.parametrize(("cases", "ratios", "spread"), CASES.values(), ids=CASES.keys())
def test_ratios_per_run_and_their_spread(
    cases: list[dict[str, Any]], ratios: list[tuple[int, int, float | None]], spread: Any
) -> None:
    rows = phase_ratios(cases, "steady")
    assert [(r["nodes"], r["repeat"], r["throughput_vs_kube"]) for r in rows] == ratios
    summary = ratio_spread(rows)
    assert [(s["nodes"], s["runs"], s["throughput_vs_kube"]) for s in summary] == spread
    # A ratio no run has is None, not an error.
    assert all(s["throughput_vs_raw"] is None for s in summary)


def test_the_report_of_repeated_runs_shows_the_spread_and_each_run(tmp_path: Path) -> None:
    cases = runs(100, (100, 100), (110, 100))
    results = {
        "config": {
            "repeats": 2,
            "concurrency": 64,
            "kube_qps": 5000,
            "steady_rate": 100,
            "steady_seconds": 1,
        },
        "machine": {"cpus": 2},
        "cases": cases,
    }
    paths = write_reports(results, tmp_path)
    text = (tmp_path / "scheduling.md").read_text()
    assert "| 100 | policy-scheduler #2 |" in text
    assert "Over the runs: each ratio's median (lowest to highest)." in text
    assert "| 100 | 2 | 1.05 (1 to 1.1) |" in text
    assert (tmp_path / "scheduling-steady.png").stat().st_size > 0
    assert tmp_path / "scheduling-steady.png" in paths
