"""What bench_scheduling.py writes: the results as JSON, markdown tables with the ratios against
kube-scheduler and the raw bind limit, and a chart of throughput and p99 against node count.

Ratios, not absolute figures, are the point: on a shared machine absolute times drift between
runs, while the three schedulers of one node count run back to back on identical state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display here, and none wanted

import matplotlib.pyplot as plt

OURS, KUBE, RAW = "policy-scheduler", "kube-scheduler", "raw"
STYLES = {OURS: "tab:blue", KUBE: "tab:orange", RAW: "tab:gray"}

Case = dict[str, Any]


PHASE_COLUMNS = (
    "nodes",
    "scheduler",
    "created/s",
    "pods/s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "CPU ms/pod",
)


def _phase_cells(case: Mapping[str, Any], phase: str) -> list[Any]:
    """One row's cells under PHASE_COLUMNS for the burst or the steady phase."""
    figures = case[phase]
    latency = figures["latency_ms"]
    return [
        case["nodes"],
        case["scheduler"],
        figures["create_rate"],
        figures["throughput"],
        latency["p50"],
        latency["p90"],
        latency["p99"],
        figures["cpu_ms_per_pod"],
    ]


def _get(case: Case | None, *path: str) -> float | None:
    value: Any = case
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def ratios(cases: list[Case]) -> list[dict[str, Any]]:
    """Per node count: policy-scheduler's figures divided by kube-scheduler's and the raw limit's
    (above 1 is better for throughput, worse for the rest), and kube-scheduler's against raw."""
    by = {(c["scheduler"], c["nodes"]): c for c in cases if "burst" in c}
    rows = []
    for nodes in sorted({c["nodes"] for c in cases}):
        ours, kube, raw = (by.get((kind, nodes)) for kind in (OURS, KUBE, RAW))

        def versus(other: Case | None, *path: str, ours: Case | None = ours) -> float | None:
            return _ratio(_get(ours, *path), _get(other, *path))

        rows.append(
            {
                "nodes": nodes,
                "throughput_vs_kube": versus(kube, "burst", "throughput"),
                "throughput_vs_raw": versus(raw, "burst", "throughput"),
                "kube_throughput_vs_raw": versus(raw, "burst", "throughput", ours=kube),
                "p99_vs_kube": versus(kube, "burst", "latency_ms", "p99"),
                "steady_p99_vs_kube": versus(kube, "steady", "latency_ms", "p99"),
                "cpu_per_pod_vs_kube": versus(kube, "burst", "cpu_ms_per_pod"),
                "peak_rss_vs_kube": versus(kube, "peak_rss_mib"),
                "requests_per_pod_vs_kube": versus(kube, "burst", "api_requests_per_pod"),
            }
        )
    return rows


# The phases beside the burst that policy-scheduler and kube-scheduler both run: per phase, its
# title in scheduling.md, and each ratio's key, column and path in a case's phase record.
PHASE_RATIOS: dict[str, tuple[str, tuple[tuple[str, str, tuple[str, ...]], ...]]] = {
    "storage": (
        "Storage phase",
        (
            ("throughput_vs_kube", "pods/s", ("throughput",)),
            ("p50_vs_kube", "p50", ("latency_ms", "p50")),
            ("p99_vs_kube", "p99", ("latency_ms", "p99")),
            ("cpu_per_pod_vs_kube", "CPU/pod", ("cpu_ms_per_pod",)),
            ("requests_per_pod_vs_kube", "requests/pod", ("api_requests_per_pod",)),
        ),
    ),
    "preemption": (
        "Preemption phase",
        (
            ("throughput_vs_kube", "pods/s", ("throughput",)),
            ("p50_vs_kube", "p50", ("latency_ms", "p50")),
            ("p99_vs_kube", "p99", ("latency_ms", "p99")),
            ("evicted_per_preemptor_vs_kube", "evicted/pod", ("evicted_per_preemptor",)),
            ("cpu_per_pod_vs_kube", "CPU/pod", ("cpu_ms_per_pod",)),
            ("requests_per_pod_vs_kube", "requests/pod", ("api_requests_per_pod",)),
        ),
    ),
}


def phase_ratios(cases: list[Case], phase: str) -> list[dict[str, Any]]:
    """Per node count where both ran ``phase`` (a key of PHASE_RATIOS): policy-scheduler's
    figures of it divided by kube-scheduler's."""
    by = {(c["scheduler"], c["nodes"]): c for c in cases if phase in c}
    rows = []
    for nodes in sorted({n for _, n in by}):
        ours, kube = by.get((OURS, nodes)), by.get((KUBE, nodes))
        if ours is None or kube is None:
            continue
        row: dict[str, Any] = {"nodes": nodes}
        for key, _, path in PHASE_RATIOS[phase][1]:
            row[key] = _ratio(_get(ours, phase, *path), _get(kube, phase, *path))
        rows.append(row)
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]


def markdown(results: dict[str, Any]) -> str:
    config, cases = results["config"], results["cases"]
    done = [c for c in cases if "burst" in c]
    lines = [
        "# Scheduling benchmark: policy-scheduler, kube-scheduler, raw bind limit",
        "",
        f"Burst of {config['pods']} pods; steady {config['steady_rate']:g} pods/s for "
        f"{config['steady_seconds']:g} s; binder concurrency {config['concurrency']}; "
        f"kube-scheduler client QPS/burst {config['kube_qps']}; "
        f"{results['machine']['cpus']} CPUs. Method and definitions: bench/bench_scheduling.py.",
        "",
        "## Burst",
        "",
        "created/s: the rate this harness's POSTs achieved; on a saturated machine it falls "
        "short of what was asked, and bounds pods/s.",
        "",
        *_table(
            [*PHASE_COLUMNS, "peak RSS MiB", "API requests/pod", "ready s", "check"],
            [
                [
                    *_phase_cells(c, "burst"),
                    c.get("peak_rss_mib"),
                    c["burst"]["api_requests_per_pod"],
                    c.get("ready_seconds"),
                    "ok" if c["correctness"]["ok"] and c["burst"]["complete"] else "FAILED",
                ]
                for c in done
            ],
        ),
    ]
    steady = [c for c in done if "steady" in c]
    if steady:
        lines += [
            "",
            "## Steady arrival",
            "",
            *_table(
                list(PHASE_COLUMNS),
                [_phase_cells(c, "steady") for c in steady],
            ),
        ]
    storage = [c for c in done if "storage" in c]
    if storage:
        lines += [
            "",
            f"## Storage: {config.get('storage_pods')} pods, each with a WaitForFirstConsumer "
            "claim",
            "",
            "provision ms: the stand-in provisioner's own time per claim (selected node seen to "
            "claim bound), in every scheduler's latency alike. check: the run's, and every claim "
            "bound to a PV on its pod's node.",
            "",
            *_table(
                [
                    *PHASE_COLUMNS,
                    "API requests/pod",
                    "provision ms p50",
                    "provision ms p99",
                    "check",
                ],
                [
                    [
                        *_phase_cells(c, "storage"),
                        c["storage"]["api_requests_per_pod"],
                        c["storage"]["provision_ms"]["p50"],
                        c["storage"]["provision_ms"]["p99"],
                        "ok" if c["correctness"]["ok"] and c["storage"]["complete"] else "FAILED",
                    ]
                    for c in storage
                ],
            ),
        ]
    preempting = [c for c in done if "preemption" in c]
    if preempting:
        lines += [
            "",
            f"## Preemption: {config.get('preemption_pods')} high-priority pods, each needing "
            f"the {config.get('victims_per_node')} low-priority pods of one node evicted",
            "",
            "The low-priority pods are created bound (no scheduler places them, and none of it is "
            "measured); pods/s and latency are the high-priority pods', from creation to bound. "
            "evicted/pod: low-priority pods evicted per high-priority pod; ÷ min: all evicted over "
            "the fewest that make room. check: the run's, and every high-priority pod bound on a "
            "preemption node.",
            "",
            *_table(
                [
                    *PHASE_COLUMNS,
                    "API requests/pod",
                    "evicted/pod",
                    "evicted ÷ min",
                    "check",
                ],
                [
                    [
                        *_phase_cells(c, "preemption"),
                        c["preemption"]["api_requests_per_pod"],
                        c["preemption"]["evicted_per_preemptor"],
                        (c["correctness"].get("preemption") or {}).get("evicted_vs_minimum"),
                        "ok"
                        if c["correctness"]["ok"] and c["preemption"]["complete"]
                        else "FAILED",
                    ]
                    for c in preempting
                ],
            ),
        ]
    lines += [
        "",
        "## Ratios",
        "",
        "policy-scheduler's figure divided by the other's (throughput: higher is better; "
        "latency, CPU, memory, requests: lower is better).",
        "",
        *_table(
            [
                "nodes",
                "pods/s ÷ kube",
                "pods/s ÷ raw",
                "kube pods/s ÷ raw",
                "p99 ÷ kube",
                "steady p99 ÷ kube",
                "CPU/pod ÷ kube",
                "RSS ÷ kube",
                "requests/pod ÷ kube",
            ],
            [list(row.values()) for row in results["ratios"]],
        ),
    ]
    for phase, (title, figures) in PHASE_RATIOS.items():
        if results.get(f"{phase}_ratios"):
            lines += [
                "",
                f"{title}, policy-scheduler ÷ kube-scheduler:",
                "",
                *_table(
                    ["nodes", *(column for _, column, _ in figures)],
                    [list(row.values()) for row in results[f"{phase}_ratios"]],
                ),
            ]
    errors = [c for c in cases if "error" in c]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- {c['scheduler']} at {c['nodes']} nodes: {c['error']}" for c in errors]
    return "\n".join(lines) + "\n"


def chart(cases: list[Case], path: Path) -> None:
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind in (OURS, KUBE, RAW):
        mine = sorted(
            (c for c in cases if c["scheduler"] == kind and "burst" in c),
            key=lambda c: int(c["nodes"]),
        )
        nodes = [c["nodes"] for c in mine]
        series: list[tuple[Any, Callable[[Case], float | None], str, str]] = [
            (left, lambda c: _get(c, "burst", "throughput"), "-", kind),
            (right, lambda c: _get(c, "burst", "latency_ms", "p99"), "-", f"{kind} burst"),
            (right, lambda c: _get(c, "steady", "latency_ms", "p99"), "--", f"{kind} steady"),
        ]
        for axes, value, line, label in series:
            points = [(n, value(c)) for n, c in zip(nodes, mine, strict=True)]
            points = [(n, v) for n, v in points if v is not None]
            if points:
                axes.plot(
                    *zip(*points, strict=True), line, marker="o", color=STYLES[kind], label=label
                )
    left.set(title="Burst throughput", xlabel="nodes", ylabel="pods/s")
    left.set_ylim(bottom=0)
    # Burst and steady latencies differ by orders of magnitude: a log scale shows both.
    right.set(title="Creation-to-bound latency, p99", xlabel="nodes", ylabel="ms (log)")
    right.set_yscale("log")
    node_counts = sorted({c["nodes"] for c in cases})
    for axes in (left, right):
        if len(node_counts) > 1 and node_counts[-1] >= 10 * node_counts[0]:
            axes.set_xscale("log")
        axes.set_xticks(node_counts, [str(n) for n in node_counts])
        axes.grid(alpha=0.3, which="both")
        if axes.lines:
            axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_reports(results: dict[str, Any], out: Path) -> list[Path]:
    """scheduling.json, scheduling.md and scheduling.png in ``out``; their paths."""
    results["ratios"] = ratios(results["cases"])
    for phase in PHASE_RATIOS:
        results[f"{phase}_ratios"] = phase_ratios(results["cases"], phase)
    paths = [out / "scheduling.json", out / "scheduling.md", out / "scheduling.png"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    paths[1].write_text(markdown(results))
    chart(results["cases"], paths[2])
    return paths
