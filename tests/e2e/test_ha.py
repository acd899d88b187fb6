"""Two replicas: only the Lease holder schedules; when it dies, the standby takes over within the
lease duration and finishes the burst, binding every pod exactly once."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

from harness import (
    Cluster,
    Operator,
    assert_not_overcommitted,
    bound,
    events,
    node,
    pod,
    policy,
    wait_for,
)

LEASE_DURATION = 15.0
LEASE_NAMESPACE = "policy-scheduler"
BURST = 600  # pods; ten nodes of 8 CPUs hold 800 of 100m
LEADING = re.compile(r"leading: holding Lease \S+ as (\S+)")


def holder(cluster: Cluster, namespace: str) -> str:
    lease = json.loads(
        cluster.kubectl("get", "lease", "policy-scheduler", "-n", namespace, "-o", "json").stdout
    )
    return str(lease["spec"].get("holderIdentity") or "")


def identity(operator: Operator) -> str | None:
    found = LEADING.search(operator.logs())
    return found.group(1) if found else None


def test_the_standby_takes_over_a_killed_leader_mid_burst(
    cluster: Cluster,
    namespace: str,
    pool: str,
    operator: Operator,
    tmp_path: Path,
) -> None:
    standby = Operator(cluster.kubeconfig, tmp_path / "standby.log")
    try:
        # The burst waits before anyone leads, so the kill lands in the middle of it.
        cluster.apply(*(node(f"{pool}-{i}", cpu="8", labels={"pool": pool}) for i in range(10)))
        cluster.apply(policy(pool, pool))
        cluster.apply(*(pod(f"ha-{i}", pool) for i in range(BURST)), namespace=namespace)
        operator.start()
        leader = wait_for("a leader", lambda: identity(operator))
        standby.start()
        wait_for("the leader binding", lambda: len(bound(cluster, namespace)) >= 20, timeout=60)
        assert identity(standby) is None, "the standby led while the leader lived"

        operator.stop(kill=True)
        killed = time.monotonic()
        assert len(bound(cluster, namespace)) < BURST, "the burst finished before the kill"
        successor = wait_for(
            "the standby to take the Lease",
            lambda: (h := holder(cluster, LEASE_NAMESPACE)) not in ("", leader) and h,
            timeout=LEASE_DURATION + 15,
        )
        takeover = time.monotonic() - killed
        assert successor == identity(standby)
        assert takeover <= LEASE_DURATION + 5, f"takeover took {takeover:.1f} s"

        wait_for("all bound", lambda: len(bound(cluster, namespace)) == BURST, timeout=180)
        scheduled = Counter(
            e["involvedObject"]["name"] for e in events(cluster, namespace, "Scheduled")
        )
        assert max(scheduled.values()) == 1
        assert_not_overcommitted(cluster, pool)
    finally:
        standby.stop()
        print(standby.logs()[-10000:])
