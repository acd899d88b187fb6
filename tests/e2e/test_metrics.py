"""``run --metrics URL`` on the real control plane: what a Prometheus scrape of /metrics reads
after the operator has bound pods, left one unschedulable, shadowed one in DryRun and met an
invalid policy."""

from __future__ import annotations

import socket
import subprocess

import pytest
from harness.controlplane import free_port
from harness.e2e import Cluster, Operator, bound, events, wait_for
from harness.metrics import Samples, scrape, value
from harness.objects import node, pod, policy

# kube-scheduler v1.37's queues (the last two hold pod-group members).
QUEUES = ("active", "backoff", "unschedulable", "gated", "incomplete", "pending")


def pending(samples: Samples) -> float:
    """Pods in the six queues; each queue is reported, if empty with 0."""
    counts = [value(samples, "scheduler_pending_pods", queue=q) for q in QUEUES]
    assert None not in counts, counts
    return sum(c or 0 for c in counts)


def test_a_scrape_shows_attempts_queues_leadership_policies_and_writes(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    shadow, bad = f"{pool}-shadow", f"{pool}-bad"
    cluster.apply(*(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(2)))
    cluster.apply(
        policy(pool, pool),
        policy(shadow, pool, mode="DryRun"),
        policy(bad, pool, predicates=[{"name": "NodeLabel", "args": {"present": ["disk==ssd"]}}]),
    )
    cluster.apply(
        *(pod(f"web-{i}", pool) for i in range(3)),
        pod("huge", pool, cpu="64"),
        pod("shadowed", shadow),
        namespace=namespace,
    )
    url = f"http://127.0.0.1:{free_port()}/metrics"
    operator.start(extra_args=["--metrics", url])

    wait_for("3 pods bound", lambda: len(bound(cluster, namespace)) == 3)
    wait_for(
        "the huge pod's FailedScheduling", lambda: events(cluster, namespace, "FailedScheduling")
    )
    wait_for("the DryRun decision", lambda: events(cluster, namespace, "DryRunScheduled"))

    def settled() -> Samples | None:
        # Bound pods are counted when the bind returns, status writes within about a second.
        samples = scrape(url)
        if samples is None:
            return None
        done = value(samples, "scheduler_pod_scheduling_attempts_count") == 3
        written = value(samples, "policy_scheduler_status_writes_total", result="success")
        return samples if done and (written or 0) > 0 else None

    samples = wait_for("a scrape that counts 3 binds and a status write", settled)

    attempts = "scheduler_schedule_attempts_total"
    assert value(samples, attempts, result="scheduled", profile=pool) == 3
    assert (value(samples, attempts, result="unschedulable", profile=pool) or 0) >= 1
    assert value(samples, attempts, result="error", profile=pool) is None
    # A DryRun policy binds nothing: its decision is recorded, not counted as scheduled.
    assert value(samples, attempts, result="scheduled", profile=shadow) is None
    recorded = "policy_scheduler_decisions_recorded_total"
    assert value(samples, recorded, policy=shadow, mode="DryRun", result="scheduled") == 1
    assert value(samples, recorded, policy=pool, mode="Enforce", result="scheduled") == 3
    unschedulable = {"policy": pool, "mode": "Enforce", "result": "unschedulable"}
    assert (value(samples, recorded, **unschedulable) or 0) >= 1

    duration = "scheduler_scheduling_attempt_duration_seconds"
    scheduled = {"result": "scheduled", "profile": pool}
    assert value(samples, f"{duration}_count", **scheduled) == 3
    assert value(samples, f"{duration}_bucket", le="+Inf", **scheduled) == 3
    assert value(samples, f"{duration}_bucket", le="0.001", **scheduled) is not None
    assert value(samples, f"{duration}_bucket", le="16.384", **scheduled) is not None
    assert (value(samples, f"{duration}_sum", **scheduled) or 0) > 0
    algorithm = value(samples, "scheduler_scheduling_algorithm_duration_seconds_count") or 0
    assert algorithm >= 5  # 3 bound, the huge one, the shadowed one
    assert value(samples, "policy_scheduler_bind_duration_seconds_count", result="bound") == 3
    assert value(samples, "policy_scheduler_binds_in_flight") == 0

    # The huge pod waits: unschedulable, or in backoff when a node change let it try again.
    assert pending(samples) >= 1
    assert (value(samples, "scheduler_cache_size", type="nodes") or 0) >= 2
    assert value(samples, "leader_election_master_status", name="policy-scheduler") == 1
    assert value(samples, "policy_scheduler_policy_valid", policy=pool) == 1
    assert value(samples, "policy_scheduler_policy_valid", policy=shadow) == 1
    assert value(samples, "policy_scheduler_policy_valid", policy=bad) == 0
    assert (value(samples, "process_cpu_seconds_total") or 0) > 0

    # The queue gauges are read at scrape time: the huge pod's deletion shows at once.
    waiting = pending(samples)
    cluster.kubectl("delete", "pod", "huge", "-n", namespace, "--wait=false")
    wait_for(
        "the pending pods gauge to drop",
        lambda: (s := scrape(url)) is not None and pending(s) == waiting - 1,
    )


def test_a_metrics_port_in_use_stops_the_operator_saying_why(
    cluster: Cluster, operator: Operator
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        operator.start(extra_args=["--metrics", f"http://127.0.0.1:{port}/metrics"])
        assert operator.process is not None
        try:
            code = operator.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the operator kept running without its metrics port")
    assert code != 0
    assert f"cannot serve http://127.0.0.1:{port}/metrics: " in operator.logs()
