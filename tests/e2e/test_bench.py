"""The scheduling benchmark (bench/bench_scheduling.py) runs end to end at a tiny size.

It starts its own control planes in a state directory of its own, so this checks that the harness
works and that its numbers are sane (every pod bound, ratios positive, the reports written), not
how fast anything is: the machine running the tests is shared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODES, PODS, RATE, SECONDS, STORAGE, PREEMPTION = 20, 60, 10, 5, 12, 4
VICTIMS_PER_NODE = 10
SCHEDULERS = ("policy-scheduler", "kube-scheduler", "raw")


def test_the_benchmark_compares_three_schedulers_and_checks_their_work(tmp_path: Path) -> None:
    out = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "bench_scheduling.py"),
            *("--nodes", str(NODES), "--pods", str(PODS)),
            *("--steady-rate", str(RATE), "--steady-seconds", str(SECONDS)),
            *("--dir", str(tmp_path / "control-plane"), "--out", str(out)),
            *("--timeout", "60"),
            *("--storage-pods", str(STORAGE)),
            *("--preemption-pods", str(PREEMPTION)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    # Progress, one line per phase with counts.
    for kind in SCHEDULERS:
        assert f"{kind}, {NODES} nodes: fresh control plane" in run.stderr
    assert f"burst: {PODS}/{PODS} bound" in run.stderr
    assert "check ok" in run.stderr

    results = json.loads((out / "scheduling.json").read_text())
    cases = {case["scheduler"]: case for case in results["cases"]}
    assert set(cases) == set(SCHEDULERS)
    for kind, case in cases.items():
        assert case["nodes"] == NODES
        storage = STORAGE if kind != "raw" else 0
        preemption = PREEMPTION if kind != "raw" else 0
        phases = [("burst", PODS), ("steady", RATE * SECONDS)]
        if kind != "raw":
            phases += [("storage", storage), ("preemption", preemption)]
        for phase, pods in phases:
            figures = case[phase]
            assert figures["complete"], (kind, phase)
            assert figures["bound"] == figures["pods"] == pods, (kind, phase)
            assert figures["throughput"] > 0
            latency = figures["latency_ms"]
            assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["p100"]
            # Every pod needs at least its binding; the scheduler's own requests only.
            assert figures["api_requests_per_pod"] >= 1, (kind, phase)
            assert figures["api_requests_all_clients"]["POST pods/binding"] >= pods
        assert case["cpu_seconds_total"] > 0
        assert case["peak_rss_mib"] > 0
        correctness = case["correctness"]
        assert correctness["ok"], (kind, correctness)
        # The preemption phase leaves its marker pod and its high-priority pods, each of which
        # evicted one node's low-priority pods: none of those is left.
        high = 1 + preemption if preemption else 0
        assert correctness["pods"] == 1 + PODS + RATE * SECONDS + storage + high
        if storage:
            # Every claim bound by the stand-in provisioner to a PV on its pod's node; the
            # scheduler wrote each claim's selected node (a request of its own per pod).
            assert correctness["storage"]["claims_bound"] == STORAGE, (kind, correctness)
            assert not correctness["storage"]["wrong_node"], (kind, correctness)
            assert case["storage"]["provision_ms"]["p50"] > 0
            assert case["storage"]["api_requests_per_pod"] >= 2, kind
        else:
            assert "storage" not in case
        if preemption:
            # Every high-priority pod bound on a preemption node, after the low-priority pods of
            # one node were evicted for it (the stand-in kubelet force-deleted them), no more.
            figures, checked = case["preemption"], correctness["preemption"]
            assert checked["preemptors_bound"] == PREEMPTION, (kind, checked)
            assert not checked["off_preemption_nodes"], (kind, checked)
            assert checked["evicted"] == checked["evicted_minimum"] == PREEMPTION * VICTIMS_PER_NODE
            assert figures["evicted_per_preemptor"] == VICTIMS_PER_NODE, kind
            assert figures["evicted_other"] == 0, kind
            assert not figures["kubelet_errors"], kind
            # The scheduler's own requests: at least a delete per victim and the binding.
            assert figures["api_requests_per_pod"] >= VICTIMS_PER_NODE + 1, kind
        else:
            assert "preemption" not in case
    # The raw binder makes one request per pod, its binding (a retried 429 aside), and posts no
    # events.
    assert 1 <= cases["raw"]["burst"]["api_requests_per_pod"] < 1.1
    assert cases["raw"]["correctness"]["scheduled_events"] == 0
    for kind in ("policy-scheduler", "kube-scheduler"):
        # One Scheduled event per pod, give or take one posted after the check's list.
        assert cases[kind]["correctness"]["scheduled_events"] >= (
            PODS + RATE * SECONDS + STORAGE + PREEMPTION
        )

    (ratios,) = results["ratios"]
    assert ratios["nodes"] == NODES
    assert all(value > 0 for key, value in ratios.items() if key != "nodes"), ratios
    (storage_ratios,) = results["storage_ratios"]
    assert all(value > 0 for key, value in storage_ratios.items() if key != "nodes")
    (preemption_ratios,) = results["preemption_ratios"]
    assert all(value > 0 for key, value in preemption_ratios.items() if key != "nodes")

    table = (out / "scheduling.md").read_text()
    for kind in SCHEDULERS:
        assert f"| {NODES} | {kind} |" in table
    assert "## Ratios" in table
    assert "## Storage" in table
    assert "## Preemption" in table
    assert (out / "scheduling.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
