"""The pipeline walks nodes in blocks and scores them all at once, and decides exactly as walking
them one by one would: the same nodes visited from the same rotating start, the same first
failing filter per node, the reasons counted (and ordered) the same, the same scores, the same
node among equal totals (test_pipeline checks that choice against kube-scheduler's heap). The
reference below is that node-by-node walk, with each plugin's per-node ``filter``/``score``."""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from policy_scheduler.framework.interface import SKIP, Filter
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.helper import group_failures
from policy_scheduler.plugins.registry import FILTERS, SCORERS
from policy_scheduler.runtime.decision import Candidate, Decision
from policy_scheduler.runtime.explanation import explain
from policy_scheduler.runtime.framework import NODE_POOL_FILTER, OUTSIDE_NODE_POOL, WeightedScorer
from policy_scheduler.runtime.schedule_one import Pipeline, feasible_nodes_to_find, select_host

GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True)
class NodeByNode:
    """The reference: kube-scheduler's walk, one node at a time."""

    pipeline: Pipeline
    next_start: int = 0

    def rejection(
        self, states: Sequence[tuple[Filter[Any], Any]], pod: PodView, node: NodeInfo
    ) -> tuple[str, Sequence[str]] | None:
        pool = self.pipeline.node_pool
        if pool is not None and not pool.matches(node.node.labels):
            return NODE_POOL_FILTER, (OUTSIDE_NODE_POOL,)
        for plugin, state in states:
            reasons = plugin.filter(state, pod, node)
            if reasons:
                return plugin.name, reasons
        return None

    def states(self, cycle: Cycle) -> list[tuple[Filter[Any], Any]]:
        states = [(f, f.pre_filter(cycle)) for f in self.pipeline.filters]
        return [(f, state) for f, state in states if state is not SKIP]

    def score(
        self, cycle: Cycle, feasible: list[NodeInfo]
    ) -> tuple[list[int], list[tuple[str, list[int] | None]]]:
        totals = [0] * len(feasible)
        columns: list[tuple[str, list[int] | None]] = []
        table = cycle.snapshot.table
        block = table.block(np.array([table.position(n) for n in feasible], np.intp))
        for weighted in self.pipeline.scorers:
            scorer = weighted.scorer
            state = scorer.pre_score(cycle, block)
            if state is SKIP:
                columns.append((scorer.name, None))
                continue
            raw = np.array([scorer.score(state, cycle.pod, n) for n in feasible], np.int64)
            scorer.normalize(state, raw)
            scores = raw.tolist()
            totals = [t + weighted.weight * s for t, s in zip(totals, scores, strict=True)]
            columns.append((scorer.name, scores))
        return totals, columns

    def decide(self, pod: PodView, snapshot: Snapshot, rng: random.Random) -> Decision:
        cycle = Cycle(pod, snapshot, rng)
        nodes = list(snapshot)
        states = self.states(cycle)
        wanted = feasible_nodes_to_find(len(nodes), self.pipeline.percentage_of_nodes_to_score)
        start = self.next_start % len(nodes) if nodes else 0
        reasons: dict[str, int] = {}
        rejected_by: set[str] = set()
        feasible: list[NodeInfo] = []
        processed = 0
        for node in nodes[start:] + nodes[:start]:
            if len(feasible) >= wanted:
                break
            processed += 1
            rejection = self.rejection(states, pod, node)
            if rejection is None:
                feasible.append(node)
            else:
                rejected_by.add(rejection[0])
                for reason in rejection[1]:
                    reasons[reason] = reasons.get(reason, 0) + 1
        if nodes:
            self.next_start = (start + processed) % len(nodes)
        if not feasible:
            return Decision(pod.key, None, None, (), reasons, len(nodes), 0, frozenset(rejected_by))
        totals, columns = self.score(cycle, feasible)
        best = select_host(np.array(totals, np.int64))
        weight_sum = self.pipeline.weight_sum
        report = self.pipeline.candidates_to_report
        ranked = heapq.nsmallest(
            len(feasible) if report is None else report,
            range(len(feasible)),
            key=lambda i: (-totals[i], i != best),
        )
        candidates = tuple(
            Candidate(
                feasible[i].name,
                round(totals[i] / weight_sum, 2),
                {name: 0 if s is None else s[i] for name, s in columns},
            )
            for i in ranked
        )
        return Decision(
            pod.key,
            feasible[best].name,
            round(totals[best] / weight_sum, 2),
            candidates,
            reasons,
            len(nodes),
            len(feasible),
            frozenset(rejected_by),
        )


def cluster(size: int, seed: int) -> ClusterState:
    """Varied nodes: sizes, GPUs, few pod slots, taints, cordons, zones, images, placed pods."""
    rng = random.Random(seed)
    infos = []
    for i in range(size):
        name = f"n{i:03}"
        allocatable = {"cpu": str(rng.choice((1, 2, 4, 8))), "memory": "8Gi", "pods": "110"}
        if rng.random() < 0.2:
            allocatable[GPU] = str(rng.choice((1, 4)))
        if rng.random() < 0.1:
            allocatable["pods"] = "2"
        spec: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.1:
            spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        elif roll < 0.2:
            spec["taints"] = [{"key": "spot", "effect": "PreferNoSchedule"}]
        elif roll < 0.25 or size // 3 <= i < size // 3 + size // 8:
            # A run of cordoned nodes too: blocks end in it, or just before or after it.
            spec["unschedulable"] = True
        images = [{"names": ["web:1"], "sizeBytes": 300 * 2**20}] if rng.random() < 0.4 else []
        view = NodeView(
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        HOSTNAME: name,
                        ZONE: rng.choice(("a", "b", "c")),
                        **({"disk": "ssd"} if rng.random() < 0.5 else {}),
                    },
                },
                "spec": spec,
                "status": {"allocatable": allocatable, "images": images},
            }
        )
        pods = [placed(f"{name}-{k}", name, rng) for k in range(rng.randrange(3))]
        infos.append(NodeInfo(view, pods))
    return ClusterState(infos)


def container(rng: random.Random) -> dict[str, Any]:
    requests = rng.choice(({}, {"cpu": "500m"}, {"cpu": "2", "memory": "1Gi"}, {GPU: "1"}))
    return {"name": "c", "image": "web:1", "resources": {"requests": requests}}


def placed(uid: str, node: str, rng: random.Random) -> PodView:
    app = rng.choice(("web", "db"))
    spec: dict[str, Any] = {"nodeName": node, "containers": [container(rng)]}
    if rng.random() < 0.2:
        term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    labels = {"app": app}
    return PodView({"metadata": {"name": uid, "uid": uid, "labels": labels}, "spec": spec})


def pending(n: int, rng: random.Random) -> PodView:
    spec: dict[str, Any] = {"containers": [container(rng) for _ in range(rng.choice((1, 2)))]}
    roll = rng.random()
    if roll < 0.1:
        spec["nodeSelector"] = {"disk": "ssd"}
    elif roll < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    elif roll < 0.3:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    elif roll < 0.4:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    elif roll < 0.5:
        spec["containers"][0]["resources"] = {"requests": {"cpu": "64"}}  # fits nowhere
    uid = f"pending-{n}"
    labels = {"app": rng.choice(("web", "db"))}
    return PodView({"metadata": {"name": uid, "uid": uid, "labels": labels}, "spec": spec})


def pipeline(
    predicates: Sequence[tuple[str, dict[str, Any]]],
    priorities: Sequence[tuple[str, int, dict[str, Any]]],
    **settings: Any,
) -> Pipeline:
    return Pipeline(
        [FILTERS[name](args, "p") for name, args in predicates],
        [WeightedScorer(SCORERS[name](args, "s"), weight) for name, weight, args in priorities],
        **settings,
    )


DEFAULT_LIKE: tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, int, dict[str, Any]]]] = (
    [
        (name, {})
        for name in (
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
        )
    ],
    [
        ("TaintToleration", 3, {}),
        ("NodeAffinity", 2, {}),
        ("LeastAllocated", 1, {}),
        ("PodTopologySpread", 2, {}),
        ("InterPodAffinity", 2, {}),
        ("BalancedAllocation", 1, {}),
        ("ImageLocality", 1, {}),
    ],
)
NOT_IN_ZONE_C = LabelSelector.parse(
    {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["c"]}]}
)
RESOURCES = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}
SHAPE = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}

POLICIES = {
    "kube's default profile": (*DEFAULT_LIKE, {}),
    "every resource scorer, a pool, 30%": (
        [("NodeResourcesFit", {}), ("NodeLabel", {"absent": ["none"]})],
        [
            ("LeastAllocated", 1, RESOURCES),
            ("MostAllocated", 2, RESOURCES),
            ("RequestedToCapacityRatio", 1, {**SHAPE, **RESOURCES}),
            ("BalancedAllocation", 1, RESOURCES),
            ("NodeLabelPreference", 1, {"label": "disk"}),
        ],
        {"percentage_of_nodes_to_score": 30, "node_pool": NOT_IN_ZONE_C},
    ),
    "one random filter among others": (
        [("NodeResourcesFit", {}), ("Random", {"probability": 0.7}), ("TaintToleration", {})],
        [("Random", 1, {}), ("LeastAllocated", 1, {})],
        {},
    ),
    "two random filters: asked node by node": (
        [("Random", {"probability": 0.9}), ("NodeResourcesFit", {}), ("Random", {})],
        [("Random", 1, {})],
        {"percentage_of_nodes_to_score": 20},
    ),
}


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
@pytest.mark.parametrize(("size", "seed"), [(160, 1), (160, 2), (230, 3), (90, 4)])
def test_blocks_decide_as_node_by_node(policy: tuple[Any, Any, Any], size: int, seed: int) -> None:
    predicates, priorities, settings = policy
    blocks, reference = (
        pipeline(predicates, priorities, **settings),
        NodeByNode(pipeline(predicates, priorities, **settings)),
    )
    # Same clusters, same pods, same random sources; each pod is placed where it was decided.
    ours, theirs = cluster(size, seed), cluster(size, seed)
    rng_ours, rng_theirs = random.Random(seed), random.Random(seed)
    pods = random.Random(seed)
    for n in range(30):
        pod = pending(n, pods)
        decided = blocks.decide(pod, ours, rng_ours)
        expected = reference.decide(pod, theirs, rng_theirs)
        assert decided == expected, n
        assert list(decided.reasons) == list(expected.reasons), "reasons in another order"
        if decided.node is not None:
            ours.add_pod(ours.nodes[decided.node], pod)
            theirs.add_pod(theirs.nodes[decided.node], pod)


@pytest.mark.parametrize(
    "cordoned",
    [
        pytest.param(range(50), id="a run at the start"),
        pytest.param(range(100, 128), id="a run where the third decision's block ends"),
        pytest.param(range(150, 200), id="a run at the end"),
        pytest.param(range(0, 200, 3), id="every third node"),
    ],
)
def test_blocks_end_where_the_walk_stops(cordoned: range) -> None:
    """200 nodes, 100 feasible wanted: blocks reach past the node that completes them, and what
    lies past it is not counted, whether the block ends before, in or after a run of rejects."""
    infos = [
        NodeInfo(
            NodeView({"metadata": {"name": f"n{i:03}"}, "spec": {"unschedulable": i in cordoned}})
        )
        for i in range(200)
    ]
    p = pipeline([("NodeUnschedulable", {})], [])
    reference = NodeByNode(pipeline([("NodeUnschedulable", {})], []))
    snapshot = Snapshot(infos)
    pod = PodView({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    for n in range(8):
        decided = p.decide(pod, snapshot, random.Random(n))
        assert decided == reference.decide(pod, snapshot, random.Random(n)), n


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_explain_gives_every_nodes_first_failing_filter(policy: tuple[Any, Any, Any]) -> None:
    predicates, priorities, settings = policy
    p = pipeline(predicates, priorities, **settings)
    reference = NodeByNode(p)
    snapshot = cluster(120, 3)
    pods = random.Random(3)
    for n in range(10):
        pod = pending(n, pods)
        explained = explain(p, pod, snapshot, random.Random(n))
        cycle = Cycle(pod, snapshot, random.Random(n))
        states = reference.states(cycle)
        expected = [reference.rejection(states, pod, node) for node in snapshot]
        assert [
            None if v.rejected_by is None else (v.rejected_by, v.reasons)
            for v in explained.verdicts
        ] == [None if r is None else (r[0], tuple(r[1])) for r in expected]


def test_reasons_are_ordered_by_the_first_node_giving_them() -> None:
    """Node a fails the second filter, node b the first: visited node by node, the second
    filter's reason comes first (asked filter by filter, the first filter's would)."""
    no_slots = {"metadata": {"name": "a"}, "status": {"allocatable": {"pods": "0"}}}
    cordoned = {"metadata": {"name": "b"}, "spec": {"unschedulable": True}}
    nodes = [NodeInfo(NodeView(no_slots)), NodeInfo(NodeView(cordoned))]
    p = pipeline([("NodeUnschedulable", {}), ("NodeResourcesFit", {})], [])
    pod = PodView({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    decision = p.decide(pod, Snapshot(nodes), random.Random(0))
    assert list(decision.reasons.items()) == [
        ("Too many pods", 1),
        ("node(s) were unschedulable", 1),
    ]


T, F = True, False


@pytest.mark.parametrize(
    ("failing", "expected"),
    [
        pytest.param([[F, F, F]], {}, id="every node passes"),
        pytest.param([[T, F, T]], {("a",): [0, 2]}, id="one check"),
        pytest.param(
            [[T, F, T, F], [T, T, F, F]],
            {("a", "b"): [0], ("b",): [1], ("a",): [2]},
            id="a node's reasons in check order",
        ),
        pytest.param(
            [[F, T, F, T, T], [F, T, F, T, F], [F, F, F, T, T]],
            {("a", "b"): [1], ("a", "b", "c"): [3], ("a", "c"): [4]},
            id="groups of equal patterns",
        ),
        pytest.param([[], []], {}, id="no nodes"),
    ],
)
def test_group_failures(
    failing: list[list[bool]], expected: dict[tuple[str, ...], list[int]]
) -> None:
    reasons = ["a", "b", "c"][: len(failing)]
    groups = group_failures([np.array(row, bool) for row in failing], reasons)
    assert {key: indices.tolist() for key, indices in groups.items()} == expected
