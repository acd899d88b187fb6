"""The scheduling loop through its ports, without an API server (in the spirit of
kube-scheduler's TestSchedulerScheduleOne): given these objects and these watch events, expect
these binds, events, pod conditions, queue places and policy status.

Each case is a list of steps; a step feeds the loop, runs it until no pod is ready (binds
included), or moves the clock. The ports are :class:`~policy_scheduler.simulate.InMemory`.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.framework.interface import (
    Filter,
    ObjectRef,
    ObjectWriter,
    Permit,
    PostBind,
    PostFilter,
    PostFilterResult,
    PreBind,
    PreEnqueue,
    Reserve,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model import namespaces
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import CompiledPolicy, compile_policy
from policy_scheduler.runtime.framework import ExtensionPoints
from policy_scheduler.scheduling import policies
from policy_scheduler.scheduling.ports import BindResult, Outcome, Watches, WriteResult
from policy_scheduler.scheduling.queue import Where
from policy_scheduler.scheduling.scheduler import Scheduler
from policy_scheduler.simulate import FrozenClock, InMemory

Raw = dict[str, Any]


def node(name: str, cpu: str = "2", labels: dict[str, str] | None = None) -> Raw:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}},
    }


def pod(
    name: str,
    cpu: str = "1",
    *,
    scheduler: str = "test",
    priority: int = 0,
    on: str = "",
    gates: Iterable[str] = (),
    nominated: str = "",
    labels: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    host_port: int | None = None,
) -> Raw:
    container: Raw = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    if host_port is not None:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: Raw = {"schedulerName": scheduler, "priority": priority, "containers": [container]}
    if on:
        spec["nodeName"] = on
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if selector:
        spec["nodeSelector"] = selector
    raw: Raw = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "resourceVersion": "1",
            "labels": labels or {},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return raw


def policy(
    mode: str = "Enforce",
    generation: int = 1,
    status: Raw | None = None,
    *,
    uid: str = "first",
    scheduler: str = "test",
) -> Raw:
    """SchedulingPolicy ``test``; another ``uid`` is another object under the same name."""
    return {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {
            "name": "test",
            "uid": uid,
            "generation": generation,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "schedulerName": scheduler,
            "mode": mode,
            "predicates": [
                {"name": "NodePorts"},
                {"name": "NodeAffinity"},
                {"name": "NodeResourcesFit"},
            ],
            "priorities": [{"name": "LeastAllocated", "weight": 1}],
        },
        "status": status or {},
    }


def changed(raw: Raw, **edits: Any) -> Raw:
    """``raw`` with a new resourceVersion and each ``path=value`` edit (``__`` separates keys)."""
    copied = copy.deepcopy(raw)
    copied["metadata"]["resourceVersion"] = str(int(copied["metadata"]["resourceVersion"]) + 1)
    for path, value in edits.items():
        *parents, last = path.split("__")
        target = copied
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return copied


@dataclass
class Run:
    """The loop under test with its in-memory ports and clock."""

    memory: InMemory = field(default_factory=InMemory)
    clock: FrozenClock = field(default_factory=FrozenClock)
    watches: Watches | None = None
    scheduler: Scheduler = field(init=False)

    def __post_init__(self) -> None:
        self.scheduler = Scheduler(
            self.memory,
            self.memory,
            self.memory,
            self.memory,
            self.memory,
            evictor=self.memory,
            clock=self.clock,
            seed=1,
            watches=self.watches,
        )

    def where(self, name: str) -> Where | None:
        entry = self.scheduler.queue.get(name)
        return None if entry is None else entry.where

    def reasons(self, name: str) -> list[str]:
        return [reason for key, _, reason, _ in self.memory.events if key == f"ns/{name}"]


Step = Callable[[Run], object]


def feed(*objects: Raw) -> Step:
    """Watch events: nodes, pods or policies added or changed."""

    def step(run: Run) -> None:
        for raw in objects:
            if "schedulingpolicy" in str(raw.get("kind", "")).lower():
                run.scheduler.policy_changed(raw)
            elif "containers" in raw.get("spec", {}):
                run.scheduler.pod_changed(raw)
            else:
                run.scheduler.node_changed(raw)

    return step


def workload(kind: str, raw: Raw, deleted: bool = False) -> Step:
    """A watch event of a Service, ReplicationController, ReplicaSet or StatefulSet."""
    if deleted:
        return lambda run: run.scheduler.deleted(kind, raw)
    return lambda run: run.scheduler.changed(kind, raw)


def namespace(raw: Raw, deleted: bool = False) -> Step:
    if deleted:
        return lambda run: run.scheduler.deleted(namespaces.KIND, raw)
    return lambda run: run.scheduler.changed(namespaces.KIND, raw)


def delete_pod(raw: Raw) -> Step:
    return lambda run: run.scheduler.pod_deleted(raw)


def delete_policy(raw: Raw) -> Step:
    return lambda run: run.scheduler.policy_deleted(raw)


def watch(source: str, confirmed: bool) -> Step:
    return lambda run: run.scheduler.watch_confirmed(source, confirmed)


def lead(*policies: Raw) -> Step:
    return lambda run: run.scheduler.take_over(policies)


def settle() -> Step:
    return lambda run: asyncio.get_event_loop().run_until_complete(run.scheduler.run_until_idle())


def later(seconds: float) -> Step:
    def step(run: Run) -> None:
        run.clock.at += seconds

    return step


@dataclass(frozen=True)
class Expect:
    binds: list[tuple[str, str]] = field(default_factory=list)
    events: dict[str, list[str]] = field(default_factory=dict)
    """Per pod name, the reasons of its events in order."""
    where: dict[str, Where | None] = field(default_factory=dict)
    unschedulable: list[str] | None = None
    """The pods given PodScheduled=False, in order."""
    status: Raw = field(default_factory=dict)
    """Fields of the policy's status body as the writer would write it now."""
    refusals: dict[str, str] = field(default_factory=dict)
    """Per pod name, the message of its SchedulerError: why a plugin refused it."""


def check(run: Run, expect: Expect) -> None:
    assert run.memory.binds == [(f"ns/{p}", n) for p, n in expect.binds]
    for name, reasons in expect.events.items():
        assert run.reasons(name) == reasons, name
    for name, where in expect.where.items():
        assert run.where(name) == where, name
    if expect.unschedulable is not None:
        told = [key for key, _ in run.memory.conditions]
        assert told == [f"ns/{p}" for p in expect.unschedulable]
    for name, message in expect.refusals.items():
        assert (f"ns/{name}", message) in run.memory.errors, name
    if expect.status:
        body = run.scheduler.status.body("test", 0)["status"]
        for key, value in expect.status.items():
            assert body.get(key) == value, key


BIG = pod("big", "4")  # no node has 4 CPUs
# Default spreading (System) and room: web-0 on n1 (8 CPUs, 1 used) and a Service selecting app=web
# send web-1 to n2 (2 CPUs) for spreading's 2 x (100 - 66) against room's 75 - 50.
SPREADING = policy()
SPREADING["spec"]["predicates"] = [{"name": "NodeResourcesFit"}, {"name": "InterPodAffinity"}]
SPREADING["spec"]["priorities"] = [
    {"name": "LeastAllocated", "weight": 1},
    {"name": "PodTopologySpread", "weight": 2},
]
WEB = pod("web-0", on="n1", labels={"app": "web"})
WEB_SERVICE: Raw = {
    "metadata": {"name": "web", "namespace": "ns"},
    "spec": {"selector": {"app": "web"}},
}
# A pod of namespace "data" (labelled team=x), and one that wants to be beside it.
DB = changed(pod("db", on="n1", labels={"app": "db"}), metadata__namespace="data")
DATA: Raw = {"metadata": {"name": "data", "labels": {"team": "x"}}}
NEAR_DB = changed(
    pod("near"),
    spec__affinity={
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaceSelector": {"matchLabels": {"team": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    },
)
HOSTS = (
    node("n1", "8", {"kubernetes.io/hostname": "n1"}),
    node("n2", "2", {"kubernetes.io/hostname": "n2"}),
)
GATED = pod("gated", gates=["example.com/quota"])
# Issue 28: a Permit-only plugin enabled by spec.plugins; a bucket of one pod, next to no refill.
RATE_LIMITED = policy()
RATE_LIMITED["spec"]["plugins"] = {
    "permit": [{"name": "BindRateLimit", "args": {"qps": 0.001, "burst": 1}}]
}
# A pod that needs a node feature (NodeDeclaredFeatures): its container restarts them all.
RESTART_ALL = "RestartAllContainersOnContainerExits"
FEATURES = policy()
FEATURES["spec"]["predicates"] = [{"name": "NodeDeclaredFeatures"}, {"name": "NodeResourcesFit"}]
RESTARTER = pod("restarter")
RESTARTER["spec"]["containers"][0].update(
    restartPolicy="Never",
    restartPolicyRules=[
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ],
)


def running_with(cpu: str) -> Raw:
    """A container status of an in-place resize: the kubelet allocated ``cpu`` and runs with
    it."""
    return {
        "name": "c",
        "allocatedResources": {"cpu": cpu},
        "resources": {"requests": {"cpu": cpu}},
    }


# Asks 1 CPU of n1's 2 but still runs with 2: it counts 2 until its resize down is done.
RESIZING = changed(pod("resizing", on="n1"), status__containerStatuses=[running_with("2")])


def declaring(name: str, *features: str) -> Raw:
    """Node ``name`` (as :func:`node` makes it) with ``status.declaredFeatures``."""
    raw = node(name)
    raw["status"]["declaredFeatures"] = sorted(features)
    return raw


@dataclass(frozen=True)
class Case:
    steps: list[Step]
    expect: Expect


CASES = {
    "a pending pod is bound and told": Case(
        [feed(node("n1"), policy(), pod("a")), settle()],
        Expect(binds=[("a", "n1")], events={"a": ["Scheduled"]}, where={"a": None}),
    ),
    "pods of other schedulers are left alone": Case(
        [feed(node("n1"), policy(), pod("a", scheduler="default-scheduler")), settle()],
        Expect(binds=[], events={"a": []}, where={"a": None}),
    ),
    "a pod that fits nowhere is parked and told once": Case(
        [feed(node("n1"), policy(), BIG), settle(), later(400), settle()],
        Expect(
            events={"big": ["FailedScheduling"]},
            unschedulable=["big"],
            where={"big": Where.UNSCHEDULABLE},
        ),
    ),
    # A DryRun decision binds nothing: once the policy enforces, its pods are decided and bound.
    "a DryRun policy switched to Enforce binds the pods it had decided": Case(
        [
            feed(node("n1"), policy("DryRun"), pod("a")),
            settle(),
            feed(policy("Enforce", generation=2)),
            settle(),
        ],
        Expect(binds=[("a", "n1")], events={"a": ["DryRunScheduled", "Scheduled"]}),
    ),
    "a DryRun pod is not decided again while its policy stays the same": Case(
        [
            feed(node("n1"), policy("DryRun"), pod("a")),
            settle(),
            feed(changed(pod("a"), metadata__labels={"x": "y"})),
            settle(),
        ],
        Expect(binds=[], events={"a": ["DryRunScheduled"]}),
    ),
    # A status-only update (such as the scheduler's own PodScheduled=False patch) cannot help a
    # parked pod, and leaves it parked.
    "a status-only update leaves an unschedulable pod parked": Case(
        [
            feed(node("n1"), policy(), BIG),
            settle(),
            later(20),
            feed(changed(BIG, status__conditions=[{"type": "PodScheduled", "status": "False"}])),
        ],
        Expect(where={"big": Where.UNSCHEDULABLE}),
    ),
    "a change of the pod's spec or labels moves it back": Case(
        [
            feed(node("n1"), policy(), BIG),
            settle(),
            later(20),
            feed(changed(BIG, metadata__labels={"tier": "web"})),
        ],
        Expect(where={"big": Where.ACTIVE}),
    ),
    # The ResourceClaim controller names a template's claim in the pod's status after creating
    # it: the claim's own event came too early to help, this one can.
    "a pod's claim named in its status moves it back": Case(
        [
            feed(node("n1"), policy(), BIG),
            settle(),
            later(20),
            feed(
                changed(
                    BIG,
                    status__resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "big-gpu"}],
                )
            ),
        ],
        Expect(where={"big": Where.ACTIVE}),
    ),
    # A gated pod is neither sent to pods/binding (which refuses it with 409) nor counted as an
    # error.
    "a gated pod costs nothing until its last gate is removed": Case(
        [feed(node("n1"), policy(), GATED), settle()],
        Expect(binds=[], events={"gated": []}, where={"gated": Where.GATED}),
    ),
    "a pod whose gates are removed is scheduled at once": Case(
        [
            feed(node("n1"), policy(), GATED),
            settle(),
            feed(changed(GATED, spec__schedulingGates=None)),
            settle(),
        ],
        Expect(binds=[("gated", "n1")], events={"gated": ["Scheduled"]}),
    ),
    "a pod gated before its policy exists waits gated": Case(
        [feed(node("n1"), GATED, policy()), settle()],
        Expect(binds=[], where={"gated": Where.GATED}),
    ),
    # kube-scheduler's skipPodSchedule: a pod being deleted (a finalizer holds it) is popped,
    # told "skip schedule deleting pod: NS/NAME" and dropped.
    "a pod being deleted is told it is skipped and leaves the queue": Case(
        [
            feed(node("n1"), policy(), changed(pod("a"), metadata__deletionTimestamp="now")),
            settle(),
        ],
        Expect(binds=[], events={"a": ["FailedScheduling"]}, where={"a": None}),
    ),
    "a parked pod that starts terminating is told once it is its turn, then leaves": Case(
        [
            feed(node("n1", cpu="1"), policy(), BIG),
            settle(),
            feed(changed(BIG, metadata__deletionTimestamp="now")),
            later(20),
            settle(),
        ],
        Expect(events={"big": ["FailedScheduling", "FailedScheduling"]}, where={"big": None}),
    ),
    "a DryRun pod that starts terminating is forgotten": Case(
        [
            feed(node("n1"), policy("DryRun"), pod("a")),
            settle(),
            feed(changed(pod("a"), metadata__deletionTimestamp="now")),
            settle(),
        ],
        Expect(events={"a": ["DryRunScheduled"]}, where={"a": None}),
    ),
    # v1.37 (kubernetes#139057): a gated pod's nomination holds its room all the same.
    "a gated pod nominated to a node holds its room": Case(
        [
            feed(
                node("n1"),
                policy(),
                pod("nominee", "2", priority=10, nominated="n1", gates=["example.com/hold"]),
                pod("a", priority=5),
            ),
            settle(),
        ],
        Expect(binds=[], where={"nominee": Where.GATED, "a": Where.UNSCHEDULABLE}),
    ),
    # Pods nominated by a preemption hold the room it made on their node.
    "a nominated pod of higher priority holds its node's room": Case(
        [
            feed(
                node("n1"),
                policy(),
                pod("nominee", "2", scheduler="default-scheduler", priority=10, nominated="n1"),
                pod("a", priority=5),
            ),
            settle(),
        ],
        Expect(binds=[], events={"a": ["FailedScheduling"]}, where={"a": Where.UNSCHEDULABLE}),
    ),
    "a nominated pod of lower priority does not hold the room": Case(
        [
            feed(
                node("n1"),
                policy(),
                pod("nominee", "2", scheduler="default-scheduler", priority=1, nominated="n1"),
                pod("a", priority=5),
            ),
            settle(),
        ],
        Expect(binds=[("a", "n1")]),
    ),
    "a nominated pod this scheduler assumed counts once, where it was assumed": Case(
        [
            feed(
                node("n1"),
                node("n2", "1"),
                policy(),
                pod("nominee", "1", priority=10, nominated="n1", selector={"only": "n2"}),
            ),
            feed(node("n2", "1", labels={"only": "n2"})),
            settle(),
            feed(pod("a", "2", priority=5)),
            settle(),
        ],
        Expect(binds=[("nominee", "n2"), ("a", "n1")]),
    ),
    "a nominated pod that gets bound counts as any assigned pod": Case(
        [
            feed(
                node("n1"),
                policy(),
                pod("nominee", "1", scheduler="default-scheduler", priority=10, nominated="n1"),
            ),
            feed(pod("nominee", "1", scheduler="default-scheduler", priority=10, on="n1")),
            feed(pod("a", priority=5)),
            settle(),
        ],
        Expect(binds=[("a", "n1")]),
    ),
    # Queueing hints: a node or pod change moves back only the parked pods it can help.
    "an assigned pod arriving does not wake a pod short of CPU": Case(
        [
            feed(node("n1"), policy(), pod("full", "2", on="n1"), pod("a")),
            settle(),
            later(20),
            feed(pod("other", "0", on="n1")),
        ],
        Expect(where={"a": Where.UNSCHEDULABLE}),
    ),
    "an assigned pod deleted from a node that could hold the pod wakes it": Case(
        [
            feed(node("n1"), policy(), pod("full", "2", on="n1"), pod("a")),
            settle(),
            later(20),
            delete_pod(pod("full", "2", on="n1")),
            settle(),
        ],
        Expect(binds=[("a", "n1")]),
    ),
    "a pod deleted from a node too small for the pod even when empty does not wake it": Case(
        [
            feed(node("n1"), policy(), BIG, pod("small", "1", on="n1")),
            settle(),
            later(20),
            delete_pod(pod("small", "1", on="n1")),
        ],
        Expect(where={"big": Where.UNSCHEDULABLE}),
    ),
    "a node label change does not wake a pod short of CPU": Case(
        [
            feed(node("n1"), policy(), BIG),
            settle(),
            later(20),
            feed(node("n1", labels={"rack": "r1"})),
        ],
        Expect(where={"big": Where.UNSCHEDULABLE}),
    ),
    "a node declaring the feature a pod needs wakes it": Case(
        [
            feed(node("n1"), FEATURES, RESTARTER),
            settle(),
            later(20),
            feed(declaring("n1", RESTART_ALL)),
            settle(),
        ],
        Expect(binds=[("restarter", "n1")]),
    ),
    "a node label change does not wake a pod needing a feature": Case(
        [
            feed(node("n1"), FEATURES, RESTARTER),
            settle(),
            later(20),
            feed(node("n1", labels={"rack": "r1"})),
        ],
        Expect(where={"restarter": Where.UNSCHEDULABLE}),
    ),
    "a pod on the node running with less after a resize wakes a pod short of CPU": Case(
        [
            feed(node("n1"), policy(), RESIZING, pod("a")),
            settle(),
            later(20),
            feed(changed(RESIZING, status__containerStatuses=[running_with("1")])),
            settle(),
        ],
        Expect(binds=[("a", "n1")], events={"a": ["FailedScheduling", "Scheduled"]}),
    ),
    "a node added that is large enough wakes a pod short of CPU": Case(
        [feed(node("n1"), policy(), BIG), settle(), later(20), feed(node("n2", "8")), settle()],
        Expect(binds=[("big", "n2")]),
    ),
    "a node added that is too small does not wake it": Case(
        [feed(node("n1"), policy(), BIG), settle(), later(20), feed(node("n2", "3"))],
        Expect(where={"big": Where.UNSCHEDULABLE}),
    ),
    "a node label change wakes a pod whose node selector matched no node": Case(
        [
            feed(node("n1"), policy(), pod("picky", selector={"disk": "ssd"})),
            settle(),
            later(20),
            feed(node("n1", labels={"disk": "ssd"})),
            settle(),
        ],
        Expect(binds=[("picky", "n1")]),
    ),
    "a node label change that leaves the node unmatched does not wake that pod": Case(
        [
            feed(node("n1"), policy(), pod("picky", selector={"disk": "ssd"})),
            settle(),
            later(20),
            feed(node("n1", labels={"disk": "hdd"})),
        ],
        Expect(where={"picky": Where.UNSCHEDULABLE}),
    ),
    "a pod deleted does not wake a pod whose node selector matched no node": Case(
        [
            feed(node("n1"), policy(), pod("x", on="n1"), pod("picky", selector={"d": "s"})),
            settle(),
            later(20),
            delete_pod(pod("x", on="n1")),
        ],
        Expect(where={"picky": Where.UNSCHEDULABLE}),
    ),
    "a deleted pod frees a host port only if it held that port": Case(
        [
            feed(node("n1", "8"), policy(), pod("holder", "0", on="n1", host_port=80)),
            feed(pod("other", "0", on="n1", host_port=81), pod("a", "0", host_port=80)),
            settle(),
            later(20),
            delete_pod(pod("other", "0", on="n1", host_port=81)),
        ],
        Expect(where={"a": Where.UNSCHEDULABLE}),
    ),
    "a policy change wakes its parked pods": Case(
        [feed(node("n1"), policy(), BIG), settle(), later(20), feed(policy(generation=2))],
        Expect(where={"big": Where.ACTIVE}),
    ),
    # After a failover the new leader writes on from the status it reads on taking over, not
    # from the one it kept as a standby.
    "a new leader continues the status it reads on taking over, not the one it saw": Case(
        [
            feed(node("n1"), policy(status={"scheduled": 3})),
            feed(policy(status={"scheduled": 7, "lastDecision": {"pod": "ns/x", "node": "n1"}})),
            lead(policy(status={"scheduled": 9, "lastDecision": {"pod": "ns/y", "node": "n1"}})),
            feed(pod("a")),
            settle(),
        ],
        Expect(binds=[("a", "n1")], status={"scheduled": 10}),
    ),
    "a leader keeps its own counts when its writes come back through the watch": Case(
        [
            feed(node("n1")),
            lead(policy(status={"scheduled": 4})),
            feed(pod("a")),
            settle(),
            feed(policy(status={"scheduled": 4})),  # its write of before the bind, late
        ],
        Expect(binds=[("a", "n1")], status={"scheduled": 5}),
    ),
    # A policy is known by its uid: one deleted and created again under its name (generation 1
    # again) is served with its new spec (issue 11).
    "a policy deleted and created again under its name is served as it now is": Case(
        [
            feed(node("n1"), policy(uid="first")),
            feed(policy(uid="second", scheduler="other")),
            feed(pod("a"), pod("b", scheduler="other")),
            settle(),
        ],
        Expect(
            binds=[("b", "n1")],
            events={"a": ["NoSchedulingPolicy"], "b": ["Scheduled"]},
            status={"schedulerName": "other"},
        ),
    ),
    "a late deletion of the object a policy replaced leaves the new one serving": Case(
        [
            feed(node("n1"), policy(uid="first")),
            feed(policy(uid="second")),
            delete_policy(policy(uid="first")),
            feed(pod("a")),
            settle(),
        ],
        Expect(binds=[("a", "n1")], events={"a": ["Scheduled"]}),
    ),
    "a policy's deletion retires its scheduler name": Case(
        [feed(node("n1"), policy()), delete_policy(policy()), feed(pod("a")), settle()],
        Expect(binds=[], events={"a": ["NoSchedulingPolicy"]}),
    ),
    # While a watch is down the cache may miss what was bound meanwhile (a kube-apiserver
    # restart, listings refused): no pod is decided until every watch has listed again (issue 11).
    "no pod is decided while a watch that broke off has not listed again": Case(
        [feed(node("n1"), policy()), watch("pods", False), feed(pod("a")), settle()],
        Expect(binds=[], events={"a": []}, where={"a": Where.ACTIVE}),
    ),
    "decisions go on once every broken watch has listed again": Case(
        [
            feed(node("n1"), policy(), pod("a")),
            watch("pods", False),
            watch("nodes", False),
            watch("pods", True),
            settle(),
            watch("nodes", True),
            settle(),
        ],
        Expect(binds=[("a", "n1")]),
    ),
    "a Service's selector spreads the pods it selects": Case(
        [
            workload("Service", WEB_SERVICE),
            feed(*HOSTS, SPREADING, WEB, pod("web-1", labels={"app": "web"})),
            settle(),
        ],
        Expect(binds=[("web-1", "n2")]),
    ),
    "a Service deleted spreads nothing": Case(
        [
            workload("Service", WEB_SERVICE),
            workload("Service", WEB_SERVICE, deleted=True),
            feed(*HOSTS, SPREADING, WEB, pod("web-1", labels={"app": "web"})),
            settle(),
        ],
        Expect(binds=[("web-1", "n1")]),
    ),
    "a namespace's labels select the pods of affinity terms": Case(
        [namespace(DATA), feed(*HOSTS, SPREADING, DB, NEAR_DB), settle()],
        Expect(binds=[("near", "n1")]),
    ),
    "a namespace deleted takes its labels along": Case(
        [
            namespace(DATA),
            namespace(DATA, deleted=True),
            feed(*HOSTS, SPREADING, DB, NEAR_DB),
            settle(),
        ],
        Expect(binds=[], where={"near": Where.UNSCHEDULABLE}),
    ),
    # The watch may bring the scheduler's own PodScheduled patch of a pod, still pending, after
    # its bind succeeded: deciding that view again would bind twice, and the second bind's
    # failure would free the pod's room on the node it is bound to (issue 11).
    "a pending view that comes after the pod's bind succeeded is stale": Case(
        [
            feed(node("n1"), policy(), pod("a")),
            settle(),
            feed(
                changed(pod("a"), status__conditions=[{"type": "PodScheduled", "status": "False"}])
            ),
            settle(),
        ],
        Expect(binds=[("a", "n1")], events={"a": ["Scheduled"]}, where={"a": None}),
    ),
    "a policy created again under its name starts from its own status": Case(
        [
            feed(node("n1"), policy(uid="first", status={"scheduled": 3}), pod("a")),
            settle(),
            feed(policy(uid="second")),
        ],
        Expect(binds=[("a", "n1")], status={"scheduled": 0}),
    ),
    "a policy's Permit plugin lets one pod bind and refuses the next, which backs off": Case(
        [feed(node("n1"), RATE_LIMITED, pod("a")), settle(), feed(pod("b")), settle()],
        Expect(
            binds=[("a", "n1")],
            events={"a": ["Scheduled"], "b": ["FailedScheduling"]},
            where={"a": None, "b": Where.BACKOFF},
            refusals={
                "b": "BindRateLimit: the policy's pods go to binding at most 0.001 a second, in "
                "bursts of 1; tried again later"
            },
        ),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_schedule_one(case: Case) -> None:
    run = Run()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        for step in case.steps:
            step(run)
        check(run, case.expect)
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def test_a_pod_being_deleted_is_told_in_kubes_words() -> None:
    run = Run()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        feed(node("n1"), policy(), changed(pod("a"), metadata__deletionTimestamp="now"))(run)
        settle()(run)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert run.memory.events == [
        ("ns/a", "Warning", "FailedScheduling", "skip schedule deleting pod: ns/a")
    ]
    assert run.memory.conditions == []


# --- The extension points: which run, in which order, and what a refusal undoes -------------


class Recorder(
    Filter[str], PreEnqueue, PostFilter[str], Reserve[str], Permit[str], PreBind[str], PostBind[str]
):
    """A plugin at every extension point that logs each call, with its cycle state, and refuses
    at the step named ``refuse``."""

    name = "Recorder"

    def __init__(self, log: list[str], refuse: str = "", raises: str = "") -> None:
        self.log = log
        self.refuse = refuse
        self.raises = raises

    def _call(self, step: str, pod: PodView, state: str | None = None) -> str | None:
        self.log.append(f"{step} {pod.name}" + (f" ({state})" if state else ""))
        if step == self.raises and pod.name == "a":
            raise RuntimeError(f"{step} broke")
        return f"{step} refused" if step == self.refuse else None

    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        if pod.labels.get("hold"):
            self._call("pre_enqueue", pod)
            return "held by Recorder"
        return None if self.raises != "pre_enqueue" else self._call("pre_enqueue", pod)

    def pre_filter(self, cycle: Cycle) -> str:
        return f"state of {cycle.pod.name}"

    def filter(self, state: str, pod: PodView, node: Any) -> tuple[str, ...]:
        return ("Recorder says no",) if pod.labels.get("reject") else ()

    def post_filter(self, state: str, cycle: Cycle, reasons: Any) -> PostFilterResult:
        self._call("post_filter", cycle.pod, state)
        return PostFilterResult(message="Recorder found no victim.")

    def reserve(self, state: str, pod: PodView, node: str) -> str | None:
        return self._call("reserve", pod, state)

    def unreserve(self, state: str, pod: PodView, node: str) -> None:
        self._call("unreserve", pod, state)

    def permit(self, state: str, pod: PodView, node: str) -> str | None:
        return self._call("permit", pod)

    def pre_flight(self, state: str, pod: PodView, node: str) -> bool:
        return bool(pod.labels.get("waits"))

    async def pre_bind(
        self, state: str, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        await objects.patch(ObjectRef("v1", "persistentvolumeclaims", "claim", "ns"), {"x": 1})
        return self._call("pre_bind", pod)

    def post_bind(self, state: str, pod: PodView, node: str) -> None:
        self._call("post_bind", pod)


class FailingBinder(InMemory):
    async def bind(self, pod: PodView, node: str) -> BindResult:
        return BindResult(Outcome.FAILED, "etcd said no")


@dataclass(frozen=True)
class PointCase:
    log: list[str]
    binds: list[tuple[str, str]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    where: Where | None = None
    refuse: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    binder_fails: bool = False
    errors: list[str] = field(default_factory=list)
    """The messages of pod a's PodScheduled=False, reason=SchedulerError conditions."""
    nominations: list[str] = field(default_factory=list)
    """The nodes pod a was nominated to ("": cleared)."""


S = "(state of a)"
POINTS = {
    "every step runs once, in kube-scheduler's order, with the plugin's cycle state": PointCase(
        [f"reserve a {S}", "permit a", "pre_bind a", "post_bind a"],
        binds=[("a", "n1")],
        events=["Scheduled"],
    ),
    "a refused reserve unreserves and backs off, a SchedulerError": PointCase(
        [f"reserve a {S}", f"unreserve a {S}"],
        events=["FailedScheduling"],
        where=Where.BACKOFF,
        refuse="reserve",
        errors=["reserve refused"],
    ),
    "a refused permit unreserves and backs off": PointCase(
        [f"reserve a {S}", "permit a", f"unreserve a {S}"],
        events=["FailedScheduling"],
        where=Where.BACKOFF,
        refuse="permit",
        errors=["permit refused"],
    ),
    "a refused pre-bind unreserves and binds nothing": PointCase(
        [f"reserve a {S}", "permit a", "pre_bind a", f"unreserve a {S}"],
        events=["FailedScheduling"],
        where=Where.BACKOFF,
        refuse="pre_bind",
        errors=["pre_bind refused"],
    ),
    "a failed bind unreserves": PointCase(
        [f"reserve a {S}", "permit a", "pre_bind a", f"unreserve a {S}"],
        events=["FailedScheduling"],
        where=Where.BACKOFF,
        binder_fails=True,
        errors=["Binding rejected: etcd said no"],
    ),
    # v1.35+ (NominatedNodeNameForExpectation): the node is told before PreBind waits.
    "a pre-bind with work to do has the pod nominated to the node first": PointCase(
        [f"reserve a {S}", "permit a", "pre_bind a", "post_bind a"],
        binds=[("a", "n1")],
        events=["Scheduled"],
        labels={"waits": "yes"},
        nominations=["n1"],
    ),
    "then a refused pre-bind clears the nomination with its SchedulerError": PointCase(
        [f"reserve a {S}", "permit a", "pre_bind a", f"unreserve a {S}"],
        events=["FailedScheduling"],
        where=Where.BACKOFF,
        refuse="pre_bind",
        labels={"waits": "yes"},
        errors=["pre_bind refused"],
        nominations=["n1"],
    ),
    "no node fits: post-filter runs and its words end the message": PointCase(
        [f"post_filter a {S}"],
        events=["FailedScheduling"],
        where=Where.UNSCHEDULABLE,
        labels={"reject": "yes"},
    ),
    "a policy's pre-enqueue plugin holds the pod before any cycle": PointCase(
        ["pre_enqueue a"], where=Where.GATED, labels={"hold": "yes"}
    ),
}


@pytest.mark.parametrize("case", POINTS.values(), ids=POINTS.keys())
def test_extension_points(case: PointCase, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    plugin = Recorder(log, case.refuse)

    def with_recorder(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        compiled.pipeline.filters = [*compiled.pipeline.filters, plugin]
        return dataclasses.replace(compiled, extensions=ExtensionPoints.of([plugin]))

    monkeypatch.setattr(policies, "compile_policy", with_recorder)  # as the table compiles
    run = Run(memory=FailingBinder() if case.binder_fails else InMemory())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        feed(node("n1"), policy(), pod("a", labels=case.labels))(run)
        settle()(run)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert log == case.log
    assert run.memory.binds == [(f"ns/{p}", n) for p, n in case.binds]
    assert run.reasons("a") == case.events
    assert run.where("a") == case.where
    assert run.memory.errors == [("ns/a", message) for message in case.errors]
    assert run.memory.nominations == [("ns/a", node) for node in case.nominations]
    # Assumed until the watch shows the pod bound; forgotten after a failure.
    assert run.scheduler.cache.is_assumed("a") == bool(case.binds)
    if case.where is Where.UNSCHEDULABLE:
        assert run.memory.events[-1][3].endswith(" Recorder found no victim.")
    if "pre_bind a" in log:
        assert run.memory.patches == [
            (ObjectRef("v1", "persistentvolumeclaims", "claim", "ns"), {"x": 1})
        ]


@dataclass(frozen=True)
class RaiseCase:
    raises: str
    message: str = ""
    """The FailedScheduling message of pod a; none when the raise costs no attempt."""
    where: Where | None = Where.BACKOFF
    bound: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    refuse: str = ""


RAISES = {
    "post-filter: the attempt fails in error and the pod backs off": RaiseCase(
        "post_filter",
        'running PostFilter plugin "Recorder": post_filter broke',
        labels={"reject": "yes"},
    ),
    "reserve: unreserved, the attempt fails in error": RaiseCase(
        "reserve", 'running Reserve plugin "Recorder": reserve broke'
    ),
    "permit: unreserved, the attempt fails in error": RaiseCase(
        "permit", 'running Permit plugin "Recorder": permit broke'
    ),
    "pre-bind: unreserved, nothing bound, the attempt fails in error": RaiseCase(
        "pre_bind", 'running PreBind plugin "Recorder": pre_bind broke'
    ),
    "post-bind: logged, the pod stays bound": RaiseCase("post_bind", where=None, bound=True),
    "unreserve: logged, the refusal that called it is told": RaiseCase(
        "unreserve", "permit refused", refuse="permit"
    ),
    "pre-enqueue: the pod is held, no attempt": RaiseCase("pre_enqueue", where=Where.GATED),
}


@pytest.mark.parametrize("case", RAISES.values(), ids=RAISES.keys())
def test_a_plugin_that_raises_costs_its_pod_an_attempt_not_the_loop(
    case: RaiseCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As kube-scheduler takes a plugin's error status: pod a's attempt ends, what it reserved
    is unreserved, and pod b, created after it, is bound by the same loop."""
    plugin = Recorder([], refuse=case.refuse, raises=case.raises)

    def with_recorder(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        compiled.pipeline.filters = [*compiled.pipeline.filters, plugin]
        return dataclasses.replace(compiled, extensions=ExtensionPoints.of([plugin]))

    monkeypatch.setattr(policies, "compile_policy", with_recorder)
    run = Run()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        feed(node("n1"), policy(), pod("a", labels=case.labels))(run)
        settle()(run)
        feed(pod("b"))(run)
        settle()(run)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert run.where("a") == case.where
    told = [(reason, message) for key, _, reason, message in run.memory.events if key == "ns/a"]
    if case.bound:
        assert [reason for reason, _ in told] == ["Scheduled"]
    else:
        assert told == ([("FailedScheduling", case.message)] if case.message else [])
    assert (("ns/a", "n1") in run.memory.binds) == case.bound
    assert run.scheduler.cache.is_assumed("a") == case.bound
    if not case.refuse:
        assert ("ns/b", "n1") in run.memory.binds


def test_each_condition_observes_the_newest_generation_even_when_unchanged() -> None:
    """Issue 11: after 200 quick edits the conditions' observedGeneration stayed at an old one,
    as if Ready and Valid described an old spec."""
    run = Run()
    for generation in range(1, 6):
        run.scheduler.policy_changed(policy(generation=generation))
    status = run.scheduler.status.body("test", 0)["status"]
    assert status["observedGeneration"] == 5
    assert {c["type"]: c["observedGeneration"] for c in status["conditions"]} == {
        "Ready": 5,
        "Valid": 5,
        "Conflict": 5,
    }


class ConflictBinder(InMemory):
    """Answers every bind with 409, after ``meanwhile`` (what the watch shows before the reply)."""

    def __init__(self, meanwhile: Callable[[PodView], None] | None = None) -> None:
        super().__init__()
        self.meanwhile = meanwhile

    async def bind(self, pod: PodView, node: str) -> BindResult:
        if self.meanwhile is not None:
            self.meanwhile(pod)
        return BindResult(Outcome.TAKEN, "Operation cannot be fulfilled: etcd leader changed")


def test_a_conflict_is_retried_unless_the_watch_shows_the_pod_assigned() -> None:
    """Issue 11: the API server answers 409 for other failures too (an etcd error during a
    restart); reading every 409 as "assigned already" left pods pending for good."""
    run = Run(memory=ConflictBinder())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        feed(node("n1"), policy(), pod("a"))(run)
        settle()(run)
        assert run.where("a") is Where.BACKOFF
        assert run.reasons("a") == ["FailedScheduling"]
        assert not run.scheduler.cache.is_assumed("a")

        # Bound by someone else: the watch showed it before the reply came.
        binder = ConflictBinder()
        other = Run(memory=binder)
        binder.meanwhile = lambda p: other.scheduler.pod_changed(pod(p.name, on="n1"))
        feed(node("n1"), policy(), pod("b"))(other)
        settle()(other)
        assert other.where("b") is None
        assert other.reasons("b") == []
        assert other.scheduler.cache.node_of("b") == "n1"
    finally:
        loop.close()
        asyncio.set_event_loop(None)


class GoneStore(InMemory):
    """Answers every status write as the API server does for a policy that is gone."""

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult:
        return WriteResult.NOT_FOUND


def test_a_status_write_to_a_vanished_policy_breaks_nothing_else() -> None:
    """Issue 11: after a 404 on a deleted policy's status, every later policy event failed
    with KeyError, and new policies got no conditions."""
    run = Run(memory=GoneStore())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        run.scheduler.policy_changed(policy())
        loop.run_until_complete(run.scheduler.status.flush())
        run.scheduler.policy_changed(policy(generation=2))
        status = run.scheduler.status.body("test", 0)["status"]
        assert status["observedGeneration"] == 2
        run.scheduler.policy_deleted(policy())
        assert list(run.scheduler.policies) == []
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def test_the_overcommit_condition_comes_and_goes_with_node_resources_fit() -> None:
    run = Run()
    loose = policy()
    loose["spec"]["predicates"] = [{"name": "NodePorts"}]
    run.scheduler.policy_changed(loose)
    status = run.scheduler.status.body("test", 0)["status"]
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Valid", "Conflict", "Overcommit"]
    run.scheduler.policy_changed(policy(generation=2))
    status = run.scheduler.status.body("test", 0)["status"]
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Valid", "Conflict"]
