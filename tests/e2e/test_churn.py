"""Parked pods under node churn cost no more API writes than kube-scheduler's (issue 11, item 6).

Pods that fit no node, for five reasons, wait for our scheduler (a policy mirroring
kube-scheduler's default profile) and, alike, for kube-scheduler. Then nodes come and go, one a
second, none of them able to help a parked pod: each is tainted as every node is, and as small.
(bench/bench_parked.py --node-churn measures the same at a larger scale, with a table.)
Since a FailedScheduling message counts the cluster's nodes ("0/9 nodes are available: ..."),
every attempt after such a change writes a new event and a new PodScheduled condition; so the
writes a parked pod costs measure how often the scheduler tries it again in vain.

Writes are counted from watches of the namespace, for both schedulers alike: every
FailedScheduling event added or updated (kube-scheduler's event series), and every change of a
parked pod (only the schedulers write a parked pod, and only its PodScheduled condition). The
counting ends once no write has come for QUIET_SECONDS after the churn, so each scheduler's
answers to the last changes are counted however long it takes to give them.

For a pod kept off by its cpu request, its node selector, a taint or a spread constraint over a
label no node has, kube-scheduler's queueing hints rule every such node out, and it writes
nothing: neither may we. A pod that wants to run beside pods that do not exist (required pod
affinity per hostname) is tried again by kube-scheduler on every node added with a hostname label,
as by us: we may write as much as it does, no more (it tries at once when idle; our backoff spaces
our attempts up to 10 s apart).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from harness.e2e import Cluster, Operator, bound, items, wait_for
from harness.objects import node, pod
from harness.watches import WriteCounter

DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"
KUBE = "default-scheduler"
TAINT = {"key": "e2e.policy-scheduler.dev/dedicated", "value": "churn", "effect": "NoSchedule"}
TOLERATION = {**TAINT, "operator": "Equal"}
KIND = "e2e.policy-scheduler.dev/parked"
PODS_PER_KIND = 3
NODES = 4
# Churn: a node added or deleted every CHURN_PERIOD seconds, at most CHURN_NODES at once.
CHURN_PERIOD = 1.0
CHURN_NODES = 5
CHURN_SECONDS = 30.0
QUIET_SECONDS = 5.0
TIMEOUT = 60.0

# The reasons to fit no node: each kind's pod spec, besides its cpu request.
KINDS: dict[str, dict[str, Any]] = {
    "cpu": {"tolerations": [TOLERATION]},  # and 1000 cpu
    "node-selector": {
        "tolerations": [TOLERATION],
        "nodeSelector": {"e2e.policy-scheduler.dev/pool": "none"},
    },
    "taint": {},
    "spread": {
        "tolerations": [TOLERATION],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "e2e.policy-scheduler.dev/rack",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {KIND: "spread"}},
            }
        ],
    },
    "pod-affinity": {
        "tolerations": [TOLERATION],
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"e2e.policy-scheduler.dev/peer": "x"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    },
}
# Where kube-scheduler tries again too: the others must cost nothing at all.
KUBE_RETRIES = {"pod-affinity"}


@contextlib.contextmanager
def counting(cluster: Cluster, namespace: str) -> Iterator[tuple[WriteCounter, WriteCounter]]:
    """FailedScheduling event writes by the pod they are about, and writes to parked pods."""
    event_writes = WriteCounter(
        cluster.api(),
        f"/api/v1/namespaces/{namespace}/events",
        lambda e: str(e["involvedObject"]["name"]),
        created=True,
        fieldSelector="reason=FailedScheduling",
    )
    pod_writes = WriteCounter(
        cluster.api(),
        f"/api/v1/namespaces/{namespace}/pods",
        lambda p: str(p["metadata"]["name"]),
        created=False,
        labelSelector=KIND,
    )
    try:
        yield event_writes, pod_writes
    finally:
        event_writes.close()
        pod_writes.close()


def settled(writes: tuple[WriteCounter, WriteCounter], done: Callable[[], bool]) -> None:
    """Wait until ``done()`` holds and no write has come for QUIET_SECONDS."""
    last, since = -1, time.monotonic()

    def quiet() -> bool:
        nonlocal last, since
        total = sum(w.total() for w in writes)
        if total != last:
            last, since = total, time.monotonic()
            return False
        return time.monotonic() - since >= QUIET_SECONDS and done()

    wait_for("the schedulers to stop writing", quiet, timeout=TIMEOUT)


def churn_nodes(cluster: Cluster, pool: str, stop: threading.Event) -> None:
    """Until ``stop``, every CHURN_PERIOD seconds: a node added or the oldest churn node deleted,
    at random (seeded), at most CHURN_NODES at once. The node count changes at every step, with
    no period that a scheduler's backoff could fall in step with."""
    rng = random.Random(0)
    alive: collections.deque[str] = collections.deque()
    for step in itertools.count():
        if stop.wait(CHURN_PERIOD):
            return
        if not alive or (len(alive) < CHURN_NODES and rng.random() < 0.5):
            name = f"{pool}-churn-{step}"
            cluster.apply(node(name, labels={"pool": pool}, taints=[TAINT]))
            alive.append(name)
        else:
            cluster.kubectl("delete", "node", alive.popleft(), "--wait=false")


def parked(cluster: Cluster, namespace: str) -> int:
    """How many pods of the namespace have PodScheduled=False."""
    return sum(
        1
        for p in items(cluster, "pods", "-n", namespace, "-l", KIND)
        if any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in p.get("status", {}).get("conditions") or ()
        )
    )


def test_node_churn_costs_parked_pods_no_more_writes_than_under_kube_scheduler(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    policy = yaml.safe_load(DEFAULT_PROFILE.read_text())
    policy["metadata"] = {"name": f"churn-{pool}", "labels": {"pool": pool}}
    ours = policy["metadata"]["name"]
    cluster.apply(
        policy,
        *(node(f"{pool}-{i}", labels={"pool": pool}, taints=[TAINT]) for i in range(NODES)),
    )
    operator.start()
    groups = {
        (scheduler, kind): [f"{kind}-{side}-{i}" for i in range(PODS_PER_KIND)]
        for scheduler, side in ((ours, "ours"), (KUBE, "kube"))
        for kind in KINDS
    }
    with counting(cluster, namespace) as writes:
        cluster.apply(
            *(
                pod(
                    name,
                    scheduler,
                    cpu="1000" if kind == "cpu" else "100m",
                    labels={KIND: kind},
                    extra=KINDS[kind],
                )
                for (scheduler, kind), names in groups.items()
                for name in names
            ),
            namespace=namespace,
        )
        total = sum(map(len, groups.values()))
        settled(writes, lambda: parked(cluster, namespace) == total)
        before = [w.snapshot() for w in writes]
        stop = threading.Event()
        churn = threading.Thread(target=churn_nodes, args=(cluster, pool, stop))
        started = time.monotonic()
        churn.start()
        try:
            time.sleep(CHURN_SECONDS)
        finally:
            stop.set()
            churn.join()
        minutes = (time.monotonic() - started) / 60
        settled(writes, lambda: True)
        assert not any(w.lost for w in writes), "a watch lost writes (410 Gone)"
        events, statuses = (w.snapshot() - b for w, b in zip(writes, before, strict=True))
    assert not bound(cluster, namespace), "a parked pod was bound: is a foreign node untainted?"

    def per_pod_minute(counts: collections.Counter[str], scheduler: str, kind: str) -> float:
        names = groups[scheduler, kind]
        return sum(counts[n] for n in names) / len(names) / minutes

    report = {
        kind: {
            what: (per_pod_minute(counts, ours, kind), per_pod_minute(counts, KUBE, kind))
            for what, counts in (("FailedScheduling", events), ("PodScheduled", statuses))
        }
        for kind in KINDS
    }
    print("writes per parked pod per minute (ours, kube-scheduler):", report)
    for kind, figures in report.items():
        for what, (our_rate, kube_rate) in figures.items():
            assert our_rate <= kube_rate, f"{kind}: {what} {our_rate:.2f} > {kube_rate:.2f}/min"
        # The scenario is what it claims: the churn helps none, kube-scheduler tries only those.
        assert (figures["FailedScheduling"][1] > 0) is (kind in KUBE_RETRIES), f"{kind}: {figures}"
