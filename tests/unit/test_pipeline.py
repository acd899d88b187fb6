"""The decision procedure with the real plugins: kube-scheduler's FitError text, first failing
filter, adaptive sampling with a rotating start, weighted normalized totals, kube-scheduler
v1.37's choice among equal totals, the reported candidates, the policy's node pool, and what
pre-filters say of the whole cluster (kube-scheduler's PreFilterResult: the nodes left to filter,
and the counts it gives)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from plugin_harness import Change, make_node, make_pod, wakes

from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import SKIP, Filter, PreFilterResult, Scorer, Skip
from policy_scheduler.framework.types import Cycle, failure_message
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.registry import FILTERS, SCORERS
from policy_scheduler.plugins.taint_toleration import UNTOLERATED
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.runtime.explanation import explain
from policy_scheduler.runtime.framework import NODE_POOL_FILTER, OUTSIDE_NODE_POOL, WeightedScorer
from policy_scheduler.runtime.schedule_one import Pipeline, feasible_nodes_to_find, select_host

UNSCHEDULABLE = "node(s) were unschedulable"
GPU_TAINT = "node(s) had untolerated taint {dedicated: gpu}"  # kube's FitError example
GPU = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
CORDONED = {"unschedulable": True}


def pipeline(
    predicates: Sequence[str] = (),
    priorities: Sequence[tuple[str, int] | tuple[str, int, Mapping[str, Any]]] = (),
    **settings: Any,
) -> Pipeline:
    """A pipeline of the registry's plugins; a priority is (name, weight[, args])."""
    filters = [FILTERS[name]({}, f"spec.predicates[{i}].args") for i, name in enumerate(predicates)]
    scorers = [
        WeightedScorer(SCORERS[p[0]](p[2] if len(p) > 2 else {}, f"spec.priorities[{i}]"), p[1])
        for i, p in enumerate(priorities)
    ]
    return Pipeline(filters, scorers, **settings)


def node(
    name: str,
    cpu: str = "4",
    labels: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> NodeInfo:
    allocatable = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return make_node(name, labels, spec=spec, status={"allocatable": allocatable})


def pod(cpu: str | None = None, **spec: Any) -> PodView:
    requests = {"resources": {"requests": {"cpu": cpu}}} if cpu else {}
    return make_pod("p", "default", containers=[{"name": "c", **requests}], **spec)


def decide(p: Pipeline, nodes: Sequence[NodeInfo], seed: int = 0, **spec: Any) -> Decision:
    return p.decide(pod(**spec), Snapshot(nodes), random.Random(seed))


# --- kube-scheduler's FitError message ----------------------------------------------------


@pytest.mark.parametrize(
    ("total", "reasons", "message"),
    [
        pytest.param(0, {}, "0/0 nodes are available:", id="no nodes at all"),
        pytest.param(
            5,
            {"Insufficient cpu": 2, GPU_TAINT: 3},
            "0/5 nodes are available: 2 Insufficient cpu, 3 " + GPU_TAINT + ".",
            id="kube's example",
        ),
        pytest.param(
            12,
            {"Insufficient memory": 2, "Insufficient cpu": 10},
            "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory.",
            id="sorted as strings: 10 before 2",
        ),
        pytest.param(
            3,
            {"Too many pods": 1, "Insufficient cpu": 1, UNSCHEDULABLE: 1},
            "0/3 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 "
            + UNSCHEDULABLE
            + ".",
            id="equal counts by reason text",
        ),
    ],
)
def test_failure_message(total: int, reasons: dict[str, int], message: str) -> None:
    assert failure_message(total, reasons) == message


def test_unschedulable_decision_reports_kube_message() -> None:
    nodes = [node("a", cpu="1"), node("b", cpu="1"), *(node(f"g{i}", spec=GPU) for i in range(3))]
    decision = decide(pipeline(["TaintToleration", "NodeResourcesFit"]), nodes, cpu="2")
    assert (decision.node, decision.score, decision.candidates) == (None, None, ())
    assert (decision.total_nodes, decision.feasible_nodes) == (5, 0)
    assert decision.message == f"0/5 nodes are available: 2 Insufficient cpu, 3 {UNTOLERATED}."


# --- A node's reasons come from its first failing filter -----------------------------------


@pytest.mark.parametrize(
    ("predicates", "reasons"),
    [
        pytest.param(
            ["NodeUnschedulable", "TaintToleration", "NodeResourcesFit"],
            {UNSCHEDULABLE: 1},
            id="cordon checked first",
        ),
        pytest.param(
            ["TaintToleration", "NodeUnschedulable", "NodeResourcesFit"],
            {UNTOLERATED: 1},
            id="taint checked first",
        ),
        pytest.param(
            ["NodeResourcesFit", "NodeUnschedulable"],
            {"Insufficient cpu": 1, "Insufficient memory": 1},
            id="every reason of the failing filter",
        ),
    ],
)
def test_first_failing_filter_gives_the_reasons(
    predicates: list[str], reasons: dict[str, int]
) -> None:
    bad = node("bad", cpu="1", spec={**GPU, **CORDONED})
    p = make_pod(
        "p",
        "default",
        containers=[{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "9Gi"}}}],
    )
    decision = pipeline(predicates).decide(p, Snapshot([bad]), random.Random(0))
    assert decision.reasons == reasons


def test_feasible_nodes_are_counted_and_failures_kept_when_some_fit() -> None:
    nodes = [node("a"), node("b", spec=CORDONED), node("c", spec=GPU)]
    decision = decide(pipeline(["NodeUnschedulable", "TaintToleration"]), nodes)
    assert (decision.node, decision.feasible_nodes, decision.total_nodes) == ("a", 1, 3)
    assert decision.reasons == {UNSCHEDULABLE: 1, UNTOLERATED: 1}


# --- How many feasible nodes to look for (kube's numFeasibleNodesToFind) -------------------


@pytest.mark.parametrize(
    ("nodes", "percentage", "wanted"),
    [
        pytest.param(50, 0, 50, id="50 nodes adaptive: all, under the minimum of 100"),
        pytest.param(50, 10, 50, id="50 nodes 10%: all"),
        pytest.param(50, 100, 50, id="50 nodes 100%: all"),
        pytest.param(100, 0, 100, id="100 nodes adaptive: 50% raised to the minimum"),
        pytest.param(100, 10, 100, id="100 nodes 10%: the minimum"),
        pytest.param(100, 100, 100, id="100 nodes 100%"),
        pytest.param(1000, 0, 420, id="1000 nodes adaptive: 50 - 1000/125 = 42%"),
        pytest.param(1000, 10, 100, id="1000 nodes 10%"),
        pytest.param(1000, 100, 1000, id="1000 nodes 100%"),
        pytest.param(5000, 0, 500, id="5000 nodes adaptive: 10%"),
        pytest.param(5000, 10, 500, id="5000 nodes 10%"),
        pytest.param(5000, 100, 5000, id="5000 nodes 100%"),
        pytest.param(10000, 0, 500, id="10000 nodes adaptive: floor of 5%"),
        pytest.param(10000, 10, 1000, id="10000 nodes 10%"),
        pytest.param(10000, 100, 10000, id="10000 nodes 100%"),
    ],
)
def test_feasible_nodes_to_find(nodes: int, percentage: int, wanted: int) -> None:
    assert feasible_nodes_to_find(nodes, percentage) == wanted


def test_the_search_resumes_where_the_previous_decision_stopped() -> None:
    # 200 nodes, 50% -> 100 feasible wanted. Nodes 0..49 are cordoned, 50..199 fit.
    nodes = [node(f"n{i:03}", spec=CORDONED if i < 50 else None) for i in range(200)]
    p = pipeline(["NodeUnschedulable"], percentage_of_nodes_to_score=50)
    snapshot = Snapshot(nodes)
    rng = random.Random(0)
    seen = [p.decide(pod(), snapshot, rng) for _ in range(4)]
    # 1st: 0..149; 2nd: 150..199, 0..99; 3rd: 100..199; 4th: 0..149 again.
    assert [d.reasons.get(UNSCHEDULABLE, 0) for d in seen] == [50, 50, 0, 50]
    assert [d.feasible_nodes for d in seen] == [100, 100, 100, 100]


def test_rotation_decides_among_the_nodes_visited() -> None:
    # Only n150 prefers the pod; it is visited by the 2nd decision, not by the 1st.
    nodes = [node(f"n{i:03}", labels={"best": "yes"} if i == 150 else {}) for i in range(200)]
    p = pipeline(
        priorities=[("NodeLabelPreference", 1, {"label": "best"})],
        percentage_of_nodes_to_score=50,
    )
    snapshot = Snapshot(nodes)
    rng = random.Random(0)
    first, second = p.decide(pod(), snapshot, rng), p.decide(pod(), snapshot, rng)
    assert first.node != "n150" and first.score == 0
    assert (second.node, second.score) == ("n150", 100)


# --- A pod nominated to a node (kube-scheduler's evaluateNominatedNode) ---------------------


def nominated(node_name: str, cpu: str = "1") -> PodView:
    raw = pod(cpu).raw
    return PodView({**raw, "status": {"nominatedNodeName": node_name}})


@pytest.mark.parametrize(
    ("nominated_to", "chosen", "feasible"),
    [
        pytest.param("b", "b", 1, id="the nominated node fits: it is taken, the better one unseen"),
        pytest.param("c", "a", 2, id="the nominated node is full: every node is filtered"),
        pytest.param("gone", "a", 2, id="the nominated node left the cluster"),
    ],
)
def test_a_nominated_node_that_fits_is_taken_first(
    nominated_to: str, chosen: str, feasible: int
) -> None:
    # a scores best (zone-a preferred); c has no room for the pod.
    nodes = [
        node("a", "4", {ZONE: "zone-a"}),
        node("b", "4", {ZONE: "zone-b"}),
        node("c", "500m", {ZONE: "zone-a"}),
    ]
    p = pipeline(["NodeResourcesFit"], [PREFER_ZONE_A])
    decision = p.decide(nominated(nominated_to), Snapshot(nodes), random.Random(0))
    assert (decision.node, decision.feasible_nodes) == (chosen, feasible)


def test_a_nominated_node_leaves_the_rotation_where_it_was() -> None:
    # 200 nodes, 50% -> 100 feasible wanted; n100..n149 are cordoned. Had the first decision
    # walked the nodes, it would have stopped after n099, and the second, starting at n100,
    # would meet the cordoned ones; it took n150 alone, so the second starts at n000.
    nodes = [node(f"n{i:03}", spec=CORDONED if 100 <= i < 150 else None) for i in range(200)]
    p = pipeline(["NodeUnschedulable"], percentage_of_nodes_to_score=50)
    snapshot = Snapshot(nodes)
    assert p.decide(nominated("n150"), snapshot, random.Random(0)).node == "n150"
    assert p.decide(pod(), snapshot, random.Random(0)).reasons == {}


# --- Weighted totals, normalized by the sum of weights -------------------------------------

ZONE = "topology.kubernetes.io/zone"
PREFER_ZONE_A = ("NodeLabelPreference", 3, {"label": ZONE, "values": ["zone-a"]})


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        pytest.param([], {"a": 0.0, "b": 0.0}, id="no scorers: every node 0"),
        pytest.param(
            [PREFER_ZONE_A], {"a": 100.0, "b": 0.0}, id="one scorer: its score, whatever weight"
        ),
        pytest.param(
            # LeastAllocated: a (4 cpu) cpu 75, memory 97 -> 86; b (8 cpu) 87, 97 -> 92.
            [PREFER_ZONE_A, ("LeastAllocated", 1)],
            {"a": round((3 * 100 + 86) / 4, 2), "b": round((3 * 0 + 92) / 4, 2)},
            id="3*label + 1*least over 4",
        ),
        pytest.param(
            [PREFER_ZONE_A, ("LeastAllocated", 7)],
            {"a": round((3 * 100 + 7 * 86) / 10, 2), "b": round(7 * 92 / 10, 2)},
            id="weights decide the winner",
        ),
    ],
)
def test_weighted_totals(
    priorities: list[tuple[str, int, Mapping[str, Any]]], expected: dict[str, float]
) -> None:
    nodes = [node("a", "4", {ZONE: "zone-a"}), node("b", "8", {ZONE: "zone-b"})]
    decision = decide(pipeline(priorities=priorities), nodes, cpu="1")
    totals = {c.node: c.score for c in decision.candidates}
    assert totals == expected
    best = max(expected.values())
    assert decision.score == best and expected[str(decision.node)] == best


def test_candidates_carry_each_scorers_normalized_score() -> None:
    nodes = [node("a", "4", {ZONE: "zone-a"}), node("b", "8", {ZONE: "zone-b"})]
    decision = decide(pipeline(priorities=[PREFER_ZONE_A, ("LeastAllocated", 1)]), nodes, cpu="1")
    assert [(c.node, dict(c.scores)) for c in decision.candidates] == [
        ("a", {"NodeLabelPreference": 100, "LeastAllocated": 86}),
        ("b", {"NodeLabelPreference": 0, "LeastAllocated": 92}),
    ]


class _OutOfRange(Scorer[None]):
    """No registered plugin scores outside 0..100; this stands in for one that would."""

    name = "Broken"

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        return 101 if node.name == "b" else 0


def test_a_score_out_of_range_is_an_error_naming_plugin_and_node() -> None:
    p = Pipeline([], [WeightedScorer(_OutOfRange(), 1)])
    with pytest.raises(ValueError, match=r"^plugin Broken scored node b 101, outside 0\.\.100$"):
        decide(p, [node("a"), node("b")])


# --- Ties, candidates -----------------------------------------------------------------------


def heap_root(totals: Sequence[int]) -> int:
    """The reference: Go's container/heap Init over the totals, with kube-scheduler v1.37's
    order (a node above another only when its total is strictly higher), then the root; done
    literally, sifting down every parent from the last one."""
    heap = list(range(len(totals)))
    size = len(heap)
    for parent in reversed(range(size // 2)):
        i = parent
        while 2 * i + 1 < size:
            child = 2 * i + 1
            if child + 1 < size and totals[heap[child + 1]] > totals[heap[child]]:
                child += 1
            if not totals[heap[child]] > totals[heap[i]]:
                break
            heap[i], heap[child] = heap[child], heap[i]
            i = child
    return heap[0]


@pytest.mark.parametrize(
    ("totals", "chosen"),
    [
        pytest.param([10, 30, 20], 1, id="a single best wins wherever it is"),
        pytest.param([5, 5, 5, 5], 0, id="all equal: the first node"),
        pytest.param([1, 9, 9], 1, id="equal children: the left one"),
        # Positions 3 and 4 (0-based) are the left child's children, 2 the right child.
        pytest.param([1, 2, 9, 9, 2], 3, id="the left subtree before the right child"),
        pytest.param([1, 9, 2, 9], 1, id="a parent before its own child"),
        # 5 (binary 110) is under the right child; 4 (101) under the left: 4 comes first.
        pytest.param([0, 0, 0, 0, 7, 7, 0], 4, id="deeper left before deeper right"),
        # 7 (1000) lies under 3 (100) under 1 (10); 2 (11) is 0's right child.
        pytest.param([0, 0, 7, 0, 0, 0, 0, 7], 7, id="deep in the left subtree before the right"),
    ],
)
def test_select_host_takes_the_heap_root(totals: list[int], chosen: int) -> None:
    assert heap_root(totals) == chosen
    assert select_host(np.array(totals, np.int64)) == chosen


def test_select_host_agrees_with_heapify_on_random_totals() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        totals = [rng.randint(0, 3) for _ in range(rng.randint(1, 70))]
        assert select_host(np.array(totals, np.int64)) == heap_root(totals), totals


def test_ties_go_where_kube_scheduler_sends_them_whatever_the_seed() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    p = pipeline(["NodeResourcesFit"], [("LeastAllocated", 1)])
    assert {decide(p, nodes, seed).node for seed in range(20)} == {"n0"}


def test_only_tied_nodes_are_chosen() -> None:
    # big1 and big2 tie, at positions 1 and 2: the root's left child wins.
    nodes = [node("small", "2"), node("big1", "16"), node("big2", "16")]
    p = pipeline(priorities=[("LeastAllocated", 1)])
    assert decide(p, nodes).node == "big1"


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        pytest.param(3, ["n16", "n8", "n4"], id="the best three, best first"),
        pytest.param(1, ["n16"], id="limit 1"),
        pytest.param(0, [], id="none reported, still decided"),
        pytest.param(10, ["n16", "n8", "n4", "n2"], id="fewer feasible than the limit"),
        pytest.param(None, ["n16", "n8", "n4", "n2"], id="no limit: every feasible node"),
    ],
)
def test_candidates_ordering_and_limit(report: int | None, expected: list[str]) -> None:
    nodes = [node(f"n{cpu}", str(cpu)) for cpu in (2, 4, 16, 8)]
    p = pipeline(priorities=[("LeastAllocated", 1)], candidates_to_report=report)
    decision = decide(p, nodes, cpu="1")
    assert [c.node for c in decision.candidates] == expected
    scores = [c.score for c in decision.candidates]
    assert scores == sorted(scores, reverse=True)
    assert (decision.node, decision.feasible_nodes) == ("n16", 4)


def test_the_chosen_node_is_reported_first_among_equal_totals() -> None:
    nodes = [node(f"n{i}") for i in range(5)]
    p = pipeline(priorities=[("LeastAllocated", 1)], candidates_to_report=2)
    for seed in range(20):
        decision = decide(p, nodes, seed)
        assert decision.candidates[0].node == decision.node


# --- The policy's node pool -----------------------------------------------------------------


def test_nodes_outside_the_pool_are_counted_with_their_own_reason() -> None:
    pool = LabelSelector.parse({"matchLabels": {"pool": "general"}})
    nodes = [
        node("in", labels={"pool": "general"}),
        node("out", labels={"pool": "batch"}),
        node("bare"),
        node("in-cordoned", labels={"pool": "general"}, spec=CORDONED),
    ]
    decision = decide(pipeline(["NodeUnschedulable"], node_pool=pool), nodes)
    assert (decision.node, decision.feasible_nodes) == ("in", 1)
    assert decision.reasons == {OUTSIDE_NODE_POOL: 2, UNSCHEDULABLE: 1}


def test_a_pool_without_fitting_nodes_says_so() -> None:
    pool = LabelSelector.parse({"matchLabels": {"pool": "general"}})
    decision = decide(pipeline(node_pool=pool), [node("a"), node("b")])
    assert decision.message == f"0/2 nodes are available: 2 {OUTSIDE_NODE_POOL}."


# The pool's queueing hint, as NodeAffinity's for its scheduler-enforced affinity: only a node
# that joined the pool (added in it, or relabelled into it) can help a pod it kept off nodes.
POOL_HINTS: dict[str, tuple[Change, bool]] = {
    "a node added to the pool helps": (
        Change(EventKind.NODE_ADDED, node("n", labels={"pool": "general"})),
        True,
    ),
    "a node added outside the pool does not": (
        Change(EventKind.NODE_ADDED, node("n", labels={"pool": "batch"})),
        False,
    ),
    "a node relabelled into the pool helps": (
        Change(
            EventKind.NODE_LABELS,
            node("n", labels={"pool": "general"}),
            node("n", labels={"pool": "batch"}),
        ),
        True,
    ),
    "a node of the pool relabelled does not": (
        Change(
            EventKind.NODE_LABELS,
            node("n", labels={"pool": "general", "rack": "2"}),
            node("n", labels={"pool": "general"}),
        ),
        False,
    ),
}


@pytest.mark.parametrize(("change", "helps"), POOL_HINTS.values(), ids=POOL_HINTS.keys())
def test_pool_queueing_hint(change: Change, helps: bool) -> None:
    pool = pipeline(node_pool=LabelSelector.parse({"matchLabels": {"pool": "general"}}))
    plugin = pool.filter_named(NODE_POOL_FILTER)
    assert plugin is not None
    assert wakes(plugin, pod(), change) is helps


def test_a_policy_without_pool_has_no_pool_filter() -> None:
    assert pipeline().filter_named(NODE_POOL_FILTER) is None


def test_no_nodes() -> None:
    decision = decide(pipeline(["NodeResourcesFit"]), [])
    assert (decision.node, decision.message) == (None, "0/0 nodes are available:")


# --- Skip: kube-scheduler's PreFilter/PreScore Skip status ----------------------------------


class _SkippingFilter(Filter[None]):
    """Skips every pod; its filter would reject every node if it ran."""

    name = "Skipping"

    def pre_filter(self, cycle: Cycle) -> Skip:
        return SKIP

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        raise AssertionError("filter of a skipped plugin was run")


class _SkippingScorer(Scorer[None]):
    """Skips every pod; its score would be out of range if it ran."""

    name = "SkippingScorer"

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> Skip:
        return SKIP

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        raise AssertionError("score of a skipped plugin was run")


def test_a_skipped_filter_lets_every_node_pass() -> None:
    p = Pipeline([_SkippingFilter()], [])
    decision = decide(p, [node("a"), node("b")])
    assert (decision.feasible_nodes, decision.reasons) == (2, {})


def test_a_skipped_scorer_counts_0_in_the_total_and_the_breakdown() -> None:
    nodes = [node("a", "4", {ZONE: "zone-a"}), node("b", "8", {ZONE: "zone-b"})]
    scorers = pipeline(priorities=[PREFER_ZONE_A]).scorers
    p = Pipeline([], [WeightedScorer(_SkippingScorer(), 2), *scorers])
    decision = decide(p, nodes)
    # Its weight still divides: (2 * 0 + 3 * 100) / 5.
    assert [(c.node, c.score, dict(c.scores)) for c in decision.candidates] == [
        ("a", 60.0, {"SkippingScorer": 0, "NodeLabelPreference": 100}),
        ("b", 0.0, {"SkippingScorer": 0, "NodeLabelPreference": 0}),
    ]


# --- PreFilter: what the pre-filters say of the whole cluster --------------------------------

NARROWED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
DEFAULT_FILTERS = ["NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"]


def pinned_to(*terms: Sequence[str]) -> dict[str, Any]:
    """A DaemonSet-style pod spec: one required term per list of names, each name a matchFields
    ``metadata.name In`` requirement (ANDed within the term)."""
    fields = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]} for n in t]}
        for t in terms
    ]
    required = {"nodeSelectorTerms": fields}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


def daemon_nodes() -> list[NodeInfo]:
    return [
        node("d1", spec=CORDONED),
        node("d2", spec=CORDONED),
        node("d3"),
        node("d4", spec=GPU),
        node("d5", cpu="1"),
    ]


@pytest.mark.parametrize(
    ("spec", "message", "rejected_by"),
    [
        pytest.param(
            pinned_to(["d1"]),
            f"0/5 nodes are available: 1 {UNSCHEDULABLE}, 4 {NARROWED}.",
            {"NodeAffinity", "NodeUnschedulable"},
            id="pinned to a cordoned node: the others count as left out, not as cordoned",
        ),
        pytest.param(
            pinned_to(["d4"]),
            f"0/5 nodes are available: 1 {UNTOLERATED}, 4 {NARROWED}.",
            {"NodeAffinity", "TaintToleration"},
            id="pinned to a tainted node",
        ),
        pytest.param(
            {**pinned_to(["d2"], ["d5"]), "cpu": "2"},
            f"0/5 nodes are available: 1 Insufficient cpu, 1 {UNSCHEDULABLE}, 3 {NARROWED}.",
            {"NodeAffinity", "NodeResourcesFit", "NodeUnschedulable"},
            id="two terms pin two nodes, each rejected by a filter",
        ),
        pytest.param(
            pinned_to(["gone"]),
            f"0/5 nodes are available: 5 {NARROWED}.",
            {"NodeAffinity"},
            id="pinned to a node the cluster lacks",
        ),
        pytest.param(
            pinned_to(["d3", "d4"]),
            "0/5 nodes are available: pod affinity terms conflict.",
            {"NodeAffinity"},
            id="disjoint names in a term reject the pod before any filter, without a count",
        ),
    ],
)
def test_pre_filter_narrowing_counts_as_kube(
    spec: dict[str, Any], message: str, rejected_by: set[str]
) -> None:
    """kube-scheduler filters only the nodes NodeAffinity's PreFilter names; every other node
    counts once, whatever the filters would have said of it."""
    snapshot = Snapshot(daemon_nodes())
    p = pipeline(DEFAULT_FILTERS)
    the_pod = pod(**spec)
    decision = p.decide(the_pod, snapshot, random.Random(0))
    assert (decision.node, decision.message) == (None, message)
    assert decision.rejected_by == rejected_by
    assert explain(p, the_pod, snapshot).message == message


def test_a_pinned_node_that_fits_is_chosen_and_the_others_counted() -> None:
    decision = decide(pipeline(DEFAULT_FILTERS), daemon_nodes(), **pinned_to(["d3"]))
    assert (decision.node, decision.feasible_nodes, decision.total_nodes) == ("d3", 1, 5)
    assert decision.reasons == {NARROWED: 4}
    assert decision.rejected_by == {"NodeAffinity"}


class _NeverScorer(Scorer[None]):
    """Fails the test if it is asked anything."""

    name = "NeverScorer"

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> Skip:
        raise AssertionError("pre-score run for the only feasible node")

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        raise AssertionError("score run for the only feasible node")


def test_the_only_feasible_node_is_taken_unscored_as_kube_scheduler_does() -> None:
    # kube-scheduler's schedulePod returns the one node the filters left without PreScore or
    # Score: a DaemonSet's pod, pinned by NodeAffinity, costs no scoring.
    p = Pipeline(pipeline(DEFAULT_FILTERS).filters, [WeightedScorer(_NeverScorer(), 1)])
    decision = decide(p, daemon_nodes(), **pinned_to(["d3"]))
    assert (decision.node, decision.score, decision.candidates) == ("d3", None, ())
    assert (decision.feasible_nodes, decision.reasons) == (1, {NARROWED: 4})
    assert decision.chosen_by == "the only node that fits"
    assert decision.to_dict()["score"] is None


class _Choosing(Scorer[None]):
    """Chooses what the pod gets on the node as it scores (DynamicResources' device choice)."""

    name = "Choosing"
    chooses_on_node = True

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        return 40


def test_the_only_feasible_node_is_scored_when_a_scorer_chooses_on_it() -> None:
    p = Pipeline(pipeline(DEFAULT_FILTERS).filters, [WeightedScorer(_Choosing(), 1)])
    decision = decide(p, daemon_nodes(), **pinned_to(["d3"]))
    assert (decision.node, decision.score) == ("d3", 40.0)
    assert [(c.node, dict(c.scores)) for c in decision.candidates] == [("d3", {"Choosing": 40})]


def test_a_scored_decision_says_its_score() -> None:
    nodes = [node("a", "4", {ZONE: "zone-a"}), node("b", "8", {ZONE: "zone-b"})]
    decision = decide(pipeline(priorities=[PREFER_ZONE_A]), nodes)
    assert (decision.node, decision.chosen_by) == ("a", "score 100.0")


def test_explain_names_the_pre_filter_that_left_each_node_out() -> None:
    verdicts = explain(
        pipeline(DEFAULT_FILTERS), pod(**pinned_to(["d1"])), Snapshot(daemon_nodes())
    )
    assert [(v.node, v.rejected_by, v.reasons) for v in verdicts.verdicts] == [
        ("d1", "NodeUnschedulable", (UNSCHEDULABLE,)),
        *((name, "NodeAffinity", (NARROWED,)) for name in ("d2", "d3", "d4", "d5")),
    ]


def test_a_rejection_at_pre_filter_counts_every_node_for_the_status() -> None:
    decision = decide(pipeline(DEFAULT_FILTERS), daemon_nodes(), **pinned_to(["d3", "d4"]))
    assert decision.reasons == {"pod affinity terms conflict": 5}


def test_feasible_nodes_to_find_counts_the_nodes_left_to_filter() -> None:
    # 1000 nodes would want 42% (420); the 200 pinned ones want 49%, raised to 100.
    nodes = [node(f"n{i:04}") for i in range(1000)]
    decision = decide(
        pipeline(["NodeAffinity"]), nodes, **pinned_to(*([f"n{i:04}"] for i in range(200)))
    )
    assert (decision.feasible_nodes, decision.reasons) == (100, {NARROWED: 800})


class _Naming(Filter[None]):
    """A filter whose pre-filter names the only nodes to filter, or rejects the pod."""

    def __init__(self, name: str, names: Sequence[str] = (), rejection: str = "") -> None:
        self.name = name
        self._result = PreFilterResult(frozenset(names), rejection)

    def pre_filter_result(self, state: None) -> PreFilterResult:
        return self._result

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return ("filtered",)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        pytest.param(
            [_Naming("B", ["a", "b"]), _Naming("A", ["b", "c"])],
            "0/3 nodes are available: 1 filtered, 2 node(s) didn't satisfy plugin(s) [A B].",
            id="the names all pre-filters name, the plugins sorted",
        ),
        pytest.param(
            [_Naming("B", ["a"]), _Naming("A", ["b"])],
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [A B] simultaneously.",
            id="no name common to them rejects the pod",
        ),
        pytest.param(
            [_Naming("A")],
            "0/3 nodes are available: node(s) didn't satisfy plugin A.",
            id="one pre-filter naming no node rejects the pod",
        ),
        pytest.param(
            [_Naming("A", ["a"]), _Naming("B", rejection="no way")],
            "0/3 nodes are available: no way.",
            id="a rejection after a naming pre-filter",
        ),
    ],
)
def test_pre_filter_results_merge_as_kube(filters: list[Filter[Any]], message: str) -> None:
    decision = decide(Pipeline(filters, []), [node("a"), node("b"), node("c")])
    assert decision.message == message
