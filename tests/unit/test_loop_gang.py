"""The loop with GangScheduling, through its ports: a gang's members wait gated until enough
exist, then are placed in one pass, all or nothing; a group that does not fit binds no member and
holds nothing; competing groups never end both half placed; each member is told in kube's words;
the group's status is written and the pass kept as one decision."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import generate_latest
from test_loop import Run, Step, delete_pod, feed, later, node, pod, policy, settle
from test_loop_storage import run_steps as run_list

from policy_scheduler.metrics import Metrics
from policy_scheduler.model import disruption, podgroups
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.scheduling.ports import NoMetrics
from policy_scheduler.scheduling.queue import Where
from policy_scheduler.simulate import ClusterDump, simulate

Raw = dict[str, Any]

VOLCANO = podgroups.KIND_NAMES[podgroups.VOLCANO]
NATIVE = podgroups.KIND_NAMES[podgroups.NATIVE]


def gang_policy(mode: str = "Enforce", **args: Any) -> Raw:
    raw = policy(mode)
    raw["spec"]["plugins"] = {"preEnqueue": [{"name": "GangScheduling", "args": args}]}
    return raw


def volcano_group(name: str, min_member: Any) -> Raw:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"group-{name}"},
        "spec": {"minMember": min_member},
    }


def native_group(name: str, min_count: int) -> Raw:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"group-{name}", "generation": 1},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def member(name: str, group: str, cpu: str = "1", native: bool = False, **kwargs: Any) -> Raw:
    raw = pod(name, cpu, **kwargs)
    if native:
        raw["spec"]["schedulingGroup"] = {"podGroupName": group}
    else:
        raw["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group}
    return raw


def group(kind: str, raw: Raw) -> Step:
    return lambda run: run.scheduler.changed(kind, raw)


def members(group_name: str, *names: str, cpu: str = "1", native: bool = False) -> Step:
    return feed(*(member(name, group_name, cpu, native) for name in names))


@dataclass(frozen=True)
class Case:
    steps: list[Step]
    binds: list[tuple[str, str]] = field(default_factory=list)
    where: dict[str, Where] = field(default_factory=dict)
    told: dict[str, str] = field(default_factory=dict)
    """Per pod, the message of its last PodScheduled=False condition."""


TWO_NODES = feed(node("n1"), node("n2"))

CASES = {
    "fewer members than the minimum wait gated, without an attempt": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 3)),
            members("g", "a", "b"),
            settle(),
        ],
        where={"a": Where.GATED, "b": Where.GATED},
    ),
    "the last member lets the whole group in": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 3)),
            members("g", "a", "b"),
            settle(),
            members("g", "c"),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2"), ("c", "n1")],
    ),
    "members wait for their group to exist": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            members("g", "a", "b"),
            settle(),
            group(VOLCANO, volcano_group("g", 2)),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2")],
    ),
    "a group that does not fit binds none, and the members are told": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 3)),
            members("g", "a", "b", "c", cpu="2"),
            settle(),
        ],
        where={"a": Where.UNSCHEDULABLE, "b": Where.UNSCHEDULABLE, "c": Where.UNSCHEDULABLE},
        told={
            "a": "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, "
            "0 remaining",
            "c": "0/2 nodes are available: 2 Insufficient cpu.",
        },
    ),
    "a group that does not fit holds nothing: a pod of no group fits after it": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 3)),
            members("g", "a", "b", "c", cpu="2"),
            settle(),
            feed(pod("solo", "2")),
            settle(),
        ],
        binds=[("solo", "n1")],
    ),
    "members over the minimum: those that fit bind, the others wait with their own reasons": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 2)),
            members("g", "a", "b", "c", cpu="2"),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2")],
        where={"c": Where.UNSCHEDULABLE},
        told={"c": "0/2 nodes are available: 2 Insufficient cpu."},
    ),
    "two groups that only one can have: one placed whole, the other waits whole": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 2)),
            group(VOLCANO, volcano_group("h", 2)),
            members("g", "a", "b", cpu="2"),
            members("h", "x", "y", cpu="2"),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2")],
        where={"x": Where.UNSCHEDULABLE, "y": Where.UNSCHEDULABLE},
    ),
    "the waiting group goes once the other's room is free": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", 2)),
            group(VOLCANO, volcano_group("h", 2)),
            members("g", "a", "b", cpu="2"),
            members("h", "x", "y", cpu="2"),
            settle(),
            delete_pod(member("a", "g", "2", on="n1")),
            delete_pod(member("b", "g", "2", on="n2")),
            later(20),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2"), ("x", "n1"), ("y", "n2")],
    ),
    "a native group, in kube's API": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(NATIVE, native_group("g", 2)),
            members("g", "a", "b", native=True),
            settle(),
        ],
        binds=[("a", "n1"), ("b", "n2")],
    ),
    "an invalid group holds its members with what is wrong": Case(
        [
            TWO_NODES,
            feed(gang_policy()),
            group(VOLCANO, volcano_group("g", "three")),
            members("g", "a"),
            settle(),
        ],
        where={"a": Where.GATED},
        told={"a": "PodGroup ns/g: spec.minMember: must be a non-negative integer, got 'three'"},
    ),
    "DryRun: the group is decided, nothing bound": Case(
        [
            TWO_NODES,
            feed(gang_policy("DryRun")),
            group(VOLCANO, volcano_group("g", 2)),
            members("g", "a", "b"),
            settle(),
        ],
        where={},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_gang_scheduling(case: Case) -> None:
    run = run_list(case.steps)
    assert run.memory.binds == [(f"ns/{p}", n) for p, n in case.binds]
    for name, where in case.where.items():
        assert run.where(name) is where, name
    for name, message in case.told.items():
        told = [m for key, m in run.memory.conditions if key == f"ns/{name}"]
        assert told[-1] == message, name


def run_steps(*steps: Step) -> Run:
    return run_list(list(steps))


def group_patches(run: Run) -> list[tuple[str, Any]]:
    return [
        (ref.name, copy.deepcopy(dict(patch)))
        for ref, patch in run.memory.patches
        if ref.resource == "podgroups"
    ]


def test_a_native_groups_condition_says_whether_it_was_placed() -> None:
    """kube's PodGroupInitiallyScheduled condition: False with the verdict, then True."""
    run = run_steps(
        TWO_NODES,
        feed(gang_policy()),
        group(NATIVE, native_group("g", 3)),
        members("g", "a", "b", "c", cpu="2", native=True),
        settle(),
    )
    [(name, patch)] = group_patches(run)
    [condition] = patch["status"]["conditions"]
    assert (name, condition["type"], condition["status"], condition["reason"]) == (
        "g",
        "PodGroupInitiallyScheduled",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"


def test_the_pass_is_kept_as_one_decision() -> None:
    run = run_steps(
        TWO_NODES,
        feed(gang_policy()),
        group(VOLCANO, volcano_group("g", 2)),
        members("g", "a", "b", "c", cpu="2"),
        settle(),
    )
    body = run.scheduler.status.body("test", 0)["status"]
    [decision] = body["decisions"]
    assert decision["podGroup"] == {
        "name": "ns/g",
        "api": "volcano",
        "minMember": 2,
        "members": 3,
        "scheduled": 2,
        "pods": [
            {"pod": "ns/a", "node": "n1", "score": decision["podGroup"]["pods"][0]["score"]},
            # n1 full, n2 was the only node that fits: taken unscored.
            {"pod": "ns/b", "node": "n2"},
            {"pod": "ns/c", "message": "0/2 nodes are available: 2 Insufficient cpu."},
        ],
    }
    assert body["scheduled"] == 2


def test_a_dry_run_group_binds_nothing_and_holds_nothing() -> None:
    run = run_steps(
        TWO_NODES,
        feed(gang_policy("DryRun")),
        group(VOLCANO, volcano_group("g", 2)),
        members("g", "a", "b", cpu="2"),
        settle(),
    )
    assert run.memory.binds == []
    assert [reason for _, _, reason, _ in run.memory.events] == ["DryRunScheduled"] * 2
    assert run.scheduler.cache.node_of("a") is None
    assert group_patches(run) == []


def test_a_group_failing_past_its_timeout_says_so() -> None:
    steps = [
        TWO_NODES,
        feed(gang_policy(scheduleTimeoutSeconds=30)),
        group(VOLCANO, volcano_group("g", 3)),
        members("g", "a", "b", "c", cpu="2"),
        settle(),
    ]
    # The queue's timeout moves them back after five minutes.
    run = run_steps(*steps, later(301), settle())
    told = [m for key, m in run.memory.conditions if key == "ns/a"]
    assert told == [
        "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
        "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
        "; not placed within its timeout of 30s",
    ]


def test_a_member_is_told_each_message_once() -> None:
    run = run_steps(
        TWO_NODES,
        feed(gang_policy(scheduleTimeoutSeconds=1000)),
        group(VOLCANO, volcano_group("g", 3)),
        members("g", "a", "b", "c", cpu="2"),
        settle(),
        later(301),
        settle(),
    )
    assert len([m for key, m in run.memory.conditions if key == "ns/a"]) == 1
    # The group's failure is kept once in the policy's status, not at each pass.
    assert len(run.scheduler.status.body("test", 0)["status"]["decisions"]) == 1


def preempting_policy() -> Raw:
    raw = gang_policy()
    raw["spec"]["postFilters"] = [{"name": "DefaultPreemption"}]
    return raw


def running(name: str, on: str, priority: int = 0, cpu: str = "1") -> Raw:
    raw = pod(name, cpu, on=on, priority=priority)
    raw["status"]["startTime"] = "2026-01-01T00:00:00Z"
    return raw


def high(name: str, group_name: str = "g", **kwargs: Any) -> Raw:
    return member(name, group_name, "2", priority=10, **kwargs)


@dataclass(frozen=True)
class PreemptionCase:
    cluster: list[Raw]
    group: list[Raw]
    evicted: int
    told: str
    """The group's message, after kube's "minCount (2) cannot be satisfied: 0 scheduled, 1
    remaining, pod group preemption: "."""


PREEMPTION_CASES = {
    "the whole group fits once both victims go": PreemptionCase(
        [node("n1"), node("n2"), running("v1", "n1"), running("v2", "n2")],
        [high("a"), high("b")],
        2,
        "found a placement for podgroup, preempting 2 victims",
    ),
    "a victim on a node the group does not need is spared": PreemptionCase(
        [
            node("n1"),
            node("n2"),
            node("n3"),
            running("v1", "n1"),
            running("v2", "n2"),
            running("v3", "n3"),
        ],
        [high("a"), high("b")],
        2,
        "found a placement for podgroup, preempting 2 victims",
    ),
    "no pod of lower priority": PreemptionCase(
        [node("n1"), node("n2"), running("v1", "n1", 10), running("v2", "n2", 10)],
        [high("a"), high("b")],
        0,
        "No preemption victims found for incoming preemptor",
    ),
    "the group fits nowhere even without them: nothing is evicted": PreemptionCase(
        [node("n1"), running("v1", "n1"), node("n2", cpu="1")],
        [high("a"), high("b")],
        0,
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
    ),
    "a member that may not preempt": PreemptionCase(
        [node("n1"), node("n2"), running("v1", "n1"), running("v2", "n2")],
        [high("a"), {**high("b"), "spec": {**high("b")["spec"], "preemptionPolicy": "Never"}}],
        0,
        "not eligible due to preemptionPolicy=Never.",
    ),
}


@pytest.mark.parametrize("case", PREEMPTION_CASES.values(), ids=PREEMPTION_CASES.keys())
def test_a_groups_preemption_evicts_only_when_the_whole_group_then_fits(
    case: PreemptionCase,
) -> None:
    run = run_steps(
        feed(preempting_policy()),
        feed(*case.cluster),
        group(VOLCANO, volcano_group("g", 2)),
        feed(*case.group),
        settle(),
    )
    assert len(run.memory.preemptions) == case.evicted
    assert {preemptor for _, preemptor, _, _ in run.memory.preemptions} <= {"ns/a", "ns/b"}
    # Kube's condition on the group: the pass's verdict, then its preemption's words.
    [decision] = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert decision["podGroup"]["message"].endswith(f"pod group preemption: {case.told}")
    # The member the pass did not try is told the verdict alone.
    told = [m for key, m in run.memory.conditions if key == "ns/b"]
    assert told == ["minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"]
    assert run.memory.binds == []
    nominated = {pod for pod, node in run.memory.nominations if node}
    assert nominated == ({"ns/a", "ns/b"} if case.evicted else set())


def test_the_group_binds_where_its_victims_were_once_they_are_gone() -> None:
    victims = [running("v1", "n1"), running("v2", "n2")]
    run = run_steps(
        feed(preempting_policy()),
        feed(node("n1"), node("n2"), *victims),
        group(VOLCANO, volcano_group("g", 2)),
        feed(high("a"), high("b")),
        settle(),
        *(delete_pod(victim) for victim in victims),
        later(20),
        settle(),
    )
    assert sorted(run.memory.binds) == [("ns/a", "n1"), ("ns/b", "n2")]


def test_simulate_tells_a_group_not_placed_as_unschedulable() -> None:
    """The members that fit go nowhere when their group is not placed, and say why."""
    cluster = ClusterDump.of_stored(
        [NodeView(node("n1")), NodeView(node("n2"))],
        [PodView(member(name, "g", "2")) for name in ("a", "b", "c")],
        [(VOLCANO, volcano_group("g", 3))],
    )
    decisions = simulate(gang_policy(), cluster, seed=1)
    assert [(d.pod, d.node, d.message) for d in decisions] == [
        (
            "ns/a",
            None,
            "pod group is unschedulable, minCount (3) cannot be satisfied: 2 "
            "scheduled, 0 remaining",
        ),
        (
            "ns/b",
            None,
            "pod group is unschedulable, minCount (3) cannot be satisfied: 2 "
            "scheduled, 0 remaining",
        ),
        ("ns/c", None, "0/2 nodes are available: 2 Insufficient cpu."),
    ]


class Passes(NoMetrics):
    """Keeps the gang passes' results."""

    def __init__(self) -> None:
        self.passes: list[tuple[str, str]] = []

    def group_attempt(self, result: str, profile: str, seconds: float, algorithm: float) -> None:
        self.passes.append((result, profile))


@pytest.mark.parametrize(
    ("steps", "passes"),
    [
        pytest.param(
            [group(VOLCANO, volcano_group("g", 2)), members("g", "a", "b")],
            [("scheduled", "test")],
            id="placed",
        ),
        pytest.param(
            [group(VOLCANO, volcano_group("g", 3)), members("g", "a", "b", "c", cpu="2")],
            [("unschedulable", "test")],
            id="not placed",
        ),
    ],
)
def test_each_pass_is_counted_by_its_result(steps: list[Step], passes: list[Any]) -> None:
    sink = Passes()

    def counted(run: Run) -> None:
        run.scheduler.metrics = sink

    run_steps(counted, TWO_NODES, feed(gang_policy()), *steps, settle())
    assert sink.passes == passes


def test_the_pod_group_metrics_carry_kubes_names() -> None:
    metrics = Metrics()
    metrics.group_attempt("scheduled", "gang", 0.01, 0.002)
    text = generate_latest(metrics.registry).decode()
    assert (
        'scheduler_podgroup_schedule_attempts_total{profile="gang",result="scheduled"} 1.0' in text
    )
    assert "scheduler_podgroup_scheduling_attempt_duration_seconds_bucket" in text
    assert "scheduler_podgroup_scheduling_algorithm_duration_seconds_count 1.0" in text


def test_a_victim_a_budget_protects_is_spared_first() -> None:
    """kube's reprieve order: of two victims either of which makes room, the one a
    PodDisruptionBudget protects (none of its disruptions left) stays, the other goes."""
    protected = running("v1", "n1")
    protected["metadata"]["labels"] = {"app": "db"}
    budget = {
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0},
    }
    one = volcano_group("g", 1)
    run = run_steps(
        feed(preempting_policy()),
        feed(node("n1", cpu="3"), running("v2", "n1"), protected),
        lambda run: run.scheduler.changed(disruption.KIND, budget),
        group(VOLCANO, one),
        feed(high("a")),
        settle(),
    )
    assert [victim for victim, _, _, _ in run.memory.preemptions] == ["ns/v2"]


def test_lowering_the_minimum_of_a_group_that_failed_lets_those_that_fit_go() -> None:
    """kube's hint for a PodGroup update: a lower minCount queues the group's members again,
    also those a pass rejected (parked), not only those held before it."""
    lowered = volcano_group("g", 2)
    lowered["metadata"]["resourceVersion"] = "2"
    steps = [
        TWO_NODES,
        feed(gang_policy()),
        group(VOLCANO, volcano_group("g", 3)),
        members("g", "a", "b", "c", cpu="2"),
        settle(),
        later(20),
    ]
    run = run_steps(*steps, group(VOLCANO, lowered), settle())
    assert sorted(run.memory.binds) == [("ns/a", "n1"), ("ns/b", "n2")]
    # Its own status written back (the same minimum) wakes nobody.
    run = run_steps(*steps, group(VOLCANO, volcano_group("g", 3)), settle())
    assert run.memory.binds == []
    assert run.where("a") is Where.UNSCHEDULABLE


def test_dynamic_resources_says_its_part_before_the_groups_preemption() -> None:
    """kube's RunPodGroupPostFilterPlugins: DynamicResources' Unschedulable words joined to the
    preemption's, when the preemption did not end the post-filters; the victims are told a pod
    group preempts them."""
    raw = preempting_policy()
    raw["spec"]["predicates"].append({"name": "DynamicResources"})
    raw["spec"]["postFilters"] = [{"name": "DefaultPreemption"}]
    run = run_steps(
        feed(raw),
        feed(node("n1"), running("v1", "n1"), node("n2", cpu="1")),
        group(VOLCANO, volcano_group("g", 2)),
        feed(high("a"), high("b")),
        settle(),
    )
    [decision] = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert decision["podGroup"]["message"] == (
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, deallocation and deletion "
        "of ResourceClaims completed, pod group preemption: minCount (2) cannot be satisfied: 1 "
        "scheduled, 0 remaining"
    )


def test_the_victims_of_a_groups_preemption_are_told_a_pod_group_preempts_them() -> None:
    run = run_steps(
        feed(preempting_policy()),
        feed(node("n1"), node("n2"), running("v1", "n1"), running("v2", "n2")),
        group(VOLCANO, volcano_group("g", 2)),
        feed(high("a"), high("b")),
        settle(),
    )
    assert {(where, condition) for _, _, where, condition in run.memory.preemptions} == {
        ("cluster", "test: preempting to accommodate a higher priority podgroup")
    }
