"""What parked (unschedulable) pods cost while the cluster around them churns.

A pod that fits no node is parked in the unschedulable queue until a cluster change could help
it. Which changes wake which parked pods decides how much work a cluster full of pending pods
costs: waking every parked pod on every pod deletion or node change means one scheduling attempt
per parked pod per backoff period (at most 10 s), however useless; and, since the
FailedScheduling message counts the cluster's nodes ("0/57 nodes are available: ..."), each
attempt after a node came or went writes a new event and a new PodScheduled condition. This
benchmark measures that cost in two modes.

**Pod churn** (the default), policy-scheduler alone, to compare the operator before and after a
change to its queueing (``--operator-src`` runs the operator from another source tree, e.g. a
``git worktree`` of an older commit). On a fresh local control plane (hack/controlplane/up, as
bench_scheduling.py):

1. ``--nodes`` nodes (bench_scheduling's size for the churn pods: 4 cpu and 16Gi at the
   defaults), each tainted with TAINT, and ``policy-scheduler run --metrics ...`` with
   examples/policies/default-profile.yaml; ready once it has bound a warm-up pod pinned to the
   last node;
2. ``--pods`` pods of that policy that fit no node, for the reason ``--unschedulable`` (see
   KINDS below); then a wait until all are parked and attempts have stopped;
3. ``--churn-pool`` small pods bound directly (``spec.nodeName`` set, ``schedulerName`` nobody
   serves: no scheduler is involved), round-robin over the nodes;
4. idle: ``--idle-seconds`` with nothing happening, the baseline;
5. churn: every second ``--churn-rate`` more such pods are created and as many of the oldest
   deleted (``gracePeriodSeconds=0``: there is no kubelet to finish a graceful deletion), and
   ``--label-rate`` nodes get a new value of a label no pod selects (CHURN_LABEL). Nothing of
   this can make a parked pod fit. After ``--warmup-seconds`` (time for the
   parked pods' backoff to reach its steady state) the measured window is ``--seconds`` long.

For each measured phase: the operator's CPU seconds (utime + stime from /proc/PID/stat, as
bench_scheduling.py), its unschedulable attempts (the delta of
``scheduler_schedule_attempts_total{result="unschedulable"}`` on its /metrics) and their rate per
minute, the FailedScheduling events posted (the delta of their summed ``count`` in the
namespace), the churn actually done, and where the parked pods wait at the end
(``scheduler_pending_pods{queue}``).

**Node churn** (``--node-churn``), policy-scheduler against kube-scheduler v1.37 side by side on
one fresh control plane, so that both see the same nodes come and go at the same moments:

1. ``--nodes`` tainted nodes as above; ``policy-scheduler run`` (default-profile policy) and
   kube-scheduler (the binary hack/controlplane built, default profile, started as
   bench_scheduling.py starts it); ready once each has bound a warm-up pod;
2. for each kind of ``--kinds``, ``--pods-per-kind`` parked pods for each scheduler; a wait
   until every one has ``PodScheduled=False`` and no write has come for QUIET_SECONDS;
3. churn: ``--node-rate`` times a second a node is added (of the same size and with the same
   taint as the others) or the oldest churn node deleted, at random (seeded), with at most
   ``--node-pool`` churn nodes at once: the node count changes at every step, with no period
   that the schedulers' backoff could fall in step with. No such node can help a parked pod.
   After ``--warmup-seconds``, the measured window is ``--seconds`` long.

Per kind and per scheduler, in the window, per parked pod per minute: the FailedScheduling event
writes (every ADDED and MODIFIED that a watch of the namespace's FailedScheduling events reports
for the pod: a new event, or kube-scheduler's event-series update of one) and the PodScheduled
condition writes (every MODIFIED a watch of the namespace's pods reports for the pod: nothing
but the schedulers writes a parked pod, and both write its status only to change the condition;
a write that changed nothing would not be seen, and neither scheduler makes one), and the two
together, the API requests. A watch reports every change exactly once, whoever makes it, so the
two schedulers are counted alike; a watch that had to be listed again (410) would lose writes,
and the run then fails. The table, one row per kind, holds both schedulers' figures and their
ratio.

KINDS, the reasons a parked pod fits no node:

- ``cpu``: more cpu than any node has (NodeResourcesFit, "Insufficient cpu");
- ``node-selector``: a label no node carries (NodeAffinity);
- ``taint``: it does not tolerate TAINT, which every node carries (TaintToleration); the pods of
  the other kinds tolerate it;
- ``spread``: a DoNotSchedule topology spread constraint over a label no node carries
  (PodTopologySpread, "missing required label");
- ``pod-affinity``: required affinity, per hostname, to pods that do not exist
  (InterPodAffinity). kube-scheduler's queueing hint takes every node added with a hostname
  label for one that may help it, so here its rate is not 0.

The table goes to stdout, progress to stderr, the schedulers' logs to ``--out``/logs/. The exit
status is 1 when a parked pod was bound, the parked pods never all parked, a watch lost writes,
or a scheduler died.

    python bench/bench_parked.py [--operator-src DIR] [--unschedulable KIND]
        [--nodes 50] [--pods 1000] [--churn-rate 20] [--label-rate 1] [--seconds 60]
    python bench/bench_parked.py --node-churn [--kinds KIND ...] [--pods-per-kind 50]
        [--node-rate 1] [--node-pool 10] [--seconds 60]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from harness.controlplane import ControlPlane
from harness.kube import Api, ApiError
from harness.metrics import Samples, total
from harness.objects import HOSTNAME
from harness.processes import Process, imported_from, start_kube_scheduler, start_operator
from harness.wait import poll
from harness.watches import BindWatch, WriteCounter
from harness.workload import (
    NAMESPACE,
    SCHEDULER_NAMES,
    Creator,
    NodeSize,
    add_dirs,
    create_nodes,
    log,
    node_body,
    node_names,
    node_size,
    pod_body,
    prepare,
)

POLICY = SCHEDULER_NAMES["policy-scheduler"]
# Served by nobody: the churn pods are bound by their spec alone.
UNSERVED = SCHEDULER_NAMES["raw"]
CHURN_LABEL = "bench.policy-scheduler.dev/churn"
# The node-selector kind's label, which no node carries.
PARKED_SELECTOR = {"bench.policy-scheduler.dev/pool": "parked"}
# Every node carries it; only the taint kind does not tolerate it.
TAINT = {"key": "bench.policy-scheduler.dev/dedicated", "value": "parked", "effect": "NoSchedule"}
TOLERATION = {**TAINT, "operator": "Equal"}
# The spread kind's topology key, which no node carries.
MISSING_TOPOLOGY_KEY = "bench.policy-scheduler.dev/rack"
# The pod-affinity kind wants to run beside pods with this label, which no pod carries.
ABSENT_PEER = {"bench.policy-scheduler.dev/peer": "absent"}
KIND_LABEL = "bench.policy-scheduler.dev/parked"
KINDS = ("cpu", "node-selector", "taint", "spread", "pod-affinity")
# The two schedulers of --node-churn, as bench_scheduling names them.
COMPARED = ("policy-scheduler", "kube-scheduler")
POLL_SECONDS = 1.0
# Parked pods have settled when the attempt counter (or, with --node-churn, the write count)
# stood still this long (our own PodScheduled=False patch can cost each pod a second attempt
# about a second after its first).
QUIET_SECONDS = 3.0


@dataclass(frozen=True)
class Config:
    operator_src: Path | None
    unschedulable: str
    nodes: int
    pods: int
    churn_rate: float
    churn_pool: int
    label_rate: float
    idle_seconds: float
    warmup_seconds: float
    seconds: float
    create_threads: int
    timeout: float
    state_dir: Path
    out: Path
    node_churn: bool = False
    kinds: tuple[str, ...] = KINDS
    pods_per_kind: int = 50
    node_rate: float = 0.0
    node_pool: int = 10


# --- the operator -----------------------------------------------------------------------------


def source_env(src: Path | None) -> dict[str, str]:
    """The environment in which ``policy_scheduler`` is imported from ``src``: PYTHONPATH comes
    before site-packages, where the venv's editable install of this tree points."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(src), env.get("PYTHONPATH"))))
    return env


def start_ours(plane: ControlPlane, config: Config) -> tuple[Process, str]:
    """``policy-scheduler run`` with its metrics served, maybe from another source tree, and
    where its ``policy_scheduler`` comes from."""
    env = source_env(config.operator_src)
    log_path = config.out / "logs" / "parked-policy-scheduler.log"
    operator = start_operator(plane.operator, log_path, "--leader-elect=false", env=env)
    return operator, imported_from(env)


def attempts(samples: Samples, result: str = "unschedulable") -> float:
    return total(samples, "scheduler_schedule_attempts_total", result=result)


def pending(samples: Samples) -> dict[str, int]:
    return {
        queue: round(total(samples, "scheduler_pending_pods", queue=queue))
        for queue in ("unschedulable", "backoff", "active")
    }


# --- the workload -----------------------------------------------------------------------------


def _tolerating(body: dict[str, Any]) -> dict[str, Any]:
    body["spec"]["tolerations"] = [TOLERATION]
    return body


def warm_up_pod(name: str, scheduler_name: str, node: str) -> bytes:
    """A pod that only ``node`` takes: once it is bound, its scheduler has seen every node."""
    body = json.loads(pod_body(name, scheduler_name, 0, {HOSTNAME: node}))
    return json.dumps(_tolerating(body)).encode()


def parked_pod(name: str, index: int, kind: str, node_cpu: int, scheduler_name: str) -> bytes:
    """A pod for ``scheduler_name`` that fits no node, for the reason ``kind`` (KINDS)."""
    selector = PARKED_SELECTOR if kind == "node-selector" else None
    body = json.loads(pod_body(name, scheduler_name, index, selector))
    body["metadata"]["labels"][KIND_LABEL] = kind
    spec = body["spec"]
    if kind != "taint":
        _tolerating(body)
    if kind == "cpu":
        spec["containers"][0]["resources"]["requests"]["cpu"] = str(node_cpu + 1)
    elif kind == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": MISSING_TOPOLOGY_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {KIND_LABEL: kind}},
            }
        ]
    elif kind == "pod-affinity":
        term = {"labelSelector": {"matchLabels": ABSENT_PEER}, "topologyKey": HOSTNAME}
        spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    return json.dumps(body).encode()


def churn_pod(name: str, index: int, node: str) -> bytes:
    """A small pod already bound to ``node`` (bench_scheduling's request mix)."""
    body = json.loads(pod_body(name, UNSERVED, index))
    body["spec"]["nodeName"] = node
    return json.dumps(body).encode()


def churn_node(index: int, size: NodeSize) -> bytes:
    """A node like the others, tainted from its creation on."""
    return node_body(index, f"churn-node-{index:06d}", size, taints=[TAINT])


def taint(api: Api, nodes: Sequence[str]) -> None:
    for node in nodes:
        api.merge_patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [TAINT]}})


class Churn:
    """Pod creations and deletions, node label updates, and node additions and deletions, each
    at a fixed rate, from a background thread until ``stop``; what was done is counted as it
    completes."""

    def __init__(self, api: Api, nodes: Sequence[str], size: NodeSize, config: Config) -> None:
        self.api = api
        self.nodes = nodes
        self.size = size
        self.config = config
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        # Created churn pods and nodes, oldest first: only one whose creation has completed is
        # deleted.
        self._live: collections.deque[str] = collections.deque()
        self._live_nodes: collections.deque[str] = collections.deque()
        self._rng = random.Random(0)  # alike from run to run
        self._next = 0  # the next churn pod's number; only one thread at a time hands them out
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def snapshot(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.counts)

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def fill(self) -> None:
        """The first ``churn_pool`` pods, one after another, before any is deleted."""
        for _ in range(self.config.churn_pool):
            self._create(self._next)
            self._next += 1

    def _create(self, index: int) -> None:
        name = f"churn-{index:06d}"
        body = churn_pod(name, index, self.nodes[index % len(self.nodes)])
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        if self._send("creating", name, "POST", path, body=body):
            with self._lock:
                self._live.append(name)
                self.counts["pod creates"] += 1

    def _delete(self, name: str) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
        if self._send("deleting", name, "DELETE", path, params={"gracePeriodSeconds": "0"}):
            self._count("pod deletes")

    def _label(self, index: int) -> None:
        node = self.nodes[index % len(self.nodes)]
        try:
            self.api.merge_patch(
                f"/api/v1/nodes/{node}", {"metadata": {"labels": {CHURN_LABEL: str(index)}}}
            )
        except (ApiError, OSError) as error:
            log(f"  labelling {node} failed: {error}")
            self._count("errors")
            return
        self._count("node label updates")

    def _create_node(self, index: int) -> None:
        name = f"churn-node-{index:06d}"
        body = churn_node(index, self.size)
        if self._send("creating", name, "POST", "/api/v1/nodes", body=body):
            with self._lock:
                self._live_nodes.append(name)
                self.counts["node adds"] += 1

    def _delete_node(self, name: str) -> None:
        if self._send("deleting", name, "DELETE", f"/api/v1/nodes/{name}"):
            self._count("node deletes")

    def _send(
        self,
        doing: str,
        name: str,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        params: dict[str, str] | None = None,
    ) -> bool:
        """One request; False, counted and logged, when it failed. A create retried after a
        lost answer may find its own object (409), a delete find it gone (404): both done."""
        try:
            self.api.request(method, path, body, params, ok=frozenset({404, 409}))
        except (ApiError, OSError) as error:
            log(f"  {doing} {name} failed: {error}")
            self._count("errors")
            return False
        return True

    def start(self, seconds: float) -> None:
        """Churn for at most ``seconds`` (``stop`` ends it sooner)."""
        self._thread = threading.Thread(target=self._run, args=(seconds,), name="churn")
        self._thread.start()

    def _replace_pod(self, pool: ThreadPoolExecutor, _: int) -> None:
        pool.submit(self._create, self._next)
        self._next += 1
        with self._lock:
            full = len(self._live) >= self.config.churn_pool
            oldest = self._live.popleft() if full else None
        if oldest is not None:
            pool.submit(self._delete, oldest)

    def _relabel(self, pool: ThreadPoolExecutor, index: int) -> None:
        pool.submit(self._label, index)

    def _add_or_delete_node(self, pool: ThreadPoolExecutor, index: int) -> None:
        # A random walk of the node count between 0 and ``node_pool`` churn nodes: a regular
        # pattern could fall in step with the schedulers' backoff, so that each attempt met the
        # node count of the one before, and wrote nothing.
        with self._lock:
            alive = len(self._live_nodes)
            add = alive == 0 or (alive < self.config.node_pool and self._rng.random() < 0.5)
            oldest = None if add else self._live_nodes.popleft()
        if oldest is None:
            pool.submit(self._create_node, index)
        else:
            pool.submit(self._delete_node, oldest)

    def _run(self, seconds: float) -> None:
        config = self.config
        steps = [
            (1 / rate, step)
            for rate, step in (
                (config.churn_rate, self._replace_pod),
                (config.label_rate, self._relabel),
                (config.node_rate, self._add_or_delete_node),
            )
            if rate > 0
        ]
        started = time.monotonic()
        deadline = started + seconds
        due = [started] * len(steps)
        done = [0] * len(steps)
        # Requests from a few threads, so that one slow answer does not slow the rate.
        with ThreadPoolExecutor(8) as pool:
            while not self._stop.is_set() and time.monotonic() < deadline:
                for i, (period, step) in enumerate(steps):
                    if time.monotonic() >= due[i]:
                        step(pool, done[i])
                        done[i] += 1
                        due[i] += period
                self._stop.wait(max(0.0, min([*due, deadline]) - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


# --- measuring --------------------------------------------------------------------------------


def failed_scheduling_events(api: Api) -> int:
    """FailedScheduling events of the namespace, repetitions (``count``) included."""
    events = api.list_items(
        f"/api/v1/namespaces/{NAMESPACE}/events", fieldSelector="reason=FailedScheduling"
    )
    return sum(int(event.get("count") or 1) for event in events)


@dataclass(frozen=True)
class Sample:
    """What the counters said at one moment."""

    at: float
    cpu: float
    attempts: float
    events: int
    churn: collections.Counter[str]

    @classmethod
    def take(cls, operator: Process, admin: Api, churn: Churn) -> Sample:
        return cls(
            at=time.monotonic(),
            cpu=operator.cpu_seconds(),
            attempts=attempts(operator.scrape()),
            events=failed_scheduling_events(admin),
            churn=churn.snapshot(),
        )


def phase(name: str, before: Sample, after: Sample, operator: Process) -> dict[str, Any]:
    seconds = after.at - before.at
    cpu = after.cpu - before.cpu
    tried = after.attempts - before.attempts
    churn = after.churn - before.churn
    result: dict[str, Any] = {
        "phase": name,
        "seconds": round(seconds, 1),
        "pod creates": churn["pod creates"],
        "pod deletes": churn["pod deletes"],
        "node label updates": churn["node label updates"],
        "CPU s": round(cpu, 2),
        "CPU %": round(100 * cpu / seconds, 1),
        "unschedulable attempts": round(tried),
        "attempts/min": round(tried * 60 / seconds),
        "FailedScheduling events": after.events - before.events,
        "parked at end (unschedulable/backoff/active)": "/".join(
            str(n) for n in pending(operator.scrape()).values()
        ),
    }
    log(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in result.items() if k != "phase"))
    return result


def wait_until(
    what: str, done: Callable[[Samples], bool], operator: Process, timeout: float
) -> None:
    """Poll ``done(its metrics)`` until true, at most ``timeout`` seconds."""

    def probe() -> bool:
        try:
            return done(operator.scrape())
        except requests.RequestException:
            return False  # not serving its metrics yet

    poll(what, probe, timeout, POLL_SECONDS, operator.check_alive)


def settle(operator: Process, pods: int, timeout: float) -> None:
    """Until every parked pod is in the unschedulable queue and attempts have stopped."""
    deadline = time.monotonic() + timeout
    last, since = -1.0, time.monotonic()
    tried, queues = 0.0, {}
    while time.monotonic() < deadline:
        operator.check_alive()
        samples = operator.scrape()
        tried, queues = attempts(samples), pending(samples)
        now = time.monotonic()
        if tried != last:
            last, since = tried, now
        elif queues["unschedulable"] == pods and now - since >= QUIET_SECONDS:
            log(f"  {pods} pods parked after {round(tried)} unschedulable attempts")
            return
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"the parked pods did not settle in {timeout:.0f} s: {queues}, {tried}")


def wait_parked(
    admin: Api,
    pods: int,
    writes: Sequence[WriteCounter],
    alive: Callable[[], None],
    timeout: float,
) -> None:
    """Until ``pods`` pods of the namespace labelled KIND_LABEL have ``PodScheduled=False`` and
    no write has come for QUIET_SECONDS."""
    deadline = time.monotonic() + timeout
    last, since, parked = -1, time.monotonic(), 0
    while time.monotonic() < deadline:
        alive()
        parked = sum(
            1
            for pod in admin.list_items(
                f"/api/v1/namespaces/{NAMESPACE}/pods", labelSelector=KIND_LABEL
            )
            if any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in pod.get("status", {}).get("conditions") or ()
            )
        )
        total = sum(sum(counter.snapshot().values()) for counter in writes)
        now = time.monotonic()
        if total != last:
            last, since = total, now
        elif parked == pods and now - since >= QUIET_SECONDS:
            log(f"  {pods} pods parked")
            return
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"the parked pods did not settle in {timeout:.0f} s: {parked}/{pods}")


def per_pod_minute(writes: int, pods: int, seconds: float) -> float:
    return writes * 60 / (pods * seconds)


def ratio(ours: float, theirs: float) -> str:
    """``ours / theirs`` for the table."""
    if theirs:
        return f"{ours / theirs:.2f}"
    return "both 0" if not ours else "inf"


def table(rows: Sequence[dict[str, Any]]) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


# --- one run ----------------------------------------------------------------------------------


@contextlib.contextmanager
def tainted_nodes(config: Config, churn_pool: int) -> Iterator[tuple[ControlPlane, Churn]]:
    """A fresh control plane with the operator's RBAC and ``config.nodes`` tainted nodes, sized
    for ``churn_pool`` churn pods each; the churn to come (not started) knows the admin client,
    the nodes and their size. The control plane is torn down afterwards."""
    log(f"fresh control plane in {config.state_dir}")
    plane = ControlPlane.fresh(config.state_dir)
    try:
        admin = Api(plane.admin, pool=config.create_threads)
        prepare(plane, "policy-scheduler")
        nodes = node_names(config.nodes)
        size = node_size(config.nodes, churn_pool)
        create_nodes(admin, nodes, size, config.create_threads)
        taint(admin, nodes)
        yield plane, Churn(admin, nodes, size, config)
    finally:
        plane.down()


def run(config: Config) -> int:
    with tainted_nodes(config, config.churn_pool) as (plane, churn):
        admin, nodes, size = churn.api, churn.nodes, churn.size
        with contextlib.ExitStack() as running:
            operator, source = start_ours(plane, config)
            running.callback(operator.stop)
            running.callback(churn.stop)
            log(f"  policy-scheduler from {source}")
            admin.post(
                f"/api/v1/namespaces/{NAMESPACE}/pods", warm_up_pod("warm-up", POLICY, nodes[-1])
            )
            wait_until(
                "the warm-up pod's bind", lambda t: attempts(t, "scheduled") >= 1, operator, 120
            )
            log(f"  {config.pods} unschedulable pods ({config.unschedulable})")
            parked = [
                (name, parked_pod(name, i, config.unschedulable, size.cpu, POLICY))
                for i, name in enumerate(f"parked-{i:05d}" for i in range(config.pods))
            ]
            Creator(admin, config.create_threads).create_all(parked)
            settle(operator, config.pods, config.timeout)
            log(f"  {config.churn_pool} bound churn pods")
            churn.fill()
            rows = []
            if config.idle_seconds > 0:
                start = Sample.take(operator, admin, churn)
                time.sleep(config.idle_seconds)
                rows.append(phase("idle", start, Sample.take(operator, admin, churn), operator))
            log(
                f"  churn: {config.churn_rate} pods/s, {config.label_rate} node labels/s, "
                f"{config.warmup_seconds:.0f} s unmeasured, then {config.seconds:.0f} s measured"
            )
            churn.start(config.warmup_seconds + config.seconds + 10)
            time.sleep(config.warmup_seconds)
            start = Sample.take(operator, admin, churn)
            time.sleep(config.seconds)
            rows.append(phase("churn", start, Sample.take(operator, admin, churn), operator))
            churn.stop()
            peak_rss = operator.peak_rss_mib()
        unbound = admin.list_items(
            f"/api/v1/namespaces/{NAMESPACE}/pods", fieldSelector="spec.nodeName="
        )
        still_parked = sum(1 for pod in unbound if pod["metadata"]["name"].startswith("parked-"))
        print(
            f"policy-scheduler from {source}\n"
            f"{config.nodes} nodes ({size.cpu} cpu, tainted), {config.pods} parked pods "
            f"({config.unschedulable}), {config.churn_pool} churn pods replaced at "
            f"{config.churn_rate}/s, {config.label_rate} node label updates/s; "
            f"peak RSS {peak_rss:.0f} MiB; errors {churn.counts['errors']}\n"
        )
        print(table(rows))
        if still_parked != config.pods:
            log(f"FAILED: {config.pods - still_parked} parked pods were bound or lost")
            return 1
        return 0


def run_node_churn(config: Config) -> int:
    with tainted_nodes(config, 0) as (plane, churn):
        admin, nodes, size = churn.api, churn.nodes, churn.size
        pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        # (scheduler, kind) -> its parked pods' names
        groups = {
            (scheduler, kind): [f"{kind}-{scheduler}-{i:04d}" for i in range(config.pods_per_kind)]
            for scheduler in COMPARED
            for kind in config.kinds
        }
        # Stopped in reverse order, whatever fails: the churn, the schedulers, the watches.
        with contextlib.ExitStack() as running:
            binds = BindWatch(Api(plane.admin, pool=1))
            running.callback(binds.close)
            status_writes = WriteCounter(
                Api(plane.admin, pool=1),
                pods_path,
                lambda pod: str(pod["metadata"]["name"]),
                created=False,
                labelSelector=KIND_LABEL,
            )
            running.callback(status_writes.close)
            event_writes = WriteCounter(
                Api(plane.admin, pool=1),
                f"/api/v1/namespaces/{NAMESPACE}/events",
                lambda event: str(event["involvedObject"]["name"]),
                created=True,
                fieldSelector="reason=FailedScheduling",
            )
            running.callback(event_writes.close)
            writes = (event_writes, status_writes)
            operator, source = start_ours(plane, config)
            running.callback(operator.stop)
            # bench_scheduling's kube-scheduler, its log beside the operator's.
            kube = start_kube_scheduler(
                plane,
                config.out / "logs" / "kube-scheduler-parked.log",
                SCHEDULER_NAMES["kube-scheduler"],
            )
            running.callback(kube.stop)
            running.callback(churn.stop)

            def alive() -> None:
                operator.check_alive()
                kube.check_alive()

            log(f"  policy-scheduler from {source}; kube-scheduler")
            warm_ups = [f"warm-up-{scheduler}" for scheduler in COMPARED]
            for name, scheduler in zip(warm_ups, COMPARED, strict=True):
                body = warm_up_pod(name, SCHEDULER_NAMES[scheduler], nodes[-1])
                admin.post(pods_path, body)
            if not binds.wait(warm_ups, 120, lambda n: f"{n}/2 warm-up pods bound", alive):
                raise RuntimeError("a scheduler did not bind its warm-up pod")
            log(f"  {sum(map(len, groups.values()))} unschedulable pods")
            parked = [
                (name, parked_pod(name, i, kind, size.cpu, SCHEDULER_NAMES[scheduler]))
                for (scheduler, kind), names in groups.items()
                for i, name in enumerate(names)
            ]
            Creator(admin, config.create_threads).create_all(parked)
            wait_parked(admin, len(parked), writes, alive, config.timeout)
            log(
                f"  churn: {config.node_rate} nodes added or deleted/s, at most "
                f"{config.node_pool} at once, "
                f"{config.warmup_seconds:.0f} s unmeasured, then {config.seconds:.0f} s measured"
            )
            churn.start(config.warmup_seconds + config.seconds + 10)
            time.sleep(config.warmup_seconds)
            alive()
            before = [counter.snapshot() for counter in writes], churn.snapshot()
            cpu_before = operator.cpu_seconds(), kube.cpu_seconds()
            started = time.monotonic()
            time.sleep(config.seconds)
            alive()
            seconds = time.monotonic() - started
            after = [counter.snapshot() for counter in writes], churn.snapshot()
            cpu = operator.cpu_seconds() - cpu_before[0], kube.cpu_seconds() - cpu_before[1]
            churn.stop()
        events, statuses = (new - old for new, old in zip(after[0], before[0], strict=True))
        done = after[1] - before[1]
        rows = []
        for kind in config.kinds:
            figures = {}
            for scheduler in COMPARED:
                names = groups[scheduler, kind]
                event_rate, status_rate = (
                    per_pod_minute(sum(counts[n] for n in names), len(names), seconds)
                    for counts in (events, statuses)
                )
                figures[scheduler] = (event_rate, status_rate, event_rate + status_rate)
            ours, theirs = figures["policy-scheduler"], figures["kube-scheduler"]
            cells = [f"{a:.2f} / {b:.2f}" for a, b in zip(ours, theirs, strict=True)]
            rows.append(
                {
                    "unschedulable": kind,
                    "pods each": config.pods_per_kind,
                    "FailedScheduling events /pod/min": cells[0],
                    "PodScheduled writes /pod/min": cells[1],
                    "requests /pod/min": cells[2],
                    "ratio": ratio(ours[2], theirs[2]),
                }
            )
        bound = sorted(set(binds.bound) - set(warm_ups))
        gaps = sum(counter.gaps for counter in writes)
        print(
            f"policy-scheduler from {source}\n"
            f"{config.nodes} nodes ({size.cpu} cpu, tainted); in {seconds:.0f} s: "
            f"{done['node adds']} nodes added, {done['node deletes']} deleted "
            f"(at most {config.node_pool} at once); errors {churn.counts['errors']}; "
            f"CPU s policy-scheduler {cpu[0]:.1f}, kube-scheduler {cpu[1]:.1f}\n"
            "each cell: policy-scheduler / kube-scheduler; ratio: of the requests\n"
        )
        print(table(rows))
        if bound or gaps:
            log(f"FAILED: parked pods bound: {bound[:10]}; watches that lost writes: {gaps}")
            return 1
        return 0


# --- the command ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(
        description="What parked unschedulable pods cost under pod churn (policy-scheduler "
        "alone) or node churn (--node-churn: against kube-scheduler); see the module docstring "
        "for what is measured and how."
    )
    parser.add_argument(
        "--operator-src",
        type=Path,
        help="run the operator's policy_scheduler from this directory (e.g. a git worktree's "
        "operator/); default: the installed one",
    )
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=20.0,
        help="churn before the measured window (the parked pods' backoff reaches 10 s)",
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured churn window")
    parser.add_argument("--create-threads", type=int, default=16, help="concurrent POSTs")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds the parked pods may take to settle"
    )
    add_dirs(parser, "bench-parked", "the control plane's state directory (wiped first)")
    pods = parser.add_argument_group("pod churn (the default)")
    pods.add_argument("--unschedulable", choices=KINDS, default="cpu")
    pods.add_argument("--pods", type=int, default=1000, help="unschedulable pods")
    pods.add_argument(
        "--churn-rate", type=float, default=20.0, help="bound pods created (and deleted) a second"
    )
    pods.add_argument("--churn-pool", type=int, default=100, help="churn pods alive at once")
    pods.add_argument("--label-rate", type=float, default=1.0, help="node label updates/s")
    pods.add_argument("--idle-seconds", type=float, default=10.0, help="0 skips the phase")
    nodes = parser.add_argument_group("node churn")
    nodes.add_argument(
        "--node-churn",
        action="store_true",
        help="policy-scheduler and kube-scheduler side by side under node churn",
    )
    nodes.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    nodes.add_argument(
        "--pods-per-kind", type=int, default=50, help="parked pods per kind and scheduler"
    )
    nodes.add_argument(
        "--node-rate", type=float, default=1.0, help="node additions or deletions a second"
    )
    nodes.add_argument(
        "--node-pool", type=int, default=10, help="churn nodes alive at most at once"
    )
    args = parser.parse_args(argv)
    if min(args.churn_rate, args.label_rate, args.node_rate) < 0 or args.seconds <= 0:
        parser.error("rates must be >= 0 and --seconds > 0")
    return Config(
        operator_src=args.operator_src.resolve() if args.operator_src else None,
        unschedulable=args.unschedulable,
        nodes=args.nodes,
        pods=args.pods,
        # Each mode churns only what it measures.
        churn_rate=0.0 if args.node_churn else args.churn_rate,
        churn_pool=args.churn_pool,
        label_rate=0.0 if args.node_churn else args.label_rate,
        idle_seconds=args.idle_seconds,
        warmup_seconds=args.warmup_seconds,
        seconds=args.seconds,
        create_threads=args.create_threads,
        timeout=args.timeout,
        state_dir=args.dir,
        out=args.out,
        node_churn=args.node_churn,
        kinds=tuple(args.kinds),
        pods_per_kind=args.pods_per_kind,
        node_rate=args.node_rate if args.node_churn else 0.0,
        node_pool=args.node_pool,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    try:
        return run_node_churn(config) if config.node_churn else run(config)
    except (RuntimeError, ApiError, OSError, subprocess.SubprocessError) as error:
        log(f"FAILED: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
