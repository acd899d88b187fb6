"""The scheduling loop's pre-enqueue and its view of other schedulers' work, on the real API
server: gated pods, pods nominated to a node, a DryRun policy switched to Enforce."""

from __future__ import annotations

import json
from typing import Any

from harness.controlplane import free_port
from harness.e2e import Cluster, Operator, bound, events, items, wait_for
from harness.metrics import Samples, scrape, value
from harness.objects import node, pod, policy


def _wait_bound(cluster: Cluster, namespace: str, name: str) -> str:
    """The node pod ``name`` gets bound to."""
    return wait_for(f"{name} bound", lambda: bound(cluster, namespace).get(name))


def test_a_gated_pod_waits_without_a_request_and_is_bound_once_ungated(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", cpu="2", labels={"pool": pool}))
    cluster.apply(policy(pool, pool))
    gated = pod("gated", pool, extra={"schedulingGates": [{"name": "example.com/quota"}]})
    cluster.apply(gated, pod("free", pool), namespace=namespace)
    url = f"http://127.0.0.1:{free_port()}/metrics"
    operator.start(extra_args=["--metrics", url])
    # The ungated pod, created after the gated one, is bound: the gated one was seen and held.
    _wait_bound(cluster, namespace, "free")

    def gated_counted() -> Samples | None:
        samples = scrape(url)
        if samples is None or value(samples, "scheduler_pending_pods", queue="gated") != 1:
            return None
        return samples

    samples = wait_for("the gated pod counted in the gated queue", gated_counted)
    attempts = "scheduler_schedule_attempts_total"
    assert value(samples, attempts, result="error", profile=pool) is None
    assert value(samples, attempts, result="scheduled", profile=pool) == 1
    assert value(samples, "policy_scheduler_bind_duration_seconds_count", result="taken") is None
    assert "gated" not in bound(cluster, namespace)
    assert events(cluster, namespace, "FailedScheduling") == []

    patch = json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}])
    cluster.kubectl("patch", "pod", "gated", "-n", namespace, "--type=json", "-p", patch)
    _wait_bound(cluster, namespace, "gated")


def _priority_class(name: str, value: int, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"pool": pool}},
        "value": value,
    }


def test_a_nominated_pod_holds_its_room_against_lower_priorities_only(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    target = f"{pool}-0"
    cluster.apply(node(target, cpu="2", labels={"pool": pool}))
    cluster.apply(
        _priority_class(f"{pool}-low", 10, pool),
        _priority_class(f"{pool}-mid", 100, pool),
        _priority_class(f"{pool}-high", 1000, pool),
    )
    try:
        cluster.apply(policy(pool, pool))
        # Another scheduler's preemption reserved the whole node for this pod.
        nominee = pod(
            "nominee", f"{pool}-other", cpu="2", extra={"priorityClassName": f"{pool}-mid"}
        )
        cluster.apply(nominee, namespace=namespace)
        nominated = json.dumps({"status": {"nominatedNodeName": target}})
        cluster.kubectl(
            "patch", "pod", "nominee", "-n", namespace, "--subresource=status",
            "--type=merge", "-p", nominated,
        )  # fmt: skip
        low = pod("low", pool, cpu="1", extra={"priorityClassName": f"{pool}-low"})
        cluster.apply(low, namespace=namespace)
        operator.start()
        failed = wait_for(
            "the low-priority pod told it does not fit",
            lambda: events(cluster, namespace, "FailedScheduling"),
        )
        assert failed[0]["message"] == "0/1 nodes are available: 1 Insufficient cpu."
        assert "low" not in bound(cluster, namespace)

        high = pod("high", pool, cpu="1", extra={"priorityClassName": f"{pool}-high"})
        cluster.apply(high, namespace=namespace)
        assert _wait_bound(cluster, namespace, "high") == target
        assert "low" not in bound(cluster, namespace)
    finally:
        cluster.kubectl("delete", "priorityclasses", "-l", f"pool={pool}", "--wait=false")


def test_a_dry_run_policy_switched_to_enforce_binds_the_pods_it_decided(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", cpu="2", labels={"pool": pool}))
    cluster.apply(policy(pool, pool, mode="DryRun"))
    cluster.apply(pod("web", pool), namespace=namespace)
    operator.start()
    wait_for("a DryRunScheduled event", lambda: events(cluster, namespace, "DryRunScheduled"))
    assert "web" not in bound(cluster, namespace)

    cluster.apply(policy(pool, pool, mode="Enforce"))
    _wait_bound(cluster, namespace, "web")


def test_kube_schedulers_nomination_holds_against_our_lower_priority_pod(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """kube-scheduler preempts for its pod and nominates it to the node; when the victim is gone
    (the test stands in for the kubelet), our lower-priority pod must not take the room. Not on
    real_cluster: kwok may remove the victim before kube-scheduler has written the nomination,
    and then our pod rightly takes the room."""
    target = f"{pool}-0"
    cluster.apply(node(target, cpu="2", labels={"pool": pool}))
    cluster.apply(
        _priority_class(f"{pool}-low", 10, pool), _priority_class(f"{pool}-high", 1000, pool)
    )
    try:
        cluster.apply(policy(pool, pool))
        low = {"priorityClassName": f"{pool}-low"}
        victim = pod("victim", "default-scheduler", cpu="2", extra={**low, "nodeName": target})
        cluster.apply(victim, pod("ours", pool, cpu="1", extra=low), namespace=namespace)
        operator.start()
        wait_for(
            "our pod told it does not fit", lambda: events(cluster, namespace, "FailedScheduling")
        )

        theirs = pod(
            "theirs", "default-scheduler", cpu="2", extra={"priorityClassName": f"{pool}-high"}
        )
        cluster.apply(theirs, namespace=namespace)

        def nominated() -> bool:
            pods = {p["metadata"]["name"]: p for p in items(cluster, "pods", "-n", namespace)}
            return (pods["theirs"].get("status") or {}).get("nominatedNodeName") == target and (
                pods["victim"]["metadata"].get("deletionTimestamp") is not None
            )

        wait_for("kube-scheduler to nominate its pod and evict the victim", nominated)
        cluster.kubectl("delete", "pod", "victim", "-n", namespace, "--grace-period=0", "--force")
        assert _wait_bound(cluster, namespace, "theirs") == target
        assert "ours" not in bound(cluster, namespace)
    finally:
        cluster.kubectl("delete", "priorityclasses", "-l", f"pool={pool}", "--wait=false")
