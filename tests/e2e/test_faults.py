"""Faults as the operator of a real cluster meets them (issue 11): etcd killed and restarted
mid-burst on a control plane of the test's own, and a policy edited many times in a row."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CONTROLPLANE, REPO
from harness import (
    Cluster,
    Operator,
    assert_not_overcommitted,
    assert_scheduled_at_most_once,
    bound,
    items,
    node,
    pod,
    policy,
    status,
    wait_for,
)


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, Path]]:
    """A control plane for this test alone (its etcd gets killed), with the CRD and the Lease
    namespace; and its state directory."""
    state = tmp_path / "control-plane"
    subprocess.run([str(CONTROLPLANE / "up"), "--dir", str(state)], check=True)
    try:
        cluster = Cluster(
            state / "kubeconfig",
            state / "operator.kubeconfig",
            Path((state / "bin").read_text().strip()),
        )
        cluster.kubectl("apply", "-f", str(REPO / "crds"))
        cluster.kubectl(
            "wait", "--for=condition=Established", "crd/schedulingpolicies.policy-scheduler.dev"
        )
        cluster.kubectl("create", "namespace", "policy-scheduler")
        cluster.kubectl("create", "namespace", "burst")
        yield cluster, state
    finally:
        subprocess.run([str(CONTROLPLANE / "down"), "--dir", str(state)], check=True)


def restart_etcd(state: Path) -> None:
    """SIGKILL etcd and start it again with the command line it was started with."""
    pidfile = state / "etcd.pid"
    pid = int(pidfile.read_text())
    command = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)  # down for a moment: requests in flight fail, watches break
    with (state / "logs" / "etcd.log").open("ab") as log:
        process = subprocess.Popen(
            [c.decode() for c in command],
            cwd=state,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    pidfile.write_text(f"{process.pid}\n")


def test_etcd_killed_mid_burst_every_pod_is_bound_once(
    own_cluster: tuple[Cluster, Path], tmp_path: Path
) -> None:
    """Binds refused or lost while etcd restarts (409s among them, which are not always "bound
    already") are retried until the watch shows each pod assigned: none stays pending."""
    cluster, state = own_cluster
    pool, pods = "faults", 600
    cluster.apply(*(node(f"{pool}-{i}", cpu="4", labels={"pool": pool}) for i in range(40)))
    cluster.apply(policy(pool, pool))
    operator = Operator(cluster.kubeconfig, tmp_path / "operator.log")
    operator.start()
    try:
        cluster.apply(*(pod(f"p{i}", pool) for i in range(pods)), namespace="burst")
        wait_for("some pods bound", lambda: len(bound(cluster, "burst")) >= 20, timeout=60)
        restart_etcd(state)

        def all_bound() -> dict[str, str] | None:
            placed = bound(cluster, "burst")
            return placed if len(placed) == pods else None

        placed = wait_for(f"all {pods} pods bound after etcd's restart", all_bound, timeout=180)
        assert_not_overcommitted(cluster, pool)
        assert_scheduled_at_most_once(cluster, "burst", placed)
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
