"""Faults as the operator of a real cluster meets them (issue 11), each on a control plane of
the test's own: etcd and kube-apiserver killed and restarted mid-burst, policies deleted and
re-created while the operator's watches are down; and a policy edited many times in a row.
(A leader frozen past its Lease: test_ha.py.)"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness.controlplane import ControlPlane
from harness.e2e import (
    Cluster,
    Operator,
    assert_not_overcommitted,
    assert_scheduled_at_most_once,
    bound,
    control_plane,
    events,
    items,
    status,
    wait_for,
)
from harness.objects import node, pod, policy


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, Path]]:
    """A control plane for this test alone (its etcd gets killed), with the CRD and the Lease
    namespace; and its state directory."""
    state = tmp_path / "control-plane"
    with control_plane(state) as cluster:
        cluster.install_crd()
        cluster.kubectl("create", "namespace", "policy-scheduler")
        cluster.kubectl("create", "namespace", "burst")
        yield cluster, state


@pytest.mark.parametrize("component", ["etcd", "kube-apiserver"])
def test_killed_mid_burst_every_pod_is_bound_once_on_a_node_with_room_and_told(
    own_cluster: tuple[Cluster, Path], tmp_path: Path, component: str
) -> None:
    """etcd or kube-apiserver killed and restarted while the operator binds at full speed.
    Binds refused meanwhile (409s among them, which are not always "bound already") are
    retried; binds whose replies were lost may have been committed, and are resolved by reading;
    the informers' first listings after the restart may be refused for a while, and nothing is
    decided until they are current again. Every pod is bound once, no node is overcommitted,
    every bound pod gets its Scheduled event, and the status counts them all, freshly."""
    cluster, state = own_cluster
    pool, pods = "faults", 800
    # Room for every pod, but only just: a bind counted twice or forgotten would overcommit.
    cluster.apply(*(node(f"{pool}-{i}", cpu="1", labels={"pool": pool}) for i in range(80)))
    cluster.apply(policy(pool, pool))
    # All pending before the operator starts, so that it binds at full speed when the fault
    # comes: binds in flight then, whose replies are lost, may have been committed.
    cluster.apply(*(pod(f"p{i}", pool) for i in range(pods)), namespace="burst")
    operator = Operator(cluster.kubeconfig, tmp_path / "operator.log")
    operator.start(extra_args=["--leader-elect=false"])
    try:
        wait_for("some pods bound", lambda: len(bound(cluster, "burst")) >= 50, timeout=60)
        ControlPlane(state).restart(component)
        restarted = datetime.now(UTC).replace(microsecond=0)

        def all_bound() -> dict[str, str] | None:
            placed = bound(cluster, "burst")
            return placed if len(placed) == pods else None

        placed = wait_for(f"all {pods} pods bound", all_bound, timeout=180)
        assert_not_overcommitted(cluster, pool)

        def every_pod_told() -> bool:
            told = {e["involvedObject"]["name"] for e in events(cluster, "burst", "Scheduled")}
            return told == placed.keys()

        wait_for("a Scheduled event for every bound pod", every_pod_told, timeout=90)
        assert_scheduled_at_most_once(cluster, "burst", placed)

        def counted_freshly() -> bool:
            now = status(cluster, pool)
            beat = datetime.fromisoformat(now.get("heartbeatTime", "1970-01-01T00:00:00Z"))
            return now.get("scheduled") == pods and beat >= restarted

        wait_for(f"the status to count {pods} pods, with a heartbeat since", counted_freshly)
        assert operator.process is not None and operator.process.poll() is None
    finally:
        operator.stop()
        print(operator.logs()[-20000:])


def test_after_many_quick_edits_the_conditions_describe_the_last_generation(
    cluster: Cluster, pool: str, operator: Operator
) -> None:
    cluster.apply(policy(pool, pool))
    operator.start()
    for history in range(1, 61):
        cluster.apply(policy(pool, pool, history=history))
    (found,) = items(cluster, "schedulingpolicies", "--field-selector", f"metadata.name={pool}")
    generation = found["metadata"]["generation"]

    def observed() -> bool:
        state = status(cluster, pool)
        conditions = state.get("conditions") or []
        return state.get("observedGeneration") == generation and all(
            c.get("observedGeneration") == generation for c in conditions
        )

    wait_for(f"every condition to observe generation {generation}", observed)


def test_policies_deleted_or_replaced_while_the_watch_is_down_are_not_served(
    own_cluster: tuple[Cluster, Path], tmp_path: Path
) -> None:
    """The operator is frozen while kube-apiserver restarts (its watches break) and, meanwhile,
    one policy is deleted and another deleted and created again under its name with another
    schedulerName. After it resumes, nothing serves the deleted one, the re-created one is
    served as it now is, and a policy created afterwards gets its conditions and its pods."""
    cluster, state = own_cluster
    pool = "ghosts"
    cluster.apply(*(node(f"{pool}-{i}", labels={"pool": pool}) for i in range(3)))
    cluster.apply(policy("deleted", pool), policy("replaced", pool))
    operator = Operator(cluster.kubeconfig, tmp_path / "operator.log")
    operator.start(extra_args=["--leader-elect=false"])
    try:
        wait_for(
            "both policies ready", lambda: all(_ready(cluster, p) for p in ("deleted", "replaced"))
        )
        assert operator.process is not None
        operator.process.send_signal(signal.SIGSTOP)
        try:
            ControlPlane(state).restart("kube-apiserver")
            cluster.kubectl("delete", "schedulingpolicy", "deleted", "replaced")
            cluster.apply(policy("replaced", pool, schedulerName="replacement"))
        finally:
            operator.process.send_signal(signal.SIGCONT)
        cluster.apply(policy("later", pool))
        cluster.apply(
            pod("of-deleted", "deleted"),
            pod("of-old-replaced", "replaced"),
            pod("of-replacement", "replacement"),
            pod("of-later", "later"),
            namespace="burst",
        )
        wait_for(
            "the pods of the re-created and the later policy bound",
            lambda: {"of-replacement", "of-later"} <= bound(cluster, "burst").keys(),
            timeout=90,
        )
        wait_for("the later policy ready", lambda: _ready(cluster, "later"))
        wait_for(
            "the re-created policy to report its new schedulerName",
            lambda: status(cluster, "replaced").get("schedulerName") == "replacement",
        )

        def told() -> set[str] | None:
            names = {
                e["involvedObject"]["name"] for e in events(cluster, "burst", "NoSchedulingPolicy")
            }
            return names if {"of-deleted", "of-old-replaced"} <= names else None

        waiting = wait_for("the pods of the deleted policies told that nothing serves them", told)
        assert not waiting & bound(cluster, "burst").keys()
        assert "KeyError" not in operator.logs()
    finally:
        operator.stop()
        print(operator.logs()[-20000:])


def _ready(cluster: Cluster, name: str) -> bool:
    conditions = status(cluster, name).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
