"""simulate's cluster dumps with storage and device objects: PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments and
ResourceClaims are read from a cluster file (or kubectl's items, as test_parity's ``our_decision``
gets them), put in ``snapshot_of``'s Snapshot and fed to the loop that
:func:`~policy_scheduler.simulate.simulate` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_loop_storage import ClaimBound, plugin  # noqa: F401 (plugin: a fixture used below)

from policy_scheduler.model import volumes
from policy_scheduler.simulate import (
    ClusterDump,
    ClusterFileError,
    load_cluster,
    simulate,
    snapshot_of,
)

Raw = dict[str, Any]

NODE: Raw = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}},
}


def pod(claim: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ns", "uid": "a"},
        "spec": {
            "schedulerName": "test",
            "containers": [{"name": "c"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def claim(name: str, namespace: str | None = "ns", volume: str = "pv-1") -> Raw:
    metadata: Raw = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": {"volumeName": volume} if volume else {},
    }


PV: Raw = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"}}
SC: Raw = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "fast"},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
}
CSI: Raw = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSINode",
    "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 3}}]},
}
VA: Raw = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "VolumeAttachment",
    "metadata": {"name": "csi-1"},
    "spec": {
        "attacher": "ebs.csi.aws.com",
        "nodeName": "n1",
        "source": {"persistentVolumeName": "pv-1"},
    },
}
RC: Raw = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "ns"},
    "spec": {},
}
POLICY: Raw = {
    "apiVersion": "policy-scheduler.dev/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "test"},
    "spec": {"schedulerName": "test", "predicates": [{"name": "NodeResourcesFit"}]},
}


def write_list(path: Path, objects: list[Raw]) -> Path:
    """``objects`` as ``kubectl get ... -o yaml`` prints them: one List."""
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def test_a_cluster_file_holds_every_storage_kind(tmp_path: Path) -> None:
    objects = [NODE, claim("data"), PV, SC, CSI, DRIVER, CAPACITY, VA, RC]
    dump = load_cluster(write_list(tmp_path / "c.yaml", objects))
    assert [kind for kind, _ in dump.storage] == [
        volumes.PVC,
        volumes.PV,
        volumes.STORAGE_CLASS,
        volumes.CSI_NODE,
        volumes.CSI_DRIVER,
        volumes.CSI_STORAGE_CAPACITY,
        volumes.VOLUME_ATTACHMENT,
        volumes.RESOURCE_CLAIM,
    ]
    assert (dump.workloads, dump.namespaces) == ((), ())
    catalog = snapshot_of(dump).volumes
    assert catalog.claim("ns", "data") is not None
    assert catalog.volume("pv-1") is not None
    storage_class = catalog.storage_class("fast")
    assert storage_class is not None and storage_class.binding_mode == "WaitForFirstConsumer"
    csi_node = catalog.csi_node("n1")
    assert csi_node is not None and csi_node.limits == {"ebs.csi.aws.com": 3}
    assert catalog.resource_claim("ns", "gpu") is not None
    driver = catalog.csi_driver("ebs.csi.aws.com")
    assert driver is not None and driver.storage_capacity
    assert [c.key for c in catalog.storage_capacities("fast")] == ["ns/s"]
    (attached,) = catalog.volume_attachments("n1")
    assert (attached.attacher, attached.volume_name) == ("ebs.csi.aws.com", "pv-1")


NAMESPACE_CASES = {
    "a claim that names its namespace stays there": (claim("data", "ns"), "ns"),
    "a claim that names none is in default, as kubectl would create it": (
        claim("data", None),
        "default",
    ),
    "a resource claim that names none is in default too": (
        {**RC, "metadata": {"name": "data"}},
        "default",
    ),
}


@pytest.mark.parametrize(("raw", "namespace"), NAMESPACE_CASES.values(), ids=NAMESPACE_CASES.keys())
def test_the_namespace_of_a_claim(raw: Raw, namespace: str) -> None:
    ((kind, read),) = ClusterDump.of([raw]).storage
    catalog = snapshot_of(ClusterDump.of([raw])).volumes
    name = read["metadata"]["name"]
    found = (
        catalog.claim(namespace, name)
        if kind == volumes.PVC
        else catalog.resource_claim(namespace, name)
    )
    assert found is not None and found.namespace == namespace


DRIVER: Raw = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": "ebs.csi.aws.com"},
    "spec": {"storageCapacity": True},
}
CAPACITY: Raw = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIStorageCapacity",
    "metadata": {"name": "s", "namespace": "ns"},
    "storageClassName": "fast",
    "capacity": "10Gi",
}
BROKEN_CASES = {
    "a claim's selector": (
        {**claim("data"), "spec": {"selector": {"matchLabels": {"bad key!": "x"}}}},
        "persistentvolumeclaim ns/data: spec.selector",
    ),
    "a CSIDriver's flag": (
        {**DRIVER, "spec": {"storageCapacity": "yes"}},
        "csidriver ebs.csi.aws.com: spec.storageCapacity: must be true or false",
    ),
    "a CSIStorageCapacity's capacity": (
        {**CAPACITY, "capacity": "lots"},
        "csistoragecapacity ns/s: capacity: 'lots' is not a quantity",
    ),
    "a CSIStorageCapacity's topology": (
        {**CAPACITY, "nodeTopology": {"matchLabels": {"bad key!": "x"}}},
        "csistoragecapacity ns/s: nodeTopology",
    ),
}


@pytest.mark.parametrize(("broken", "said"), BROKEN_CASES.values(), ids=BROKEN_CASES.keys())
def test_a_broken_storage_object_is_reported_with_its_place(
    tmp_path: Path, broken: Raw, said: str
) -> None:
    path = write_list(tmp_path / "c.yaml", [NODE, broken])
    with pytest.raises(ClusterFileError) as raised:
        load_cluster(path)
    (problem,) = raised.value.problems
    assert problem.startswith(f"{path}: document 1, items[1]: {said}"), problem


SIMULATE_CASES = {
    "the pod's claim bound in the dump: it is placed": ([claim("data")], [("ns/a", "n1")]),
    "its claim not bound: the filter keeps it pending": ([claim("data", volume="")], []),
    "its claim not in the dump: pending too": ([claim("other")], []),
}


@pytest.mark.parametrize(("storage", "binds"), SIMULATE_CASES.values(), ids=SIMULATE_CASES.keys())
def test_simulate_feeds_the_storage_objects_to_the_loop(
    storage: list[Raw],
    binds: list[tuple[str, str]],
    plugin: ClaimBound,  # noqa: F811
) -> None:
    dump = ClusterDump.of([NODE, pod("data"), *storage])
    decisions = simulate(POLICY, dump)
    assert [(d.pod, d.node) for d in decisions if d.node] == binds
    assert len(decisions) == 1
    assert plugin.hinted == []  # decided once each, from the dump: nothing was moved
