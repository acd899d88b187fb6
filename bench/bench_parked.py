"""What parked (unschedulable) pods cost policy-scheduler while the cluster around them churns.

A pod that fits no node is parked in the unschedulable queue until a cluster change could help
it. Which changes wake which parked pods decides how much work a cluster full of pending pods
costs: waking every parked pod on every pod deletion or node change means one scheduling attempt
per parked pod per backoff period (at most 10 s), however useless. This benchmark measures that
cost, to compare the operator before and after a change to its queueing (``--operator-src``
runs the operator from another source tree, e.g. a ``git worktree`` of an older commit).

On a fresh local control plane (hack/controlplane/up, as bench_scheduling.py):

1. ``--nodes`` nodes (bench_scheduling's size for the churn pods: 4 cpu and 16Gi at the
   defaults) and ``policy-scheduler run --metrics ...`` with
   examples/policies/default-profile.yaml; ready once it has bound a warm-up pod pinned to the
   last node;
2. ``--pods`` pods of that policy that fit no node (``--unschedulable``): ``cpu`` requests more
   cpu than any node has (NodeResourcesFit: "Insufficient cpu"), ``node-selector`` names a label
   no node carries (NodeAffinity); then a wait until all are parked and attempts have stopped;
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
(``scheduler_pending_pods{queue}``). The table goes to stdout, progress to stderr, the operator's
log to ``--out``/logs/. The exit status is 1 when a parked pod was bound, the parked pods never
all parked, or the operator died.

    python bench/bench_parked.py [--operator-src DIR] [--unschedulable cpu|node-selector]
        [--nodes 50] [--pods 1000] [--churn-rate 20] [--label-rate 1] [--seconds 60]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from bench_scheduling import (
    HOSTNAME,
    NAMESPACE,
    REPO,
    SCHEDULER_NAMES,
    ControlPlane,
    Creator,
    SchedulerProcess,
    create_nodes,
    free_port,
    log,
    node_names,
    node_size,
    pod_body,
    prepare,
)
from kube_http import Api, ApiError
from prometheus_client.parser import text_string_to_metric_families

POLICY = SCHEDULER_NAMES["policy-scheduler"]
# Served by nobody: the churn pods are bound by their spec alone.
UNSERVED = SCHEDULER_NAMES["raw"]
CHURN_LABEL = "bench.policy-scheduler.dev/churn"
# The node-selector variant's label, which no node carries.
PARKED_SELECTOR = {"bench.policy-scheduler.dev/pool": "parked"}
UNSCHEDULABLE = ("cpu", "node-selector")
POLL_SECONDS = 1.0
# Parked pods have settled when the attempt counter stood still this long (our own
# PodScheduled=False patch can cost each pod a second attempt about a second after its first).
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


# --- the operator -----------------------------------------------------------------------------


def source_env(src: Path | None) -> dict[str, str]:
    """The environment in which ``policy_scheduler`` is imported from ``src``: PYTHONPATH comes
    before site-packages, where the venv's editable install of this tree points."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(src), env.get("PYTHONPATH"))))
    return env


class Operator(SchedulerProcess):
    """``policy-scheduler run`` with its metrics served, maybe from another source tree.

    SchedulerProcess's accounting (CPU, peak RSS, liveness, stop) with a command line and an
    environment of its own, which SchedulerProcess's constructor does not take."""

    def __init__(self, plane: ControlPlane, config: Config) -> None:
        env = source_env(config.operator_src)
        python = Path(sys.executable)
        # The same interpreter and environment as the operator's, so the same module is found.
        self.source = subprocess.run(
            [str(python), "-c", "import policy_scheduler; print(policy_scheduler.__file__)"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.metrics_url = f"http://127.0.0.1:{free_port()}/metrics"
        self.kind = "policy-scheduler"
        self.log_path = config.out / "logs" / "parked-policy-scheduler.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            str(python.with_name("policy-scheduler")),
            "run",
            "--kubeconfig",
            str(plane.dir / "operator.kubeconfig"),
            "--leader-elect=false",
            "--metrics",
            self.metrics_url,
        ]
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, env=env
            )
        self._stdin_lock = threading.Lock()
        self._session = requests.Session()
        self._session.trust_env = False  # no proxy between us and 127.0.0.1

    def scrape(self) -> str:
        response = self._session.get(self.metrics_url, timeout=10)
        response.raise_for_status()
        return response.text

    def stop(self) -> None:
        super().stop()
        self._session.close()


def metric(text: str, sample: str, **labels: str) -> float:
    """The sum of the values of ``sample`` whose labels include ``labels``."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    )


def attempts(text: str, result: str = "unschedulable") -> float:
    return metric(text, "scheduler_schedule_attempts_total", result=result)


def pending(text: str) -> dict[str, int]:
    return {
        queue: round(metric(text, "scheduler_pending_pods", queue=queue))
        for queue in ("unschedulable", "backoff", "active")
    }


# --- the workload -----------------------------------------------------------------------------


def parked_pod(name: str, index: int, kind: str, node_cpu: int) -> bytes:
    """A pod of the policy that fits no node, for the reason ``kind``."""
    if kind == "node-selector":
        return pod_body(name, POLICY, index, PARKED_SELECTOR)
    body = json.loads(pod_body(name, POLICY, index))
    body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = str(node_cpu + 1)
    return json.dumps(body).encode()


def churn_pod(name: str, index: int, node: str) -> bytes:
    """A small pod already bound to ``node`` (bench_scheduling's request mix)."""
    body = json.loads(pod_body(name, UNSERVED, index))
    body["spec"]["nodeName"] = node
    return json.dumps(body).encode()


class Churn:
    """Pod creations and deletions at a fixed rate, and node label updates, from a background
    thread until ``stop``; what was done is counted as it completes."""

    def __init__(self, api: Api, nodes: Sequence[str], config: Config) -> None:
        self.api = api
        self.nodes = nodes
        self.config = config
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        # Created churn pods, oldest first: only a pod whose creation has completed is deleted.
        self._live: collections.deque[str] = collections.deque()
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
        try:
            self.api.post(f"/api/v1/namespaces/{NAMESPACE}/pods", body, exists_ok=True)
        except (ApiError, OSError) as error:
            log(f"  creating {name} failed: {error}")
            self._count("errors")
            return
        with self._lock:
            self._live.append(name)
            self.counts["pod creates"] += 1

    def _delete(self, name: str) -> None:
        try:
            self.api.request(
                "DELETE",
                f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
                params={"gracePeriodSeconds": "0"},
                ok=frozenset({404}),
            )
        except (ApiError, OSError) as error:
            log(f"  deleting {name} failed: {error}")
            self._count("errors")
            return
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

    def start(self, seconds: float) -> None:
        """Churn for at most ``seconds`` (``stop`` ends it sooner)."""
        self._thread = threading.Thread(target=self._run, args=(seconds,), name="churn")
        self._thread.start()

    def _run(self, seconds: float) -> None:
        pod_period = 1 / self.config.churn_rate if self.config.churn_rate > 0 else None
        label_period = 1 / self.config.label_rate if self.config.label_rate > 0 else None
        started = time.monotonic()
        deadline = started + seconds
        next_pod, next_label, labels = started, started, 0
        # Requests from a few threads, so that one slow answer does not slow the rate.
        with ThreadPoolExecutor(8) as pool:
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                if pod_period is not None and now >= next_pod:
                    pool.submit(self._create, self._next)
                    self._next += 1
                    with self._lock:
                        oldest = (
                            self._live.popleft()
                            if len(self._live) >= self.config.churn_pool
                            else None
                        )
                    if oldest is not None:
                        pool.submit(self._delete, oldest)
                    next_pod += pod_period
                if label_period is not None and now >= next_label:
                    pool.submit(self._label, labels)
                    labels += 1
                    next_label += label_period
                upcoming = min(
                    next_pod if pod_period is not None else deadline,
                    next_label if label_period is not None else deadline,
                    deadline,
                )
                self._stop.wait(max(0.0, upcoming - time.monotonic()))

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
    def take(cls, operator: Operator, admin: Api, churn: Churn) -> Sample:
        return cls(
            at=time.monotonic(),
            cpu=operator.cpu_seconds(),
            attempts=attempts(operator.scrape()),
            events=failed_scheduling_events(admin),
            churn=churn.snapshot(),
        )


def phase(name: str, before: Sample, after: Sample, operator: Operator) -> dict[str, Any]:
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


def wait_until(what: str, done: Callable[[str], bool], operator: Operator, timeout: float) -> None:
    """Poll ``done(metrics text)`` until true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        operator.check_alive()
        with contextlib.suppress(requests.RequestException):
            if done(operator.scrape()):
                return
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def settle(operator: Operator, pods: int, timeout: float) -> None:
    """Until every parked pod is in the unschedulable queue and attempts have stopped."""
    deadline = time.monotonic() + timeout
    last, since = -1.0, time.monotonic()
    tried, queues = 0.0, {}
    while time.monotonic() < deadline:
        operator.check_alive()
        text = operator.scrape()
        tried, queues = attempts(text), pending(text)
        now = time.monotonic()
        if tried != last:
            last, since = tried, now
        elif queues["unschedulable"] == pods and now - since >= QUIET_SECONDS:
            log(f"  {pods} pods parked after {round(tried)} unschedulable attempts")
            return
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"the parked pods did not settle in {timeout:.0f} s: {queues}, {tried}")


def table(rows: Sequence[dict[str, Any]]) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


# --- one run ----------------------------------------------------------------------------------


def run(config: Config) -> int:
    log(f"fresh control plane in {config.state_dir}")
    plane = ControlPlane.fresh(config.state_dir)
    try:
        admin = Api(plane.admin, pool=config.create_threads)
        prepare(plane, "policy-scheduler")
        nodes = node_names(config.nodes)
        size = node_size(config.nodes, config.churn_pool)
        create_nodes(admin, nodes, size, config.create_threads)
        churn = Churn(admin, nodes, config)
        with contextlib.ExitStack() as running:
            operator = Operator(plane, config)
            running.callback(operator.stop)
            running.callback(churn.stop)
            log(f"  policy-scheduler from {operator.source}")
            warm_up = pod_body("warm-up", POLICY, 0, {HOSTNAME: nodes[-1]})
            admin.post(f"/api/v1/namespaces/{NAMESPACE}/pods", warm_up)
            wait_until(
                "the warm-up pod's bind", lambda t: attempts(t, "scheduled") >= 1, operator, 120
            )
            log(f"  {config.pods} unschedulable pods ({config.unschedulable})")
            parked = [
                (name, parked_pod(name, i, config.unschedulable, size.cpu))
                for i, name in enumerate(f"parked-{i:05d}" for i in range(config.pods))
            ]
            # Creator creates them all in the background and waits for them when the body ends:
            # here, at once.
            with Creator(admin, config.create_threads, lambda _: None).running(parked, None):
                pass
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
            f"policy-scheduler from {operator.source}\n"
            f"{config.nodes} nodes ({size.cpu} cpu), {config.pods} parked pods "
            f"({config.unschedulable}), {config.churn_pool} churn pods replaced at "
            f"{config.churn_rate}/s, {config.label_rate} node label updates/s; "
            f"peak RSS {peak_rss:.0f} MiB; errors {churn.counts['errors']}\n"
        )
        print(table(rows))
        if still_parked != config.pods:
            log(f"FAILED: {config.pods - still_parked} parked pods were bound or lost")
            return 1
        return 0
    finally:
        plane.down()


# --- the command ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(
        description="The operator's cost of parked unschedulable pods under pod and node churn; "
        "see the module docstring for what is measured and how."
    )
    parser.add_argument(
        "--operator-src",
        type=Path,
        help="run the operator's policy_scheduler from this directory (e.g. a git worktree's "
        "operator/); default: the installed one",
    )
    parser.add_argument("--unschedulable", choices=UNSCHEDULABLE, default="cpu")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000, help="unschedulable pods")
    parser.add_argument(
        "--churn-rate", type=float, default=20.0, help="bound pods created (and deleted) a second"
    )
    parser.add_argument("--churn-pool", type=int, default=100, help="churn pods alive at once")
    parser.add_argument("--label-rate", type=float, default=1.0, help="node label updates/s")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="0 skips the phase")
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
    parser.add_argument(
        "--dir",
        type=Path,
        default=REPO / ".local" / "bench-parked",
        help="the control plane's state directory (wiped first)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args(argv)
    if args.churn_rate < 0 or args.label_rate < 0 or args.seconds <= 0:
        parser.error("rates must be >= 0 and --seconds > 0")
    return Config(
        operator_src=args.operator_src.resolve() if args.operator_src else None,
        unschedulable=args.unschedulable,
        nodes=args.nodes,
        pods=args.pods,
        churn_rate=args.churn_rate,
        churn_pool=args.churn_pool,
        label_rate=args.label_rate,
        idle_seconds=args.idle_seconds,
        warmup_seconds=args.warmup_seconds,
        seconds=args.seconds,
        create_threads=args.create_threads,
        timeout=args.timeout,
        state_dir=args.dir,
        out=args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    try:
        return run(config)
    except (RuntimeError, ApiError, OSError, subprocess.SubprocessError) as error:
        log(f"FAILED: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
