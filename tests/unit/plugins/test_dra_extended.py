"""Extended resources backed by a DeviceClass: NodeResourcesFit leaves them to DynamicResources
on a node that does not list them, which allocates devices for them through a claim it makes for
the pod, with kube-scheduler v1.37's request names, messages and writes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from plugin_harness import make_node, raw_and_normalized
from test_dynamic_resources import (
    NS,
    PLUGIN,
    POD_UID,
    FakeApi,
    WithClaims,
    WithDevices,
    resource_slice,
    statuses,
)

from policy_scheduler.framework.interface import (
    FITS,
    SKIP,
    ObjectRef,
    PostFilter,
    PostFilterResult,
    PreBind,
    Reserve,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.volumes import RESOURCE_CLAIM, ResourceClaimView
from policy_scheduler.plugins import (
    dra_extended,
    dynamic_resources,
    least_allocated,
    most_allocated,
    node_resources_fit,
)
from policy_scheduler.plugins.dra_extended import CLAIM_ANNOTATION, NodeClaim

GPU = "example.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/gpu-class"


def mapped_class(
    name: str = "gpu-class", resource: str | None = GPU, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": []}
    if resource is not None:
        spec["extendedResourceName"] = resource
    metadata = {"name": name, "uid": f"uid-{name}", "creationTimestamp": created}
    return {"metadata": metadata, "spec": spec}


def container(name: str, **requests: int) -> dict[str, Any]:
    """A container requesting these resources (``_`` stands for ``/``)."""
    found: dict[str, Any] = {"name": name, "resources": {"requests": {}}}
    for resource, amount in requests.items():
        found["resources"]["requests"][resource.replace("_", "/")] = str(amount)
    return found


def gpu_pod(*containers: dict[str, Any], inits: Sequence[dict[str, Any]] = ()) -> PodView:
    spec = {"containers": list(containers), "initContainers": list(inits)}
    return PodView({"metadata": {"name": "p", "namespace": NS, "uid": POD_UID}, "spec": spec})


def exact(name: str, count: int, class_name: str = "gpu-class") -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count},
    }


def serves(container_: str, request: str, resource: str = GPU) -> dict[str, str]:
    return {"containerName": container_, "resourceName": resource, "requestName": request}


G = "example.com_gpu"  # a keyword for container(): example.com/gpu


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        pytest.param(
            [mapped_class(resource=None)], {IMPLICIT: "gpu-class"}, id="implicit name only"
        ),
        pytest.param(
            [mapped_class()], {IMPLICIT: "gpu-class", GPU: "gpu-class"}, id="explicit and implicit"
        ),
        pytest.param(
            [mapped_class("old"), mapped_class("new", created="2026-02-01T00:00:00Z")],
            {GPU: "new"},
            id="two classes, one name: the newest",
        ),
        pytest.param(
            [mapped_class("b"), mapped_class("a")], {GPU: "a"}, id="created together: smaller name"
        ),
    ],
)
def test_class_mapping(classes: list[dict[str, Any]], expected: Mapping[str, str]) -> None:
    mapping = dra_extended.class_mapping({c["metadata"]["name"]: c for c in classes})
    assert {k: v for k, v in mapping.items() if k in expected} == expected


MAPPING = {GPU: "gpu-class", IMPLICIT: "gpu-class"}


@pytest.mark.parametrize(
    ("the_pod", "allocatable", "expected"),
    [
        pytest.param(
            gpu_pod(container("c", cpu=1, **{G: 2})),
            {},
            NodeClaim(
                (exact("container-0-request-1", 2),), (serves("c", "container-0-request-1"),)
            ),
            id="one container: its index, the resource's among its sorted requests",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1}), container("d", **{G: 1})),
            {},
            NodeClaim(
                (exact("container-0-request-0", 1), exact("container-1-request-0", 1)),
                (serves("c", "container-0-request-0"), serves("d", "container-1-request-0")),
            ),
            id="two containers: a request each",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1}), inits=[container("i", **{G: 2})]),
            {},
            NodeClaim(
                (exact("container-0-request-0", 1), exact("container-1-request-0", 1)),
                (
                    serves("c", "container-1-request-0"),
                    serves("i", "container-1-request-0"),
                    serves("i", "container-0-request-0"),
                ),
            ),
            id="an init container reuses the later containers' devices, asks for the rest",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1})),
            {GPU: "4"},
            NodeClaim((), ()),
            id="the node's device plugin serves it: nothing to allocate",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1, "example.com_fpga": 1})),
            {},
            dra_extended.CANNOT_FIT,
            id="another resource neither on the node nor mapped",
        ),
    ],
)
def test_node_claim(the_pod: PodView, allocatable: Mapping[str, str], expected: object) -> None:
    requests = dra_extended.mapped_requests(the_pod, MAPPING)
    assert dra_extended.node_claim(requests, MAPPING, the_pod, allocatable) == expected


def gpu_node(name: str, gpus: int | None = None) -> NodeInfo:
    allocatable = {"cpu": "4", "memory": "4Gi", "pods": "10"}
    if gpus is not None:
        allocatable[GPU] = str(gpus)
    return make_node(name, status={"allocatable": allocatable})


@pytest.mark.parametrize(
    ("classes", "with_dynamic_resources", "expected"),
    [
        pytest.param(
            [mapped_class()],
            True,
            [FITS, ("Insufficient example.com/gpu",)],
            id="mapped: left to DynamicResources where the node lacks it",
        ),
        pytest.param(
            [mapped_class(resource=None)],
            True,
            [("Insufficient example.com/gpu",), ("Insufficient example.com/gpu",)],
            id="not mapped: the node lacks it",
        ),
        pytest.param(
            [mapped_class()],
            False,
            [("Insufficient example.com/gpu",), ("Insufficient example.com/gpu",)],
            id="mapped, but the policy has no DynamicResources to allocate it",
        ),
    ],
)
def test_node_resources_fit_leaves_to_dynamic_resources_what_it_took_on(
    classes: list[dict[str, Any]], with_dynamic_resources: bool, expected: list[tuple[str, ...]]
) -> None:
    fit = node_resources_fit.new_filter({}, "args")
    the_pod = gpu_pod(container("c", **{G: 2}))
    nodes = [gpu_node("none"), gpu_node("one", 1)]
    cycle = Cycle(the_pod, WithClaims(classes=classes).snapshot(nodes))
    if with_dynamic_resources:
        PLUGIN.pre_filter(cycle)
    state = fit.pre_filter(cycle)
    assert state is not SKIP
    assert [tuple(fit.filter(state, the_pod, node)) for node in nodes] == expected


NODES = [gpu_node("a"), gpu_node("b"), gpu_node("c"), gpu_node("plugin", 1)]
NO_DEVICE = ("cannot allocate all claims",)


def filtered(
    the_pod: PodView, claims: Sequence[Mapping[str, Any]] = ()
) -> tuple[object, list[tuple[str, ...]]]:
    """The pre-filter's state and each node's verdict: one GPU on a, two on b, none on c, and
    a device plugin's on ``plugin``."""
    volumes = WithDevices(claims=claims, classes=(mapped_class(),)).volumes()
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(NODES, volumes=volumes)))
    if not isinstance(state, dynamic_resources.ClaimState):
        return state, []
    return state, [tuple(PLUGIN.filter(state, the_pod, node)) for node in NODES]


def left_claim(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A claim an earlier attempt made for the pod."""
    metadata = {
        "name": "p-extended-resources-x",
        "namespace": NS,
        "uid": "uid-left",
        "resourceVersion": "1",
        "annotations": {CLAIM_ANNOTATION: "true"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": POD_UID, "controller": True}
        ],
    }
    return {"metadata": metadata, "spec": {"devices": {"requests": list(requests)}}, "status": {}}


STALE = ("cannot schedule extended resource claim",)


@pytest.mark.parametrize(
    ("the_pod", "claims", "expected"),
    [
        pytest.param(
            gpu_pod(container("c", **{G: 1})),
            [],
            [FITS, FITS, NO_DEVICE, FITS],
            id="one GPU: a device or the device plugin's",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 2})),
            [],
            [NO_DEVICE, FITS, NO_DEVICE, FITS],
            id="two GPUs: b's devices; the plugin's node is NodeResourcesFit's to judge",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1, "example.com_fpga": 1})),
            [],
            [("cannot fit resource",)] * 4,
            id="with a resource neither listed nor mapped",
        ),
        pytest.param(
            gpu_pod(container("c", **{G: 1})),
            [left_claim([exact("container-0-request-0", 1)])],
            [STALE] * 4,
            id="a claim left by an earlier attempt",
        ),
    ],
)
def test_filter(
    the_pod: PodView, claims: Sequence[Mapping[str, Any]], expected: list[tuple[str, ...]]
) -> None:
    assert filtered(the_pod, claims)[1] == expected


def test_a_pod_without_mapped_resources_is_skipped() -> None:
    assert filtered(gpu_pod(container("c", cpu=1, example_org_fpga=1)))[0] is SKIP


CLAIMS = ObjectRef("resource.k8s.io/v1", "resourceclaims", "", NS)
MADE = "p-extended-resources-0"


def test_reserve_pre_bind_and_unreserve() -> None:
    the_pod = gpu_pod(container("c", **{G: 1}))
    state, _ = filtered(the_pod)
    assert isinstance(state, dynamic_resources.ClaimState) and state.volumes is not None
    assert isinstance(PLUGIN, Reserve) and isinstance(PLUGIN, PreBind)
    assert PLUGIN.reserve(state, the_pod, "b") is None
    assert {d.device for d in state.volumes.allocated().devices} == {"gpu-0"}
    api = FakeApi(state.volumes)
    assert asyncio.run(PLUGIN.pre_bind(state, the_pod, "b", api)) is None
    (create, body), finalizer, status, pod_status = api.patches
    assert create == CLAIMS
    assert body == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": NS,
            "generateName": "p-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": POD_UID, "controller": True}
            ],
            "annotations": {CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": [exact("container-0-request-0", 1)]}},
    }
    assert finalizer[1]["metadata"]["finalizers"] == [dynamic_resources.FINALIZER]
    assert status[0].name == MADE and status[0].subresource == "status"
    results = status[1]["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["pool"], r["device"]) for r in results] == [
        ("container-0-request-0", "b", "gpu-0")
    ]
    assert pod_status == (
        ObjectRef("v1", "pods", "p", NS, "status"),
        {
            "status": {
                "extendedResourceClaimStatus": {
                    "requestMappings": [serves("c", "container-0-request-0")],
                    "resourceClaimName": MADE,
                }
            }
        },
    )
    # The written claim is assumed: its device stays taken, no longer in flight.
    assert {d.device for d in state.volumes.allocated().devices} == {"gpu-0"}
    PLUGIN.unreserve(state, the_pod, "b")
    asyncio.run(PLUGIN.unreserve_writes(state, the_pod, "b", api))
    assert f"{NS}/{MADE}" not in api.objects
    assert api.patches[-1] == (ObjectRef("resource.k8s.io/v1", "resourceclaims", MADE, NS), {})
    assert not state.volumes.allocated().devices


@pytest.mark.parametrize("informer_first", [False, True], ids=["assumed first", "informer first"])
def test_the_written_claim_takes_over_the_devices_in_flight(informer_first: bool) -> None:
    """Seen beside kube-scheduler: the informer brought the written claim before PreBind
    assumed it, and dropping the flight freed its devices for the next pod."""
    allocation = {"devices": {"results": [{"request": "r", "driver": "d", "pool": "b",
                                           "device": "gpu-0"}]}}  # fmt: skip
    volumes = WithClaims().volumes()
    flight = dynamic_resources._flight(dra_extended.in_memory_claim(gpu_pod()))
    volumes.allocate(flight, allocation)
    raw = {"metadata": {"name": MADE, "namespace": NS, "resourceVersion": "3"},
           "spec": {}, "status": {"allocation": allocation}}  # fmt: skip
    if informer_first:
        volumes.set(RESOURCE_CLAIM, raw)
    volumes.hand_over(flight, ResourceClaimView(raw))
    assert {d.device for d in volumes.allocated().devices} == {"gpu-0"}
    volumes.set(RESOURCE_CLAIM, raw)
    assert {d.device for d in volumes.allocated().devices} == {"gpu-0"}
    assert volumes.in_flight(flight) is None


def test_unreserve_before_pre_bind_frees_the_devices_in_flight() -> None:
    the_pod = gpu_pod(container("c", **{G: 2}))
    state, _ = filtered(the_pod)
    assert isinstance(state, dynamic_resources.ClaimState) and state.volumes is not None
    assert isinstance(PLUGIN, Reserve)
    assert PLUGIN.reserve(state, the_pod, "b") is None
    assert len(state.volumes.allocated().devices) == 2
    PLUGIN.unreserve(state, the_pod, "b")
    api = FakeApi(state.volumes)
    asyncio.run(PLUGIN.unreserve_writes(state, the_pod, "b", api))
    assert not state.volumes.allocated().devices and not api.patches


def test_the_devices_chosen_are_told() -> None:
    state, _ = filtered(gpu_pod(container("c", **{G: 1})))
    assert isinstance(state, dynamic_resources.ClaimState)
    assert PLUGIN.chosen(state, "b") == {
        "<extended-resources>": ("container-0-request-0: gpu.example.com/b/gpu-0",)
    }


def test_slices_are_the_harness_ones() -> None:
    # The devices these tests count on: a has one GPU, b two.
    assert [len(s["spec"]["devices"]) for s in WithDevices.slices] == [1, 2]
    assert resource_slice("a", "gpu-0") == WithDevices.slices[0]


def held(*devices: str) -> dict[str, Any]:
    """A claim of another pod holding these GPUs of node b."""
    results = [
        {"request": "r", "driver": "gpu.example.com", "pool": "b", "device": d} for d in devices
    ]
    metadata = {"name": "held", "namespace": NS, "uid": "uid-held", "resourceVersion": "1"}
    return {
        "metadata": metadata,
        "spec": {},
        "status": {"allocation": {"devices": {"results": results}}},
    }


@pytest.mark.parametrize(
    ("scorer", "claims", "expected"),
    [
        # a: 1 GPU of the class, b: 2, c: none; the plugin's node lists 1 in its allocatable.
        pytest.param("LeastAllocated", [], [0, 50, 0, 0], id="least: b half free after the pod"),
        pytest.param("LeastAllocated", [held("gpu-0")], [0, 0, 0, 0], id="least: b full"),
        pytest.param("MostAllocated", [held("gpu-0")], [100, 100, 0, 100], id="most: a and b full"),
    ],
)
def test_the_resource_scorers_count_the_class_devices_of_a_node_without_the_resource(
    scorer: str, claims: Sequence[Mapping[str, Any]], expected: list[int]
) -> None:
    """kube's calculateDRAExtendedResourceAllocatableRequest: a node that does not list the
    resource scores it by the class's devices serving it and those in use."""
    make = {"LeastAllocated": least_allocated, "MostAllocated": most_allocated}[scorer]
    plugin = make.new_scorer({"resources": [{"name": GPU, "weight": 1}]}, "args")
    the_pod = gpu_pod(container("c", **{G: 1}))
    around = WithDevices(claims=claims, classes=(mapped_class(),))
    raw, _ = raw_and_normalized(plugin, the_pod, NODES, around=around)
    assert raw == expected


def test_a_device_choice_allocates_the_extended_claim_again_with_the_pods_claims() -> None:
    """A priority choosing devices again on a node (beyond kube) takes the claim for extended
    resources along: the two claims never share a device."""
    claim_raw = {
        "metadata": {"name": "mine", "namespace": NS, "uid": "uid-mine", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [exact("gpu", 1)]}},
        "status": {},
    }
    the_pod = PodView(
        {
            **gpu_pod(container("c", **{G: 1})).raw,
            "spec": {
                "containers": [container("c", **{G: 1})],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "mine"}],
            },
        }
    )
    # b's second GPU is the smaller: the choice gives it to the first claim, where kube's
    # first solution (the filter's) gave it to the claim for extended resources.
    sizes = {"gpu-0": "80Gi", "gpu-1": "20Gi"}
    b = resource_slice("b", "gpu-0", "gpu-1")
    for device in b["spec"]["devices"]:
        device["capacity"] = {"memory": {"value": sizes[device["name"]]}}
    volumes = WithDevices(claims=[claim_raw], classes=(mapped_class(),), slices=(b,)).volumes()
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(NODES, volumes=volumes)))
    assert isinstance(state, dynamic_resources.ClaimState)
    assert tuple(PLUGIN.filter(state, the_pod, NODES[1])) == FITS
    assert state.extended is not None
    assert state.extended.nodes["b"][1]["devices"]["results"][0]["device"] == "gpu-1"
    scorer = dynamic_resources.new_scorer(
        {"preferSmallest": True, "capacities": ["gpu.example.com/memory"]}, "args"
    )
    cycle = Cycle(the_pod, Snapshot(NODES, volumes=volumes))
    cycle.shared[dynamic_resources.NAME] = state
    scored = scorer.pre_score(cycle, NodeBlock.of(NODES[1]))
    assert isinstance(scored, dynamic_resources.ClaimState)
    scorer.score(scored, the_pod, NODES[1])
    mine = state.allocations["b"][0]["devices"]["results"]
    extended = state.extended.nodes["b"][1]["devices"]["results"]
    assert [r["device"] for r in mine] == ["gpu-1"]
    assert [r["device"] for r in extended] == ["gpu-0"]


LEFT = ObjectRef("resource.k8s.io/v1", "resourceclaims", "p-extended-resources-x", NS)


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        pytest.param([], PostFilterResult(), id="no claim left: nothing"),
        pytest.param(
            [left_claim([exact("container-0-request-0", 1)])],
            PostFilterResult("deletion of ResourceClaim completed", deletes=(LEFT,)),
            id="a claim left: deleted",
        ),
        pytest.param(
            [{**left_claim([exact("container-0-request-0", 1)]), "metadata": {
                **left_claim([])["metadata"],
                "finalizers": [dynamic_resources.FINALIZER, "other"],
            }}],
            PostFilterResult(
                "deletion of ResourceClaim completed",
                writes=((LEFT, {"metadata": {"finalizers": ["other"]}}),),
                deletes=(LEFT,),
            ),
            id="a claim left with its delete protection: removed first",
        ),
    ],
)  # fmt: skip
def test_post_filter_deletes_the_claim_an_earlier_attempt_left(
    claims: Sequence[Mapping[str, Any]], expected: PostFilterResult
) -> None:
    the_pod = gpu_pod(container("c", **{G: 1}))
    state, _ = filtered(the_pod, claims)
    assert isinstance(state, dynamic_resources.ClaimState) and isinstance(PLUGIN, PostFilter)
    assert PLUGIN.post_filter(state, Cycle(the_pod, Snapshot(NODES)), statuses()) == expected
