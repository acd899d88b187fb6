"""The loop with DynamicResources, through its ports: a pod whose claim no node has devices for is
parked, and a ResourceSlice or DeviceClass event (or its claim's change) moves it back; two pods
decided before either binds do not get the same device (the first one's allocation is in
flight); PreBind's writes go out through the ObjectWriter; a claim no node can use, held by no
one, is deallocated by PostFilter's write."""

from __future__ import annotations

from typing import Any

import pytest
from test_loop import Run, later, node, settle
from test_loop_storage import run_steps, storage

from policy_scheduler.framework.interface import ObjectRef
from policy_scheduler.model import volumes
from policy_scheduler.scheduling.queue import Where

Raw = dict[str, Any]

POLICY: Raw = {
    "apiVersion": "policy-scheduler.dev/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "test", "uid": "first", "generation": 1},
    "spec": {
        "schedulerName": "test",
        # Its PostFilter runs as a predicate's other extension points do.
        "predicates": [{"name": "DynamicResources"}],
    },
}
GPU_CLASS: Raw = {"metadata": {"name": "gpu", "uid": "gpu"}, "spec": {}}


def gpu_slice(node_name: str, *devices: str) -> Raw:
    spec = {
        "driver": "gpu.example.com",
        "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
        "nodeName": node_name,
        "devices": [{"name": d} for d in devices],
    }
    return {"metadata": {"name": f"{node_name}-gpus", "uid": f"{node_name}-gpus"}, "spec": spec}


def gpu_claim(name: str, allocation: Raw | None = None) -> Raw:
    request = {"name": "g", "exactly": {"deviceClassName": "gpu", "count": 1}}
    raw: Raw = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [request]}},
        "status": {},
    }
    if allocation is not None:
        raw["status"]["allocation"] = allocation
    return raw


def gpu_pod(name: str, claim: str) -> Raw:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {
            "schedulerName": "test",
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


def start(*steps: Any) -> list[Any]:
    """Node n1, the policy, the class, pod a with claim one; then ``steps``, then the decisions."""
    return [
        lambda run: run.scheduler.node_changed(node("n1")),
        lambda run: run.scheduler.policy_changed(POLICY),
        storage(volumes.DEVICE_CLASS, GPU_CLASS),
        storage(volumes.RESOURCE_CLAIM, gpu_claim("one")),
        *steps,
        settle(),
    ]


def parked(*steps: Any) -> list[Any]:
    """Pod a tried with no devices anywhere and parked, its backoff over; then ``steps``."""
    return [
        *start(lambda run: run.scheduler.pod_changed(gpu_pod("a", "one"))),
        later(20),
        *steps,
    ]


def status(claim: str) -> ObjectRef:
    return ObjectRef("resource.k8s.io/v1", "resourceclaims", claim, "ns", "status")


def written(run: Run, claim: str) -> list[Raw]:
    return [dict(patch) for ref, patch in run.memory.patches if ref == status(claim)]


def test_a_pod_without_devices_waits_and_a_slice_brings_them() -> None:
    run = run_steps(parked())
    assert run.where("a") is Where.UNSCHEDULABLE
    assert run.memory.conditions == [
        ("ns/a", "0/1 nodes are available: 1 cannot allocate all claims.")
    ]
    run = run_steps(parked(storage(volumes.RESOURCE_SLICE, gpu_slice("n1", "gpu-0")), settle()))
    assert run.memory.binds == [("ns/a", "n1")]
    [write] = written(run, "one")
    assert write["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": "a"}]
    assert write["status"]["allocation"]["devices"]["results"] == [
        {"request": "g", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
    ]


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(
            storage(volumes.DEVICE_CLASS, {**GPU_CLASS, "spec": {"selectors": []}}),
            id="a class changed",
        ),
        pytest.param(
            storage(volumes.RESOURCE_CLAIM, {**gpu_claim("one"), "spec": {}}),
            id="its claim changed",
        ),
    ],
)
def test_a_class_or_claim_event_moves_the_parked_pod(event: Any) -> None:
    run = run_steps(parked(event))
    assert run.where("a") is Where.ACTIVE


def test_two_pods_decided_before_either_binds_get_different_devices() -> None:
    steps = start(
        storage(volumes.RESOURCE_SLICE, gpu_slice("n1", "gpu-0", "gpu-1")),
        storage(volumes.RESOURCE_CLAIM, gpu_claim("two")),
        lambda run: run.scheduler.pod_changed(gpu_pod("a", "one")),
        lambda run: run.scheduler.pod_changed(gpu_pod("b", "two")),
    )
    run = run_steps(steps)
    assert sorted(run.memory.binds) == [("ns/a", "n1"), ("ns/b", "n1")]
    devices = {
        written(run, claim)[0]["status"]["allocation"]["devices"]["results"][0]["device"]
        for claim in ("one", "two")
    }
    assert devices == {"gpu-0", "gpu-1"}


def test_a_claim_allocated_where_no_node_is_deallocated() -> None:
    elsewhere = {
        "devices": {"results": []},
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gone"]}]}
            ]
        },
    }
    run = run_steps(
        start(
            storage(volumes.RESOURCE_CLAIM, gpu_claim("one", elsewhere)),
            lambda run: run.scheduler.pod_changed(gpu_pod("a", "one")),
        )
    )
    assert written(run, "one") == [
        {
            "metadata": {"resourceVersion": "1"},
            "status": {"reservedFor": None, "allocation": None, "devices": None},
        }
    ]
    assert run.memory.conditions == [
        (
            "ns/a",
            "0/1 nodes are available: 1 resourceclaim not available on the node. "
            "deallocation of ResourceClaim completed",
        )
    ]


def test_deleting_an_allocated_claim_moves_the_pod_that_waits_for_its_device() -> None:
    held = gpu_claim(
        "held",
        {"devices": {"results": [{"request": "g", "driver": "gpu.example.com", "pool": "n1",
                                  "device": "gpu-0"}]}},
    )  # fmt: skip
    steps = parked(storage(volumes.RESOURCE_SLICE, gpu_slice("n1", "gpu-0")))
    steps[3:3] = [storage(volumes.RESOURCE_CLAIM, held)]  # before pod a: its GPU is taken
    run = run_steps([*steps, settle(), later(20)])
    assert run.where("a") is Where.UNSCHEDULABLE
    run = run_steps(
        [*steps, settle(), later(20), storage(volumes.RESOURCE_CLAIM, held, deleted=True), settle()]
    )
    assert run.memory.binds == [("ns/a", "n1")]


def template_pod(name: str, made: str | None = None) -> Raw:
    """A pod whose claim comes from a template; ``made``: the claim the resourceclaim controller
    made for it, as the pod's status then says."""
    raw = gpu_pod(name, "")
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]
    if made is not None:
        raw["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": made}]}
    return raw


def test_a_pod_whose_claim_is_not_made_yet_waits_gated_without_an_attempt() -> None:
    """kube's DynamicResources PreEnqueue: until the resourceclaim controller has made the claim
    of a template, the pod is not tried (no attempt, no condition written), and its status
    update, naming the claim, lets it in."""
    gpus = storage(volumes.RESOURCE_SLICE, gpu_slice("n1", "gpu-0"))
    run = run_steps(start(gpus, lambda run: run.scheduler.pod_changed(template_pod("t"))))
    assert run.where("t") is Where.GATED
    assert run.memory.conditions == []
    made = storage(volumes.RESOURCE_CLAIM, gpu_claim("t-gpu"))
    run = run_steps(
        start(
            gpus,
            lambda run: run.scheduler.pod_changed(template_pod("t")),
            made,
            lambda run: run.scheduler.pod_changed(template_pod("t", "t-gpu")),
        )
    )
    assert run.memory.binds == [("ns/t", "n1")]


def late_claim(namespace: str = "ns", name: str = "late", deleting: bool = False) -> Raw:
    raw = gpu_claim(name)
    raw["metadata"] = {**raw["metadata"], "namespace": namespace, "uid": f"{namespace}-{name}"}
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return raw


@pytest.mark.parametrize(
    ("event", "where"),
    [
        pytest.param(storage(volumes.RESOURCE_CLAIM, late_claim()), Where.ACTIVE, id="it comes"),
        pytest.param(
            storage(volumes.RESOURCE_CLAIM, late_claim(name="other")),
            Where.GATED,
            id="another claim of its namespace comes",
        ),
        pytest.param(
            storage(volumes.RESOURCE_CLAIM, late_claim(namespace="elsewhere")),
            Where.GATED,
            id="a claim of its name comes in another namespace",
        ),
        pytest.param(
            storage(volumes.RESOURCE_CLAIM, late_claim(deleting=True)),
            Where.GATED,
            id="it comes being deleted",
        ),
        pytest.param(
            storage(volumes.RESOURCE_SLICE, gpu_slice("n2", "gpu-1")),
            Where.GATED,
            id="a slice comes",
        ),
    ],
)
def test_a_pod_whose_claim_is_not_known_waits_gated_until_the_claim_comes(
    event: Any, where: Where
) -> None:
    """kube's DynamicResources PreEnqueue and its pre-queueing hint: a claim the scheduler does
    not know yet (the claim informer behind the pod's) holds the pod without an attempt, and
    only that claim's event lets it in."""
    steps = start(
        storage(volumes.RESOURCE_SLICE, gpu_slice("n1", "gpu-0")),
        lambda run: run.scheduler.pod_changed(gpu_pod("a", "late")),
    )
    run = run_steps(steps)
    assert (run.where("a"), run.memory.conditions) == (Where.GATED, [])
    run = run_steps([*steps[:-1], event])
    assert run.where("a") is where


def extended_pod(name: str, resource: str) -> Raw:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {
            "schedulerName": "test",
            "containers": [{"name": "c", "resources": {"requests": {resource: "1"}}}],
        },
    }


def gpu_class(name: str, resource: str | None = None) -> Raw:
    spec = {} if resource is None else {"extendedResourceName": resource}
    return {"metadata": {"name": name, "uid": name}, "spec": spec}


@pytest.mark.parametrize(
    ("resource", "event", "where"),
    [
        pytest.param(
            "example.com/gpu",
            storage(volumes.DEVICE_CLASS, gpu_class("gpus", "example.com/gpu")),
            Where.ACTIVE,
            id="a class that maps its resource comes",
        ),
        pytest.param(
            "deviceclass.resource.kubernetes.io/gpus",
            storage(volumes.DEVICE_CLASS, gpu_class("gpus")),
            Where.ACTIVE,
            id="the class its implicit name names comes",
        ),
        pytest.param(
            "example.com/gpu",
            storage(volumes.DEVICE_CLASS, gpu_class("other", "example.com/other")),
            Where.UNSCHEDULABLE,
            id="a class for another resource comes",
        ),
    ],
)
def test_a_class_for_a_pods_extended_resource_moves_it(
    resource: str, event: Any, where: Where
) -> None:
    """kube's NodeResourcesFit hint for DeviceClass events (DRAExtendedResource): a pod no node
    had its extended resource for is tried again when a class comes that may serve it."""
    policy = {
        **POLICY,
        "spec": {
            "schedulerName": "test",
            "predicates": [{"name": "NodeResourcesFit"}, {"name": "DynamicResources"}],
        },
    }
    steps = [
        lambda run: run.scheduler.node_changed(node("n1")),
        lambda run: run.scheduler.policy_changed(policy),
        lambda run: run.scheduler.pod_changed(extended_pod("x", resource)),
        settle(),
        later(20),
    ]
    run = run_steps(steps)
    assert run.where("x") is Where.UNSCHEDULABLE
    run = run_steps([*steps, event])
    assert run.where("x") is where
