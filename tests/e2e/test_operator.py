"""The operator on the real control plane: binds, events, status, policy lifecycle, DryRun,
bursts and restarts. Each test works in its own node pool and namespace."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from harness.e2e import (
    Cluster,
    Operator,
    add_nodes,
    assert_not_overcommitted,
    assert_scheduled_at_most_once,
    bound,
    events,
    items,
    posted_since,
    status,
    wait_for,
)
from harness.objects import node, pod, policy

T = TypeVar("T")


def when(holds: bool, value: T) -> T | None:
    """``value`` once ``holds``: lets a wait_for probe return what it waited for."""
    return value if holds else None


def condition(cluster: Cluster, name: str, type_: str) -> dict[str, Any] | None:
    for c in status(cluster, name).get("conditions") or ():
        if c["type"] == type_:
            return dict(c)
    return None


def condition_status(cluster: Cluster, name: str, type_: str) -> str | None:
    found = condition(cluster, name, type_)
    return None if found is None else str(found["status"])


def test_pending_pods_are_bound_with_events_and_status(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(*(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(3)))
    cluster.apply(policy(pool, pool))
    cluster.apply(*(pod(f"web-{i}", pool) for i in range(5)), namespace=namespace)
    operator.start()  # after the pods: pods pending before start are scheduled too

    placed = wait_for("5 pods bound", lambda: when(len(b := bound(cluster, namespace)) == 5, b))
    assert set(placed.values()) <= {f"{pool}-{i}" for i in range(3)}
    scheduled = wait_for(
        "5 Scheduled events",
        lambda: when(len(e := events(cluster, namespace, "Scheduled")) == 5, e),
    )
    for event in scheduled:
        name = event["involvedObject"]["name"]
        assert event["message"].startswith(
            f"Successfully assigned {namespace}/{name} to {placed[name]} (SchedulingPolicy {pool}"
        )
        assert event["source"]["component"] == "policy-scheduler"

    state = wait_for(
        "the status to count 5", lambda: when((s := status(cluster, pool)).get("scheduled") == 5, s)
    )
    assert state["lastDecision"]["node"] in placed.values()
    assert len(state["decisions"]) == 5
    newest = state["decisions"][0]
    assert newest["pod"].startswith(f"{namespace}/web-")
    assert newest["candidates"][0]["node"] == newest["node"]
    assert set(newest["candidates"][0]["scores"]) == {"LeastAllocated"}
    assert condition_status(cluster, pool, "Ready") == "True"

    columns = cluster.kubectl("get", "schedulingpolicy", pool, "--no-headers").stdout.split()
    assert columns[:6] == [pool, pool, "Enforce", "True", "5", "0"]
    assert columns[6] in placed.values()
    described = cluster.kubectl("describe", "schedulingpolicy", pool).stdout
    assert "Decisions:" in described and "Least Allocated:" in described


@pytest.mark.real_cluster
def test_kube_schedulers_pods_count_and_unschedulable_pods_are_told_once(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    add_nodes(real_cluster, node(f"{pool}-0", cpu="2", labels={"pool": pool}))
    real_cluster.apply(policy(pool, pool))
    # kube-scheduler places this one; our cache must count it.
    real_cluster.apply(
        pod("theirs", "default-scheduler", cpu="1500m", extra={"nodeSelector": {"pool": pool}}),
        namespace=namespace,
    )
    wait_for("kube-scheduler's pod bound", lambda: "theirs" in bound(real_cluster, namespace))
    operator.start()
    real_cluster.apply(pod("ours", pool, cpu="1"), namespace=namespace)

    failed = wait_for(
        "FailedScheduling", lambda: events(real_cluster, namespace, "FailedScheduling")
    )
    message = failed[0]["message"]
    assert message.startswith("0/") and "1 Insufficient cpu" in message
    assert message.endswith(".")
    pod_conditions = items(
        real_cluster, "pods", "-n", namespace, "--field-selector", "metadata.name=ours"
    )[0]["status"]["conditions"]
    assert {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }.items() <= pod_conditions[0].items()
    wait_for(
        "the unschedulable count", lambda: status(real_cluster, pool).get("unschedulable") == 1
    )

    # A change that does not help: the pod is tried again, and the same story is not re-told.
    real_cluster.kubectl("label", "node", f"{pool}-0", "touched=yes")
    time.sleep(3)
    assert len(events(real_cluster, namespace, "FailedScheduling")) == 1

    # A change that helps: kube-scheduler's pod goes away, ours fits.
    # Deleted gracefully: its kubelet (kwok) confirms, and the pod is gone.
    real_cluster.kubectl("delete", "pod", "theirs", "-n", namespace, "--wait=false")
    wait_for("our pod bound", lambda: bound(real_cluster, namespace).get("ours") == f"{pool}-0")


def test_a_policy_edit_changes_the_next_placement(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(
        node(f"{pool}-a", labels={"pool": pool, "zone": "a"}),
        node(f"{pool}-b", labels={"pool": pool, "zone": "b"}),
    )
    preference = {
        "name": "NodeLabelPreference",
        "weight": 1,
        "args": {"label": "zone", "values": ["a"]},
    }
    cluster.apply(policy(pool, pool, priorities=[preference]))
    operator.start()
    cluster.apply(pod("first", pool), namespace=namespace)
    wait_for("first bound to zone a", lambda: bound(cluster, namespace).get("first") == f"{pool}-a")

    preference["args"] = {"label": "zone", "values": ["b"]}
    cluster.apply(policy(pool, pool, priorities=[preference]))
    wait_for("the edit observed", lambda: status(cluster, pool).get("observedGeneration") == 2)
    cluster.apply(pod("second", pool), namespace=namespace)
    wait_for(
        "second bound to zone b", lambda: bound(cluster, namespace).get("second") == f"{pool}-b"
    )


def test_invalid_and_conflicting_policies_are_reported_while_others_schedule(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", labels={"pool": pool}))
    good, late, bad = f"{pool}-good", f"{pool}-late", f"{pool}-bad"
    cluster.apply(policy(good, pool))
    time.sleep(1.1)  # creation timestamps have one-second resolution: "late" must be younger
    cluster.apply(
        policy(late, pool, schedulerName=good),
        policy(bad, pool, predicates=[{"name": "NodeLabel", "args": {"present": ["disk==ssd"]}}]),
    )
    operator.start()

    invalid = wait_for("Valid=False", lambda: condition(cluster, bad, "Valid"))
    assert invalid["status"] == "False"
    assert invalid["message"].startswith("spec.predicates[0].args.present[0]: ")
    conflict = wait_for("Conflict=True", lambda: condition(cluster, late, "Conflict"))
    assert conflict["status"] == "True"
    assert good in conflict["message"]
    assert condition_status(cluster, good, "Conflict") == "False"

    cluster.apply(pod("served", good), pod("waits", bad), namespace=namespace)
    wait_for("the good policy's pod bound", lambda: "served" in bound(cluster, namespace))
    told = wait_for(
        "the invalid policy's pod told why",
        lambda: events(cluster, namespace, "NoSchedulingPolicy"),
    )
    assert told[0]["involvedObject"]["name"] == "waits"
    assert told[0]["message"].startswith(f"SchedulingPolicy {bad} is invalid: spec.predicates[0]")
    assert "waits" not in bound(cluster, namespace)


def test_a_deleted_policys_pods_are_told_nobody_serves_them(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", labels={"pool": pool}))
    cluster.apply(policy(pool, pool))
    operator.start()
    wait_for("the policy served", lambda: condition(cluster, pool, "Ready"))
    cluster.kubectl("delete", "schedulingpolicy", pool)
    cluster.apply(
        pod("orphan", pool), pod("elsewhere", "some-other-scheduler"), namespace=namespace
    )
    told = wait_for("a warning", lambda: events(cluster, namespace, "NoSchedulingPolicy"))
    assert [e["involvedObject"]["name"] for e in told] == ["orphan"]
    assert told[0]["type"] == "Warning"
    assert told[0]["message"] == f"no SchedulingPolicy serves schedulerName {pool}"


def test_dry_run_decides_and_records_but_binds_nothing(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", labels={"pool": pool}))
    cluster.apply(policy(pool, pool, mode="DryRun"))
    operator.start()
    cluster.apply(pod("shadow", pool), namespace=namespace)
    said = wait_for("the DryRun event", lambda: events(cluster, namespace, "DryRunScheduled"))
    assert said[0]["type"] == "Normal"
    assert f"would assign {namespace}/shadow to {pool}-0" in said[0]["message"]
    record = wait_for("the dry-run decision", lambda: status(cluster, pool).get("decisions"))[0]
    assert record["dryRun"] is True
    assert record["node"] == f"{pool}-0"
    time.sleep(2)
    assert bound(cluster, namespace) == {}
    assert status(cluster, pool).get("scheduled") == 0


def _burst(cluster: Cluster, namespace: str, pool: str, count: int, nodes: int = 10) -> None:
    """``count`` pods onto ``nodes`` nodes with room for 20 pods of 100m CPU each."""
    cluster.apply(*(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(nodes)))
    cluster.apply(policy(pool, pool))
    cluster.apply(*(pod(f"burst-{i}", pool) for i in range(count)), namespace=namespace)


def test_a_burst_larger_than_the_pool_binds_exactly_what_fits(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    operator.start()
    _burst(cluster, namespace, pool, 300)
    wait_for("200 bound", lambda: len(bound(cluster, namespace)) == 200, timeout=120)
    failed = wait_for(
        "100 FailedScheduling",
        lambda: when(len(e := events(cluster, namespace, "FailedScheduling")) == 100, e),
        timeout=60,
    )
    assert len({e["involvedObject"]["name"] for e in failed}) == 100
    time.sleep(2)
    assert len(bound(cluster, namespace)) == 200
    assert_not_overcommitted(cluster, pool)


def test_killed_mid_burst_and_restarted_binds_the_rest_exactly_once(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    # Room for half the burst: however fast the operator is, at least 200 pods are still
    # pending when it is killed.
    _burst(cluster, namespace, pool, 400, nodes=10)
    operator.start()
    wait_for("some pods bound", lambda: len(bound(cluster, namespace)) >= 20, timeout=60)
    operator.stop(kill=True)
    # Room for the other half, exactly: only the restarted operator can bind it, and only if it
    # counts every pod its predecessor bound, once.
    cluster.apply(*(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(10, 20)))
    restarted = datetime.now(UTC)
    operator.start()
    placed = wait_for(
        "all 400 bound", lambda: when(len(b := bound(cluster, namespace)) == 400, b), timeout=120
    )
    assert_scheduled_at_most_once(cluster, namespace, placed)
    refused = posted_since(cluster, namespace, "FailedScheduling", restarted)
    assert not refused, f"the restarted operator refused a pod: {refused[0]['message']}"
    assert_not_overcommitted(cluster, pool)


def test_a_pod_needing_a_node_feature_waits_for_a_node_declaring_it(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """NodeDeclaredFeatures through the watches: what the informers keep of the pod (its
    container's restart rules) and of the node (its declared features), and the node's update
    that declares the feature waking the pod."""
    name = f"{pool}-0"
    cluster.apply(node(name, cpu="2", labels={"pool": pool}))
    predicates = [{"name": "NodeDeclaredFeatures"}, {"name": "NodeResourcesFit"}]
    cluster.apply(policy(pool, pool, predicates=predicates))
    operator.start()
    restarter = pod("restarter", pool)
    restarter["spec"]["containers"][0].update(
        restartPolicy="Never",
        restartPolicyRules=[
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ],
    )
    cluster.apply(restarter, namespace=namespace)

    failed = wait_for("FailedScheduling", lambda: events(cluster, namespace, "FailedScheduling"))
    assert "1 node(s) didn't match Pod's required features" in failed[0]["message"]
    declared = {"status": {"declaredFeatures": ["RestartAllContainersOnContainerExits"]}}
    cluster.kubectl(
        "patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(declared)
    )
    wait_for("the pod bound", lambda: bound(cluster, namespace).get("restarter") == name)


def test_a_pod_resized_in_place_counts_on_its_node_as_it_runs(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """A running pod's in-place resize, told by its status alone (no kubelet runs here, and kwok
    resizes nothing: the test writes the statuses, and decides when the resize is done), counts on
    its node as kube-scheduler v1.37 counts it: a resize down not yet done holds what the pod runs
    with; once done, the room is free and a pod waiting for it is bound."""
    name = f"{pool}-0"
    cluster.apply(node(name, cpu="2", labels={"pool": pool}))
    cluster.apply(policy(pool, pool))
    running = pod("running", pool, cpu="1", extra={"nodeName": name})
    cluster.apply(running, namespace=namespace)

    def runs_with(cpu: str) -> None:
        status = {
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                        "allocatedResources": {"cpu": cpu, "memory": "64Mi"},
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                    }
                ],
            }
        }
        cluster.kubectl(
            "patch", "pod", "running", "-n", namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps(status),
        )  # fmt: skip

    # Shrunk to 1 cpu in its spec, it still runs with 2: the node is full.
    runs_with("2")
    operator.start()
    cluster.apply(pod("waiting", pool, cpu="1"), namespace=namespace)
    failed = wait_for("FailedScheduling", lambda: events(cluster, namespace, "FailedScheduling"))
    assert "1 Insufficient cpu" in failed[0]["message"]
    # The kubelet is done: the pod runs with 1 cpu, the other one is free.
    runs_with("1")
    wait_for("the waiting pod bound", lambda: bound(cluster, namespace).get("waiting") == name)
