"""The fault-injection benchmark (bench/chaos.py, ``make chaos``) runs end to end at a tiny size.

Two of its scenarios, the ones that use the most of it (a frozen leader and its standby, a Lease
takeover, taints; a frozen operator, a kube-apiserver restart, a deleted policy), each on a control
plane of its own in a state directory of this test. This checks that the harness works, its
figures are there and sane, and the invariants hold; not how fast anything recovers: the machine
running the tests is shared, and with 20 pods the faults may come after the last bind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from policy_scheduler.cli import EXIT_LOST_LEASE

REPO = Path(__file__).resolve().parents[2]
NODES = 2  # of 1 cpu: 20 pods of 100m fill them
PODS = 10 * NODES
SCENARIOS = ("leader-freeze", "policy-deleted-while-down")


def test_the_chaos_benchmark_injects_its_faults_and_checks_the_invariants(tmp_path: Path) -> None:
    out = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "chaos.py"),
            *("--scenarios", *SCENARIOS),
            *("--rounds", "1", "--nodes", str(NODES), "--timeout", "120"),
            *("--dir", str(tmp_path / "control-planes"), "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    # The table: a header, its rule, one row per scenario, each passed.
    header, _, *rows = run.stdout.splitlines()
    assert header.startswith("| scenario | round | pods | bound |")
    assert [r.split(" | ")[0] for r in rows] == [f"| {s}" for s in SCENARIOS]
    assert all(r.endswith("| ok |") for r in rows), rows

    results = json.loads((out / "chaos.json").read_text())
    runs = {r["scenario"]: r for r in results["runs"]}
    assert set(runs) == set(SCENARIOS)
    for name, figures in runs.items():
        assert figures["failures"] == [], name
        assert figures["pods"] == figures["bound"] == PODS, name
        assert figures["bound_twice"] == figures["overcommitted_nodes"] == 0, name
        assert figures["recovery_seconds"] >= 0, name
        # Every pod needs at least its binding.
        assert figures["requests_per_pod"] >= 1, name
        assert figures["requests_per_pod_per_minute"] > 0, name
        # A heartbeat after the fault: a status write that succeeded.
        assert figures["heartbeat_fresh"], name
        assert figures["status_writes_after_fault"]["success"] >= 1, name
        role = "leader" if name == "leader-freeze" else "operator"
        assert (out / "logs" / f"chaos-{name}-r1-{role}.log").exists()

    frozen = runs["leader-freeze"]
    assert frozen["bound_at_fault"] >= 2  # a tenth of the pods, before the freeze
    assert frozen["takeover_seconds"] > 0
    assert frozen["old_leader_exit_code"] == EXIT_LOST_LEASE  # "lost Lease", at once
    assert frozen["old_leader_late_binds"] == 0

    deleted = runs["policy-deleted-while-down"]
    assert deleted["deleted_policy_pods"] == PODS // 2
    assert deleted["deleted_policy_pods_bound"] == 0
    assert deleted["deleted_policy_pods_told"] == PODS // 2
