"""A fresh cluster without the Lease's namespace: the operator says once what is missing and how
to fix it, schedules nothing meanwhile, and starts scheduling as soon as the namespace exists."""

from __future__ import annotations

import time
import uuid

from harness.e2e import Cluster, Operator, bound, wait_for
from harness.objects import node, pod, policy

RETRY_PERIOD = 0.5  # seconds; short, so that several retries pass quickly


def test_a_missing_lease_namespace_is_told_once_then_scheduling_starts_once_it_exists(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    lease_namespace = f"lease-{uuid.uuid4().hex[:8]}"
    missing = f'namespaces "{lease_namespace}" not found'
    cluster.apply(node(f"{pool}-0", labels={"pool": pool}))
    cluster.apply(policy(pool, pool))
    cluster.apply(pod("waits", pool), namespace=namespace)
    operator.start(
        extra_args=[
            "--leader-elect-resource-namespace",
            lease_namespace,
            "--leader-elect-retry-period",
            f"{RETRY_PERIOD * 1000:.0f}ms",
        ]
    )
    try:
        told = wait_for(
            "the missing namespace told",
            lambda: [line for line in operator.logs().splitlines() if missing in line],
        )
        assert "ERROR" in told[0]
        assert f"kubectl create namespace {lease_namespace}" in told[0]
        assert "--leader-elect-resource-namespace" in told[0]
        assert "--leader-elect=false" in told[0]

        time.sleep(6 * RETRY_PERIOD)
        assert operator.logs().count(missing) == 1, "told more than once"
        assert bound(cluster, namespace) == {}, "scheduled without holding the Lease"

        cluster.kubectl("create", "namespace", lease_namespace)
        wait_for("the pod bound", lambda: bound(cluster, namespace).get("waits") == f"{pool}-0")
        assert f"leading: holding Lease {lease_namespace}/policy-scheduler" in operator.logs()
        assert operator.logs().count(missing) == 1
    finally:
        operator.stop()
        cluster.kubectl("delete", "namespace", lease_namespace, "--wait=false", check=False)
