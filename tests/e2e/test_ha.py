"""Two replicas: only the Lease holder schedules; when it dies, the standby takes over within the
lease duration, binds the pods its predecessor left pending, each exactly once, and continues the
policy's status from where its predecessor left it. A leader frozen (SIGSTOP) until the standby has
taken its Lease over binds nothing more when it resumes, and exits."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest
from harness.controlplane import free_port
from harness.e2e import (
    Cluster,
    Operator,
    assert_not_overcommitted,
    assert_scheduled_at_most_once,
    bound,
    items,
    posted_since,
    status,
    wait_for,
)
from harness.objects import node, pod, policy

from policy_scheduler.cli import EXIT_LOST_LEASE

LEASE_DURATION = 15.0
LEASE_NAMESPACE = "policy-scheduler"
BURST = 400  # pods of 100m: nodes of 2 CPUs hold 20 each
BEFORE_KILL = 300  # what the nodes there before the kill hold; nodes added after it hold the rest
LEADING = re.compile(r"leading: holding Lease \S+ as (\S+)")
# Short, so that a takeover takes seconds; generous beside a renewal's round trip on a busy machine.
SHORT_LEASE = [
    "--leader-elect-lease-duration=8s",
    "--leader-elect-renew-deadline=6s",
    "--leader-elect-retry-period=1s",
]
FROZEN_BURST = 600
FROZEN_TAINT = "e2e.policy-scheduler.dev/leader-frozen"


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


def parked(cluster: Cluster, namespace: str) -> int:
    """How many pods of ``namespace`` a leader has found no node for (``PodScheduled=False``)."""
    return sum(
        any(
            c["type"] == "PodScheduled" and c["reason"] == "Unschedulable"
            for c in p.get("status", {}).get("conditions") or ()
        )
        for p in items(cluster, "pods", "-n", namespace)
    )


def first_bind(watch: subprocess.Popen[str], timeout: float) -> str:
    """The first line of ``kubectl get pods --watch`` of the assigned pods: the first pod bound,
    as soon as the API server tells it (a poll would take as long as a listing)."""
    assert watch.stdout is not None
    ready, _, _ = select.select([watch.stdout], [], [], timeout)
    if not ready:
        pytest.fail(f"no pod was bound within {timeout:.0f} s")
    return watch.stdout.readline().strip()


def test_a_frozen_leader_binds_nothing_once_its_lease_is_taken_over(
    cluster: Cluster,
    namespace: str,
    pool: str,
    operator: Operator,
    tmp_path: Path,
) -> None:
    """The leader is frozen with binds decided but not sent; the standby takes the Lease over;
    resumed, the old leader must find by its own clock that its renew deadline has passed: bind
    nothing, write nothing, exit. A taint that the old leader's decisions predate keeps the
    standby from binding meanwhile, so every pod bound between the freeze and the taint's removal
    was bound by the old leader, and a bind it makes after resuming cannot hide behind a 409."""
    standby = Operator(cluster.kubeconfig, tmp_path / "standby.log")
    node_name = f"{pool}-0"
    try:
        cluster.apply(policy(pool, pool))
        operator.start(extra_args=SHORT_LEASE)
        leader = wait_for("a leader", lambda: identity(operator), timeout=60)
        # No node for them yet: the leader parks every pod, and decides them all at once when
        # the one node with room for all of them comes, with most binds still to send.
        cluster.apply(*(pod(f"frozen-{i}", pool) for i in range(FROZEN_BURST)), namespace=namespace)
        wait_for(
            "the leader to find no node for every pod",
            lambda: parked(cluster, namespace) == FROZEN_BURST,
            timeout=180,
        )
        watch = subprocess.Popen(
            [
                str(cluster.bin / "kubectl"),
                "--kubeconfig",
                str(cluster.kubeconfig),
                "get",
                "pods",
                "-n",
                namespace,
                "--field-selector=spec.nodeName!=",
                "--watch",
                "-o",
                "name",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            cluster.apply(
                node(
                    node_name,
                    cpu=f"{FROZEN_BURST * 100}m",
                    memory=f"{FROZEN_BURST * 64}Mi",
                    pods=str(FROZEN_BURST),
                    labels={"pool": pool},
                )
            )
            first_bind(watch, timeout=120)
            assert operator.process is not None
            operator.process.send_signal(signal.SIGSTOP)
        finally:
            watch.kill()
            watch.wait()
        try:
            cluster.kubectl("taint", "nodes", node_name, f"{FROZEN_TAINT}=true:NoSchedule")
            # Started after the taint, so it never sees the node without it.
            standby.start(extra_args=SHORT_LEASE)
            successor = wait_for(
                "the standby to take the Lease over",
                lambda: (h := holder(cluster, LEASE_NAMESPACE)) not in ("", leader) and h,
                timeout=120,
            )
            assert successor == identity(standby)
            # The frozen leader's renew deadline passed before the takeover (the Lease outlives
            # it), and its binds sent before the freeze were answered long ago.
            before = bound(cluster, namespace)
            resumed_at = datetime.now(UTC)
        finally:
            operator.process.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        code = operator.process.wait(timeout=120)
        exited = time.monotonic() - resumed
        print(
            f"frozen with {len(before)} of {FROZEN_BURST} pods bound; "
            f"exited {exited:.2f} s after it resumed, with code {code}"
        )
        after = bound(cluster, namespace)
        late = sorted(set(after) - set(before))
        assert not late, (
            f"the old leader bound {len(late)} pods after its Lease was taken over: {late[:5]}"
        )
        told = posted_since(cluster, namespace, "Scheduled", resumed_at)
        assert not told, f"the old leader posted Scheduled after resuming: {told[0]['message']}"
        assert code == EXIT_LOST_LEASE, f"the old leader exited with {code}"
        assert "lost Lease" in operator.logs()

        cluster.kubectl("taint", "nodes", node_name, f"{FROZEN_TAINT}-")

        def all_bound() -> dict[str, str] | None:
            placed = bound(cluster, namespace)
            return placed if len(placed) == FROZEN_BURST else None

        placed = wait_for("the new leader to bind the rest", all_bound, timeout=180)
        assert_scheduled_at_most_once(cluster, namespace, placed)
        assert_not_overcommitted(cluster, pool)
    finally:
        standby.stop()
        print(standby.logs()[-10000:])
