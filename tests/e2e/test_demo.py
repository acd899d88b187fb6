"""`make demo` tells the whole story: it is run here as a newcomer runs it, on its own cluster,
where kube-controller-manager and kwok's simulated kubelets run the workloads it creates."""

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
    # kubectl's columns are as wide as their widest cell: the texts are compared word by word.
    words = " ".join(shown.split())

    # kubectl get schedulingpolicies: NAME SCHEDULER MODE READY SCHEDULED UNSCHEDULABLE LAST-NODE
    assert rows["default-profile"][1:6] == ["default-profile", "Enforce", "True", "6", "1"]
    assert rows["zone"][1:5] == ["zone", "Enforce", "True", "4"]
    assert rows["bin-packing"][1:6] == ["bin-packing", "Enforce", "True", "5", "0"]
    assert rows["dry-run"][1:5] == ["default-scheduler", "DryRun", "True", "0"]
    # kubectl get deploy,sts,job,pvc: each workload done, each claim bound to a local PV.
    assert rows["deployment.apps/frontend"][1:4] == ["2/2", "2", "2"]
    assert rows["statefulset.apps/db"][1] == "2/2"
    assert rows["job.batch/report"][1:3] == ["Complete", "2/2"]
    volume_of = {f"db-{i}": rows[f"persistentvolumeclaim/data-db-{i}"] for i in (0, 1)}
    assert all(row[1] == "Bound" for row in volume_of.values())
    # kubectl get pods -o wide: NAME READY STATUS RESTARTS AGE IP NODE ...
    pods = {name: row for name, row in rows.items() if len(row) == 9 and row[1] in ("0/1", "1/1")}
    node_of = {name: row[6] for name, row in pods.items()}
    status_of = {name: row[1:3] for name, row in pods.items()}
    assert node_of["trainer-1"] == "node-gpu"
    assert {node_of["zonal-1"], node_of["zonal-2"]} <= {"node-a1", "node-a2"}
    assert all(node_of[f"web-{i}"].startswith("node-") for i in (1, 2, 3))
    assert all(node_of[f"batch-{i}"].startswith("node-") for i in (1, 2, 3))
    assert node_of["huge-1"] == node_of["shadow-1"] == "<none>"
    assert status_of["huge-1"] == status_of["shadow-1"] == ["0/1", "Pending"]
    frontend = [name for name in pods if name.startswith("frontend-")]
    report = [name for name in pods if name.startswith("report-")]
    assert len(frontend) == len(report) == 2
    assert {node_of[name] for name in frontend} <= {"node-a1", "node-a2"}
    # Each StatefulSet pod runs on the node of the local PV its claim was bound to.
    assert {node_of["db-0"], node_of["db-1"]} == {"node-a1", "node-b1"}
    for name, row in volume_of.items():
        assert row[2] == f"local-{node_of[name]}"
    assert all(status_of[name] == ["0/1", "Completed"] for name in report)
    running = set(pods) - {"huge-1", "shadow-1", *report}
    assert all(status_of[name] == ["1/1", "Running"] for name in running)
    # The events and the recorded decisions say why; the nodes were Ready, untainted but for the
    # GPU node's own taint, before any pod was tried.
    assert (
        "FailedScheduling huge-1 0/4 nodes are available: 1 node(s) had untolerated taint(s),"
        " 3 Insufficient cpu." in words
    )
    assert words.count("FailedScheduling") == 1
    assert "DryRunScheduled shadow-1 SchedulingPolicy dry-run (DryRun) would assign" in words
    assert "demo/trainer-1 -> node-gpu" in shown
    assert "LeastAllocated=" in shown
    assert "'make cluster-down' stops the operator and the control plane." in shown
