"""NodeResourcesFit reports every shortfall with kube-scheduler's reason texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from plugin_harness import Change, filter_node, make_node, make_pod, wakes

from policy_scheduler.framework.args import Args, ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import FITS, SKIP
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import node_resources_fit

GPU = "example.com/gpu"


def container(restart: str | None = None, **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if restart:
        spec["restartPolicy"] = restart
    return spec


def pod(*containers: Mapping[str, Any], name: str = "p", **spec: Any) -> PodView:
    spec.setdefault("containers", list(containers))
    return make_pod(name, "ns", **spec)


def gpus(count: str) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": {GPU: count}}}


def node(allocatable: Mapping[str, object], *pods: PodView) -> NodeInfo:
    return make_node("n", None, *pods, status={"allocatable": {"pods": 110, **allocatable}})


def run(the_pod: PodView, info: NodeInfo, args: Args | None = None) -> Sequence[str]:
    fit = node_resources_fit.new_filter(args or {}, "spec.predicates[0].args")
    return filter_node(fit, the_pod, info)


SMALL = {"cpu": "2", "memory": "4Gi"}
HUGE = "Insufficient hugepages-2Mi"
BUSY = pod(container(cpu="1500m", memory="3Gi"), name="busy")


@pytest.mark.parametrize(
    ("the_pod", "info", "reasons"),
    [
        pytest.param(pod(container(cpu="1", memory="1Gi")), node(SMALL), FITS, id="fits"),
        pytest.param(
            pod(container(cpu="500m", memory="1Gi")), node(SMALL, BUSY), FITS, id="exactly fits"
        ),
        pytest.param(
            pod(container(cpu="501m")),
            node(SMALL, BUSY),
            ("Insufficient cpu",),
            id="insufficient cpu after the node's pods",
        ),
        pytest.param(
            pod(container(cpu="3", memory="5Gi")),
            node(SMALL),
            ("Insufficient cpu", "Insufficient memory"),
            id="insufficient cpu and memory",
        ),
        pytest.param(
            pod(container(cpu="3")),
            node({**SMALL, "pods": 1}, BUSY),
            ("Too many pods", "Insufficient cpu"),
            id="too many pods and insufficient cpu",
        ),
        pytest.param(
            pod(container()),
            node({"cpu": "1", "memory": "1Gi", "pods": 0}),
            ("Too many pods",),
            id="node without pods allocatable",
        ),
        pytest.param(
            pod(container()),
            node({"cpu": "1", "memory": "1Gi"}, BUSY),
            FITS,
            id="zero-request pod fits an overcommitted node",
        ),
        pytest.param(
            pod(container(cpu="0", memory="0")),
            node({"cpu": "1", "memory": "1Gi"}, BUSY),
            FITS,
            id="explicit zero requests fit an overcommitted node",
        ),
        pytest.param(
            pod(container(cpu="0", memory="1Mi")),
            node({"memory": "1Gi"}),
            FITS,
            id="explicit zero cpu is not checked on a node without cpu",
        ),
        pytest.param(
            pod(container(**{"ephemeral-storage": "2Gi"})),
            node({**SMALL, "ephemeral-storage": "1Gi"}),
            ("Insufficient ephemeral-storage",),
            id="insufficient ephemeral-storage",
        ),
        pytest.param(
            pod(gpus("1")), node(SMALL), ("Insufficient example.com/gpu",), id="node lacks gpus"
        ),
        pytest.param(pod(gpus("0")), node(SMALL), FITS, id="zero gpus need no gpus"),
        pytest.param(
            pod(gpus("2"), gpus("1")),
            node({**SMALL, GPU: "2"}),
            ("Insufficient example.com/gpu",),
            id="containers' gpus add up",
        ),
        pytest.param(
            pod(container(**{"hugepages-2Mi": "4Mi"})),
            node({**SMALL, "hugepages-2Mi": "2Mi"}),
            ("Insufficient hugepages-2Mi",),
            id="insufficient hugepages",
        ),
        pytest.param(
            pod(container(cpu="3", memory="5Gi", **{"ephemeral-storage": "1", GPU: "1"})),
            node({"pods": 0}),
            (
                "Too many pods",
                "Insufficient cpu",
                "Insufficient memory",
                "Insufficient ephemeral-storage",
                "Insufficient example.com/gpu",
            ),
            id="every shortfall is reported",
        ),
        pytest.param(
            pod(container(cpu="1"), initContainers=[container(cpu="3")]),
            node(SMALL),
            ("Insufficient cpu",),
            id="init container peak exceeds",
        ),
        pytest.param(
            pod(
                container(cpu="1500m"),
                initContainers=[container(restart="Always", cpu="1"), container(cpu="1")],
            ),
            node(SMALL),
            ("Insufficient cpu",),
            id="sidecar runs beside the containers",
        ),
        pytest.param(
            pod(container(cpu="1900m"), overhead={"cpu": "200m"}),
            node(SMALL),
            ("Insufficient cpu",),
            id="overhead counts",
        ),
        pytest.param(
            pod(container(cpu="3"), resources={"requests": {"cpu": "1"}}),
            node(SMALL),
            FITS,
            id="pod-level requests replace the containers'",
        ),
    ],
)
def test_filter(the_pod: PodView, info: NodeInfo, reasons: Sequence[str]) -> None:
    assert run(the_pod, info) == reasons


BACK_CPU = pod(container(cpu="1"), name="back")
"""A pod a preemption's reprieve would put back on the node."""


@pytest.mark.parametrize(
    ("the_pod", "info", "added", "rejects"),
    [
        pytest.param(pod(container(cpu="1")), node(SMALL), BACK_CPU, False, id="both fit"),
        pytest.param(
            pod(container(cpu="1")),
            node(SMALL, BUSY),
            BACK_CPU,
            True,
            id="the pod put back takes the room",
        ),
        pytest.param(
            pod(container(memory="1Gi")),
            node(SMALL, BUSY),
            BACK_CPU,
            False,
            id="a resource the pod does not ask for is not checked",
        ),
        pytest.param(
            pod(container(memory="1Gi")),
            node({**SMALL, "pods": 2}, BUSY),
            BACK_CPU,
            True,
            id="too many pods once it is back",
        ),
        pytest.param(
            pod(container(cpu="1")),
            node(SMALL, BUSY),
            BUSY,
            False,
            id="a pod counted already: unsure, though the filter rejects",
        ),
    ],
)
def test_rejects_with(the_pod: PodView, info: NodeInfo, added: PodView, rejects: bool) -> None:
    fit = node_resources_fit.new_filter({}, "spec.predicates[0].args")
    state = fit.pre_filter(Cycle(the_pod, ClusterState([info])))
    assert state is not SKIP
    assert fit.rejects_with(state, the_pod, info, added) is rejects
    if added.uid not in info.pods:
        # Exact: what the filter says with the pod put back.
        back = node(info.node.raw["status"]["allocatable"], *info.pods.values(), added)
        assert (run(the_pod, back) != FITS) is rejects


@pytest.mark.parametrize(
    ("args", "reasons"),
    [
        pytest.param(
            {"ignoredResources": [GPU]}, ("Insufficient cpu", HUGE), id="ignored resource"
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com"]},
            ("Insufficient cpu", HUGE),
            id="ignored group",
        ),
        pytest.param(
            {"ignoredResources": ["hugepages-2Mi", "cpu"]},
            ("Insufficient cpu", "Insufficient example.com/gpu", HUGE),
            id="only extended resources can be ignored",
        ),
    ],
)
def test_ignored_resources(args: Args, reasons: Sequence[str]) -> None:
    the_pod = pod(container(cpu="3", **{GPU: "1", "hugepages-2Mi": "2Mi"}))
    assert run(the_pod, node(SMALL), args) == reasons


def test_invalid_args_are_all_reported() -> None:
    with pytest.raises(ArgsError) as caught:
        node_resources_fit.new_filter(
            {
                "ignoredResources": ["ok.io/x", "bad name"],
                "ignoredResourceGroups": ["example.com/gpu"],
                "scoringStrategy": {},
            },
            "spec.predicates[0].args",
        )
    assert [e.path for e in caught.value.errors] == [
        "spec.predicates[0].args.scoringStrategy",
        "spec.predicates[0].args.ignoredResources[1]",
        "spec.predicates[0].args.ignoredResourceGroups[0]",
    ]
    assert caught.value.errors[2].message == "a resource group must not contain '/'"


# The queueing hint: a node could hold the pod only if it could when empty; a node update helps
# only if it raised the pods it allows or the allocatable of a resource the pod requests (kube's).
CPU_3 = pod(container(cpu="3", memory="1Gi"))
ADDED, ALLOCATABLE = EventKind.NODE_ADDED, EventKind.NODE_ALLOCATABLE
BIG = {"cpu": "4", "memory": "8Gi"}
HINTS: dict[str, tuple[PodView, Change, bool]] = {
    "a node added that could hold the pod helps": (CPU_3, Change(ADDED, node(BIG)), True),
    "a node added too small even when empty does not": (CPU_3, Change(ADDED, node(SMALL)), False),
    "a node added that allows no pods does not": (
        CPU_3,
        Change(ADDED, make_node("n", status={"allocatable": {**BIG, "pods": 0}})),
        False,
    ),
    "a node grown to hold the pod helps": (
        CPU_3,
        Change(ALLOCATABLE, node(BIG), node(SMALL)),
        True,
    ),
    "a node grown that stays too small does not": (
        CPU_3,
        Change(ALLOCATABLE, node({"cpu": "2", "memory": "8Gi"}), node(SMALL)),
        False,
    ),
    "a node large enough before, grown in a resource the pod does not request, does not": (
        CPU_3,
        Change(ALLOCATABLE, node({**BIG, "ephemeral-storage": "10Gi"}), node(BIG)),
        False,
    ),
    "a node large enough before that allows more pods now helps": (
        CPU_3,
        Change(
            ALLOCATABLE,
            node(BIG),
            make_node("n", status={"allocatable": {**BIG, "pods": 10}}),
        ),
        True,
    ),
    "a node resized, its allocatable before unknown, is read as an addition": (
        CPU_3,
        Change(ALLOCATABLE, node(BIG)),
        True,
    ),
    "an assigned pod deleted from a node that could hold the pod helps": (
        CPU_3,
        Change(EventKind.POD_DELETED, node(BIG), pod=BUSY),
        True,
    ),
    "an assigned pod deleted from a node too small for the pod does not": (
        CPU_3,
        Change(EventKind.POD_DELETED, node(SMALL), pod=BUSY),
        False,
    ),
    "a label change is not asked about": (CPU_3, Change(EventKind.NODE_LABELS, node(BIG)), False),
}


@pytest.mark.parametrize(("the_pod", "change", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(the_pod: PodView, change: Change, helps: bool) -> None:
    fit = node_resources_fit.new_filter({}, "spec.predicates[0].args")
    assert wakes(fit, the_pod, change) is helps
