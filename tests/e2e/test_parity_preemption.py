"""Parity with kube-scheduler's preemption (issue 14): DefaultPreemption as a PostFilter.

Preemption changes the cluster, so the gated-pod trick of test_parity (both schedulers deciding
one pod over one state) cannot work here. Each scenario is built twice instead, on two disjoint
sets of nodes in two namespaces: one side served by kube-scheduler (``default-scheduler``), the
other by the operator with a policy made from examples/policies/default-profile.yaml (with the
PostFilter ``DefaultPreemption``). Nodes are named ``<prefix>-<side>-<suffix>`` and labelled with
their side; every pod is kept to its side's nodes by a nodeSelector. The policy has no
nodeSelector of its own, so both schedulers see every node of the cluster, and both count the
other side's nodes under "node(s) didn't match Pod's node affinity/selector": their messages are
comparable word for word.

Low-priority pods are created bound (``spec.nodeName``, with a ``status.startTime``, as a kubelet
would report it: kube breaks ties between victims by start time). Then a preemptor is submitted
to each side and what each scheduler did is compared, with node names, namespaces, uids and
scheduler names replaced: the victims (the pods given the ``DisruptionTarget`` condition and
deleted gracefully), the preemptor's ``status.nominatedNodeName``, the ``Preempted`` events, the
node the preemptor is finally bound to, its first ``FailedScheduling`` message, its
``PodScheduled`` condition's message while pending, and its ``Scheduled`` message (without the
policy and score the operator adds to kube's text).

No kubelet runs: a pod deleted gracefully would stay Terminating forever. As kube-scheduler's
integration tests do, the test stands in for the kubelet: a pod seen with a deletionTimestamp is
recorded as a victim (its conditions read) and then force-deleted. It stays on the bare cluster:
kwok would remove a victim before the test saw it Terminating, and would overwrite the start
times that break ties between victims. (test_real_cluster lets kwok remove them.)

Each scenario also says what kube-scheduler should do (worked out by hand from v1.37.2's
preemption: fewest PDB violations, then the lowest highest-priority victim, the smallest sum of
victims' priorities each offset by 2^31, the fewest victims, the latest start time of the
highest-priority victims; on a node, the pods whose eviction would break a budget are added back
first, then the others, most important first) and the exact FailedScheduling message it posts,
which checks that the scenario exercises what it claims to.

The last test, on the same two sides, is about the queue rather than preemption: a pod parked
after failed attempts and moved back by a node that fits is retried at once, not once its backoff
ends (kube-scheduler v1.37's SchedulerPopFromBackoffQ), as a preemptor is when its victims leave.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, items
from harness.objects import node
from harness.sides import Side as SideBase
from harness.sides import Sides as SidesOf
from harness.sides import clean_up, kubelet, priority_classes, report, settle_both
from test_parity_volumes import claim, storage_class

DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"
SIDE_LABEL = "preemption.policy-scheduler.dev/side"
TEST_LABEL = "preemption.policy-scheduler.dev/test"
ZONE_LABEL = "preemption.policy-scheduler.dev/zone"
KUBE_SCHEDULER = "default-scheduler"
PAUSE = "registry.k8s.io/pause:3.10"
TIMEOUT = 90.0
# Once a side's preemptor is decided, how long its Preempted events may take to arrive, and how
# long an unschedulable pod's side is watched for preemptions that should not happen.
SETTLE = 3.0

PRIORITIES = {"least": 10, "lowest": 50, "low": 100, "mid": 200, "high": 1000}
"""PriorityClasses (named ``<prefix>-<key>``); ``never`` is ``high`` with preemptionPolicy
Never."""


@dataclass(frozen=True)
class Side(SideBase):
    """One copy of a scenario, with its nodes and pods."""

    def node(self, suffix: str, *, cpu: str = "2", labels: dict[str, str] | None = None) -> Any:
        labels = {SIDE_LABEL: self.namespace, TEST_LABEL: self.prefix, **(labels or {})}
        return node(self.named(suffix), cpu=cpu, memory="8Gi", labels=labels)

    def pod(
        self,
        name: str,
        priority: str,
        *,
        cpu: str = "1",
        labels: dict[str, str] | None = None,
        on: str | None = None,
        spec: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A pod of class ``<prefix>-<priority>`` kept to this side's nodes; bound to node
        ``on`` (a suffix) from the start if given."""
        body: dict[str, Any] = {
            "schedulerName": self.scheduler,
            "priorityClassName": f"{self.prefix}-{priority}",
            "nodeSelector": {SIDE_LABEL: self.namespace},
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE,
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
            **(spec or {}),
        }
        if on is not None:
            body["nodeName"] = self.named(on)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": body,
        }


@dataclass
class Scenario:
    """Nodes, pods bound from the start (oldest first: each started a minute after the one
    before), other namespaced objects (PDBs, with the status their controller would write), the
    preemptors (submitted together), and what kube-scheduler should do with each."""

    nodes: list[dict[str, Any]]
    existing: list[dict[str, Any]]
    preemptors: list[dict[str, Any]]
    expect: dict[str, Expect]
    objects: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Expect:
    """Where kube-scheduler binds the preemptor (a node suffix; None: it stays pending), whom it
    evicts, and its first FailedScheduling message with ``{all}`` for the number of nodes in the
    cluster and ``{others}`` for the number not on the pod's side. For a preemptor that made
    room, the message is why no node fitted: :meth:`said` adds the preemption's own words."""

    node: str | None
    victims: frozenset[str] = frozenset()
    message: str | None = None

    def said(self, every: int, others: int) -> str | None:
        """The whole message expected. Since v1.37 (kubernetes#140180) a successful preemption
        ends it with where it found room and how many victims ("victims" even for one)."""
        if self.message is None:
            return None
        message = self.message.format(all=every, others=others, not_full=every - 1)
        if self.node is not None and self.victims:
            message += (
                f" preemption: found a potential placement for pod on node {self.node}, "
                f"preempting {len(self.victims)} victims"
            )
        return message


@dataclass
class Outcome:
    """What one scheduler did with one preemptor, in the side's normal form."""

    node: str | None = None
    nominated: str | None = None
    victims: dict[str, str] = field(default_factory=dict)
    """Victim -> its node, its deletion's grace period (its own 30 s: a graceful delete), its
    DisruptionTarget condition (status, reason, message)."""
    preempted: list[str] = field(default_factory=list)
    """The Preempted events (type, reason, action, regarding, related, message), sorted."""
    failed: str | None = None
    """The preemptor's first FailedScheduling message."""
    pending: str | None = None
    """The preemptor's PodScheduled condition message while it is not bound."""
    scheduled: str | None = None
    """The preemptor's Scheduled event message, once bound (without what the operator adds
    after kube's text: the policy and the score)."""

    def lines(self) -> list[str]:
        return [
            f"node={self.node} nominated={self.nominated}",
            f"failed={self.failed!r}",
            f"pending={self.pending!r}",
            f"scheduled={self.scheduled!r}",
            *(f"victim {name}: {what}" for name, what in sorted(self.victims.items())),
            *(f"event {event}" for event in self.preempted),
        ]


COMPARED = ("node", "nominated", "victims", "preempted", "failed", "pending", "scheduled")

Build = Callable[[Side], Scenario]


# --- the fixture: two sides, priority classes, the operator --------------------------------------


Sides = SidesOf[Side]


def preemption_policy(name: str) -> dict[str, Any]:
    """default-profile.yaml (with DefaultPreemption, as kube's default profile), over every
    node, serving ``name``."""
    policy: dict[str, Any] = yaml.safe_load(DEFAULT_PROFILE.read_text())
    assert {"name": "DefaultPreemption"} in policy["spec"].get("postFilters", [])
    policy["metadata"] = {"name": name, "labels": {TEST_LABEL: name}}
    policy["spec"].pop("nodeSelector", None)
    return policy


@pytest.fixture
def sides(cluster: Cluster, operator: Operator) -> Iterator[Sides]:
    prefix = f"pre-{uuid.uuid4().hex[:6]}"
    kube = Side("kube", prefix, KUBE_SCHEDULER)
    ours = Side("ours", prefix, f"{prefix}-policy")
    for side in (kube, ours):
        cluster.kubectl("create", "namespace", side.namespace)
    classes = priority_classes(TEST_LABEL, prefix, PRIORITIES)
    classes.append(
        {
            **classes[-1],
            "metadata": {"name": f"{prefix}-never", "labels": {TEST_LABEL: prefix}},
            "preemptionPolicy": "Never",
        }
    )
    cluster.apply(*classes)
    cluster.apply(preemption_policy(ours.scheduler))
    operator.start()
    try:
        yield Sides(cluster, kube, ours)
    finally:
        clean_up(cluster, (kube, ours), TEST_LABEL, prefix, ours.scheduler)


# --- building a scenario and watching both schedulers -------------------------------------------


def set_up(cluster: Cluster, side: Side, scenario: Scenario) -> None:
    cluster.apply(*scenario.nodes)
    if scenario.objects:
        cluster.apply(*scenario.objects, namespace=side.namespace)
        for obj in scenario.objects:
            if obj.get("status"):
                write_status(cluster, side.namespace, obj)
    cluster.apply(*scenario.existing, namespace=side.namespace)
    # As a kubelet reports them: running, started a minute apart in the order given.
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    for i, existing in enumerate(scenario.existing):
        started = (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_status(
            cluster,
            side.namespace,
            {**existing, "status": {"phase": "Running", "startTime": started}},
        )


def write_status(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl(
        "patch", obj["kind"].lower(), obj["metadata"]["name"], "-n", namespace,
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": obj["status"]}),
    )  # fmt: skip


class Watch:
    """One side's preemptor: the stand-in kubelet for its namespace, and what it sees."""

    def __init__(self, cluster: Cluster, side: Side, preemptor: str, expect: Expect) -> None:
        self.cluster = cluster
        self.side = side
        self.preemptor = preemptor
        self.expect = expect
        self.outcome = Outcome()
        self.decided_at: float | None = None

    def pods(self) -> list[dict[str, Any]]:
        return items(self.cluster, "pods", "-n", self.side.namespace)

    def kubelet(self, pods: Sequence[dict[str, Any]]) -> None:
        """Record the pods being deleted as victims, then finish their deletion."""
        self.outcome.victims.update(kubelet(self.cluster, self.side, pods))

    def poll(self) -> bool:
        """One look; True once the side is settled."""
        pods = self.pods()
        self.kubelet(pods)
        mine = next((p for p in pods if p["metadata"]["name"] == self.preemptor), None)
        if mine is not None:
            nominated = mine.get("status", {}).get("nominatedNodeName")
            self.outcome.nominated = self.side.normal(nominated) if nominated else None
            bound_to = mine["spec"].get("nodeName")
            self.outcome.node = self.side.normal(bound_to) if bound_to else None
            self.outcome.pending = None
            for c in mine.get("status", {}).get("conditions", ()):
                if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                    self.outcome.pending = self.side.normal(c.get("message", ""))
        self.read_events()
        decided = self.outcome.node is not None or (
            self.expect.node is None and self.outcome.pending is not None
        )
        if decided and self.decided_at is None:
            self.decided_at = time.monotonic()
        if self.decided_at is None:
            return False
        if time.monotonic() - self.decided_at < SETTLE:
            return False
        if self.outcome.node is None:
            return True
        # Bound: its events may still be on their way.
        told = len(self.outcome.preempted) >= len(self.outcome.victims)
        return told and self.outcome.scheduled is not None

    def read_events(self) -> None:
        events = side_events(self.cluster, self.side)
        failed = messages(events, "FailedScheduling", self.preemptor)
        self.outcome.failed = self.side.normal(failed[0]) if failed else None
        scheduled = messages(events, "Scheduled", self.preemptor)
        # The operator adds which policy decided and its score, by design: left out.
        told = scheduled[-1].partition(" (SchedulingPolicy ")[0] if scheduled else None
        self.outcome.scheduled = self.side.normal(told) if told else None
        self.outcome.preempted = sorted(
            self.side.normal(
                " | ".join(
                    (
                        e.get("type", ""),
                        e["reason"],
                        e.get("action", ""),
                        e["involvedObject"]["name"],
                        (e.get("related") or {}).get("name", ""),
                        e.get("message", ""),
                    )
                )
            )
            for e in events
            if e["reason"] == "Preempted"
        )


def side_events(cluster: Cluster, side: Side) -> list[dict[str, Any]]:
    """The events of the side's namespace, oldest first."""
    return sorted(
        items(cluster, "events", "-n", side.namespace),
        key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "",
    )


def messages(events: Sequence[dict[str, Any]], reason: str, pod: str) -> list[str]:
    """The messages of the events of ``reason`` about the pod named ``pod``, in order."""
    return [
        e["message"] for e in events if e["reason"] == reason and e["involvedObject"]["name"] == pod
    ]


def run(sides: Sides, build: Build) -> None:
    """Build the scenario on both sides, submit the preemptors to both, stand in for the kubelet
    until both schedulers are done, then compare; all differences at the end."""
    cluster = sides.cluster
    scenarios = {side.name: build(side) for side in sides.both()}
    for side in sides.both():
        set_up(cluster, side, scenarios[side.name])
    # kube-scheduler and the operator learn of nodes and bound pods through their watches; give
    # them a moment, as nothing in the API tells when their caches have caught up.
    time.sleep(1.0)
    counts = {
        side.name: len(items(cluster, "nodes", "-l", f"{SIDE_LABEL}={side.namespace}"))
        for side in sides.both()
    }
    every = len(items(cluster, "nodes"))
    problems: list[str] = []
    kube_scenario = scenarios["kube"]
    for preemptor in kube_scenario.preemptors:
        name = preemptor["metadata"]["name"]
        expect = kube_scenario.expect[name]
        watches = [Watch(cluster, side, name, expect) for side in sides.both()]
        for side in sides.both():
            (mine,) = (p for p in scenarios[side.name].preemptors if p["metadata"]["name"] == name)
            cluster.apply(mine, namespace=side.namespace)
        found = settle_both(watches, TIMEOUT)
        kube, ours = (w.outcome for w in watches)
        summary = report(name, kube.lines(), ours.lines())
        found += [f"scenario: {p}" for p in unexpected(kube, expect, every, counts)]
        found += [
            f"{what} differs: kube {getattr(kube, what)!r}, ours {getattr(ours, what)!r}"
            for what in COMPARED
            if getattr(kube, what) != getattr(ours, what)
        ]
        if found:
            problems.append("\n".join([*found, summary]))
    assert not problems, "\n\n".join(problems)


def unexpected(kube: Outcome, expect: Expect, every: int, counts: dict[str, int]) -> list[str]:
    """How kube-scheduler's outcome differs from what the scenario expects of it."""
    problems = []
    if kube.node != expect.node:
        problems.append(f"expected kube-scheduler to bind on {expect.node}")
    if set(kube.victims) != expect.victims:
        problems.append(f"expected kube-scheduler to evict {sorted(expect.victims)}")
    message = expect.said(every, every - counts["kube"])
    if message is not None and kube.failed != message:
        problems.append(f"expected kube-scheduler to say {message!r}")
    return problems


# --- scenarios ----------------------------------------------------------------------------------

# kube-scheduler v1.37.2's FailedScheduling messages, as it posted them on this control plane
# ({all}: the nodes of the cluster, {others}: those of the other side, which the pod's
# nodeSelector rules out). A preemptor that made room is told why no node fitted and where it
# found room (Expect.said); one that could not is told what DefaultPreemption said too
# (DynamicResources' PostFilter, before it, says nothing since v1.37: v1.34 added "no new claims
# to deallocate, ").
INSUFFICIENT_2 = (
    "0/{all} nodes are available: 2 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector."
)
INSUFFICIENT_3 = INSUFFICIENT_2.replace("2 Insufficient", "3 Insufficient")
ANTI_AFFINITY = (
    "0/{all} nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 node(s) "
    "didn't satisfy existing pods anti-affinity rules, {others} node(s) didn't match Pod's node "
    "affinity/selector."
)
DAEMON = (
    "0/{all} nodes are available: 1 Insufficient cpu, {not_full} node(s) didn't satisfy "
    "plugin(s) [NodeAffinity]."
)


def test_fewest_and_lowest_victims(sides: Sides) -> None:
    """Three full nodes of 2 cpu; the preemptor needs 1 cpu. b's victim would be mid (200):
    its lowest possible victim is the highest of all. c would lose both its low pods: removing
    every lower pod, kube adds back the mid first, after which neither 0.5 cpu low fits again
    (two victims, sum 200). a loses one low (sum 100): the one started later, as kube adds back
    the more important (older) of equal priority first."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b"), side.node("c")],
            existing=[
                side.pod("a-old", "low", on="a"),
                side.pod("a-new", "low", on="a"),
                side.pod("b-1", "mid", on="b"),
                side.pod("b-2", "mid", on="b"),
                side.pod("c-half-1", "low", cpu="500m", on="c"),
                side.pod("c-half-2", "low", cpu="500m", on="c"),
                side.pod("c-mid", "mid", on="c"),
            ],
            preemptors=[side.pod("preemptor", "high")],
            expect={"preemptor": Expect("a", frozenset({"a-new"}), message=INSUFFICIENT_3)},
        )

    run(sides, build)


def budget(name: str, selector: dict[str, str], pods: int, min_available: int) -> dict[str, Any]:
    """A PodDisruptionBudget over ``pods`` healthy pods, with the status the disruption
    controller (not running here) would write."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": selector}},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": max(pods - min_available, 0),
            "currentHealthy": pods,
            "desiredHealthy": min_available,
            "expectedPods": pods,
        },
    }


def test_pdb_violations_weigh_first(sides: Sides) -> None:
    """a holds two lowest-priority pods a PDB guards (minAvailable 1 of 2: one disruption
    allowed), b two low ones. The preemptor needs both pods of a node: on a that violates the
    budget once, on b nothing. kube picks b though a's victims are of lower priority."""

    def build(side: Side) -> Scenario:
        guarded = {"app": "guarded"}
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("a-1", "lowest", labels=guarded, on="a"),
                side.pod("a-2", "lowest", labels=guarded, on="a"),
                side.pod("b-1", "low", on="b"),
                side.pod("b-2", "low", on="b"),
            ],
            objects=[budget("guard", guarded, pods=2, min_available=1)],
            preemptors=[side.pod("preemptor", "high", cpu="2")],
            expect={"preemptor": Expect("b", frozenset({"b-1", "b-2"}), message=INSUFFICIENT_2)},
        )

    run(sides, build)


def test_pdb_fewest_violations(sides: Sides) -> None:
    """Every choice breaks the budget (no disruption allowed): a's two victims break it twice,
    b's once (its other victim is not guarded). Without the budget the tie would go to a,
    whose victims started later."""

    def build(side: Side) -> Scenario:
        guarded = {"app": "guarded"}
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("b-guarded", "lowest", labels=guarded, on="b"),
                side.pod("b-free", "lowest", on="b"),
                side.pod("a-1", "lowest", labels=guarded, on="a"),
                side.pod("a-2", "lowest", labels=guarded, on="a"),
            ],
            objects=[budget("guard", guarded, pods=3, min_available=3)],
            preemptors=[side.pod("preemptor", "high", cpu="2")],
            expect={"preemptor": Expect("b", frozenset({"b-guarded", "b-free"}), INSUFFICIENT_2)},
        )

    run(sides, build)


def test_pdb_guarded_pod_is_spared_on_its_node(sides: Sides) -> None:
    """On a, one pod of two must go. Without a budget kube would keep the older (unguarded)
    one; it adds back the pods whose eviction would break a budget first, so the guarded one
    stays and the older goes. b's only victim would be of higher priority."""

    def build(side: Side) -> Scenario:
        guarded = {"app": "guarded"}
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("a-unguarded", "low", on="a"),
                side.pod("a-guarded", "low", labels=guarded, on="a"),
                side.pod("b-mid", "mid", cpu="2", on="b"),
            ],
            objects=[budget("guard", guarded, pods=1, min_available=1)],
            preemptors=[side.pod("preemptor", "high")],
            expect={"preemptor": Expect("a", frozenset({"a-unguarded"}), INSUFFICIENT_2)},
        )

    run(sides, build)


def test_fewer_victims_before_lower_priorities(sides: Sides) -> None:
    """Both nodes' highest victim is low (100). a would lose two low pods (priorities summing
    to 200), b one low and two of the least priority (120). kube adds 2^31 to each victim's
    priority before summing, so fewer victims win over a lower sum: a."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="3"), side.node("b", cpu="3")],
            existing=[
                side.pod("a-1", "low", cpu="1500m", on="a"),
                side.pod("a-2", "low", cpu="1500m", on="a"),
                side.pod("b-low", "low", on="b"),
                side.pod("b-least-1", "least", on="b"),
                side.pod("b-least-2", "least", on="b"),
            ],
            preemptors=[side.pod("preemptor", "high", cpu="3")],
            expect={"preemptor": Expect("a", frozenset({"a-1", "a-2"}), INSUFFICIENT_2)},
        )

    run(sides, build)


def test_ties_go_to_the_victims_started_last(sides: Sides) -> None:
    """One low pod per node, alike but for when they started: kube evicts the one that started
    last (the node whose highest-priority victims started latest)."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("a-older", "low", cpu="2", on="a"),
                side.pod("b-newer", "low", cpu="2", on="b"),
            ],
            preemptors=[side.pod("preemptor", "high", cpu="2")],
            expect={"preemptor": Expect("b", frozenset({"b-newer"}), INSUFFICIENT_2)},
        )

    run(sides, build)


NEVER_MESSAGE = (
    "0/{all} nodes are available: 2 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector. preemption: not eligible due to preemptionPolicy=Never."
)


def test_preemption_policy_never(sides: Sides) -> None:
    """A pod of high priority whose class says preemptionPolicy Never waits, evicting nobody."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("a-1", "low", cpu="2", on="a"),
                side.pod("b-1", "low", cpu="2", on="b"),
            ],
            preemptors=[side.pod("polite", "never")],
            expect={"polite": Expect(None, message=NEVER_MESSAGE)},
        )

    run(sides, build)


def test_anti_affinity_only_eviction_satisfies(sides: Sides) -> None:
    """Nodes with room to spare, but each holds a pod the preemptor may not share a node with:
    on a a low pod whose anti-affinity shuns the preemptor, on b a mid one, on c a lowest pod the
    preemptor's own anti-affinity shuns. Evicting c's pod costs least."""

    def build(side: Side) -> Scenario:
        def shuns(app: str) -> dict[str, Any]:
            term = {
                "labelSelector": {"matchLabels": {"app": app}},
                "topologyKey": "kubernetes.io/hostname",
            }
            return {
                "affinity": {
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                }
            }

        return Scenario(
            nodes=[side.node("a", cpu="8"), side.node("b", cpu="8"), side.node("c", cpu="8")],
            existing=[
                side.pod("a-guard", "low", cpu="100m", on="a", spec=shuns("web")),
                side.pod("b-guard", "mid", cpu="100m", on="b", spec=shuns("web")),
                side.pod("c-rival", "lowest", cpu="100m", labels={"app": "rival"}, on="c"),
            ],
            preemptors=[
                side.pod("web", "high", cpu="100m", labels={"app": "web"}, spec=shuns("rival"))
            ],
            expect={"web": Expect("c", frozenset({"c-rival"}), message=ANTI_AFFINITY)},
        )

    run(sides, build)


def test_daemonset_pod_on_a_full_node(sides: Sides) -> None:
    """A DaemonSet's pod names its node by required node affinity on metadata.name. Its node
    is full; the empty node beside it is not its node. One low pod goes (the newer)."""

    def build(side: Side) -> Scenario:
        pinned = {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {
                                        "key": "metadata.name",
                                        "operator": "In",
                                        "values": [side.named("full")],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
            "tolerations": [{"operator": "Exists"}],
        }
        return Scenario(
            nodes=[side.node("full"), side.node("empty")],
            existing=[
                side.pod("old", "low", on="full"),
                side.pod("new", "low", on="full"),
            ],
            preemptors=[side.pod("daemon", "high", spec=pinned)],
            expect={"daemon": Expect("full", frozenset({"new"}), message=DAEMON)},
        )

    run(sides, build)


NO_VICTIMS = (
    "0/{all} nodes are available: 2 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/{all} nodes are available: 2 No preemption "
    "victims found for incoming pod, {others} Preemption is not helpful for scheduling."
)
# Even with every pod of lower priority gone it would not fit: kube counts the node among those
# preemption does not help, not among those without victims.
TOO_BIG = (
    "0/{all} nodes are available: 2 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/{all} nodes are available: {all} "
    "Preemption is not helpful for scheduling."
)
# An unmet required pod affinity is unresolvable: its reason stays in the preemption's count.
NO_AFFINITY = (
    "0/{all} nodes are available: 2 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/{all} nodes are available: {others} "
    "Preemption is not helpful for scheduling, 2 node(s) didn't match pod affinity rules."
)


def test_nothing_helps(sides: Sides) -> None:
    """Pods that stay pending and evict nobody: their messages. A pod of the same priority as
    every other finds no victims; one larger than any node finds none either; one whose
    affinity no node matches (which no eviction changes) is not helped."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b")],
            existing=[
                side.pod("a-1", "low", cpu="2", on="a"),
                side.pod("b-1", "low", cpu="2", on="b"),
            ],
            preemptors=[
                side.pod("peer", "low"),
                side.pod("huge", "high", cpu="3"),
                side.pod(
                    "lonely",
                    "high",
                    spec={
                        "affinity": {
                            "podAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "labelSelector": {"matchLabels": {"app": "absent"}},
                                        "topologyKey": "kubernetes.io/hostname",
                                    }
                                ]
                            }
                        }
                    },
                ),
            ],
            expect={
                "peer": Expect(None, message=NO_VICTIMS),
                "huge": Expect(None, message=TOO_BIG),
                "lonely": Expect(None, message=NO_AFFINITY),
            },
        )

    run(sides, build)


# --- the queue: a parked pod is retried when an event may help, not when its backoff ends -------

INSUFFICIENT_CPU = re.compile(r"\b(\d+) Insufficient cpu\b")
FAILED_ATTEMPTS = 5
"""Failed attempts before the node that fits arrives: their backoff (1, 2, 4, 8 s, doubling)
then reaches the 10 s both schedulers cap it at."""


def get_pod(cluster: Cluster, side: Side, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(
        cluster.kubectl("get", "pod", name, "-n", side.namespace, "-o", "json").stdout
    )
    return pod


def seconds_to_bind_after_backoff(cluster: Cluster, side: Side) -> float:
    """Fail a pod on this side FAILED_ATTEMPTS times, each attempt brought by a node added that
    NodeAffinity's hint lets through but that is too small; then add a node that fits, and
    return how long the pod took to be bound there."""
    # A node off the side fails NodeAffinity: that plugin's hint then lets each small node on
    # the side through (NodeResourcesFit's alone would skip a node too small even when empty).
    elsewhere = node(side.named("elsewhere"), cpu="4", labels={TEST_LABEL: side.prefix})
    cluster.apply(elsewhere, side.node("small-0", cpu="1"))
    cluster.apply(side.pod("waiting", "least", cpu="2"), namespace=side.namespace)
    for attempt in range(1, FAILED_ATTEMPTS + 1):
        if attempt > 1:
            cluster.apply(side.node(f"small-{attempt - 1}", cpu="1"))
        wait_for_attempts(cluster, side, attempt)
    started = time.monotonic()
    cluster.apply(side.node("roomy", cpu="4"))

    deadline = started + TIMEOUT
    while (node_name := get_pod(cluster, side, "waiting")["spec"].get("nodeName")) is None:
        assert time.monotonic() < deadline, f"{side.name}: the pod was never bound"
        time.sleep(0.05)
    assert node_name == side.named("roomy"), f"{side.name}: bound to {node_name}"
    return time.monotonic() - started


def wait_for_attempts(cluster: Cluster, side: Side, attempts: int) -> None:
    """Until the pod's PodScheduled=False message counts ``attempts`` too-small nodes: each
    small node added has one more attempt count them all."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        conditions = get_pod(cluster, side, "waiting").get("status", {}).get("conditions", ())
        message = next(
            (c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), ""
        )
        found = INSUFFICIENT_CPU.search(message)
        if found and int(found.group(1)) >= attempts:
            return
        assert time.monotonic() < deadline, f"{side.name}: attempt {attempts} never came: {message}"
        time.sleep(0.1)


def test_a_parked_pod_an_event_helps_does_not_wait_out_its_backoff(sides: Sides) -> None:
    """kube-scheduler v1.37's SchedulerPopFromBackoffQ (on by default): with nothing else to
    schedule, a pod moved back by an event is taken from the backoff queue at once, not when its
    backoff ends. After five failed attempts that backoff is 10 s; both schedulers bind the pod
    within half of it once a node that fits is added (a scheduler that waited would take the
    full remaining backoff, about 9 s)."""
    took = {side.name: seconds_to_bind_after_backoff(sides.cluster, side) for side in sides.both()}
    assert all(seconds < 5.0 for seconds in took.values()), took


def test_a_preemptor_waits_parked_while_its_victims_terminate(sides: Sides) -> None:
    """kube-scheduler lets a preemptor through its DefaultPreemption PreEnqueue once its
    evictions are sent, but moves it only on an event that may help it: while its victims are
    terminating nothing does, and it is not tried again (it would fail, "not eligible due to a
    terminating pod on the nominated node"). Both schedulers post one FailedScheduling while the
    victims stay terminating (no kubelet finishes them), then bind the preemptor once they are
    deleted."""
    cluster = sides.cluster
    for side in sides.both():
        set_up(
            cluster,
            side,
            Scenario(
                nodes=[side.node("a")],
                existing=[side.pod("low-1", "low", on="a"), side.pod("low-2", "low", on="a")],
                preemptors=[],
                expect={},
            ),
        )
    time.sleep(1.0)  # the schedulers' caches catch up with the bound pods, as in run()
    for side in sides.both():
        cluster.apply(side.pod("preemptor", "high", cpu="2"), namespace=side.namespace)
    deadline = time.monotonic() + TIMEOUT
    for side in sides.both():
        while len(
            [p for p in items(cluster, "pods", "-n", side.namespace)
             if p["metadata"].get("deletionTimestamp")]
        ) < 2:  # fmt: skip
            assert time.monotonic() < deadline, f"{side.name}: the victims were never evicted"
            time.sleep(0.1)
    # A preemptor tried again while its victims terminate is tried at once: ours, before the
    # fix, within milliseconds of the watch showing them terminating.
    time.sleep(SETTLE)
    told = {
        side.name: [
            side.normal(m)
            for m in messages(side_events(cluster, side), "FailedScheduling", "preemptor")
        ]
        for side in sides.both()
    }
    assert len(told["kube"]) == 1, told
    assert told["ours"] == told["kube"], told

    for side in sides.both():
        cluster.kubectl(
            "delete", "pods", "low-1", "low-2", "-n", side.namespace,
            "--grace-period=0", "--force",
        )  # fmt: skip
    for side in sides.both():
        while get_pod(cluster, side, "preemptor")["spec"].get("nodeName") != side.named("a"):
            assert time.monotonic() < deadline + TIMEOUT, f"{side.name}: never bound on a"
            time.sleep(0.1)


def test_a_pod_nominated_to_another_zone_does_not_count_in_the_spread(sides: Sides) -> None:
    """kube-scheduler counts a pending pod nominated to a node only while it filters that node
    (RunFilterPluginsWithNominatedPods: the pods nominated there, of at least the pod's
    priority, added to a copy of the node and to the PreFilter state; the node must also pass
    without them). Zone a holds one pod of the spread selector, zone b none; the preemptor,
    which matches the selector, is nominated to b while its victim terminates. The spread pod
    (maxSkew 1 over the zones, the preemptor's priority, preemptionPolicy Never) is rejected on
    a (counts a=1, b=0: skew 2) and on b (the terminating victim and the preemptor's room leave
    no cpu): it stays pending."""
    cluster = sides.cluster
    spread = {"app": "spread"}
    for side in sides.both():
        set_up(
            cluster,
            side,
            Scenario(
                nodes=[
                    side.node("a", labels={ZONE_LABEL: "a"}),
                    side.node("b", labels={ZONE_LABEL: "b"}),
                ],
                existing=[
                    side.pod("in-a", "low", cpu="100m", labels=spread, on="a"),
                    side.pod("low-1", "low", on="b"),
                    side.pod("low-2", "low", on="b"),
                ],
                preemptors=[],
                expect={},
            ),
        )
    time.sleep(1.0)  # the schedulers' caches catch up with the bound pods, as in run()
    for side in sides.both():
        only_b = {"nodeSelector": {SIDE_LABEL: side.namespace, ZONE_LABEL: "b"}}
        cluster.apply(
            side.pod("preemptor", "high", labels=spread, spec=only_b), namespace=side.namespace
        )
    deadline = time.monotonic() + TIMEOUT
    for side in sides.both():
        # No kubelet finishes the victim: the preemptor stays nominated to b.
        while get_pod(cluster, side, "preemptor").get("status", {}).get(
            "nominatedNodeName"
        ) != side.named("b"):
            assert time.monotonic() < deadline, f"{side.name}: the preemptor was never nominated"
            time.sleep(0.1)
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE_LABEL,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": spread},
    }
    for side in sides.both():
        cluster.apply(
            side.pod(
                "spread",
                "never",
                cpu="100m",
                labels=spread,
                spec={"topologySpreadConstraints": [constraint]},
            ),
            namespace=side.namespace,
        )
    placed: dict[str, str | None] = {}
    for side in sides.both():
        while side.name not in placed:
            node_name = get_pod(cluster, side, "spread")["spec"].get("nodeName")
            if node_name or messages(side_events(cluster, side), "FailedScheduling", "spread"):
                placed[side.name] = side.normal(node_name) if node_name else None
            assert time.monotonic() < deadline + TIMEOUT, f"{side.name}: never decided"
            time.sleep(0.1)
    assert placed["kube"] is None, f"scenario: kube-scheduler bound the spread pod: {placed}"
    assert placed["ours"] == placed["kube"], placed


def test_a_pending_pod_being_deleted_is_skipped_saying_so(sides: Sides) -> None:
    """kube-scheduler's skipPodSchedule: a pending pod whose deletion a finalizer holds is not
    decided when it is popped again; its FailedScheduling event says "skip schedule deleting
    pod: NS/NAME". The pod fits no node; once it is being deleted, a node added to its side
    with room for it moves it (NodeResourcesFit's hint; kube-scheduler's queue need not move it
    for the deletion's own update), and it is popped. The node is cordoned: a scheduler that
    sees it before the deletion (two watches, no order between them) tries the pod once more
    and binds it nowhere, so such a node is added every second until the pod is skipped."""
    cluster = sides.cluster
    finalizer = "policy-scheduler.dev/e2e-hold"
    for side in sides.both():
        doomed = side.pod("doomed", "low", cpu="8")
        doomed["metadata"]["finalizers"] = [finalizer]
        cluster.apply(side.node("small"))
        cluster.apply(doomed, namespace=side.namespace)
    deadline = time.monotonic() + TIMEOUT
    try:
        for side in sides.both():
            while not messages(side_events(cluster, side), "FailedScheduling", "doomed"):
                assert time.monotonic() < deadline, f"{side.name}: never tried"
                time.sleep(0.1)
            cluster.kubectl("delete", "pod", "doomed", "-n", side.namespace, "--wait=false")
        told: dict[str, list[str]] = {}
        added = 0
        while len(told) < 2:
            added += 1
            for side in sides.both():
                if side.name not in told:
                    cordoned = side.node(f"another-{added}", cpu="16")
                    cordoned["spec"] = {"unschedulable": True}
                    cluster.apply(cordoned)
            time.sleep(1.0)
            for side in sides.both():
                said = messages(side_events(cluster, side), "FailedScheduling", "doomed")
                skipped = [side.normal(m) for m in said if m.startswith("skip schedule")]
                if skipped:
                    told[side.name] = skipped
                assert time.monotonic() < deadline + TIMEOUT, f"{side.name}: {said}"
        assert told["kube"] == ["skip schedule deleting pod: <ns>/doomed"], told
        assert told["ours"] == told["kube"], told
    finally:
        for side in sides.both():
            cluster.kubectl(
                "patch", "pod", "doomed", "-n", side.namespace, "--type=json",
                "-p", '[{"op": "remove", "path": "/metadata/finalizers"}]', check=False,
            )  # fmt: skip


def test_a_victim_waiting_in_pre_bind_is_preempted_in_memory(sides: Sides) -> None:
    """kube-scheduler v1.36+ (kubernetes#135502): a victim whose binding cycle waits in a
    PreBind (VolumeBinding, for a claim no provisioner will ever bind) is not deleted; its
    cycle is cancelled, which it is told as an error ('running PreBind plugin "VolumeBinding":
    preempted by DefaultPreemption'), its Preempted event ends "(in kube-scheduler memory).",
    and the preemptor binds at once, with no victim to wait for."""
    cluster = sides.cluster
    prefix = sides.kube.prefix
    waiting = f"{prefix}-never-provisioned"
    cluster.apply(storage_class(waiting, provisioner="example.com/nobody"))
    data = claim("data", storage_class=waiting)
    volume = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
    deadline = time.monotonic() + TIMEOUT
    try:
        for side in sides.both():
            cluster.apply(side.node("n"))
            cluster.apply(
                data, side.pod("slow", "low", cpu="1500m", spec=volume), namespace=side.namespace
            )
        for side in sides.both():
            # The PreBind has asked for the claim to be provisioned on n, and waits.
            while "volume.kubernetes.io/selected-node" not in (
                get_claim(cluster, side)["metadata"].get("annotations") or {}
            ):
                assert time.monotonic() < deadline, f"{side.name}: slow never reached PreBind"
                time.sleep(0.1)
        for side in sides.both():
            cluster.apply(side.pod("high", "high", cpu="1500m"), namespace=side.namespace)
        told: dict[str, tuple[str | None, list[str], list[str]]] = {}
        for side in sides.both():
            while True:
                events = side_events(cluster, side)
                preempted = [side.normal(m) for m in messages(events, "Preempted", "slow")]
                failed = [
                    side.normal(m)
                    for m in messages(events, "FailedScheduling", "slow")
                    if m.startswith("running PreBind")
                ]
                node = get_pod(cluster, side, "high")["spec"].get("nodeName")
                if node and preempted and failed:
                    told[side.name] = (side.normal(node), preempted, failed)
                    break
                assert time.monotonic() < deadline + TIMEOUT, f"{side.name}: {node} {events}"
                time.sleep(0.1)
        assert told["kube"] == (
            "n",
            ["Preempted by pod <uid> on node n (in kube-scheduler memory)."],
            ['running PreBind plugin "VolumeBinding": preempted by DefaultPreemption'],
        ), told
        assert told["ours"] == told["kube"], told
    finally:
        cluster.kubectl("delete", "storageclass", waiting, "--wait=false", check=False)


def get_claim(cluster: Cluster, side: Side) -> dict[str, Any]:
    claim: dict[str, Any] = json.loads(
        cluster.kubectl("get", "pvc", "data", "-n", side.namespace, "-o", "json").stdout
    )
    return claim
