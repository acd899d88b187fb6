"""`make demo` tells the whole story: it is run here as a newcomer runs it, on its own cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_schedules_the_example_pods_and_shows_why(tmp_path: Path) -> None:
    state = tmp_path / "demo"
    try:
        shown = subprocess.run(
            [str(REPO / "hack" / "demo"), "--dir", str(state)],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout
    finally:
        subprocess.run([str(REPO / "hack/controlplane/down"), "--dir", str(state)], check=True)
    rows = {line.split()[0]: line.split() for line in shown.splitlines() if line.strip()}

    # kubectl get schedulingpolicies: NAME SCHEDULER MODE READY SCHEDULED UNSCHEDULABLE LAST-NODE
    assert rows["default-profile"][1:6] == ["default-profile", "Enforce", "True", "4", "1"]
    assert rows["zone"][1:5] == ["zone", "Enforce", "True", "2"]
    assert rows["dry-run"][1:5] == ["default-scheduler", "DryRun", "True", "0"]
    # kubectl get pods -o wide: NAME READY STATUS RESTARTS AGE IP NODE ...
    node_of = {name: row[6] for name, row in rows.items() if len(row) == 9 and row[1] == "0/1"}
    assert node_of["trainer-1"] == "node-gpu"
    assert {node_of["zonal-1"], node_of["zonal-2"]} <= {"node-a1", "node-a2"}
    assert all(node_of[f"web-{i}"].startswith("node-") for i in (1, 2, 3))
    assert all(node_of[f"batch-{i}"].startswith("node-") for i in (1, 2, 3))
    assert node_of["huge-1"] == node_of["shadow-1"] == "<none>"
    # The events and the recorded decisions say why.
    assert "FailedScheduling   huge-1      0/4 nodes are available: " in shown
    assert "3 Insufficient cpu." in shown
    assert "DryRunScheduled    shadow-1    SchedulingPolicy dry-run (DryRun) would assign" in shown
    assert "demo/trainer-1 -> node-gpu" in shown
    assert "LeastAllocated=" in shown
    assert "'make cluster-down' stops the operator and the control plane." in shown
