"""The four resource scorers give kube-scheduler v1.37's exact scores, and reject bad args."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from plugin_harness import make_node, make_pod, raw_scores

from policy_scheduler.framework.args import Args, ArgsError
from policy_scheduler.framework.interface import Scorer
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import (
    balanced_allocation,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
)

GPU = "example.com/gpu"
PATH = "spec.priorities[0].args"

Factory = Callable[[Args, str], Scorer[Any]]
LEAST = least_allocated.new_scorer
MOST = most_allocated.new_scorer
RATIO = requested_to_capacity_ratio.new_scorer
BALANCED = balanced_allocation.new_scorer


def container(**requests: str) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests}}


def pod(*containers: Mapping[str, Any], name: str = "p", **spec: Any) -> PodView:
    spec.setdefault("containers", list(containers) or [container()])
    return make_pod(name, "ns", **spec)


def node(allocatable: Mapping[str, object], *pods: PodView) -> NodeInfo:
    return make_node("n", None, *pods, status={"allocatable": allocatable})


def score(factory: Factory, args: Args, the_pod: PodView, info: NodeInfo) -> int:
    return int(raw_scores(factory(args, PATH), the_pod, [info])[1][0])


def shape(*points: tuple[int, int]) -> list[dict[str, int]]:
    return [{"utilization": u, "score": s} for u, s in points]


BIG = {"cpu": "4", "memory": "8Gi"}
SMALL = {"cpu": "1", "memory": "1Gi"}
BEST_EFFORT = pod(name="best-effort")
ONE_CPU_2GI = pod(container(cpu="1", memory="2Gi"))
MOST_LIKE = {"shape": shape((0, 0), (100, 10))}
NOT_INCREASING = "must be greater than the previous point's utilization"
LEAST_LIKE = {"shape": shape((0, 10), (100, 0))}


@pytest.mark.parametrize(
    ("factory", "args", "the_pod", "info", "expected"),
    [
        # LeastAllocated: (allocatable - requested) * 100 // allocatable, weighted, floored.
        pytest.param(LEAST, {}, ONE_CPU_2GI, node(BIG), 75, id="least: quarter used"),
        pytest.param(
            LEAST,
            {},
            ONE_CPU_2GI,
            node(BIG, pod(container(cpu="1", memory="2Gi"), name="o")),
            50,
            id="least: node's pods count",
        ),
        pytest.param(LEAST, {}, pod(), node(SMALL), 85, id="least: empty pod counts 100m, 200Mi"),
        pytest.param(
            LEAST,
            {},
            pod(container(cpu="500m", memory="512Mi")),
            node(SMALL, BEST_EFFORT),
            35,
            id="least: node's best-effort pod counts 100m, 200Mi",
        ),
        pytest.param(
            LEAST,
            {},
            pod(container(cpu="2", memory="2Gi")),
            node({"cpu": "1", "memory": "8Gi"}),
            37,
            id="least: overcommitted resource scores 0",
        ),
        pytest.param(
            LEAST,
            {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]},
            pod(container(cpu="1", memory="6Gi")),
            node(BIG),
            62,
            id="least: weights",
        ),
        pytest.param(
            LEAST, {}, ONE_CPU_2GI, node({"cpu": "4"}), 75, id="least: node without memory"
        ),
        pytest.param(
            LEAST, {}, ONE_CPU_2GI, node({}), 0, id="least: node with nothing allocatable"
        ),
        pytest.param(
            LEAST,
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU, "weight": 2}]},
            ONE_CPU_2GI,
            node({**BIG, GPU: "4"}),
            75,
            id="least: unrequested gpus are skipped",
        ),
        pytest.param(
            LEAST,
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU, "weight": 2}]},
            pod(container(cpu="1", memory="2Gi", **{GPU: "3"})),
            node({**BIG, GPU: "4"}),
            50,
            id="least: requested gpus count",
        ),
        pytest.param(
            LEAST,
            {"resources": [{"name": "cpu"}, {"name": "ephemeral-storage"}]},
            pod(container(cpu="1")),
            node(
                {"cpu": "4", "ephemeral-storage": "10Gi"},
                pod(container(**{"ephemeral-storage": "5Gi"}), name="o"),
            ),
            61,
            id="least: ephemeral-storage counts unrequested",
        ),
        pytest.param(
            LEAST,
            {"resources": [{"name": "cpu"}, {"name": "pods"}]},
            ONE_CPU_2GI,
            node({"cpu": "4", "pods": 10}),
            75,
            id="least: non-scalar resource names are skipped",
        ),
        pytest.param(
            LEAST,
            {},
            pod(container(cpu="1", memory="2Gi"), initContainers=[container(cpu="3")]),
            node(BIG),
            50,
            id="least: init container peak",
        ),
        pytest.param(
            LEAST,
            {},
            pod(container(cpu="1", memory="2Gi"), overhead={"cpu": "1"}),
            node(BIG),
            62,
            id="least: overhead",
        ),
        # MostAllocated: min(requested, allocatable) * 100 // allocatable, weighted, floored.
        pytest.param(MOST, {}, ONE_CPU_2GI, node(BIG), 25, id="most: quarter used"),
        pytest.param(MOST, {}, pod(), node(SMALL), 14, id="most: empty pod counts 100m, 200Mi"),
        pytest.param(
            MOST,
            {},
            pod(container(cpu="2", memory="2Gi")),
            node({"cpu": "1", "memory": "8Gi"}),
            62,
            id="most: overcommitted resource caps at 100",
        ),
        pytest.param(
            MOST,
            {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]},
            pod(container(cpu="1", memory="6Gi")),
            node(BIG),
            37,
            id="most: weights",
        ),
        # RequestedToCapacityRatio: broken linear shape over utilization, scaled by 10.
        pytest.param(RATIO, MOST_LIKE, ONE_CPU_2GI, node(BIG), 25, id="ratio: rising shape"),
        pytest.param(RATIO, LEAST_LIKE, ONE_CPU_2GI, node(BIG), 75, id="ratio: falling shape"),
        pytest.param(
            RATIO,
            {"shape": shape((0, 10), (30, 0)), "resources": [{"name": "cpu"}]},
            pod(container(cpu="100m")),
            node(SMALL),
            67,
            id="ratio: Go division truncates to 0",
        ),
        pytest.param(
            RATIO,
            MOST_LIKE,
            pod(container(cpu="100m", memory="300Mi")),
            node({"cpu": "1", "memory": "2000Mi"}),
            13,
            id="ratio: 12.5 rounds away from zero",
        ),
        pytest.param(
            RATIO,
            MOST_LIKE,
            pod(container(cpu="0", memory="4Gi")),
            node(BIG),
            50,
            id="ratio: resources scoring 0 leave the average",
        ),
        pytest.param(
            RATIO,
            LEAST_LIKE,
            pod(container(cpu="8", memory="8Gi")),
            node(BIG),
            0,
            id="ratio: overcommitted is 100% utilized",
        ),
        pytest.param(
            RATIO,
            {"shape": shape((50, 5), (100, 10))},
            pod(container(cpu="800m", memory="1Gi")),
            node(BIG),
            50,
            id="ratio: flat before the first point",
        ),
        pytest.param(
            RATIO,
            {"shape": shape((0, 0), (50, 10))},
            pod(container(cpu="4", memory="7Gi")),
            node(BIG),
            100,
            id="ratio: flat after the last point",
        ),
        pytest.param(
            RATIO,
            {
                "shape": shape((0, 10), (100, 0)),
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}],
            },
            pod(container(cpu="1", memory="6Gi")),
            node(BIG),
            63,
            id="ratio: weights, rounded",
        ),
        # BalancedAllocation: 50 + (50 + with - without) // 2, where with and without are the
        # node's balance, int((1 - std of capped fractions) * 100) over plain requests, with the
        # pod placed there and without it.
        # Even before and after: 100 and 100, the pod changes nothing.
        pytest.param(
            BALANCED,
            {},
            ONE_CPU_2GI,
            node(BIG, pod(container(cpu="1", memory="2Gi"), name="o")),
            75,
            id="balanced: even use",
        ),
        # 0.25 and 0.75: 75 with the pod, 100 without; 50 + 25 // 2.
        pytest.param(
            BALANCED,
            {},
            pod(container(cpu="1", memory="6Gi")),
            node(BIG),
            62,
            id="balanced: uneven use",
        ),
        # 0.25 and 0 (the best-effort pod counts nothing): int(87.5) with, 100 without.
        pytest.param(
            BALANCED,
            {},
            pod(container(cpu="1")),
            node(BIG, BEST_EFFORT),
            68,
            id="balanced: no non-zero defaults",
        ),
        pytest.param(
            BALANCED,
            {},
            pod(container(cpu="2", memory="4Gi")),
            node({"cpu": "1", "memory": "8Gi"}),
            62,
            id="balanced: fractions cap at 1",
        ),
        pytest.param(BALANCED, {}, BEST_EFFORT, node(BIG), 0, id="balanced: best-effort pod"),
        pytest.param(
            BALANCED,
            {},
            pod(container(**{"ephemeral-storage": "1Gi"})),
            node(BIG),
            0,
            id="balanced: best effort in the configured resources",
        ),
        pytest.param(
            BALANCED,
            {},
            ONE_CPU_2GI,
            node({"cpu": "4"}),
            75,
            id="balanced: one fraction has no deviation",
        ),
        # 0.25, 0.5 and 1: std 0.3118, 68 with, 100 without; 50 + 18 // 2.
        pytest.param(
            BALANCED,
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
            pod(container(cpu="1", memory="4Gi", **{GPU: "4"})),
            node({**BIG, GPU: "4"}),
            59,
            id="balanced: three resources",
        ),
        pytest.param(
            BALANCED,
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
            pod(container(cpu="1", memory="6Gi", **{GPU: "1"})),
            node(BIG),
            62,
            id="balanced: three resources, two of which the node has",
        ),
        pytest.param(
            BALANCED,
            {"resources": [{"name": "cpu"}]},
            pod(container(cpu="1", memory="6Gi")),
            node(BIG),
            75,
            id="balanced: one resource",
        ),
        # The node's pod uses half its cpu and no memory (75); the pod's 4Gi evens it out (100):
        # 50 + 75 // 2.
        pytest.param(
            BALANCED,
            {},
            pod(container(memory="4Gi")),
            node(BIG, pod(container(cpu="2"), name="o")),
            87,
            id="balanced: the pod evens the node out",
        ),
        # The same node, and a pod asking for cpu only: 1 and 0 after (50), 75 before.
        pytest.param(
            BALANCED,
            {},
            pod(container(cpu="2")),
            node(BIG, pod(container(cpu="2"), name="o")),
            62,
            id="balanced: the pod tips the node further",
        ),
    ],
)
def test_score(
    factory: Factory, args: Args, the_pod: PodView, info: NodeInfo, expected: int
) -> None:
    assert score(factory, args, the_pod, info) == expected


@pytest.mark.parametrize(
    ("factory", "args", "errors"),
    [
        pytest.param(
            LEAST,
            {
                "resources": [
                    {"name": "cpu", "weight": 0},
                    {"name": "memory", "weight": 101},
                    {"name": "cpu"},
                    {"weight": "1"},
                    "gpu",
                ],
                "strategy": "x",
            },
            [
                f"{PATH}.strategy: unknown field; expected one of ['resources']",
                f"{PATH}.resources[0].weight: must be between 1 and 100",
                f"{PATH}.resources[1].weight: must be between 1 and 100",
                f"{PATH}.resources[2].name: duplicate resource 'cpu'",
                f"{PATH}.resources[3].name: must be a non-empty resource name",
                f"{PATH}.resources[3].weight: must be an integer",
                f"{PATH}.resources[4]: must be an object {{name, weight}}",
            ],
            id="every resource problem",
        ),
        pytest.param(
            MOST,
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            [f"{PATH}.resources[1].name: duplicate resource 'cpu'"],
            id="duplicate resource",
        ),
        pytest.param(
            MOST,
            {"resources": "cpu"},
            [f"{PATH}.resources: must be a list of {{name, weight}}"],
            id="resources not a list",
        ),
        pytest.param(
            BALANCED,
            {"resources": [{"name": "cpu", "weight": 2}]},
            [f"{PATH}.resources[0].weight: must be 1: this scorer does not weight"],
            id="balanced takes no weights",
        ),
        pytest.param(
            RATIO,
            {},
            [f"{PATH}.shape: at least one point {{utilization, score}} is required"],
            id="ratio needs a shape",
        ),
        pytest.param(
            RATIO,
            {
                "shape": [
                    {"utilization": 101, "score": 11},
                    {"utilization": 50, "score": 1},
                    {"utilization": 50, "score": 2, "x": 1},
                    7,
                ]
            },
            [
                f"{PATH}.shape[0].utilization: must be between 0 and 100",
                f"{PATH}.shape[0].score: must be between 0 and 10",
                f"{PATH}.shape[2].x: unknown field; expected one of ['score', 'utilization']",
                f"{PATH}.shape[3]: must be an object {{utilization, score}}",
            ],
            id="every shape problem",
        ),
        pytest.param(
            RATIO,
            {"shape": shape((50, 1), (50, 2), (20, 3))},
            [f"{PATH}.shape[{i}].utilization: {NOT_INCREASING}" for i in (1, 2)],
            id="utilization must increase",
        ),
    ],
)
def test_invalid_args(factory: Factory, args: Args, errors: list[str]) -> None:
    with pytest.raises(ArgsError) as caught:
        factory(args, PATH)
    assert [str(e) for e in caught.value.errors] == errors


@pytest.mark.parametrize("factory", [LEAST, MOST, BALANCED])
def test_default_resources_are_cpu_and_memory(factory: Factory) -> None:
    uneven = pod(container(cpu="1", memory="6Gi"))
    defaults: list[Args] = [{}, {"resources": []}]
    explicit = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
    expected = score(factory, explicit, uneven, node(BIG))
    assert [score(factory, args, uneven, node(BIG)) for args in defaults] == [expected] * 2
    assert expected != score(factory, {"resources": [{"name": "cpu"}]}, uneven, node(BIG))


POD_LEVEL = pod(
    container(), name="pod-level", resources={"requests": {"cpu": "2", "memory": "2Gi"}}
)


@pytest.mark.parametrize(
    ("factory", "args", "the_pod", "info", "expected"),
    [
        # kube-scheduler v1.34.4's strategies read the containers (100m, 200Mi each), not
        # spec.resources; with the pod-level requests LeastAllocated would give (50 + 75) // 2.
        pytest.param(
            LEAST, {}, POD_LEVEL, node(BIG), 97, id="least: the containers' defaults, not pod-level"
        ),
        pytest.param(
            MOST, {}, POD_LEVEL, node(BIG), 2, id="most: the containers' defaults, not pod-level"
        ),
        pytest.param(
            RATIO,
            MOST_LIKE,
            POD_LEVEL,
            node(BIG),
            2,
            id="ratio: the containers' defaults, not pod-level",
        ),
        # 2/4 cpu and 2/8 memory (87 with the pod, 100 without); the containers alone would be
        # best effort (skipped, 0).
        pytest.param(BALANCED, {}, POD_LEVEL, node(BIG), 68, id="balanced: pod-level requests"),
        # (1000 * 100 // 4000 + 5944 * 100 // 8192) // 2: the node's pod counts 2 cpu and 200Mi.
        pytest.param(
            LEAST,
            {},
            ONE_CPU_2GI,
            node(BIG, pod(container(), name="o", resources={"requests": {"cpu": "2"}})),
            48,
            id="least: node's pod counts its pod-level cpu, and 200Mi",
        ),
        # The node's pod: 1 cpu, and 1Gi (no 200Mi for its idle container, as memory is
        # requested in the pod): (2000 * 100 // 4000 + 5120 * 100 // 8192) // 2.
        pytest.param(
            LEAST,
            {},
            ONE_CPU_2GI,
            node(
                BIG,
                pod(
                    container(memory="1Gi"),
                    container(),
                    name="o",
                    resources={"requests": {"cpu": "1"}},
                ),
            ),
            56,
            id="least: node's pod with pod-level cpu gets no default for requested memory",
        ),
    ],
)
def test_pod_level_requests(
    factory: Factory, args: Args, the_pod: PodView, info: NodeInfo, expected: int
) -> None:
    assert score(factory, args, the_pod, info) == expected
