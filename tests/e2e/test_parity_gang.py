"""Parity with kube-scheduler's gang scheduling (issue 31): the native pod group API
(scheduling.k8s.io/v1beta1 PodGroup, pods naming it in ``spec.schedulingGroup.podGroupName``)
beside kube-scheduler v1.37.2 with the GenericWorkload gate on (``gang_cluster``), whose default
profile then has the GangScheduling plugin and whose queue schedules a pod group in one pass.

As test_parity_preemption does, each scenario is built twice on two disjoint sides of one
control plane: one served by kube-scheduler (``default-scheduler``), the other by the operator
with a policy made from examples/policies/default-profile.yaml with ``GangScheduling`` added
under ``spec.plugins.preEnqueue``. A side's nodes are named ``<prefix>-<side>-<suffix>``; its
PodGroups and pods live in the namespace ``<prefix>-<side>``, and every pod is kept to its
side's nodes by a nodeSelector, so both schedulers' messages count the other side's nodes
alike and compare word for word once each side's names are replaced.

A scenario is a list of steps, each done to both sides (pods and groups created, a group's
minCount lowered, pods deleted) and followed, once both sides have settled, by a comparison of
what each scheduler did: every pod's node, the distinct FailedScheduling messages each pod was
told (in order), each group's PodGroupInitiallyScheduled condition, the pods evicted (with their
DisruptionTarget condition) and the Preempted events. Each step also says what kube-scheduler
does (the real binary was seen to do it), which checks the scenario exercises what it claims
to; and after each step no group may be left half placed (some members bound, fewer than its
minCount) on either side.

No kubelet runs on the bare control plane: as test_parity_preemption does, the test stands in
for it, recording a pod being deleted (a victim) and then force-deleting it.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, items
from harness.objects import NATIVE, member, node, pod, pod_group
from harness.sides import Side as SideBase
from harness.sides import Sides as SidesOf
from harness.sides import clean_up, kubelet, priority_classes, report, settle_both

pytestmark = pytest.mark.gang_cluster

DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"
SIDE_LABEL = "gang.policy-scheduler.dev/side"
TEST_LABEL = "gang.policy-scheduler.dev/test"
KUBE_SCHEDULER = "default-scheduler"
CONDITION = "PodGroupInitiallyScheduled"
TIMEOUT = 90.0
# Once a side matches what the step waits for, how long nothing may change before it counts as
# settled: the pods told nothing are watched that long for an event that should not come.
SETTLE = 3.0

PRIORITIES = {"low": 100, "high": 1000, "top": 5000}
"""PriorityClasses, named ``<prefix>-<key>``."""


@dataclass(frozen=True)
class Side(SideBase):
    """One copy of a scenario, with its nodes, pod groups and pods."""

    def node(self, suffix: str, *, cpu: str = "2") -> dict[str, Any]:
        labels = {SIDE_LABEL: self.namespace, TEST_LABEL: self.prefix}
        return node(self.named(suffix), cpu=cpu, labels=labels)

    def group(self, name: str, min_count: int, priority: str | None = None) -> dict[str, Any]:
        """A native PodGroup with gang policy ``min_count``, of PriorityClass
        ``<prefix>-<priority>`` if given (kube's group preemption reads the group's)."""
        return pod_group(
            NATIVE,
            name,
            min_count,
            priority_class=None if priority is None else f"{self.prefix}-{priority}",
        )

    def pod(
        self,
        name: str,
        group: str | None = None,
        *,
        cpu: str = "1",
        priority: str | None = None,
        on: str | None = None,
    ) -> dict[str, Any]:
        """A pod kept to this side's nodes, a member of ``group`` if given, of PriorityClass
        ``<prefix>-<priority>`` if given; bound to node ``on`` (a suffix) from the start if
        given."""
        extra: dict[str, Any] = {
            "nodeSelector": {SIDE_LABEL: self.namespace},
            "terminationGracePeriodSeconds": 30,
        }
        if priority is not None:
            extra["priorityClassName"] = f"{self.prefix}-{priority}"
        if on is not None:
            extra["nodeName"] = self.named(on)
        made = pod(name, self.scheduler, cpu=cpu, extra=extra)
        return made if group is None else member(made, NATIVE, group)


Sides = SidesOf[Side]


@dataclass(frozen=True)
class Expect:
    """What kube-scheduler has done once a step settled: the pods bound (pod -> node suffix;
    every other pod pending), the first FailedScheduling message of each pod told any
    (``{all}`` for the number of nodes in the cluster and ``{others}`` for those not on the
    pod's side; a pod not named was told nothing), each group's PodGroupInitiallyScheduled
    condition as "status reason message" (a group not named has none), the pods evicted."""

    bound: Mapping[str, str]
    failed: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, str] = field(default_factory=dict)
    victims: frozenset[str] = frozenset()

    def said(self, every: int, others: int) -> dict[str, str]:
        return {name: m.format(all=every, others=others) for name, m in self.failed.items()}


Act = Callable[[Cluster, Side], None]
"""What a step does to one side."""


@dataclass
class Step:
    """What is done to both sides, what kube-scheduler has done once they settled, and which
    of the outcome's parts (COMPARED) are compared then: a pod group kube-scheduler found
    unschedulable is tried again on events that may help it, with its members in an order of
    the queue's, so what it is told after the first time depends on when those events came."""

    act: Act
    expect: Expect
    compare: tuple[str, ...] = ()

    @property
    def compared(self) -> tuple[str, ...]:
        return self.compare or COMPARED


def create(*build: Callable[[Side], dict[str, Any]]) -> Act:
    """A step that creates the side's objects ``build`` makes, in order, in its namespace (in
    one request: a group's members arrive together)."""

    def act(cluster: Cluster, side: Side) -> None:
        cluster.apply(*(b(side) for b in build), namespace=side.namespace)

    return act


def members(group: str, count: int) -> list[Callable[[Side], dict[str, Any]]]:
    """The builders of ``count`` members of ``group`` of 1 cpu, named ``<group>-1``...."""
    return [
        functools.partial(Side.pod, name=f"{group}-{i}", group=group) for i in range(1, count + 1)
    ]


def set_min_count(group: str, min_count: int) -> Act:
    def act(cluster: Cluster, side: Side) -> None:
        patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}
        cluster.kubectl(
            "patch", "podgroups.scheduling.k8s.io", group, "-n", side.namespace,
            "--type=merge", "-p", json.dumps(patch),
        )  # fmt: skip

    return act


def delete(*pods: str) -> Act:
    def act(cluster: Cluster, side: Side) -> None:
        cluster.kubectl(
            "delete", "pods", *pods, "-n", side.namespace, "--grace-period=0", "--force"
        )

    return act


@dataclass
class Scenario:
    """A side's nodes, the pods bound from the start (oldest first: each started a minute
    after the one before, as a kubelet would report them) and the steps."""

    nodes: list[dict[str, Any]]
    steps: list[Step]
    existing: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Outcome:
    """What one scheduler has done, in the side's normal form."""

    nodes: dict[str, str | None] = field(default_factory=dict)
    """Every pod of the side (evicted ones gone) -> its node (None: pending)."""
    failed: dict[str, str] = field(default_factory=dict)
    """Pod -> the first FailedScheduling message it was told."""
    groups: dict[str, str] = field(default_factory=dict)
    """Group -> its PodGroupInitiallyScheduled condition: "status reason message"."""
    scheduled: dict[str, str] = field(default_factory=dict)
    """Group -> its PodGroupInitiallyScheduled condition's status alone."""
    victims: dict[str, str] = field(default_factory=dict)
    """Evicted pod -> its node, its deletion's grace period, its DisruptionTarget condition."""
    preempted: list[str] = field(default_factory=list)
    """The Preempted events (regarding, message), sorted."""

    def lines(self) -> list[str]:
        return [
            *(f"pod {name}: node={where}" for name, where in sorted(self.nodes.items())),
            *(f"pod {name}: failed={told!r}" for name, told in sorted(self.failed.items())),
            *(f"group {name}: {said}" for name, said in sorted(self.groups.items())),
            *(f"victim {name}: {what}" for name, what in sorted(self.victims.items())),
            *(f"event {event}" for event in self.preempted),
        ]

    def half_placed(self, minimum: Mapping[str, int], members: Mapping[str, str]) -> list[str]:
        """The groups with some members bound but fewer than their minCount."""
        bound: dict[str, int] = {}
        for name, where in self.nodes.items():
            if where is not None and name in members:
                bound[members[name]] = bound.get(members[name], 0) + 1
        return sorted(g for g, n in bound.items() if 0 < n < minimum.get(g, 0))


COMPARED = ("nodes", "failed", "groups", "scheduled", "victims", "preempted")


@pytest.fixture
def sides(gang_cluster: Cluster, operator: Operator) -> Iterator[Sides]:
    cluster = gang_cluster
    served = cluster.kubectl("api-resources", "--api-group=scheduling.k8s.io").stdout
    assert "podgroups" in served, "gang_cluster serves no scheduling.k8s.io PodGroup"
    prefix = f"gang-{uuid.uuid4().hex[:6]}"
    kube = Side("kube", prefix, KUBE_SCHEDULER)
    ours = Side("ours", prefix, f"{prefix}-policy")
    for side in (kube, ours):
        cluster.kubectl("create", "namespace", side.namespace)
    cluster.apply(*priority_classes(TEST_LABEL, prefix, PRIORITIES))
    cluster.apply(gang_policy(ours.scheduler))
    operator.start()
    try:
        yield Sides(cluster, kube, ours)
    finally:
        clean_up(cluster, (kube, ours), TEST_LABEL, prefix, ours.scheduler)


def gang_policy(name: str) -> dict[str, Any]:
    """default-profile.yaml (kube's default profile, with DefaultPreemption) with GangScheduling
    under ``spec.plugins.preEnqueue``, as kube's default profile has it with the gate on; over
    every node, serving ``name``."""
    policy: dict[str, Any] = yaml.safe_load(DEFAULT_PROFILE.read_text())
    policy["metadata"] = {"name": name, "labels": {TEST_LABEL: name}}
    policy["spec"].pop("nodeSelector", None)
    plugins = policy["spec"].setdefault("plugins", {})
    plugins.setdefault("preEnqueue", []).append({"name": "GangScheduling"})
    return policy


class Watch:
    """One side during a step: the stand-in kubelet for its namespace, and what it sees."""

    def __init__(self, cluster: Cluster, side: Side, expect: Expect, victims: dict[str, str]):
        self.cluster = cluster
        self.side = side
        self.expect = expect
        self.outcome = Outcome(victims=victims)
        self.seen = ""
        self.since = time.monotonic()

    def poll(self) -> bool:
        """One look; True once the side shows what the step waits for and nothing changed for
        SETTLE seconds."""
        pods = items(self.cluster, "pods", "-n", self.side.namespace)
        self.kubelet(pods)
        self.outcome.nodes = {
            p["metadata"]["name"]: (
                self.side.normal(p["spec"]["nodeName"]) if p["spec"].get("nodeName") else None
            )
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
        }
        events = sorted(
            items(self.cluster, "events", "-n", self.side.namespace),
            key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "",
        )
        self.outcome.failed = {}
        for e in events:
            if e["reason"] == "FailedScheduling":
                told = self.side.normal(e.get("message", ""))
                self.outcome.failed.setdefault(e["involvedObject"]["name"], told)
        self.outcome.preempted = sorted(
            self.side.normal(f"{e['involvedObject']['name']} | {e.get('message', '')}")
            for e in events
            if e["reason"] == "Preempted"
        )
        self.outcome.groups, self.outcome.scheduled = {}, {}
        for g in items(self.cluster, "podgroups.scheduling.k8s.io", "-n", self.side.namespace):
            for c in (g.get("status") or {}).get("conditions", ()):
                if c["type"] == CONDITION:
                    said = f"{c['status']} {c.get('reason', '')} {c.get('message', '')}"
                    self.outcome.groups[g["metadata"]["name"]] = self.side.normal(said)
                    self.outcome.scheduled[g["metadata"]["name"]] = c["status"]
        now = json.dumps(self.outcome.lines())
        if now != self.seen:
            self.seen, self.since = now, time.monotonic()
        return self.waited_for() and time.monotonic() - self.since >= SETTLE

    def waited_for(self) -> bool:
        """Whether the side shows what the step waits for: every pod kube binds bound, every
        pod kube tells something told something, every group kube gives a condition has one."""
        bound = {name for name, where in self.outcome.nodes.items() if where is not None}
        return (
            bound >= set(self.expect.bound)
            and set(self.outcome.failed) >= set(self.expect.failed)
            and set(self.outcome.groups) >= set(self.expect.groups)
        )

    def kubelet(self, pods: Sequence[dict[str, Any]]) -> None:
        """Record the pods being deleted as victims, then finish their deletion."""
        self.outcome.victims.update(kubelet(self.cluster, self.side, pods))


def set_up(cluster: Cluster, side: Side, scenario: Scenario) -> None:
    cluster.apply(*scenario.nodes)
    if not scenario.existing:
        return
    cluster.apply(*scenario.existing, namespace=side.namespace)
    # As a kubelet reports them: running, started a minute apart in the order given (kube
    # breaks ties between victims by start time).
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    for i, existing in enumerate(scenario.existing):
        started = (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = {"status": {"phase": "Running", "startTime": started}}
        cluster.kubectl(
            "patch", "pod", existing["metadata"]["name"], "-n", side.namespace,
            "--subresource=status", "--type=merge", "-p", json.dumps(status),
        )  # fmt: skip


def groups_of(cluster: Cluster, side: Side) -> tuple[dict[str, int], dict[str, str]]:
    """The side's groups' minCounts, and each member pod's group."""
    minimum = {
        g["metadata"]["name"]: g["spec"]["schedulingPolicy"].get("gang", {}).get("minCount", 1)
        for g in items(cluster, "podgroups.scheduling.k8s.io", "-n", side.namespace)
    }
    members = {
        p["metadata"]["name"]: p["spec"]["schedulingGroup"]["podGroupName"]
        for p in items(cluster, "pods", "-n", side.namespace)
        if p["spec"].get("schedulingGroup")
    }
    return minimum, members


def run(sides: Sides, build: Callable[[Side], Scenario]) -> None:
    """Build the scenario on both sides, do each step to both, wait until both settled, then
    compare; all differences at the end."""
    cluster = sides.cluster
    scenarios = {side.name: build(side) for side in sides.both()}
    for side in sides.both():
        set_up(cluster, side, scenarios[side.name])
    # Both schedulers learn of nodes and bound pods through their watches; give them a moment,
    # as nothing in the API tells when their caches have caught up.
    time.sleep(1.0)
    every = len(items(cluster, "nodes"))
    mine = len(items(cluster, "nodes", "-l", f"{SIDE_LABEL}={sides.kube.namespace}"))
    victims: dict[str, dict[str, str]] = {side.name: {} for side in sides.both()}
    problems: list[str] = []
    for i, kube_step in enumerate(scenarios["kube"].steps):
        expect, compared = kube_step.expect, kube_step.compared
        for side in sides.both():
            scenarios[side.name].steps[i].act(cluster, side)
        watches = [Watch(cluster, side, expect, victims[side.name]) for side in sides.both()]
        found = settle_both(watches, TIMEOUT)
        kube, ours = (w.outcome for w in watches)
        said = expect.said(every, every - mine)
        if {n: w for n, w in kube.nodes.items() if w is not None} != dict(expect.bound):
            found.append(f"scenario: expected kube-scheduler to bind {dict(expect.bound)}")
        if "failed" in compared and kube.failed != said:
            found.append(f"scenario: expected kube-scheduler to say {said}")
        if "groups" in compared and kube.groups != dict(expect.groups):
            found.append(f"scenario: expected kube-scheduler's conditions {dict(expect.groups)}")
        statuses = {name: said.split(" ")[0] for name, said in expect.groups.items()}
        if kube.scheduled != statuses:
            found.append(f"scenario: expected kube-scheduler's conditions' statuses {statuses}")
        if set(kube.victims) != expect.victims:
            found.append(f"scenario: expected kube-scheduler to evict {sorted(expect.victims)}")
        for side, outcome in zip(sides.both(), (kube, ours), strict=True):
            half = outcome.half_placed(*groups_of(cluster, side))
            if half:
                found.append(f"{side.name}: half placed: {half}")
        found += [
            f"{what} differs: kube {getattr(kube, what)!r}, ours {getattr(ours, what)!r}"
            for what in compared
            if getattr(kube, what) != getattr(ours, what)
        ]
        if found:
            problems.append(
                "\n".join([*found, report(f"step {i + 1}", kube.lines(), ours.lines())])
            )
    assert not problems, "\n\n".join(problems)


# --- scenarios ----------------------------------------------------------------------------------

# kube-scheduler v1.37.2's words, as it posted them on this control plane ({all}: the nodes of
# the cluster, {others}: those of the other side).
INSUFFICIENT = (
    "0/{all} nodes are available: 1 Insufficient cpu, {others} node(s) didn't match Pod's node "
    "affinity/selector."
)
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def cannot(min_count: int, scheduled: int, remaining: int) -> str:
    """GangScheduling's PlacementFeasible when too few members are left to reach minCount."""
    return (
        f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
    )


def test_members_wait_for_min_count_then_bind_together(sides: Sides) -> None:
    """(a) Two members of a group of minCount 3: both wait in PreEnqueue, told nothing, and
    the group has no condition; the third arrives and all three are bound, the group
    PodGroupInitiallyScheduled."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="4")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 3),
                        lambda s: s.pod("g-1", "g"),
                        lambda s: s.pod("g-2", "g"),
                    ),
                    Expect(bound={}),
                ),
                Step(
                    create(lambda s: s.pod("g-3", "g")),
                    Expect(
                        bound={"g-1": "a", "g-2": "a", "g-3": "a"},
                        groups={"g": "True Scheduled "},
                    ),
                ),
            ],
        )

    run(sides, build)


def test_a_group_that_does_not_fit_binds_nothing_and_holds_nothing(sides: Sides) -> None:
    """(b) A group of minCount 2 on a node with room for one member: nothing is bound, the
    member that fitted and the one that did not are told why, the group is Unschedulable. Then
    a pod of no group, as large as a member, is bound there: the first member holds nothing."""

    def build(side: Side) -> Scenario:
        failed = {
            "g-1": "pod group is unschedulable, " + cannot(2, 1, 0) + ", " + NO_VICTIMS,
            "g-2": INSUFFICIENT,
        }
        unschedulable = "False Unschedulable " + cannot(2, 1, 0) + ", " + NO_VICTIMS
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 2),
                        lambda s: s.pod("g-1", "g", cpu="1500m"),
                        lambda s: s.pod("g-2", "g", cpu="1500m"),
                    ),
                    Expect(bound={}, failed=failed, groups={"g": unschedulable}),
                ),
                # The pod's arrival has kube-scheduler try the group again, which then tells
                # its members and writes its condition again, in an order of its queue's.
                Step(
                    create(lambda s: s.pod("alone", cpu="1500m")),
                    Expect(bound={"alone": "a"}, groups={"g": unschedulable}),
                    compare=("nodes", "scheduled", "victims"),
                ),
            ],
        )

    run(sides, build)


def test_two_groups_competing_for_room_one_is_placed_whole(sides: Sides) -> None:
    """(c) Two groups of two, created together, and room for two members: the first is bound
    whole, the second waits, told why, neither half placed; once the first's pods are gone the
    second is bound."""

    def build(side: Side) -> Scenario:
        waiting = {"h-1": INSUFFICIENT, "h-2": cannot(2, 0, 1)}
        unschedulable = "False Unschedulable " + cannot(2, 0, 1) + ", " + NO_VICTIMS
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 2),
                        lambda s: s.group("h", 2),
                        lambda s: s.pod("g-1", "g"),
                        lambda s: s.pod("g-2", "g"),
                        lambda s: s.pod("h-1", "h"),
                        lambda s: s.pod("h-2", "h"),
                    ),
                    Expect(
                        bound={"g-1": "a", "g-2": "a"},
                        failed=waiting,
                        groups={"g": "True Scheduled ", "h": unschedulable},
                    ),
                ),
                Step(
                    delete("g-1", "g-2"),
                    Expect(
                        bound={"h-1": "a", "h-2": "a"},
                        failed=waiting,
                        groups={"g": "True Scheduled ", "h": "True Scheduled "},
                    ),
                ),
            ],
        )

    run(sides, build)


def test_a_group_larger_than_its_min_count_binds_the_members_that_fit(sides: Sides) -> None:
    """(d) Four members, minCount 2, room for three: three are bound, the fourth is told why
    and waits; the group is PodGroupInitiallyScheduled."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="3")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 2),
                        *members("g", 4),
                    ),
                    Expect(
                        bound={"g-1": "a", "g-2": "a", "g-3": "a"},
                        failed={"g-4": INSUFFICIENT},
                        groups={"g": "True Scheduled "},
                    ),
                ),
            ],
        )

    run(sides, build)


def test_a_group_preempts_only_when_the_whole_group_then_fits(sides: Sides) -> None:
    """(e) Gang preemption: a node full of two low-priority pods; a high-priority group of two
    members evicts both and is bound."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            existing=[
                side.pod("low-1", priority="low", on="a"),
                side.pod("low-2", priority="low", on="a"),
            ],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 2, "high"),
                        lambda s: s.pod("g-1", "g", priority="high"),
                        lambda s: s.pod("g-2", "g", priority="high"),
                    ),
                    Expect(
                        bound={"g-1": "a", "g-2": "a"},
                        failed={"g-1": INSUFFICIENT, "g-2": cannot(2, 0, 1)},
                        groups={"g": "True Scheduled "},
                        victims=frozenset({"low-1", "low-2"}),
                    ),
                ),
            ],
        )

    run(sides, build)


def test_a_group_that_would_fit_only_half_evicts_nobody(sides: Sides) -> None:
    """(e) Gang preemption that cannot help: the node holds one low-priority pod and one above
    the group's priority; evicting the low one would make room for one member of two only, so
    nothing is evicted and nothing bound (a pod alone would have evicted it). Kube's condition
    says so: its group preemption, all lower-priority pods taken away, placed one member."""

    def build(side: Side) -> Scenario:
        # DynamicResources' PostFilter, before DefaultPreemption's, says its part.
        unschedulable = (
            f"False Unschedulable {cannot(2, 0, 1)}, deallocation and deletion of "
            f"ResourceClaims completed, pod group preemption: {cannot(2, 1, 0)}"
        )
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            existing=[
                side.pod("low-1", priority="low", on="a"),
                side.pod("top-1", priority="top", on="a"),
            ],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 2, "high"),
                        lambda s: s.pod("g-1", "g", priority="high"),
                        lambda s: s.pod("g-2", "g", priority="high"),
                    ),
                    Expect(
                        bound={"low-1": "a", "top-1": "a"},
                        failed={"g-1": INSUFFICIENT, "g-2": cannot(2, 0, 1)},
                        groups={"g": unschedulable},
                    ),
                ),
            ],
        )

    run(sides, build)


def test_lowering_min_count_lets_the_group_go(sides: Sides) -> None:
    """(f) Two members of a group of minCount 3 wait, told nothing; the group's minCount is
    lowered to 2 and both are bound."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 3),
                        lambda s: s.pod("g-1", "g"),
                        lambda s: s.pod("g-2", "g"),
                    ),
                    Expect(bound={}),
                ),
                Step(
                    set_min_count("g", 2),
                    Expect(bound={"g-1": "a", "g-2": "a"}, groups={"g": "True Scheduled "}),
                ),
            ],
        )

    run(sides, build)


def test_lowering_min_count_of_a_group_that_did_not_fit_binds_those_that_fit(
    sides: Sides,
) -> None:
    """(f) Three members of a group of minCount 3 and room for two: nothing bound; minCount
    lowered to 2, the two that fit are bound and the third waits."""

    def build(side: Side) -> Scenario:
        first = cannot(3, 2, 0)
        return Scenario(
            nodes=[side.node("a", cpu="2")],
            steps=[
                Step(
                    create(
                        lambda s: s.group("g", 3),
                        *members("g", 3),
                    ),
                    Expect(
                        bound={},
                        failed={
                            "g-1": "pod group is unschedulable, " + first + ", " + NO_VICTIMS,
                            "g-2": "pod group is unschedulable, " + first + ", " + NO_VICTIMS,
                            "g-3": INSUFFICIENT,
                        },
                        groups={"g": "False Unschedulable " + first + ", " + NO_VICTIMS},
                    ),
                ),
                # Once its siblings are bound, kube-scheduler tries g-3 again (their binding
                # is an event for it), which leaves the condition True with that pass's
                # message, or not yet: its message is left out.
                Step(
                    set_min_count("g", 2),
                    Expect(
                        bound={"g-1": "a", "g-2": "a"},
                        failed={
                            "g-1": "pod group is unschedulable, " + first + ", " + NO_VICTIMS,
                            "g-2": "pod group is unschedulable, " + first + ", " + NO_VICTIMS,
                            "g-3": INSUFFICIENT,
                        },
                        groups={"g": "True Scheduled "},
                    ),
                    compare=("nodes", "failed", "scheduled", "victims", "preempted"),
                ),
            ],
        )

    run(sides, build)
