"""DefaultPreemption as kube-scheduler v1.34's: eligibility, the nodes it may preempt on, the
victims it picks (reprieves, budgets), the node it picks (each criterion), its messages in kube's
words, its args, and the what-if leaving the live state exactly as it was."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.interface import Filter, NodeStatuses, PostFilterResult, WhatIf
from policy_scheduler.framework.types import Cycle, NominatedPods
from policy_scheduler.model.disruption import DisruptionBudgets
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.nodetable import NodeBlock, NodeTable
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins import (
    default_preemption,
    dynamic_resources,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from policy_scheduler.plugins.default_preemption import (
    NO_VICTIMS,
    Candidate,
    DefaultPreemption,
    fit_error,
    new_post_filter,
    pick,
)
from policy_scheduler.runtime.schedule_one import Pipeline

HIGH = 100
TAINT = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]


def pod(  # noqa: PLR0917 (the tables read better positionally)
    name: str,
    cpu: int = 1,
    priority: int = 0,
    labels: Mapping[str, str] | None = None,
    start: str | None = None,
    status: Mapping[str, Any] | None = None,
    deleting: bool = False,
    **spec: Any,
) -> PodView:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": name}
    metadata["labels"] = dict(labels or {})
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    raw_status = dict(status or {})
    if start is not None:
        raw_status["startTime"] = start
    container = {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
    return PodView(
        {
            "metadata": metadata,
            "spec": {"priority": priority, "containers": [container], **spec},
            "status": raw_status,
        }
    )


def node(name: str, cpu: int, *pods: PodView, taints: Any = None, zone: str = "z") -> NodeInfo:
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    raw: dict[str, Any] = {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }
    return NodeInfo(NodeView(raw), pods)


def pipeline(pool: Mapping[str, str] | None = None) -> Pipeline:
    filters: list[Filter[Any]] = [
        taint_toleration.new_filter({}, "t"),
        node_resources_fit.new_filter({}, "f"),
        inter_pod_affinity.new_filter({}, "i"),
        pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
    ]
    selector = None if pool is None else LabelSelector.parse({"matchLabels": dict(pool)})
    return Pipeline(filters, [], node_pool=selector)


class FixedOffset(random.Random):
    """A random source whose ``randrange`` gives a fixed offset (kube's getOffsetRand)."""

    def __init__(self, offset: int = 0) -> None:
        super().__init__(0)
        self.offset = offset

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self.offset


def statuses_of(
    policy: Pipeline, state: ClusterState, preemptor: PodView, rng: random.Random
) -> NodeStatuses:
    decision = policy.decide(preemptor, state, rng, statuses=True)
    assert decision.node is None, decision
    return policy.node_statuses(decision)


def preempt(  # noqa: PLR0917
    nodes: Sequence[NodeInfo],
    preemptor: PodView,
    budgets: Sequence[Mapping[str, Any]] = (),
    plugin: DefaultPreemption | None = None,
    offset: int = 0,
    policy: Pipeline | None = None,
) -> PostFilterResult:
    state = ClusterState(nodes, disruption_budgets=DisruptionBudgets(budgets))
    policy = policy or pipeline()
    rng = FixedOffset(offset)
    statuses = statuses_of(policy, state, preemptor, rng)
    return (plugin or DefaultPreemption()).post_filter(None, Cycle(preemptor, state, rng), statuses)


def victims(result: PostFilterResult) -> tuple[str, list[str], int]:
    assert result.preemption is not None, result.message
    p = result.preemption
    return p.node, [v.name for v in p.victims], p.pdb_violations


def pdb(selector: Mapping[str, str], allowed: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": "b", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": dict(selector)}},
        "status": {"disruptionsAllowed": allowed},
    }


PREEMPTED = {
    "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
}


# --- eligibility -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "preemptor", "nodes", "message"),
    [
        (
            "preemptionPolicy Never",
            pod("p", 2, HIGH, preemptionPolicy="Never"),
            [node("n1", 2, pod("a", 2))],
            "preemption: not eligible due to preemptionPolicy=Never.",
        ),
        (
            "a lower-priority pod terminating by preemption on the nominated node",
            pod("p", 2, HIGH, status={"nominatedNodeName": "n1"}),
            [node("n1", 2, pod("a", 2, status=PREEMPTED, deleting=True))],
            "preemption: not eligible due to a terminating pod on the nominated node.",
        ),
    ],
)
def test_not_eligible(case: str, preemptor: PodView, nodes: list[NodeInfo], message: str) -> None:
    result = preempt(nodes, preemptor)
    assert (result.message, result.preemption) == (message, None), case
    # kube's Preempt: a nil PostFilterResult keeps the pod's nomination.
    assert not result.clears_nomination, case


@pytest.mark.parametrize(
    ("case", "terminating", "taints"),
    [
        ("deleting without the preemption condition", pod("a", 2, deleting=True), None),
        ("condition set but not deleted yet", pod("a", 2, status=PREEMPTED), None),
        (
            "terminating, but the nominated node is unresolvable now: preempt elsewhere",
            pod("a", 2, status=PREEMPTED, deleting=True),
            TAINT,
        ),
    ],
)
def test_eligible_despite_nomination(case: str, terminating: PodView, taints: Any) -> None:
    preemptor = pod("p", 2, HIGH, status={"nominatedNodeName": "n1"})
    nodes = [node("n1", 2, terminating, taints=taints), node("n2", 2, pod("b", 2))]
    assert victims(preempt(nodes, preemptor))[0] in ("n1", "n2"), case


# --- candidate nodes and the messages ----------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "nodes", "preemptor", "message"),
    [
        (
            "every node unresolvable (taints)",
            [node("n1", 2, pod("a", 2), taints=TAINT), node("n2", 2, taints=TAINT)],
            pod("p", 2, HIGH),
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        ),
        (
            "the pod asks for more than any node has: Insufficient cpu is unresolvable",
            [node("n1", 2, pod("a", 2))],
            pod("p", 3, HIGH),
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        (
            "no pod of lower priority",
            [node("n1", 2, pod("a", 2, HIGH)), node("n2", 2, pod("b", 2, HIGH + 1))],
            pod("p", 2, HIGH),
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        ),
        (
            "one unresolvable, one without victims",
            [node("n1", 2, taints=TAINT), node("n2", 2, pod("b", 2, HIGH))],
            pod("p", 2, HIGH),
            "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
            "pod, 1 Preemption is not helpful for scheduling.",
        ),
        (
            "evicting every lower-priority pod is not enough: the filter's own reason",
            [node("n1", 4, pod("a", 1, HIGH), pod("b", 1, HIGH), pod("c", 1))],
            pod("p", 3, HIGH),
            "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
        ),
        (
            "outside the policy's node pool is unresolvable",
            [node("n1", 2, pod("a", 2))],
            pod("p", 2, HIGH),
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        (
            "the pod's own pod affinity unmatched is unresolvable",
            [node("n1", 4, pod("a", 2))],
            pod(
                "p",
                2,
                HIGH,
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "none"}},
                                "topologyKey": "kubernetes.io/hostname",
                            }
                        ]
                    }
                },
            ),
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
    ],
)
def test_no_candidate(case: str, nodes: list[NodeInfo], preemptor: PodView, message: str) -> None:
    policy = pipeline({"pool": "yes"}) if "pool" in case else None
    result = preempt(nodes, preemptor, policy=policy)
    assert (result.message, result.preemption) == (message, None), case
    # kube's FitError path nominates no node: the pod's nomination is cleared.
    assert result.clears_nomination, case


def test_a_pre_filter_rejection_makes_every_node_unhelpful() -> None:
    state = ClusterState([node("n1", 2, pod("a", 2)), node("n2", 2, pod("b", 2))])
    statuses = NodeStatuses({"x": 2}, 2, frozenset(), pipeline().what_if, "x")
    result = DefaultPreemption().post_filter(None, Cycle(pod("p", 2, HIGH), state), statuses)
    assert result.message == (
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("case", "total", "statuses", "message"),
    [
        (
            "no nodes tried",
            3,
            {},
            "0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ),
        (
            "counts sorted as strings, as kube sorts them: 10 before 2",
            12,
            {f"n{i}": (NO_VICTIMS,) for i in range(2)},
            "0/12 nodes are available: 10 Preemption is not helpful for scheduling, "
            "2 No preemption victims found for incoming pod.",
        ),
        (
            "every reason of a node counted",
            2,
            {"n1": ("Insufficient cpu", "Insufficient memory"), "n2": ("Insufficient cpu",)},
            "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
        ),
    ],
)
def test_fit_error(case: str, total: int, statuses: dict[str, Sequence[str]], message: str) -> None:
    assert fit_error(total, statuses) == message, case


def test_unresolvable_nodes_are_tracked_only_when_asked() -> None:
    state = ClusterState(
        [
            node("tainted", 8, taints=TAINT),
            node("small", 1),
            node("full", 2, pod("a", 2)),
        ]
    )
    policy, preemptor = pipeline(), pod("p", 2, HIGH)
    decision = policy.decide(preemptor, state, random.Random(0), statuses=True)
    assert decision.unresolvable == frozenset({"tainted", "small"})
    assert policy.decide(preemptor, state, random.Random(0)).unresolvable is None


# --- victims ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "pods", "budgets", "expected"),
    [
        (
            "only what is needed, the least important; the others reprieved",
            [pod("low1", 1, 1), pod("low2", 1, 2), pod("low3", 2, 3)],
            [],
            ("n1", ["low2", "low1"], 0),
        ),
        (
            "equal priority: the later started goes first",
            [
                pod("old", 1, 1, start="2026-01-01T00:00:00Z"),
                pod("new", 1, 1, start="2026-02-01T00:00:00Z"),
                pod("big", 1, 5),
            ],
            [],
            ("n1", ["new"], 0),
        ),
        (
            "a pod a budget protects is reprieved first",
            [pod("low1", 1, 1, {"app": "db"}), pod("low2", 1, 2), pod("low3", 2, 3)],
            [pdb({"app": "db"})],
            ("n1", ["low3"], 0),
        ),
        (
            "a protected pod that must go counts as a violation",
            [pod("low1", 4, 1, {"app": "db"})],
            [pdb({"app": "db"})],
            ("n1", ["low1"], 1),
        ),
        (
            "an allowed disruption is no violation",
            [pod("low1", 4, 1, {"app": "db"})],
            [pdb({"app": "db"}, allowed=1)],
            ("n1", ["low1"], 0),
        ),
        (
            "victims of both kinds sorted most important first",
            [pod("a", 1, 1, {"app": "db"}), pod("b", 1, 5)],
            [pdb({"app": "db"})],
            ("n2", ["b", "a"], 1),
        ),
        (
            "pods of the preemptor's priority or higher are never victims",
            [pod("same", 2, HIGH), pod("low", 2, 1)],
            [],
            ("n1", ["low"], 0),
        ),
    ],
)
def test_victims(
    case: str,
    pods: list[PodView],
    budgets: list[dict[str, Any]],
    expected: tuple[str, list[str], int],
) -> None:
    # On n2, of 2 cpus, the pod needs them all; n1 has 4.
    on = node("n2", 2, *pods) if expected[0] == "n2" else node("n1", 4, *pods)
    result = preempt([on], pod("p", 2, HIGH), budgets)
    assert victims(result) == expected, case
    # v1.37 (kubernetes#140180): a successful preemption says where, and how many victims
    # ("victims" even for one).
    assert result.message == (
        f"preemption: found a potential placement for pod on node {expected[0]}, "
        f"preempting {len(expected[1])} victims"
    )


def test_anti_affinity_with_a_lower_priority_pod_is_resolved_by_evicting_it() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    nodes = [node("n1", 8, pod("db", 1, 1, {"app": "db"}), pod("other", 1, 1))]
    result = preempt(nodes, pod("p", 1, HIGH, affinity=anti))
    assert victims(result) == ("n1", ["db"], 0)


def test_topology_spread_counts_the_victims_gone() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    web = {"app": "web"}
    # n1 has two web pods, n2 none but no room: only on n2 can the skew hold.
    nodes = [
        node("n1", 8, pod("w1", 1, 1, web), pod("w2", 1, 1, web)),
        node("n2", 1, pod("x", 1, 1)),
    ]
    result = preempt(nodes, pod("p", 1, HIGH, web, topologySpreadConstraints=spread))
    assert victims(result) == ("n2", ["x"], 0)


def nominated_in(state: ClusterState, by_node: Mapping[str, Sequence[PodView]]) -> NominatedPods:
    """``by_node``'s pods as nominated pods that hold room, counted in ``state`` as the
    scheduler's cache counts them (added to their node while the filters look)."""

    @contextlib.contextmanager
    def counted(pods: Iterable[tuple[str, PodView]]) -> Iterator[None]:
        added = [(state.nodes[name], nominated) for name, nominated in pods]
        for on, nominated in added:
            state.add_pod(on, nominated)
        try:
            yield
        finally:
            for on, nominated in added:
                state.remove_pod(on, nominated.uid)

    return NominatedPods(by_node, counted)


def test_nominated_pods_hold_their_room() -> None:
    state = ClusterState([node("n1", 4, pod("a", 2, 1), pod("b", 2, 1))])
    info = state.nodes["n1"]
    nominated = nominated_in(state, {"n1": [pod("nom", 2, HIGH)]})
    policy, preemptor, rng = pipeline(), pod("p", 2, HIGH), random.Random(0)
    decision = policy.decide(preemptor, state, rng, nominated=nominated, statuses=True)
    statuses = policy.node_statuses(decision, nominated)
    result = DefaultPreemption().post_filter(None, Cycle(preemptor, state, rng), statuses)
    assert victims(result) == ("n1", ["a", "b"], 0)
    assert "nom" not in info.pods


WEB = {"app": "web"}
ZONE_SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": WEB},
    }
]
NEAR_DB = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
SPREAD_FAILS = "node(s) didn't match pod topology spread constraints"
AFFINITY_FAILS = "node(s) didn't match pod affinity rules"


@pytest.mark.parametrize(
    ("nodes", "nominated", "incoming", "feasible", "reasons"),
    [
        pytest.param(
            [
                node("a", 4, pod("in-a", 1, 1, WEB), zone="za"),
                node("b", 1, pod("x", 1, 1), zone="zb"),
            ],
            {"b": [pod("nom", 1, HIGH, WEB)]},
            pod("p", 1, HIGH, WEB, topologySpreadConstraints=ZONE_SPREAD),
            [],
            {"Insufficient cpu": 1, SPREAD_FAILS: 1},
            id="a pod nominated to another zone counts not in the spread on this one",
        ),
        pytest.param(
            [node("n1", 4), node("n2", 4)],
            {"n1": [pod("db", 1, HIGH, {"app": "db"})]},
            pod("p", 1, HIGH, affinity=NEAR_DB),
            [],
            {AFFINITY_FAILS: 2},
            id="a node must pass without its nominated pods too",
        ),
        pytest.param(
            [node("a", 2, pod("in-a", 1, 1, WEB), zone="za"), node("b", 4, zone="zb")],
            {"a": [pod("nom", 1, HIGH)]},
            pod("p", 1, HIGH, WEB, topologySpreadConstraints=ZONE_SPREAD),
            ["b"],
            {"Insufficient cpu": 1},
            id="the failure with the nominated pods is the one told",
        ),
        pytest.param(
            [node("n1", 2), node("n2", 1, pod("x", 1, 1))],
            {"n1": [pod("nom", 1, HIGH)], "gone": [pod("lost", 1, HIGH)]},
            pod("p", 2, HIGH),
            [],
            {"Insufficient cpu": 2},
            id="a nominated pod holds its node's room; one of a node gone counts nowhere",
        ),
        pytest.param(
            [node("n1", 2), node("n2", 2), node("n3", 2), node("n4", 2)],
            {"n1": [pod("nom1", 1, HIGH)], "n3": [pod("nom3", 2, HIGH)], "n4": []},
            pod("p", 1, HIGH),
            ["n1", "n2", "n4"],
            {"Insufficient cpu": 1},
            id="nodes with nominated pods filtered at once, each counting its own",
        ),
    ],
)
def test_filters_count_nominated_pods_on_their_node_only(
    nodes: list[NodeInfo],
    nominated: Mapping[str, Sequence[PodView]],
    incoming: PodView,
    feasible: list[str],
    reasons: dict[str, int],
) -> None:
    """kube-scheduler's RunFilterPluginsWithNominatedPods: a node with pods nominated to it
    (of at least the pod's priority) fits only if the filters pass it with them counted there,
    and only there, and without them; the failure with them is the one told."""
    state = ClusterState(nodes)
    decision = pipeline().decide(
        incoming, state, random.Random(0), nominated=nominated_in(state, nominated)
    )
    assert (decision.feasible_nodes, dict(decision.reasons)) == (len(feasible), reasons)
    # At most three feasible nodes here: every one is reported, but the only one, taken unscored.
    reported: list[str | None] = [c.node for c in decision.candidates] or [decision.node]
    assert sorted(node for node in reported if node) == feasible
    assert all("nom" not in info.pods and "db" not in info.pods for info in state)


# --- picking the node ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "nodes", "budgets", "chosen", "why"),
    [
        (
            "fewest PDB violations",
            [node("n1", 2, pod("a", 2, 1, {"app": "db"})), node("n2", 2, pod("b", 2, 5))],
            [pdb({"app": "db"})],
            "n2",
            "fewer PodDisruptionBudget violations than node n1",
        ),
        (
            "lowest highest-victim priority",
            [node("n1", 2, pod("a", 2, 5)), node("n2", 2, pod("b", 2, 3))],
            [],
            "n2",
            "a lower highest victim priority than node n1",
        ),
        (
            "smallest priority sum",
            [
                node("n1", 2, pod("a", 1, 3), pod("b", 1, 3)),
                node("n2", 2, pod("c", 1, 3), pod("d", 1, 2)),
            ],
            [],
            "n2",
            "a smaller sum of victim priorities than node n1",
        ),
        (
            "the sum's offset makes fewer victims weigh first",
            [
                node("n1", 2, pod("a", 1, 3), pod("b", 1, -50)),
                node("n2", 2, pod("c", 2, 3)),
            ],
            [],
            "n2",
            "a smaller sum of victim priorities than node n1",
        ),
        (
            "latest start of the most important victims",
            [
                node("n1", 2, pod("a", 2, 3, start="2026-01-01T00:00:00Z")),
                node("n2", 2, pod("b", 2, 3, start="2026-02-01T00:00:00Z")),
            ],
            [],
            "n2",
            "a later start of its most important victims than node n1",
        ),
        (
            "a victim not started yet counts as starting now",
            [
                node("n1", 2, pod("a", 2, 3)),
                node("n2", 2, pod("b", 2, 3, start="2026-02-01T00:00:00Z")),
            ],
            [],
            "n1",
            "a later start of its most important victims than node n2",
        ),
        (
            "all equal: the first tried",
            [node("n1", 2, pod("a", 2, 3)), node("n2", 2, pod("b", 2, 3))],
            [],
            "n1",
            "the first of 2 nodes equally good by every criterion",
        ),
        (
            "one candidate",
            [node("n1", 2, pod("a", 2, 3)), node("n2", 2, pod("b", 2, HIGH))],
            [],
            "n1",
            "the only node where evicting pods of lower priority makes room",
        ),
    ],
)
def test_pick(
    case: str, nodes: list[NodeInfo], budgets: list[dict[str, Any]], chosen: str, why: str
) -> None:
    result = preempt(nodes, pod("p", 2, HIGH), budgets)
    assert result.preemption is not None
    assert result.preemption.node == chosen, case
    assert f"node {chosen}: {why}; " in result.preemption.why, case


def test_fewest_victims_decides_when_the_sums_tie() -> None:
    # With kube's offset per victim, sums tie across different counts only at the int32 edges.
    one = Candidate("n1", (pod("a", priority=0),), 0, 0)
    two = Candidate("n2", (pod("b", priority=0), pod("c", priority=-(2**31))), 0, 0)
    chosen, why = pick([two, one])
    assert (chosen.node, why) == ("n1", "fewer victims than node n2")


def test_why_names_the_victims_and_what_is_kept() -> None:
    nodes = [node("n1", 4, pod("low1", 1, 1), pod("low2", 1, 2), pod("low3", 2, 3))]
    result = preempt(nodes, pod("p", 2, HIGH))
    assert result.preemption is not None
    assert result.preemption.why == (
        "node n1: the only node where evicting pods of lower priority makes room; evicting 2 "
        "pod(s) of priority below 100 (at most 2), the least important first, is enough, "
        "keeping 1 other pod(s) of lower priority."
    )


# --- sampling -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "absolute", "potential", "wanted"),
    [(10, 100, 50, 50), (10, 100, 2000, 200), (10, 100, 500, 100), (0, 1, 30, 1), (50, 0, 7, 3)],
)
def test_candidates_wanted(percentage: int, absolute: int, potential: int, wanted: int) -> None:
    assert DefaultPreemption(percentage, absolute).candidates_wanted(potential) == wanted


@pytest.mark.parametrize(("offset", "chosen"), [(0, "n1"), (1, "n2"), (2, "n3")])
def test_dry_run_stops_at_enough_candidates_from_the_random_offset(
    offset: int, chosen: str
) -> None:
    nodes = [node(f"n{i}", 2, pod(f"a{i}", 2, 3)) for i in (1, 2, 3)]
    plugin = DefaultPreemption(0, 1)
    result = preempt(nodes, pod("p", 2, HIGH), plugin=plugin, offset=offset)
    assert victims(result)[0] == chosen


def test_dry_run_goes_on_past_violating_candidates() -> None:
    db = {"app": "db"}
    nodes = [node("n1", 2, pod("a", 2, 3, db)), node("n2", 2, pod("b", 2, 3))]
    result = preempt(nodes, pod("p", 2, HIGH), [pdb(db)], plugin=DefaultPreemption(0, 1))
    assert victims(result) == ("n2", ["b"], 0)


@pytest.mark.parametrize(
    ("case", "args", "errors"),
    [
        ("defaults", {}, []),
        ("in range", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5}, []),
        (
            "percentage above 100",
            {"minCandidateNodesPercentage": 101},
            ["a.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"],
        ),
        (
            "negative absolute",
            {"minCandidateNodesAbsolute": -1},
            ["a.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
        ),
        (
            "both zero",
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            [
                "a.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesAbsolute",
                "a.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time "
                "as minCandidateNodesPercentage",
            ],
        ),
        (
            "not an integer, and unknown",
            {"minCandidateNodesPercentage": "10", "extra": 1},
            [
                "a.extra: unknown field; expected one of ['minCandidateNodesAbsolute', "
                "'minCandidateNodesPercentage']",
                "a.minCandidateNodesPercentage: must be an integer",
            ],
        ),
    ],
)
def test_args(case: str, args: dict[str, Any], errors: list[str]) -> None:
    if not errors:
        plugin = new_post_filter(args, "a")
        assert plugin.name == default_preemption.NAME == "DefaultPreemption"
        return
    with pytest.raises(ArgsError) as raised:
        new_post_filter(args, "a")
    assert [str(e) for e in raised.value.errors] == errors, case


# --- the what-if leaves the state as it was -----------------------------------------------------


def fingerprint(state: ClusterState) -> Any:
    """Everything the cluster state indexes, in order where order is kept."""
    nodes = [
        (
            info.name,
            list(info.pods),
            dict(info.requested),
            dict(info.nonzero_requested),
            list(info.used_ports),
            [(key, count) for key, (_, count) in info.label_groups.items()],
        )
        for info in state.table.infos
    ]
    groups = {
        key: {info.name: count for info, count in group.nodes.items()}
        for key, group in state.label_groups.items()
    }
    affinity = {
        key: {info.name: count for info, count in group.nodes.items()}
        for key, group in state.affinity_groups.items()
    }
    table = state.table
    columns = {
        name: table.block(np.arange(len(table))).requested(name).tolist() for name in ("cpu",)
    }
    counts = table.block(np.arange(len(table))).pod_count().tolist()
    return nodes, groups, affinity, dict(state.claim_users), columns, counts


def test_the_what_if_restores_the_state_exactly() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    nodes = [
        node(
            "n1",
            4,
            pod("a", 1, 1, {"app": "x"}, affinity=anti),
            pod("b", 1, HIGH),
            pod("c", 1, 2, {"app": "y"}, ports=None),
            pod("d", 1, 3),
        ),
        node("n2", 4, pod("e", 2, 1), pod("f", 2, 4)),
    ]
    state = ClusterState(nodes)
    before = fingerprint(state)
    preemptor, rng = pod("p", 3, HIGH), random.Random(1)
    statuses = statuses_of(pipeline(), state, preemptor, rng)
    result = DefaultPreemption().post_filter(None, Cycle(preemptor, state, rng), statuses)
    assert result.preemption is not None
    assert fingerprint(state) == before


def test_the_what_if_restores_the_state_when_a_filter_fails() -> None:
    state = ClusterState([node("n1", 4, pod("a", 1, 1), pod("b", 1, HIGH), pod("c", 2, 2))])
    before = fingerprint(state)

    class Failing(WhatIf):
        def removed(self, node: NodeInfo, pod: PodView) -> None:
            pass

        def added(self, node: NodeInfo, pod: PodView) -> None:
            pass

        def verdict(self, node: NodeInfo) -> Sequence[str]:
            raise RuntimeError("a plugin's bug")

    statuses = NodeStatuses({}, 1, frozenset(), lambda cycle: Failing())
    with pytest.raises(RuntimeError):
        DefaultPreemption().post_filter(None, Cycle(pod("p", 2, HIGH), state), statuses)
    assert fingerprint(state) == before


def test_nodes_a_pre_filter_left_out_are_unresolvable() -> None:
    # NodeAffinity pins the pod to n1 by metadata.name: n2 is left out before any filter runs.
    pinned = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            }
        }
    }
    policy = Pipeline(
        [node_affinity.new_filter({}, "a"), node_resources_fit.new_filter({}, "f")], []
    )
    state = ClusterState([node("n1", 2, pod("a", 2)), node("n2", 2, pod("b", 2))])
    preemptor = pod("p", 2, HIGH, affinity=pinned)
    statuses = statuses_of(policy, state, preemptor, FixedOffset())
    assert statuses.unresolvable == frozenset({"n2"})
    result = DefaultPreemption().post_filter(None, Cycle(preemptor, state, FixedOffset()), statuses)
    assert victims(result) == ("n1", ["a"], 0)


@pytest.mark.parametrize(
    ("case", "plugin", "reasons", "unresolvable"),
    [
        (
            "NodeName",
            node_name.new_filter({}, "x"),
            ("node(s) didn't match the requested node name",),
            True,
        ),
        (
            "NodeUnschedulable",
            node_unschedulable.new_filter({}, "x"),
            ("node(s) were unschedulable",),
            True,
        ),
        (
            "TaintToleration",
            taint_toleration.new_filter({}, "x"),
            ("node(s) had untolerated taint(s)",),
            True,
        ),
        (
            "NodeAffinity",
            node_affinity.new_filter({}, "x"),
            ("node(s) didn't match Pod's node affinity/selector",),
            True,
        ),
        (
            "InterPodAffinity: own affinity",
            inter_pod_affinity.new_filter({}, "x"),
            (inter_pod_affinity.AFFINITY_NOT_MATCH,),
            True,
        ),
        (
            "InterPodAffinity: anti-affinity",
            inter_pod_affinity.new_filter({}, "x"),
            (inter_pod_affinity.ANTI_AFFINITY_NOT_MATCH,),
            False,
        ),
        (
            "InterPodAffinity: existing anti-affinity",
            inter_pod_affinity.new_filter({}, "x"),
            (inter_pod_affinity.EXISTING_ANTI_AFFINITY_NOT_MATCH,),
            False,
        ),
        (
            "PodTopologySpread: missing label",
            pod_topology_spread.new_filter({}, "x"),
            (pod_topology_spread.MISSING_LABEL,),
            True,
        ),
        (
            "PodTopologySpread: skew",
            pod_topology_spread.new_filter({}, "x"),
            (pod_topology_spread.CONSTRAINTS_NOT_MATCH,),
            False,
        ),
        (
            "VolumeRestrictions: disk conflict",
            volume_restrictions.new_filter({}, "x"),
            (volume_restrictions.DISK_CONFLICT,),
            False,
        ),
        (
            "VolumeRestrictions: claim not found",
            volume_restrictions.new_filter({}, "x"),
            ('persistentvolumeclaim "c" not found',),
            True,
        ),
        (
            "NodeVolumeLimits: exceeded",
            node_volume_limits.new_filter({}, "x"),
            (node_volume_limits.EXCEEDED,),
            False,
        ),
        (
            "VolumeBinding",
            volume_binding.new_filter({}, "x"),
            (volume_binding.NODE_CONFLICT,),
            True,
        ),
        ("VolumeZone", volume_zone.new_filter({}, "x"), (volume_zone.CONFLICT,), True),
        (
            "DynamicResources",
            dynamic_resources.new_filter({}, "x"),
            ("cannot allocate all claims",),
            True,
        ),
        (
            "NodePorts",
            node_ports.new_filter({}, "x"),
            ("node(s) didn't have free ports for the requested pod ports",),
            False,
        ),
    ],
)
def test_which_reasons_are_unresolvable(
    case: str, plugin: Filter[Any], reasons: tuple[str, ...], unresolvable: bool
) -> None:
    verdicts = plugin.unresolvable(pod("p"), NodeBlock.of(node("n1", 2)), reasons)
    assert verdicts.tolist() == [unresolvable], case


@pytest.mark.parametrize(
    ("case", "cpu", "reasons", "unresolvable"),
    [
        ("more cpu than the node has at all", 3, ("Insufficient cpu",), True),
        ("cpu the node has, taken by pods", 2, ("Insufficient cpu",), False),
        ("too many pods", 1, ("Too many pods",), False),
    ],
)
def test_node_resources_fit_unresolvable_reads_the_node(
    case: str, cpu: int, reasons: tuple[str, ...], unresolvable: bool
) -> None:
    plugin = node_resources_fit.new_filter({}, "f")
    verdicts = plugin.unresolvable(pod("p", cpu), NodeBlock.of(node("n1", 2)), reasons)
    assert verdicts.tolist() == [unresolvable], case


def test_node_resources_fit_unresolvable_asks_each_node_of_a_block() -> None:
    plugin = node_resources_fit.new_filter({}, "f")
    nodes = NodeTable([node("small", 2), node("big", 4), node("smaller", 1)]).all()
    verdicts = plugin.unresolvable(pod("p", 3), nodes, ("Insufficient cpu",))
    assert verdicts.tolist() == [True, False, True]
