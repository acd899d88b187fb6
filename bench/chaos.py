"""Fault injection: what the operator binds twice, forgets or keeps serving when etcd,
kube-apiserver or the operator itself fails mid-work (issue 11), and how long recovery takes.

Every scenario runs on a fresh control plane of its own (hack/controlplane/up in
``--dir``/SCENARIO, torn down after, as bench_scheduling.py's runs) with the CRD, the
default-profile policy, deploy/'s RBAC and Lease namespace, and ``--nodes`` nodes of 1 cpu. The
operator runs as users run it: ``policy-scheduler run --kubeconfig operator.kubeconfig --metrics
URL``, as the operator's service account. Every pod asks for 100m cpu, so a node holds 10, and the
pods to be bound fill the nodes exactly: a bind the operator counts twice leaves a pod pending for
good, a bind it forgets lets another pod onto a full node.

Scenarios (the fault's end is the moment recovery is counted from):

- ``etcd-restart``: ``nodes x 10`` pods of the default-profile policy, all pending before the
  operator (``--leader-elect=false``) starts, so that it binds at full speed; once a tenth are
  bound, etcd is SIGKILLed and started again with its own command line (hack/controlplane/restart,
  1 s down). The fault ends when the restart returns: kube-apiserver answers /readyz again.
- ``apiserver-restart``: the same with kube-apiserver.
- ``leader-freeze``: the same burst, the operator with leader election and short timings
  (SHORT_LEASE). Once a tenth are bound the leader is frozen (SIGSTOP), every node is tainted
  (NoSchedule, tolerated by no pod), and a second replica is started, which thus never sees a node
  it could bind to. When the Lease's holderIdentity names the second replica, the old leader is
  resumed (SIGCONT: the fault ends) and given OLD_LEADER_GRACE seconds to exit (then killed). The
  pods bound from the takeover until then were bound by the old leader after it had lost its
  Lease (the pods bound at the takeover include every bind it sent before the freeze: their answers
  came long before). Then the taint is removed and the new leader binds the rest.
- ``policy-deleted-while-down``: policies ``doomed`` and ``kept`` (default-profile's spec). Once
  the operator (``--leader-elect=false``) serves both, it is frozen, kube-apiserver is restarted
  (the operator's watches break), ``doomed`` is deleted, and the operator resumed (the fault
  ends). Then a policy ``later`` is created, and ``nodes x 5`` pods each of ``kept`` and ``later``
  (they fill the nodes) and of ``doomed``. The pods of ``doomed`` are watched until each is bound
  or has been told ``NoSchedulingPolicy`` (at most ``--timeout`` s).

Figures of each scenario (one markdown table row on stdout, all of them in chaos.json):

- pods: the pods that must be bound; bound: how many are, when all were or ``--timeout`` passed
  (as seen by the pods' watch, harness.watches.BindWatch); at fault: how many were bound when the
  fault began (a fault after the last bind tests nothing).
- bound twice: pods with more than one ``Scheduled`` event, or one naming a node the pod is not
  on (the event's message, "Successfully assigned NS/POD to NODE"); no event: bound pods without
  a ``Scheduled`` event. Counted once every bound pod has its event or none came for EVENTS_QUIET
  seconds. (A frozen leader that exits may leave its last binds without events.)
- overcommitted nodes: nodes whose pods' summed cpu requests (as the scheduler counts them,
  model.objects.PodView) exceed their allocatable.
- recovery s: from the fault's end until the last pod that must be bound was bound; 0 when all
  were bound before the fault ended. In ``policy-deleted-while-down`` the pods are created after
  the fault's end, and the time that takes (in the details) is part of it.
- requests/pod (/min): the operator's API requests over the scenario, from its start until the
  checks (window s), per pod that must be bound, and that per minute of the window. Counted by
  kube-apiserver, as bench_scheduling.py counts: the change of
  ``apiserver_flowcontrol_dispatched_requests_total`` for the ``service-accounts`` flow schema
  (API Priority and Fairness classifies by identity; the operator's service account is the only
  one that runs here, the harness is an admin, ``exempt``). The operator's own metrics count no
  requests, and apiserver_request_total names no client. The counter restarts with
  kube-apiserver: it is read just before and after each fault and summed across restarts
  (``process_start_time_seconds`` tells a restart), so only the requests of the moment between
  the last read and the kill are lost. In ``leader-freeze`` both replicas share the identity: the
  figure is both together.
- heartbeat s: the policy's ``status.heartbeatTime``, read every HEARTBEAT_POLL s: the longest the
  status went without a heartbeat after the fault's end (counted from the fault's end, or from the
  last heartbeat after it), until the checks have seen one written after the fault's end (or
  HEARTBEAT_INTERVAL + HEARTBEAT_SLACK s passed). Fresh: at most HEARTBEAT_INTERVAL +
  HEARTBEAT_SLACK (20 s).
- status writes ok/failed: the change of ``policy_scheduler_status_writes_total{result}`` on the
  (new) leader's /metrics from the fault's end to the checks: ``success`` / ``error``
  (``not_found``, a write to a deleted policy, is in the JSON).

A scenario fails (exit status 1) when a pod was bound twice, a node is overcommitted, a pod that
must be bound was not within ``--timeout`` s, a bound pod has no ``Scheduled`` event (but in
``leader-freeze``), the heartbeat was not fresh, a pod of the deleted policy was bound, or the
frozen leader bound a pod after losing its Lease or did not exit; or when the harness itself
failed (the error is recorded). Progress goes to stderr, the operators' logs to
``--out``/logs/chaos-*.log, the figures to ``--out``/chaos.json (written after every scenario).

    python bench/chaos.py [--scenarios etcd-restart ...] [--rounds 2] [--nodes 60]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from threading import Event, Thread
from typing import Any

import requests
import yaml
from harness.checks import overcommitted, told, told_wrongly
from harness.controlplane import REPO, ControlPlane
from harness.kube import Api, ApiError
from harness.metrics import APISERVER, DISPATCHED, STARTED, samples_of, total, value
from harness.processes import Process, start_operator
from harness.wait import poll
from harness.watches import BindWatch
from harness.workload import (
    FLOW_SCHEMAS,
    NAMESPACE,
    SCHEDULER_NAMES,
    Creator,
    NodeSize,
    add_dirs,
    create_nodes,
    log,
    node_names,
    pod_body,
    prepare,
)

from policy_scheduler.scheduling.status import HEARTBEAT_INTERVAL

SCENARIOS = ("etcd-restart", "apiserver-restart", "leader-freeze", "policy-deleted-while-down")
POLICY = SCHEDULER_NAMES["policy-scheduler"]  # default-profile, which prepare() applies
# The request mix of harness.workload, entry 0: 100m cpu (and 128Mi), for every pod.
POD_MIX_INDEX = 0
# One core holds ten 100m pods; the memory and pod count never bind before the cpu.
NODE_SIZE = NodeSize(cpu=1, memory=16, pods=110)
PODS_PER_NODE = 10
# The fault begins once this share of the burst is bound.
FAULT_AT = 0.1
# As tests/e2e/test_ha.py: a takeover in seconds, generous beside a renewal on a busy machine.
SHORT_LEASE = (
    "--leader-elect-lease-duration=8s",
    "--leader-elect-renew-deadline=6s",
    "--leader-elect-retry-period=1s",
)
LEASE = "/apis/coordination.k8s.io/v1/namespaces/policy-scheduler/leases/policy-scheduler"
POLICIES = "/apis/policy-scheduler.dev/v1alpha1/schedulingpolicies"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"
# Tolerated by no pod: the standby of leader-freeze must not bind while the old leader resumes.
TAINT = {
    "key": "bench.policy-scheduler.dev/chaos",
    "value": "leader-frozen",
    "effect": "NoSchedule",
}
# A leader that has lost its Lease exits at once; this is how long we wait before killing it.
OLD_LEADER_GRACE = 30.0
# Binds the old leader sent just before it exited reach the API server within this.
SETTLE_SECONDS = 1.0
HEARTBEAT_POLL = 1.0
# Status writes come once a second while decisions flow, heartbeats every HEARTBEAT_INTERVAL;
# the slack is for a busy machine.
HEARTBEAT_SLACK = 10.0
# Scheduled events follow their binds; the count has settled when it stood still this long.
EVENTS_QUIET = 5.0
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Config:
    scenarios: tuple[str, ...]
    rounds: int
    nodes: int
    timeout: float
    create_threads: int
    state_dir: Path
    out: Path

    @property
    def capacity(self) -> int:
        return self.nodes * PODS_PER_NODE


# --- the operator -----------------------------------------------------------------------------


def serves(operator: Process, policy: str) -> bool:
    """Whether ``operator`` has taken ``policy`` in (every replica reports the policies it
    holds)."""
    try:
        return total(operator.scrape(), "policy_scheduler_policy_valid", policy=policy) == 1
    except requests.RequestException:
        return False  # not serving its metrics yet


def status_writes(operator: Process) -> Counter[str]:
    samples = operator.scrape()
    return Counter(
        {
            result: round(total(samples, "policy_scheduler_status_writes_total", result=result))
            for result in ("success", "error", "not_found")
        }
    )


# --- what is measured -------------------------------------------------------------------------


class OperatorRequests:
    """The operator's API requests as kube-apiserver counts them (see the module docstring),
    summed across its restarts: read at each ``sample``."""

    def __init__(self, admin: Api) -> None:
        self.admin = admin
        self.count = 0.0
        self._last: tuple[float, float] | None = None
        self.sample()

    def sample(self) -> float:
        samples = samples_of(self.admin.metrics(), *APISERVER)
        started = value(samples, STARTED)
        if started is None:
            raise RuntimeError("kube-apiserver's /metrics has no process_start_time_seconds")
        count = total(samples, DISPATCHED, flow_schema=FLOW_SCHEMAS["policy-scheduler"])
        if self._last is not None:
            last_started, last_count = self._last
            # A restarted API server counts from 0 again.
            self.count += count if started != last_started else count - last_count
        self._last = (started, count)
        return self.count


class Heartbeats:
    """A policy's ``status.heartbeatTime``, read every HEARTBEAT_POLL s from a thread of its own
    (with a client of its own): (wall clock of the read, the heartbeat as a timestamp, or None).
    Reads that fail (the API server restarting) are skipped."""

    def __init__(self, api: Api, policy: str) -> None:
        self.api = api
        self.path = f"{POLICIES}/{policy}"
        self.samples: list[tuple[float, float | None]] = []
        self._stop = Event()
        self._thread = Thread(target=self._run, name="heartbeats")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_POLL):
            try:
                beat = (self.api.get(self.path).get("status") or {}).get("heartbeatTime")
            except (ApiError, OSError, ValueError):
                continue
            stamp = datetime.fromisoformat(beat).timestamp() if beat else None
            self.samples.append((time.time(), stamp))

    def wait_after(self, since: float, timeout: float) -> None:
        """Until a heartbeat at or after ``since`` (wall clock) has been read, or ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(beat is not None and beat >= since for _, beat in list(self.samples)):
                return
            time.sleep(POLL_SECONDS)

    def longest_gap(self, since: float) -> float:
        """The longest the status went without a heartbeat after ``since``, as of each read."""
        return max(
            (read - max(beat or 0.0, since) for read, beat in list(self.samples) if read >= since),
            default=0.0,
        )

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.api.session.close()


@dataclass
class Fault:
    """When a fault began and ended, and what was bound when it began."""

    bound_at_start: int | None
    began: float
    ended: float = 0.0
    ended_wall: float = 0.0
    writes_at_end: Counter[str] = field(default_factory=Counter)

    def end(self) -> None:
        self.ended = time.monotonic()
        self.ended_wall = time.time()


# --- one scenario's stage ---------------------------------------------------------------------


@dataclass
class Stage:
    """One scenario's control plane, the admin's client, the watch of binds, the operators
    started (stopped at the end) and the figures gathered."""

    config: Config
    name: str
    plane: ControlPlane
    admin: Api
    watch: BindWatch
    stack: contextlib.ExitStack
    result: dict[str, Any]

    def operator(self, role: str, *flags: str) -> Process:
        """``policy-scheduler run`` as users run it, with its metrics served and its log with
        timestamps (the evidence when a scenario fails); stopped with the stage."""
        file = f"chaos-{self.name}-r{self.result['round']}-{role}.log"
        path = self.config.out / "logs" / file
        operator = start_operator(self.plane.operator, path, "--log-format", "full", *flags)
        self.stack.callback(operator.stop)
        return operator

    def create_pods(self, prefix: str, count: int, scheduler_name: str) -> list[str]:
        """``count`` pods named ``prefix-NNNNN``, created all at once (concurrently)."""
        names = [f"{prefix}-{i:05d}" for i in range(count)]
        bodies = [(name, pod_body(name, scheduler_name, POD_MIX_INDEX)) for name in names]
        creator = Creator(self.admin, self.config.create_threads)
        creator.create_all(bodies)
        if len(creator.created) != count:
            raise RuntimeError(f"only {len(creator.created)} of {count} {prefix} pods created")
        return names

    def wait_bound(self, count: int, alive: Callable[[], None]) -> None:
        """Until at least ``count`` pods of the namespace are bound."""
        poll(
            f"{count} pods bound",
            lambda: len(self.watch.bound) >= count,
            self.config.timeout,
            0.05,
            alive,
        )

    def bound_now(self) -> set[str]:
        """The bound pods of the namespace, as the API server lists them now."""
        items = self.admin.list_items(PODS, fieldSelector="spec.nodeName!=")
        return {pod["metadata"]["name"] for pod in items}

    def taint_nodes(self, taints: list[dict[str, str]] | None) -> None:
        with ThreadPoolExecutor(self.config.create_threads) as pool:
            list(
                pool.map(
                    lambda node: self.admin.merge_patch(
                        f"/api/v1/nodes/{node}", {"spec": {"taints": taints}}
                    ),
                    node_names(self.config.nodes),
                )
            )


@contextlib.contextmanager
def new_stage(config: Config, name: str, round_number: int) -> Iterator[Stage]:
    log(f"{name}, round {round_number}: fresh control plane, {config.nodes} nodes")
    plane = ControlPlane.fresh(config.state_dir / name)
    try:
        admin = Api(plane.admin, pool=config.create_threads)
        prepare(plane, "policy-scheduler")
        create_nodes(admin, node_names(config.nodes), NODE_SIZE, config.create_threads)
        # Stopped in reverse order, whatever fails: the operators, then the watch.
        with contextlib.ExitStack() as stack:
            # Watching before any operator starts, so that no bind goes unseen.
            watch = BindWatch(Api(plane.admin, pool=1))
            stack.callback(watch.close)
            yield Stage(
                config, name, plane, admin, watch, stack, {"scenario": name, "round": round_number}
            )
    finally:
        plane.down()


def bind_all(stage: Stage, names: Sequence[str], alive: Callable[[], None]) -> bool:
    total = len(names)
    return stage.watch.wait(
        names, stage.config.timeout, lambda bound: f"{bound}/{total} bound", alive
    )


# --- the scenarios ----------------------------------------------------------------------------


@dataclass
class Run:
    """What a scenario hands to ``check``: the pods that must be bound, whether the wait for
    them ended in time, the fault, and the operator whose metrics and heartbeat tell."""

    pods: list[str]
    complete: bool
    fault: Fault
    operator: Process
    requests: OperatorRequests
    heartbeats: Heartbeats
    started: float
    # A leader that lost its Lease exits at once, as kube-scheduler does, without posting the
    # events of its last binds: there a bound pod without one is no failure.
    events_may_be_lost: bool = False


def restart_scenario(stage: Stage, component: str) -> Run:
    pods = stage.create_pods("burst", stage.config.capacity, POLICY)
    api_requests = OperatorRequests(stage.admin)
    started = time.monotonic()
    operator = stage.operator("operator", "--leader-elect=false")
    heartbeats = Heartbeats(Api(stage.plane.admin, pool=1), POLICY)
    stage.stack.callback(heartbeats.close)
    stage.wait_bound(max(1, round(len(pods) * FAULT_AT)), operator.check_alive)
    fault = Fault(len(stage.watch.bound), time.monotonic())
    api_requests.sample()
    log(f"  {fault.bound_at_start} bound: restarting {component}")
    stage.plane.restart(component)
    fault.end()
    api_requests.sample()
    fault.writes_at_end = status_writes(operator)
    log(f"  {component} back after {fault.ended - fault.began:.1f} s")
    stage.result["details"] = f"{component} down {fault.ended - fault.began:.1f} s"
    complete = bind_all(stage, pods, operator.check_alive)
    return Run(pods, complete, fault, operator, api_requests, heartbeats, started)


def holder(admin: Api) -> str:
    """The Lease's holderIdentity; empty while there is no Lease."""
    try:
        lease = admin.get(LEASE)
    except ApiError as error:
        if error.status == 404:
            return ""
        raise
    return str(lease["spec"].get("holderIdentity") or "")


def leader_freeze(stage: Stage) -> Run:
    config, result = stage.config, stage.result
    pods = stage.create_pods("burst", config.capacity, POLICY)
    api_requests = OperatorRequests(stage.admin)
    started = time.monotonic()
    leader = stage.operator("leader", *SHORT_LEASE)
    heartbeats = Heartbeats(Api(stage.plane.admin, pool=1), POLICY)
    stage.stack.callback(heartbeats.close)
    stage.wait_bound(max(1, round(len(pods) * FAULT_AT)), leader.check_alive)
    leader.freeze()
    fault = Fault(len(stage.watch.bound), time.monotonic())
    # It holds the Lease: it binds only while it does, and it is the only replica yet.
    old = holder(stage.admin)
    log(f"  {fault.bound_at_start} bound: leader frozen; nodes tainted; standby started")
    stage.taint_nodes([TAINT])
    # Started after the taint: it never sees a node it could bind to until the taint goes.
    standby = stage.operator("standby", *SHORT_LEASE)
    poll(
        "the standby to take the Lease",
        lambda: holder(stage.admin) not in ("", old),
        config.timeout,
        POLL_SECONDS,
        standby.check_alive,
    )
    takeover = time.monotonic() - fault.began
    before = stage.bound_now()
    leader.resume()
    fault.end()
    fault.writes_at_end = status_writes(standby)
    log(f"  standby leads {takeover:.1f} s after the freeze; old leader resumed")
    try:
        code: int | None = leader.process.wait(timeout=OLD_LEADER_GRACE)
        exited = time.monotonic() - fault.ended
    except subprocess.TimeoutExpired:
        code, exited = None, OLD_LEADER_GRACE
        leader.process.kill()
        leader.process.wait()
    time.sleep(SETTLE_SECONDS)
    late = sorted(stage.bound_now() - before)
    result.update(
        takeover_seconds=round(takeover, 2),
        old_leader_late_binds=len(late),
        old_leader_late_pods=late[:10],
        old_leader_exit_code=code,
        old_leader_exit_seconds=round(exited, 2) if code is not None else None,
    )
    ending = (
        f"exited {code} after {exited:.1f} s"
        if code is not None
        else f"still running after {OLD_LEADER_GRACE:.0f} s (killed)"
    )
    result["details"] = (
        f"takeover {takeover:.1f} s; old leader: {len(late)} binds after the takeover, {ending}"
    )
    if late:
        result["failures"].append(f"the old leader bound {len(late)} pods after losing its Lease")
    if code is None:
        result["failures"].append("the old leader did not exit")
    log(f"  old leader {ending}, {len(late)} late binds; taint removed")
    stage.taint_nodes(None)
    complete = bind_all(stage, pods, standby.check_alive)
    return Run(pods, complete, fault, standby, api_requests, heartbeats, started, True)


def policy_body(name: str) -> dict[str, Any]:
    """default-profile's spec under another name (its scheduler name too)."""
    body: dict[str, Any] = yaml.safe_load(
        (REPO / "examples" / "policies" / "default-profile.yaml").read_text()
    )
    body["metadata"] = {"name": name}
    return body


def policy_deleted_while_down(stage: Stage) -> Run:
    config, result, admin = stage.config, stage.result, stage.admin
    for name in ("doomed", "kept"):
        admin.post(POLICIES, policy_body(name))
    api_requests = OperatorRequests(admin)
    started = time.monotonic()
    operator = stage.operator("operator", "--leader-elect=false")
    heartbeats = Heartbeats(Api(stage.plane.admin, pool=1), "kept")
    stage.stack.callback(heartbeats.close)
    poll(
        "the operator to take the policies",
        lambda: serves(operator, "doomed") and serves(operator, "kept"),
        config.timeout,
        POLL_SECONDS,
        operator.check_alive,
    )
    operator.freeze()
    fault = Fault(None, time.monotonic())
    api_requests.sample()
    log("  operator frozen: restarting kube-apiserver, deleting policy doomed")
    try:
        stage.plane.restart("kube-apiserver")
        admin.request("DELETE", f"{POLICIES}/doomed")
    finally:
        operator.resume()
    fault.end()
    api_requests.sample()
    fault.writes_at_end = status_writes(operator)
    admin.post(POLICIES, policy_body("later"))
    half = config.capacity // 2
    doomed = stage.create_pods("doomed", half, "doomed")
    pods = stage.create_pods("kept", half, "kept")
    pods += stage.create_pods("later", config.capacity - half, "later")
    # Recovery counts from the fault's end: this part of it is the harness's.
    created = time.monotonic() - fault.ended
    complete = bind_all(stage, pods, operator.check_alive)
    # Each pod of the deleted policy is bound or told that nothing serves it, unless the
    # operator forgets it altogether: then the wait ends at the timeout.
    told: set[str] = set()
    deadline = time.monotonic() + config.timeout
    while time.monotonic() < deadline:
        waiting = admin.list_items(EVENTS, fieldSelector="reason=NoSchedulingPolicy")
        told = {event["involvedObject"]["name"] for event in waiting}
        if set(doomed) <= told | stage.watch.bound.keys():
            break
        time.sleep(1.0)
    ghost = sorted(set(doomed) & stage.bound_now())
    result.update(
        deleted_policy_pods=len(doomed),
        deleted_policy_pods_bound=len(ghost),
        deleted_policy_pods_bound_names=ghost[:10],
        deleted_policy_pods_told=len(told & set(doomed)),
    )
    result["pods_created_seconds"] = round(created, 2)
    result["details"] = (
        f"pods created {created:.1f} s after the fault; deleted policy: "
        f"{len(ghost)}/{len(doomed)} pods bound, {len(told & set(doomed))} told NoSchedulingPolicy"
    )
    if ghost:
        result["failures"].append(f"{len(ghost)} pods of the deleted policy bound")
    return Run(pods, complete, fault, operator, api_requests, heartbeats, started)


SCENARIO_RUNS: dict[str, Callable[[Stage], Run]] = {
    "etcd-restart": lambda stage: restart_scenario(stage, "etcd"),
    "apiserver-restart": lambda stage: restart_scenario(stage, "kube-apiserver"),
    "leader-freeze": leader_freeze,
    "policy-deleted-while-down": policy_deleted_while_down,
}


# --- the checks -------------------------------------------------------------------------------


def settle_events(admin: Api, bound: set[str]) -> list[dict[str, Any]]:
    """The Scheduled events, once every bound pod has one or none came for EVENTS_QUIET s."""
    last, since = -1, time.monotonic()
    deadline = since + 60
    while True:
        events = admin.list_items(EVENTS, fieldSelector="reason=Scheduled")
        now = time.monotonic()
        if len(events) != last:
            last, since = len(events), now
        told = {event["involvedObject"]["name"] for event in events}
        if bound <= told or now - since >= EVENTS_QUIET or now > deadline:
            return events
        time.sleep(1.0)


def check(stage: Stage, run: Run) -> None:
    """The figures after the run: the Scheduled events, the nodes' load, the heartbeat, the
    status writes, the requests; failures added to ``stage.result['failures']``."""
    admin, result, fault = stage.admin, stage.result, run.fault
    expected = set(run.pods)
    pods = admin.list_items(PODS)
    placed = {
        p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")
    }
    told_nodes = told(settle_events(admin, set(placed)))
    twice = told_wrongly(told_nodes, placed)
    untold = sorted(set(placed) - set(told_nodes))
    overcommit = overcommitted(admin.list_items("/api/v1/nodes"), pods, ("cpu",))
    overloaded = [f"{o.node}: {o.requested}m of {o.allocatable}m" for o in overcommit]
    never = sorted(expected - set(placed))
    bound_times = [stage.watch.bound[name] for name in run.pods if name in stage.watch.bound]
    recovery = max(0.0, max(bound_times) - fault.ended) if run.complete and bound_times else None
    stale_after = HEARTBEAT_INTERVAL + HEARTBEAT_SLACK
    run.heartbeats.wait_after(fault.ended_wall, stale_after)
    gap = run.heartbeats.longest_gap(fault.ended_wall)
    writes = status_writes(run.operator)
    writes.subtract(fault.writes_at_end)
    count = run.requests.sample()
    window = time.monotonic() - run.started
    result.update(
        pods=len(expected),
        bound=len(expected & set(placed)),
        bound_at_fault=fault.bound_at_start,
        fault_seconds=round(fault.ended - fault.began, 2),
        recovery_seconds=round(recovery, 2) if recovery is not None else None,
        bound_twice=len(twice),
        bound_twice_pods=twice[:10],
        bound_without_event=len(untold),
        bound_without_event_pods=untold[:10],
        overcommitted_nodes=len(overloaded),
        overcommitted=overloaded[:10],
        never_bound=never[:10],
        requests=round(count),
        window_seconds=round(window, 1),
        requests_per_pod=round(count / len(expected), 2),
        requests_per_pod_per_minute=round(count / len(expected) / (window / 60), 2),
        heartbeat_fresh=gap <= stale_after,
        heartbeat_longest_gap_seconds=round(gap, 1),
        status_writes_after_fault={key: writes[key] for key in ("success", "error", "not_found")},
    )
    failures = result["failures"]
    if never:
        failures.append(f"{len(never)} pods never bound")
    if twice:
        failures.append(f"{len(twice)} pods bound more than once")
    if overloaded:
        failures.append(f"{len(overloaded)} nodes overcommitted")
    if untold and not run.events_may_be_lost:
        failures.append(f"{len(untold)} bound pods without a Scheduled event")
    if gap > stale_after:
        failures.append(f"no heartbeat for {gap:.0f} s after the fault")
    log(
        f"  {result['bound']}/{len(expected)} bound, recovery {result['recovery_seconds']} s, "
        f"{len(twice)} bound twice, {len(untold)} without event, "
        f"{len(overloaded)} nodes overcommitted, "
        f"{result['requests_per_pod_per_minute']} requests/pod/min, heartbeat gap {gap:.1f} s"
        + (f"; FAILED: {'; '.join(failures)}" if failures else "")
    )


def run_scenario(config: Config, name: str, round_number: int) -> dict[str, Any]:
    with new_stage(config, name, round_number) as current:
        current.result["failures"] = []
        run = SCENARIO_RUNS[name](current)
        check(current, run)
        return current.result


# --- the report -------------------------------------------------------------------------------

COLUMNS = (
    "scenario",
    "round",
    "pods",
    "bound",
    "at fault",
    "bound twice",
    "no Scheduled event",
    "overcommitted nodes",
    "recovery s",
    "requests/pod (/min)",
    "heartbeat s",
    "status writes ok/failed",
    "details",
    "result",
)


def row(result: dict[str, Any]) -> str:
    def value(key: str) -> str:
        found = result.get(key)
        return "-" if found is None else str(found)

    verdict = "ok" if not result["failures"] else "FAILED: " + "; ".join(result["failures"])
    if "error" in result:
        cells = [result["scenario"], str(result["round"]), *["-"] * 11, verdict]
    else:
        writes = result["status_writes_after_fault"]
        heartbeat = f"{result['heartbeat_longest_gap_seconds']}"
        cells = [
            result["scenario"],
            str(result["round"]),
            value("pods"),
            value("bound"),
            value("bound_at_fault"),
            value("bound_twice"),
            value("bound_without_event"),
            value("overcommitted_nodes"),
            value("recovery_seconds"),
            f"{result['requests_per_pod']} ({result['requests_per_pod_per_minute']})",
            heartbeat if result["heartbeat_fresh"] else f"{heartbeat} (stale)",
            f"{writes['success']}/{writes['error']}",
            value("details"),
            verdict,
        ]
    return "| " + " | ".join(cells) + " |"


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(
        description="Faults injected into a local control plane while policy-scheduler binds: "
        "etcd and kube-apiserver restarts, a frozen leader, a policy deleted while the watches "
        "are down; see the module docstring for what is measured and how."
    )
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=2, help="runs of each scenario")
    parser.add_argument(
        "--nodes",
        type=int,
        default=60,
        help=f"nodes of 1 cpu; the pods to bind fill them ({PODS_PER_NODE} each)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds any wait may take (pods to bind...)"
    )
    parser.add_argument("--create-threads", type=int, default=16, help="concurrent POSTs")
    add_dirs(parser, "chaos", "control planes go to DIR/SCENARIO (wiped first, removed after)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.nodes < 1:
        parser.error("--rounds and --nodes must be at least 1")
    return Config(
        scenarios=tuple(args.scenarios),
        rounds=args.rounds,
        nodes=args.nodes,
        timeout=args.timeout,
        create_threads=args.create_threads,
        state_dir=args.dir.resolve(),
        out=args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    config.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "config": {
            "scenarios": list(config.scenarios),
            "rounds": config.rounds,
            "nodes": config.nodes,
            "pods_per_node": PODS_PER_NODE,
            "timeout": config.timeout,
        },
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()},
        "runs": [],
    }
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS), flush=True)
    for round_number in range(1, config.rounds + 1):
        for name in config.scenarios:
            try:
                result = run_scenario(config, name, round_number)
            except (RuntimeError, ApiError, OSError, subprocess.SubprocessError) as error:
                log(f"  {name} failed: {error}")
                result = {"scenario": name, "round": round_number, "error": str(error)}
                result["failures"] = [f"harness error: {error}"]
            results["runs"].append(result)
            print(row(result), flush=True)
            # After every scenario, so that an interrupted run still leaves what it measured.
            (config.out / "chaos.json").write_text(json.dumps(results, indent=2) + "\n")
    failed = [f"{r['scenario']}#{r['round']}" for r in results["runs"] if r["failures"]]
    log(f"results: {config.out / 'chaos.json'}")
    if failed:
        log(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
