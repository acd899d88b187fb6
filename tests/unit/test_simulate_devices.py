"""simulate on a cluster dump with DRA objects: ResourceSlices, DeviceClasses and ResourceClaims
are read from the dump and checked, and the DynamicResources plugin allocates the pods' claims
as the operator's loop would: each decision names the devices chosen per claim and, for the nodes
that did not fit, the allocator's reason; the claims' writes are what PreBind sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.explain import ExplainError, report_of
from policy_scheduler.framework.interface import ObjectRef
from policy_scheduler.simulate import ClusterFileError, InMemory, load_cluster, simulate

Raw = dict[str, Any]


def node(name: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}},
    }


def gpu_slice(node_name: str, *devices: str) -> Raw:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
            "nodeName": node_name,
            "devices": [{"name": d} for d in devices],
        },
    }


GPU_CLASS: Raw = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {},
}


def gpu_claim(name: str, count: int) -> Raw:
    request = {"name": "g", "exactly": {"deviceClassName": "gpu", "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [request]}},
    }


def gpu_pod(name: str, claim: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {
            "schedulerName": "test",
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


POLICY: Raw = {
    "apiVersion": "policy-scheduler.dev/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "test"},
    "spec": {
        "schedulerName": "test",
        "predicates": [{"name": "DynamicResources"}],
        "priorities": [{"name": "DynamicResources", "weight": 2}],
    },
}


def write_list(path: Path, objects: list[Raw]) -> Path:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def test_simulate_allocates_devices_from_the_dump(tmp_path: Path) -> None:
    objects = [
        node("n1"),
        node("n2"),
        gpu_slice("n1", "gpu-0"),
        gpu_slice("n2", "gpu-0", "gpu-1"),
        GPU_CLASS,
        gpu_claim("two", 2),
        gpu_claim("one", 1),
        gpu_pod("a", "two"),
        gpu_pod("b", "one"),
    ]
    memory = InMemory()
    cluster = load_cluster(write_list(tmp_path / "c.yaml", objects))
    decisions = simulate(POLICY, cluster, 1, memory=memory)
    by_pod = {d.pod: d for d in decisions}
    two, one = by_pod["ns/a"], by_pod["ns/b"]
    assert two.node == "n2"
    assert two.chosen == {"two": ("g: gpu.example.com/n2/gpu-0", "g: gpu.example.com/n2/gpu-1")}
    assert two.reasons == {"cannot allocate all claims": 1}
    [(detail, count)] = two.details.items()
    assert count == 1 and detail.startswith('claim ns/two, request "g"')
    # n2's GPUs are in flight for a: b gets n1's.
    assert one.node == "n1"
    assert one.chosen == {"one": ("g: gpu.example.com/n1/gpu-0",)}
    status = ObjectRef("resource.k8s.io/v1", "resourceclaims", "two", "ns", "status")
    written = [patch for ref, patch in memory.patches if ref == status]
    assert written[0]["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": "a"}]
    assert written[0]["status"]["allocation"]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
        ]
    }
    assert sorted(memory.binds) == [("ns/a", "n2"), ("ns/b", "n1")]


def test_a_pod_no_node_has_devices_for_is_told_why(tmp_path: Path) -> None:
    objects = [node("n1"), gpu_slice("n1", "gpu-0"), GPU_CLASS, gpu_claim("two", 2)]
    objects.append(gpu_pod("a", "two"))
    (decision,) = simulate(POLICY, load_cluster(write_list(tmp_path / "c.yaml", objects)), 1)
    assert decision.node is None
    assert decision.message == "0/1 nodes are available: 1 cannot allocate all claims."
    assert list(decision.to_dict()["details"].values()) == [1]


def test_a_broken_slice_in_a_dump_is_named(tmp_path: Path) -> None:
    broken = gpu_slice("n1", "gpu-0")
    del broken["spec"]["pool"]["generation"]
    with pytest.raises(ClusterFileError) as error:
        load_cluster(write_list(tmp_path / "c.yaml", [node("n1"), broken]))
    assert "resourceslice n1-gpus: spec.pool.generation: must be a non-negative integer" in str(
        error.value
    )


def test_explain_says_a_pod_a_selector_error_keeps_from_any_node(tmp_path: Path) -> None:
    broken = {**GPU_CLASS, "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}
    objects = [node("n1"), gpu_slice("n1", "gpu-0"), broken, gpu_claim("one", 1)]
    cluster = load_cluster(write_list(tmp_path / "c.yaml", [*objects, gpu_pod("a", "one")]))
    policy = {**POLICY, "status": {}}
    with pytest.raises(ExplainError) as error:
        report_of(gpu_pod("a", "one"), [policy], cluster)
    assert str(error.value).startswith(
        'pod ns/a cannot be decided: running "DynamicResources" filter plugin: '
    )
