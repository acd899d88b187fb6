"""``policy-scheduler explain`` on the real control plane: a bound pod and an unschedulable one,
every node's verdict with the filter that rejected it, the scores, the verdict, ``-o json``; a
bound pod re-evaluated as if pending beside the decision the policy recorded; and one clear line
with exit code 1 or 2 for what cannot be explained."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from harness.e2e import Cluster, Operator, wait_for
from harness.objects import node, pod, policy

from policy_scheduler.cli import EXIT_BAD_INPUT, EXIT_NOT_SERVED

EXECUTABLE = Path(sys.executable).with_name("policy-scheduler")
UNTOLERATED = "node(s) had untolerated taint(s)"
OUTSIDE = "node(s) didn't match the policy's nodeSelector"


def explain(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXECUTABLE), "explain", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )


def explained(cluster: Cluster, *args: str) -> dict[str, Any]:
    result = explain(cluster.kubeconfig, *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def pod_state(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout
    )
    return result


def unschedulable_message(cluster: Cluster, namespace: str, name: str) -> str | None:
    for condition in pod_state(cluster, namespace, name)["status"].get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return str(condition["message"])
    return None


def test_explain_a_bound_and_an_unschedulable_pod(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    labels = {"pool": pool}
    small, big, tainted = f"{pool}-small", f"{pool}-big", f"{pool}-gpu"
    cluster.apply(
        node(small, cpu="1", labels=labels),
        node(big, cpu="4", labels={**labels, "zone": "a"}),
        node(
            tainted,
            cpu="4",
            labels=labels,
            taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        ),
        policy(
            pool,
            pool,
            predicates=[{"name": "TaintToleration"}, {"name": "NodeResourcesFit"}],
            priorities=[
                {"name": "LeastAllocated", "weight": 1},
                {"name": "NodeLabelPreference", "weight": 2, "args": {"label": "zone"}},
            ],
        ),
    )
    cluster.apply(pod("web", pool, cpu="500m"), pod("huge", pool, cpu="8"), namespace=namespace)
    operator.start()
    wait_for("web bound", lambda: pod_state(cluster, namespace, "web")["spec"].get("nodeName"))
    failed = wait_for(
        "huge unschedulable", lambda: unschedulable_message(cluster, namespace, "huge")
    )

    # The bound pod, decided as if it were scheduled now: its own requests are not counted.
    report = explained(cluster, "web", "-n", namespace)
    assert report["pod"] == f"{namespace}/web"
    assert (report["schedulerName"], report["policy"], report["mode"]) == (pool, pool, "Enforce")
    assert report["boundTo"] == big
    assert report["weights"] == {"LeastAllocated": 1, "NodeLabelPreference": 2}
    nodes = {n["node"]: n for n in report["nodes"]}
    # LeastAllocated averages the free shares of cpu and memory: on 4 CPUs and 8Gi, 500m and
    # 64Mi leave 87 and 99 (93); on 1 CPU, 50 and 99 (74). Zone a is preferred with weight 2.
    assert nodes[big] == {
        "node": big,
        "feasible": True,
        "score": 97.67,
        "scores": {"LeastAllocated": 93, "NodeLabelPreference": 100},
    }
    assert nodes[small] == {
        "node": small,
        "feasible": True,
        "score": 24.67,
        "scores": {"LeastAllocated": 74, "NodeLabelPreference": 0},
    }
    assert nodes[tainted] == {
        "node": tainted,
        "feasible": False,
        "filter": "TaintToleration",
        "reasons": [UNTOLERATED],
    }
    # Every node of the cluster has its verdict; other tests' nodes are outside the pool.
    listed = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert sorted(nodes) == sorted(n["metadata"]["name"] for n in listed)
    for name, verdict in nodes.items():
        if not name.startswith(pool):
            assert (verdict["filter"], verdict["reasons"]) == ("nodeSelector", [OUTSIDE])
    assert report["nodes"][0]["node"] == big  # feasible nodes first, best first
    assert report["verdict"] == {"nodes": [big], "score": 97.67, "matches": True}

    # The unschedulable pod: why it is pending, in the words the operator posted.
    report = explained(cluster, "huge", "-n", namespace)
    assert report["boundTo"] is None
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes[small]["filter"] == nodes[big]["filter"] == "NodeResourcesFit"
    assert nodes[small]["reasons"] == nodes[big]["reasons"] == ["Insufficient cpu"]
    assert nodes[tainted]["filter"] == "TaintToleration"
    message = report["verdict"]["message"]
    assert report["verdict"]["nodes"] == []
    assert report["verdict"]["score"] is None
    assert message.startswith(f"0/{len(nodes)} nodes are available: ")
    assert f"1 {UNTOLERATED}" in message
    assert "2 Insufficient cpu" in message
    assert report["lastMessage"] == failed == message

    # The table says the same for people.
    table = explain(cluster.kubeconfig, "huge", "-n", namespace)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == (
        f"pod {namespace}/huge: pending; schedulerName {pool} is served by SchedulingPolicy "
        f"{pool} (Enforce)"
    )
    assert f"feasible nodes: 0 of {len(nodes)}" in lines
    assert [small, "NodeResourcesFit:", "Insufficient", "cpu"] in [line.split() for line in lines]
    assert f"verdict: it fits nowhere: {message}" in lines
    assert f"last scheduling attempt: {failed}" in lines

    table = explain(cluster.kubeconfig, "web", "-n", namespace)
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"pod {namespace}/web: bound to {big}; ")
    # After the recorded decision (which the status may not hold yet), the nodes as of now.
    now = lines.index(f"feasible nodes: 2 of {len(nodes)}")
    header = lines[now + 1].split()
    assert header == ["NODE", "TOTAL", "LeastAllocated", "(x1)", "NodeLabelPreference", "(x2)"]
    assert lines[now + 2].split() == [big, "97.67", "93", "100"]
    assert lines[now + 3].split() == [small, "24.67", "74", "0"]
    assert lines[-2:] == [
        f"verdict: it is on {big}; if it were pending now, it would go to {big} (score 97.67)",
        f"{big} is the policy's choice now",
    ]


def test_explain_a_bound_pod_as_if_pending_beside_its_recorded_decision(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    labels = {"pool": pool}
    small, big = f"{pool}-small", f"{pool}-big"
    cluster.apply(
        node(small, cpu="1", labels=labels),
        node(big, cpu="4", labels=labels),
        # NodeName would reject every node but a bound pod's own, were its nodeName kept.
        policy(pool, pool, predicates=[{"name": "NodeName"}, {"name": "NodeResourcesFit"}]),
    )
    cluster.apply(
        # Placed by its own spec.nodeName, not by the policy: it has no recorded decision.
        pod("pinned", pool, cpu="500m", extra={"nodeName": small}),
        # 3 of big's 4 CPUs: were its own usage counted, big could not take it again.
        pod("fill", pool, cpu="3"),
        namespace=namespace,
    )
    operator.start()

    def recorded_fill() -> dict[str, Any] | None:
        # Pending until bound ("recorded" is only a bound pod's), and the operator writes its
        # decisions into the policy's status about once a second.
        report = explained(cluster, "fill", "-n", namespace)
        return report if report.get("recorded") else None

    report = wait_for("the recorded decision of fill", recorded_fill)
    assert report["boundTo"] == big
    recorded = report["recorded"]
    # The only node that fits, taken unscored as kube-scheduler takes it; explain scores it.
    assert (recorded["pod"], recorded["node"], recorded["score"]) == (
        f"{namespace}/fill",
        big,
        None,
    )
    assert recorded["candidates"] == []
    assert recorded["reasons"] == {"Insufficient cpu": 1}
    assert "dryRun" not in recorded
    nodes = {n["node"]: n for n in report["nodes"]}
    assert not [n for n in report["nodes"] if n.get("filter") == "NodeName"]
    # LeastAllocated of 3 CPUs and 64Mi on 4 CPUs and 8Gi: 25 and 99 free, 62.
    assert nodes[big] == {
        "node": big,
        "feasible": True,
        "score": 62.0,
        "scores": {"LeastAllocated": 62},
    }
    assert (nodes[small]["filter"], nodes[small]["reasons"]) == (
        "NodeResourcesFit",
        ["Insufficient cpu"],
    )
    assert report["verdict"] == {"nodes": [big], "score": 62.0, "matches": True}

    table = explain(cluster.kubeconfig, "fill", "-n", namespace)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1] == (
        f"recorded decision at {recorded['time']}: {big} (the only node that fits: not scored)"
    )
    # No recorded scores to show; the re-evaluation scores the node.
    assert lines[2] == (
        f"now, as if it were pending (its nodeName ignored, its own usage not counted on {big}):"
    )
    assert not [line for line in lines if "NodeName" in line]
    assert lines[-2:] == [
        f"verdict: it is on {big}; if it were pending now, it would go to {big} (score 62)",
        f"{big} is the policy's choice now",
    ]

    # The pinned pod: no decision of the policy placed it, and its nodeName holds no node back.
    report = explained(cluster, "pinned", "-n", namespace)
    assert report["boundTo"] == small
    assert report["recorded"] is None
    assert not [n for n in report["nodes"] if n.get("filter") == "NodeName"]
    assert {n["node"] for n in report["nodes"] if n["feasible"]} == {small, big}
    table = explain(cluster.kubeconfig, "pinned", "-n", namespace)
    assert table.stdout.splitlines()[1] == (
        f"recorded decision: none; SchedulingPolicy {pool} keeps no decision that placed this pod"
    )


def test_what_cannot_be_explained(
    cluster: Cluster, namespace: str, pool: str, tmp_path: Path
) -> None:
    # The API server accepts it; only the plugin knows that NodeLabelPreference needs a label.
    cluster.apply(policy(pool, pool, priorities=[{"name": "NodeLabelPreference"}]))
    cluster.apply(
        pod("theirs", "default-scheduler-nobody-runs"), pod("ours", pool), namespace=namespace
    )
    cases = [
        (
            ("theirs",),
            EXIT_NOT_SERVED,
            "no SchedulingPolicy serves schedulerName 'default-scheduler-nobody-runs'",
        ),
        (
            ("ours",),
            EXIT_NOT_SERVED,
            f"SchedulingPolicy {pool} is invalid: spec.priorities[0].args.label: ",
        ),
        (("missing",), EXIT_BAD_INPUT, f'pod "missing" not found in namespace "{namespace}"'),
    ]
    for args, code, message in cases:
        result = explain(cluster.kubeconfig, *args, "-n", namespace)
        assert (result.returncode, result.stdout) == (code, ""), result.stderr
        assert result.stderr.startswith(f"policy-scheduler explain: {message}"), result.stderr
        assert len(result.stderr.splitlines()) == 1
    # An identity the API server does not know: refused, in one line.
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": "nobody-has-this-token"}
    stranger = tmp_path / "stranger"
    stranger.write_text(yaml.safe_dump(config))
    result = explain(stranger, "ours", "-n", namespace)
    assert (result.returncode, result.stdout) == (EXIT_BAD_INPUT, "")
    assert result.stderr.startswith("policy-scheduler explain: cannot read the cluster: ")
    assert "401: Unauthorized" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    for bad, text in [(tmp_path / "none", "no such file"), (tmp_path / "garbage", "kubeconfig")]:
        if bad.name == "garbage":
            bad.write_text("[")
        result = explain(bad, "ours", "-n", namespace)
        assert result.returncode == EXIT_BAD_INPUT
        assert result.stderr.startswith("policy-scheduler explain: cannot use the kubeconfig: ")
        assert text in result.stderr
        assert len(result.stderr.splitlines()) == 1
