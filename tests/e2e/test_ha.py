"""Two replicas: only the Lease holder schedules; when it dies, the standby takes over within the
lease duration, binds the pods its predecessor left pending, each exactly once, and continues the
policy's status from where its predecessor left it."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

from harness import (
    Cluster,
    Operator,
    assert_not_overcommitted,
    assert_scheduled_at_most_once,
    bound,
    free_port,
    node,
    pod,
    policy,
    posted_since,
    status,
    wait_for,
)

LEASE_DURATION = 15.0
LEASE_NAMESPACE = "policy-scheduler"
BURST = 400  # pods of 100m: nodes of 2 CPUs hold 20 each
BEFORE_KILL = 300  # what the nodes there before the kill hold; nodes added after it hold the rest
LEADING = re.compile(r"leading: holding Lease \S+ as (\S+)")


def holder(cluster: Cluster, namespace: str) -> str:
    lease = json.loads(
        cluster.kubectl("get", "lease", "policy-scheduler", "-n", namespace, "-o", "json").stdout
    )
    return str(lease["spec"].get("holderIdentity") or "")


def identity(operator: Operator) -> str | None:
    found = LEADING.search(operator.logs())
    return found.group(1) if found else None


def nodes(pool: str, start: int, stop: int) -> list[dict[str, object]]:
    """Nodes with room for 20 burst pods each."""
    return [node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(start, stop)]


def serves(metrics: str, name: str) -> bool:
    """Whether the operator whose metrics are at ``metrics`` has taken policy ``name`` in: every
    replica, leading or not, reports the policies it holds."""
    try:
        with urllib.request.urlopen(metrics, timeout=5) as response:
            text: str = response.read().decode()
    except OSError:
        return False
    return f'policy_scheduler_policy_valid{{policy="{name}"}} 1.0' in text


class ScheduledCount:
    """A policy's ``status.scheduled``, sampled through the test: it must never go backwards."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.samples: list[tuple[str, int]] = []

    def sample(self, moment: str) -> int:
        count = int(status(self.cluster, self.name).get("scheduled") or 0)
        self.samples.append((moment, count))
        return count

    def drops(self) -> list[str]:
        return [
            f"from {before} ({earlier}) to {after} ({later})"
            for (earlier, before), (later, after) in pairwise(self.samples)
            if after < before
        ]


def test_the_standby_takes_over_a_killed_leader_mid_burst(
    cluster: Cluster,
    namespace: str,
    pool: str,
    operator: Operator,
    tmp_path: Path,
) -> None:
    standby = Operator(cluster.kubeconfig, tmp_path / "standby.log")
    scheduled = ScheduledCount(cluster, pool)
    try:
        cluster.apply(policy(pool, pool))
        operator.start()
        leader = wait_for("a leader", lambda: identity(operator))
        # Once the standby holds the policy, everything the leader counts is newer than what the
        # standby read of its status.
        metrics = f"http://127.0.0.1:{free_port()}/metrics"
        standby.start(extra_args=["--metrics", metrics])
        wait_for("the standby to read the policy", lambda: serves(metrics, pool))
        # Room for 300 of the 400: however fast the leader, 100 are pending when it is killed.
        cluster.apply(*nodes(pool, 0, BEFORE_KILL // 20))
        cluster.apply(*(pod(f"ha-{i}", pool) for i in range(BURST)), namespace=namespace)
        # Killed once its status counts all it bound, so that nothing of its count is lost with
        # an unwritten last interval, and the successor's count must continue from 300.
        wait_for(
            f"the leader to bind and count {BEFORE_KILL}",
            lambda: (
                len(bound(cluster, namespace)) == BEFORE_KILL
                and scheduled.sample("the leader binding") == BEFORE_KILL
            ),
            timeout=120,
        )
        assert identity(standby) is None, "the standby led while the leader lived"

        operator.stop(kill=True)
        killed = time.monotonic()
        killed_at = datetime.now(UTC)
        # Room for exactly the other 100, made while the dead leader still holds the Lease: only
        # the successor binds them, and only if its warm cache counts the leader's binds once.
        cluster.apply(*nodes(pool, BEFORE_KILL // 20, BURST // 20))
        assert holder(cluster, LEASE_NAMESPACE) == leader, "the standby led before the new room"
        successor = wait_for(
            "the standby to take the Lease",
            lambda: (h := holder(cluster, LEASE_NAMESPACE)) not in ("", leader) and h,
            timeout=LEASE_DURATION + 15,
        )
        takeover = time.monotonic() - killed
        assert successor == identity(standby)
        assert takeover <= LEASE_DURATION + 5, f"takeover took {takeover:.1f} s"

        def all_bound() -> dict[str, str] | None:
            scheduled.sample("the successor binding")
            placed = bound(cluster, namespace)
            return placed if len(placed) == BURST else None

        placed = wait_for("all bound", all_bound, timeout=180)
        assert_scheduled_at_most_once(cluster, namespace, placed)
        refused = posted_since(cluster, namespace, "FailedScheduling", killed_at)
        assert not refused, f"the successor refused a pod: {refused[0]['message']}"
        assert_not_overcommitted(cluster, pool)

        # The successor writes status about once a second: give it a few to count the last binds.
        deadline = time.monotonic() + 10
        while scheduled.sample("all bound") != BURST and time.monotonic() < deadline:
            time.sleep(0.5)
        drops = scheduled.drops()
        assert not drops, (
            f"status.scheduled went backwards {drops[0]}: the new leader wrote the count it read "
            "as a standby over the old leader's"
        )
        count = scheduled.samples[-1][1]
        assert count == BURST, (
            f"status.scheduled is {count}, not the {BURST} pods the policy bound "
            f"({BEFORE_KILL} by the old leader, {BURST - BEFORE_KILL} by the new)"
        )
        last = status(cluster, pool).get("lastDecision")
        assert last, "status.lastDecision disappeared after the takeover"
        name = str(last["pod"]).removeprefix(f"{namespace}/")
        assert placed.get(name) == last["node"], f"lastDecision names no pod bound there: {last}"
    finally:
        standby.stop()
        print(standby.logs()[-10000:])
