"""The storage and device objects as the volume plugins and DynamicResources read them: what
:func:`~policy_scheduler.model.volumes.slim` keeps of each kind, the views' fields, the
:class:`~policy_scheduler.model.volumes.Volumes` catalog with kube's assume cache, and the claims
a pod uses (its PersistentVolumeClaims and ResourceClaims)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.model import volumes
from policy_scheduler.model.objects import ObjectError, PodView
from policy_scheduler.model.selectors import LabelSelector, NodeSelector
from policy_scheduler.model.volumes import (
    ClaimView,
    CSIDriverView,
    CSINodeView,
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
    StorageCapacityView,
    StorageClassView,
    VolumeAttachmentView,
    Volumes,
    VolumeView,
)

Raw = dict[str, Any]
METADATA: Raw = {
    "name": "data",
    "namespace": "ns",
    "uid": "u1",
    "resourceVersion": "7",
    "labels": {"tier": "db"},
    "annotations": {volumes.SELECTED_NODE: "n1"},
    "managedFields": [{"manager": "kubectl"}],
    "creationTimestamp": "2026-01-01T00:00:00Z",
}
KEPT_METADATA = {
    k: v for k, v in METADATA.items() if k not in ("managedFields", "creationTimestamp")
}
AFFINITY: Raw = {
    "required": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        ]
    }
}

PVC_RAW: Raw = {
    "kind": "PersistentVolumeClaim",
    "metadata": METADATA,
    "spec": {
        "volumeName": "pv-1",
        "storageClassName": "fast",
        "accessModes": ["ReadWriteOncePod"],
        "resources": {"requests": {"storage": "1Gi"}},
        "selector": {"matchLabels": {"tier": "db"}},
        "volumeMode": "Block",
        "volumeAttributesClassName": "gold",
        "dataSource": {"kind": "VolumeSnapshot", "name": "s"},
    },
    "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}},
}
PV_RAW: Raw = {
    "kind": "PersistentVolume",
    "metadata": {**METADATA, "namespace": None},
    "spec": {
        "capacity": {"storage": "2Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast",
        "nodeAffinity": AFFINITY,
        "claimRef": {"namespace": "ns", "name": "data", "uid": "u1"},
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
        "persistentVolumeReclaimPolicy": "Delete",
        "volumeAttributesClassName": "gold",
        "mountOptions": ["ro"],
    },
    "status": {"phase": "Bound", "lastPhaseTransitionTime": "2026-01-01T00:00:00Z"},
}
SC_RAW: Raw = {
    "kind": "StorageClass",
    "metadata": {"name": "fast", "uid": "sc", "resourceVersion": "1"},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
    "parameters": {"type": "gp3"},
    "reclaimPolicy": "Delete",
}
CSI_RAW: Raw = {
    "kind": "CSINode",
    "metadata": {"name": "n1", "uid": "c", "resourceVersion": "1"},
    "spec": {
        "drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}},
            {"name": "nolimit.example.com", "nodeID": "i-1"},
        ]
    },
}
DRIVER_RAW: Raw = {
    "kind": "CSIDriver",
    "metadata": {"name": "ebs.csi.aws.com", "uid": "d", "resourceVersion": "1"},
    "spec": {
        "attachRequired": True,
        "storageCapacity": True,
        "preventPodSchedulingIfMissing": True,
        "volumeLifecycleModes": ["Persistent"],
    },
}
CAPACITY_RAW: Raw = {
    "kind": "CSIStorageCapacity",
    "metadata": {"name": "csisc-1", "namespace": "kube-system", "uid": "s", "resourceVersion": "2"},
    "storageClassName": "fast",
    "nodeTopology": {"matchLabels": {"zone": "a"}},
    "capacity": "10Gi",
    "maximumVolumeSize": "4Gi",
}
VA_RAW: Raw = {
    "kind": "VolumeAttachment",
    "metadata": {"name": "csi-123", "uid": "va", "resourceVersion": "4"},
    "spec": {
        "attacher": "ebs.csi.aws.com",
        "nodeName": "n1",
        "source": {"persistentVolumeName": "data"},
    },
    "status": {"attached": True, "attachmentMetadata": {"devicePath": "/dev/xvdba"}},
}
RC_RAW: Raw = {
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "ns", "uid": "rc", "resourceVersion": "3"},
    "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
    "status": {
        "allocation": {
            "devices": {"results": [{"request": "g", "driver": "d", "pool": "p", "device": "0"}]},
            "nodeSelector": AFFINITY["required"],
        },
        "reservedFor": [{"resource": "pods", "name": "a", "uid": "pod-a"}],
        "devices": [{"driver": "d", "pool": "p", "device": "0", "conditions": []}],
    },
}


SLICE_RAW: Raw = {
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu", "uid": "rs", "resourceVersion": "5", "generation": 2},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}],
        "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "80Gi"}}}],
    },
}
CLASS_RAW: Raw = {
    "kind": "DeviceClass",
    "metadata": {"name": "gpu", "uid": "dc"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
}


SLIM_CASES = {
    "a claim keeps its volume, class, access modes, request, selector and phase": (
        volumes.PVC,
        PVC_RAW,
        {
            "metadata": KEPT_METADATA,
            "spec": {k: v for k, v in PVC_RAW["spec"].items() if k != "dataSource"},
            "status": {"phase": "Bound"},
        },
    ),
    "a volume keeps its capacity, modes, class, node affinity, claimRef, driver and phase": (
        volumes.PV,
        PV_RAW,
        {
            "metadata": {**KEPT_METADATA, "namespace": None},
            "spec": {k: v for k, v in PV_RAW["spec"].items() if k != "mountOptions"},
            "status": {"phase": "Bound"},
        },
    ),
    "a storage class keeps its top-level provisioner, binding mode and topologies": (
        volumes.STORAGE_CLASS,
        SC_RAW,
        {
            "metadata": SC_RAW["metadata"],
            **{k: SC_RAW[k] for k in ("provisioner", "volumeBindingMode", "allowedTopologies")},
        },
    ),
    "a CSINode keeps its drivers": (
        volumes.CSI_NODE,
        CSI_RAW,
        {"metadata": CSI_RAW["metadata"], "spec": CSI_RAW["spec"], "status": {}},
    ),
    "a CSIDriver keeps its capacity and presence flags": (
        volumes.CSI_DRIVER,
        DRIVER_RAW,
        {
            "metadata": DRIVER_RAW["metadata"],
            "spec": {"storageCapacity": True, "preventPodSchedulingIfMissing": True},
            "status": {},
        },
    ),
    "a CSIStorageCapacity keeps its top-level class, topology and sizes": (
        volumes.CSI_STORAGE_CAPACITY,
        CAPACITY_RAW,
        {k: v for k, v in CAPACITY_RAW.items() if k != "kind"},
    ),
    "a VolumeAttachment keeps its attacher, node and source, not its status": (
        volumes.VOLUME_ATTACHMENT,
        VA_RAW,
        {"metadata": VA_RAW["metadata"], "spec": VA_RAW["spec"], "status": {}},
    ),
    "a resource claim keeps its requests, allocation, consumers and device statuses": (
        volumes.RESOURCE_CLAIM,
        RC_RAW,
        {"metadata": RC_RAW["metadata"], "spec": RC_RAW["spec"], "status": RC_RAW["status"]},
    ),
    "a resource slice keeps its driver, pool, node, devices and counters": (
        volumes.RESOURCE_SLICE,
        SLICE_RAW,
        {
            "metadata": {k: v for k, v in SLICE_RAW["metadata"].items() if k != "generation"},
            "spec": SLICE_RAW["spec"],
            "status": {},
        },
    ),
    "a device class keeps its selectors": (
        volumes.DEVICE_CLASS,
        CLASS_RAW,
        {"metadata": CLASS_RAW["metadata"], "spec": CLASS_RAW["spec"], "status": {}},
    ),
    "an object without spec or status keeps empty ones": (
        volumes.PVC,
        {"metadata": {"name": "bare", "namespace": "ns"}},
        {"metadata": {"name": "bare", "namespace": "ns"}, "spec": {}, "status": {}},
    ),
}


@pytest.mark.parametrize(("kind", "raw", "kept"), SLIM_CASES.values(), ids=SLIM_CASES.keys())
def test_slim_keeps_what_the_plugins_read(kind: str, raw: Raw, kept: Raw) -> None:
    before = copy.deepcopy(raw)
    assert volumes.slim(kind, raw) == kept
    assert raw == before  # the object handed in is not changed


PROBES = [{"zone": "a", "tier": "db"}, {"zone": "b"}, {}]


def readable(value: object) -> object:
    """A view's field as something to compare: a parsed selector by what it matches."""
    if isinstance(value, LabelSelector):
        return [value.matches(labels) for labels in PROBES]
    if isinstance(value, NodeSelector):
        return [value.matches("n1", labels) for labels in PROBES]
    return value


@pytest.mark.parametrize(("kind", "raw", "kept"), SLIM_CASES.values(), ids=SLIM_CASES.keys())
def test_a_slim_object_reads_as_the_whole_one(kind: str, raw: Raw, kept: Raw) -> None:
    whole, slim = Volumes().set(kind, raw), Volumes().set(kind, kept)
    # Every field a plugin may read; raw, spec and status are what differ, by design.
    fields = [
        name
        for name in dir(type(whole))
        if not name.startswith("_")
        and name not in ("raw", "spec", "status")
        and not callable(getattr(type(whole), name))
    ]
    assert fields
    assert {n: readable(getattr(slim, n)) for n in fields} == {
        n: readable(getattr(whole, n)) for n in fields
    }


def test_the_views_read_their_fields() -> None:
    claim = ClaimView(PVC_RAW)
    assert (claim.key, claim.volume_name, claim.storage_class, claim.phase) == (
        "ns/data",
        "pv-1",
        "fast",
        "Bound",
    )
    assert claim.bound and claim.access_modes == {volumes.READ_WRITE_ONCE_POD}
    assert (claim.requested_storage, claim.volume_mode, claim.selected_node) == (
        2**30,
        "Block",
        "n1",
    )
    assert claim.selector is not None and claim.selector.matches({"tier": "db"})
    assert claim.attributes_class == "gold"

    volume = VolumeView(PV_RAW)
    assert (volume.key, volume.capacity, volume.claimed_by) == ("data", 2 * 2**30, "ns/data")
    assert (volume.csi_driver, volume.csi_handle) == ("ebs.csi.aws.com", "vol-1")
    assert volume.node_affinity is not None
    assert volume.attributes_class == "gold"

    storage_class = StorageClassView(SC_RAW)
    assert (storage_class.provisioner, storage_class.binding_mode) == (
        "ebs.csi.aws.com",
        volumes.WAIT_FOR_FIRST_CONSUMER,
    )
    assert StorageClassView({"metadata": {"name": "x"}}).binding_mode == volumes.IMMEDIATE

    assert CSINodeView(CSI_RAW).limits == {"ebs.csi.aws.com": 25}

    driver = CSIDriverView(DRIVER_RAW)
    assert (driver.key, driver.storage_capacity, driver.prevents_scheduling_if_missing) == (
        "ebs.csi.aws.com",
        True,
        True,
    )
    bare_driver = CSIDriverView({"metadata": {"name": "x"}})
    assert not bare_driver.storage_capacity and not bare_driver.prevents_scheduling_if_missing

    capacity = StorageCapacityView(CAPACITY_RAW)
    assert (capacity.key, capacity.storage_class) == ("kube-system/csisc-1", "fast")
    assert (capacity.capacity, capacity.maximum_volume_size, capacity.volume_limit) == (
        10 * 2**30,
        4 * 2**30,
        4 * 2**30,
    )
    assert capacity.node_topology is not None and capacity.node_topology.matches({"zone": "a"})
    bare = StorageCapacityView({"metadata": {"name": "x", "namespace": "ns"}})
    assert (bare.capacity, bare.volume_limit, bare.node_topology) == (None, None, None)
    only_capacity = StorageCapacityView({**CAPACITY_RAW, "maximumVolumeSize": None})
    assert only_capacity.volume_limit == 10 * 2**30

    claim_of_devices = ResourceClaimView(RC_RAW)
    assert claim_of_devices.key == "ns/gpu"
    assert claim_of_devices.reserved_for == {"pod-a"}
    assert claim_of_devices.allocated_nodes is not None
    assert ResourceClaimView({"metadata": {"name": "x"}}).allocated_nodes is None


def test_a_claim_with_a_broken_selector_is_named() -> None:
    broken = {**PVC_RAW, "spec": {"selector": {"matchLabels": {"bad key!": "x"}}}}
    with pytest.raises(ObjectError, match="persistentvolumeclaim ns/data"):
        _ = ClaimView(broken).selector


BAD_OBJECT_CASES = {
    "a CSIDriver's storageCapacity that is no boolean": (
        lambda: CSIDriverView({**DRIVER_RAW, "spec": {"storageCapacity": "yes"}}).storage_capacity,
        "csidriver ebs.csi.aws.com: spec.storageCapacity: must be true or false, got 'yes'",
    ),
    "a CSIDriver's preventPodSchedulingIfMissing that is no boolean": (
        lambda: (
            CSIDriverView(
                {**DRIVER_RAW, "spec": {"preventPodSchedulingIfMissing": 1}}
            ).prevents_scheduling_if_missing
        ),
        "csidriver ebs.csi.aws.com: spec.preventPodSchedulingIfMissing: must be true or false, "
        "got 1",
    ),
    "a CSIStorageCapacity's capacity that is no quantity": (
        lambda: StorageCapacityView({**CAPACITY_RAW, "capacity": "lots"}).capacity,
        "csistoragecapacity kube-system/csisc-1: capacity: 'lots' is not a quantity",
    ),
    "a CSIStorageCapacity's maximumVolumeSize that is no quantity": (
        lambda: StorageCapacityView({**CAPACITY_RAW, "maximumVolumeSize": "4Q"}).volume_limit,
        "csistoragecapacity kube-system/csisc-1: maximumVolumeSize: '4Q' is not a quantity",
    ),
    "a ResourceSlice without a driver": (
        lambda: ResourceSliceView({**SLICE_RAW, "spec": {"pool": {}}}).validate(),
        "resourceslice node-1-gpu: spec.driver: required",
    ),
    "a ResourceSlice whose pool has no generation": (
        lambda: ResourceSliceView(
            {**SLICE_RAW, "spec": {**SLICE_RAW["spec"], "pool": {"name": "p"}}}
        ).validate(),
        "resourceslice node-1-gpu: spec.pool.generation: must be a non-negative integer",
    ),
    "a ResourceSlice's device without a name": (
        lambda: ResourceSliceView(
            {**SLICE_RAW, "spec": {**SLICE_RAW["spec"], "devices": [{"attributes": {}}]}}
        ).validate(),
        "resourceslice node-1-gpu: spec.devices[0].name: required",
    ),
    "a DeviceTaintRule without a taint effect": (
        lambda: volumes.view_of(
            volumes.DEVICE_TAINT_RULE,
            {"metadata": {"name": "r"}, "spec": {"taint": {"key": "k"}}},
        ).validate(),
        "devicetaintrule r: spec.taint.effect: required",
    ),
    "a DeviceClass selector without an expression": (
        lambda: DeviceClassView({**CLASS_RAW, "spec": {"selectors": [{"cel": {}}]}}).validate(),
        "deviceclass gpu: spec.selectors[0].cel.expression: required",
    ),
    "a ResourceClaim's request without a name": (
        lambda: ResourceClaimView(
            {**RC_RAW, "spec": {"devices": {"requests": [{"exactly": {}}]}}}
        ).validate(),
        "resourceclaim ns/gpu: spec.devices.requests[0].name: required",
    ),
    "a ResourceClaim's subrequest without a name": (
        lambda: ResourceClaimView(
            {**RC_RAW, "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [{}]}]}}}
        ).validate(),
        "resourceclaim ns/gpu: spec.devices.requests[0].firstAvailable[0].name: required",
    ),
    "a CSIStorageCapacity's nodeTopology that is no selector": (
        lambda: (
            StorageCapacityView(
                {
                    **CAPACITY_RAW,
                    "nodeTopology": {"matchExpressions": [{"key": "z", "operator": "Is"}]},
                }
            ).node_topology
        ),
        "csistoragecapacity kube-system/csisc-1: nodeTopology.matchExpressions[0].operator: 'Is'",
    ),
}


@pytest.mark.parametrize(
    ("read", "message"), BAD_OBJECT_CASES.values(), ids=BAD_OBJECT_CASES.keys()
)
def test_a_bad_field_names_the_object_and_the_field(read: Any, message: str) -> None:
    with pytest.raises(ObjectError) as error:
        read()
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(("kind", "raw", "kept"), SLIM_CASES.values(), ids=SLIM_CASES.keys())
def test_a_valid_object_validates(kind: str, raw: Raw, kept: Raw) -> None:
    volumes.view_of(kind, raw).validate()
    volumes.view_of(kind, kept).validate()


def capacity(name: str, class_name: str) -> Raw:
    return {"metadata": {"name": name, "namespace": "ns"}, "storageClassName": class_name}


def test_the_capacities_of_a_class() -> None:
    catalog = Volumes()
    for raw in (capacity("b", "fast"), capacity("a", "fast"), capacity("c", "slow")):
        catalog.set(volumes.CSI_STORAGE_CAPACITY, raw)
    assert [c.name for c in catalog.storage_capacities("fast")] == ["a", "b"]
    catalog.delete(volumes.CSI_STORAGE_CAPACITY, capacity("a", "fast"))
    assert [c.name for c in catalog.storage_capacities("fast")] == ["b"]
    assert [c.name for c in catalog.storage_capacities("none")] == []


def attachment(name: str, node: str, volume: str = "pv-1") -> Raw:
    spec = {"attacher": "d", "nodeName": node, "source": {"persistentVolumeName": volume}}
    return {"metadata": {"name": name}, "spec": spec}


def test_the_attachments_of_a_node() -> None:
    catalog = Volumes()
    for raw in (attachment("b", "n1"), attachment("a", "n1"), attachment("c", "n2")):
        catalog.set(volumes.VOLUME_ATTACHMENT, raw)
    assert [a.name for a in catalog.volume_attachments("n1")] == ["a", "b"]
    # Moved to another node (the API server forbids it; a cluster file may): found there only.
    catalog.set(volumes.VOLUME_ATTACHMENT, attachment("a", "n2"))
    assert [a.name for a in catalog.volume_attachments("n1")] == ["b"]
    assert [a.name for a in catalog.volume_attachments("n2")] == ["a", "c"]
    gone = catalog.delete(volumes.VOLUME_ATTACHMENT, attachment("c", "n2"))
    assert isinstance(gone, VolumeAttachmentView) and gone.node_name == "n2"
    assert [a.name for a in catalog.volume_attachments("n2")] == ["a"]
    assert catalog.volume_attachments("none") == []


def test_an_attachment_reads_its_fields() -> None:
    view = VolumeAttachmentView(VA_RAW)
    assert (view.key, view.attacher, view.node_name, view.volume_name) == (
        "csi-123",
        "ebs.csi.aws.com",
        "n1",
        "data",
    )
    inline = VolumeAttachmentView({"metadata": {"name": "x"}, "spec": {"source": {}}})
    assert (inline.attacher, inline.node_name, inline.volume_name) == ("", "", "")


def test_known_is_the_informers_version_before_a_change() -> None:
    catalog = Volumes()
    assert catalog.known(volumes.CSI_DRIVER, DRIVER_RAW) is None
    catalog.set(volumes.CSI_DRIVER, DRIVER_RAW)
    before = catalog.known(volumes.CSI_DRIVER, {**DRIVER_RAW, "spec": {}})
    assert isinstance(before, CSIDriverView) and before.storage_capacity


def pv(version: str, claim: str | None = None) -> Raw:
    """PV ``pv-1`` at ``version``, reserved to claim ``ns/<claim>`` when given."""
    spec: Raw = {"capacity": {"storage": "1Gi"}}
    if claim:
        spec["claimRef"] = {"namespace": "ns", "name": claim}
    return {"metadata": {"name": "pv-1", "resourceVersion": version}, "spec": spec}


@dataclass(frozen=True)
class AssumeCase:
    steps: list[tuple[str, Raw | None]]
    """("set", raw) from the informer, ("assume", raw), ("restore", None), ("delete", raw)."""
    claimed_by: str | None
    """Whom PV pv-1 is claimed by afterwards ("" for nobody); None when it is not known."""
    assumed: bool = False
    listed: list[str] = field(default_factory=list)


ASSUME_CASES = {
    "an assumed volume shadows the informer's": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a"))], "ns/a", assumed=True, listed=["ns/a"]
    ),
    "the informer bringing the same version again keeps the assumption": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a")), ("set", pv("1"))], "ns/a", assumed=True
    ),
    "a newer informer version replaces the assumption": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a")), ("set", pv("2", "b"))], "ns/b"
    ),
    "the write's own echo replaces the assumption": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a")), ("set", pv("2", "a"))], "ns/a", listed=["ns/a"]
    ),
    "restore goes back to the informer's": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a")), ("restore", None)], "", listed=[""]
    ),
    "a deleted volume forgets its assumption": AssumeCase(
        [("set", pv("1")), ("assume", pv("1", "a")), ("delete", pv("1"))], None
    ),
    "an assumption about a volume not yet seen holds until the informer brings it": AssumeCase(
        [("assume", pv("1", "a")), ("set", pv("1"))], "", listed=[""]
    ),
}


@pytest.mark.parametrize("case", ASSUME_CASES.values(), ids=ASSUME_CASES.keys())
def test_the_assume_cache(case: AssumeCase) -> None:
    catalog = Volumes()
    for step, raw in case.steps:
        if step == "set":
            assert raw is not None
            catalog.set(volumes.PV, raw)
        elif step == "assume":
            assert raw is not None
            catalog.assume(VolumeView(raw))
        elif step == "restore":
            catalog.restore(volumes.PV, "pv-1")
        else:
            assert raw is not None
            catalog.delete(volumes.PV, raw)
        assert_index_follows(catalog)
    volume = catalog.volume("pv-1")
    assert (volume.claimed_by if volume else None) == case.claimed_by
    assert catalog.is_assumed(volumes.PV, "pv-1") == case.assumed
    if case.listed:
        assert [v.claimed_by for v in catalog.volumes()] == case.listed


def assert_index_follows(catalog: Volumes) -> None:
    """matchable_volumes finds what walking every PV finds, for every class and claim."""
    every = list(catalog.volumes())
    for class_name in {v.class_name for v in every} | {""}:
        for claims in ([], ["ns/a"], ["ns/a", "ns/b"]):
            walked = [
                v.name
                for v in every
                if v.class_name == class_name and (v.claim_ref is None or v.claimed_by in claims)
            ]
            found = catalog.matchable_volumes(class_name, claims)
            assert sorted(v.name for v in found) == sorted(walked), (class_name, claims)


def classed_pv(name: str, field: str, beta: str | None = None, claim: str | None = None) -> Raw:
    raw: Raw = {"metadata": {"name": name}, "spec": {"storageClassName": field}}
    if beta is not None:
        raw["metadata"]["annotations"] = {volumes.BETA_STORAGE_CLASS: beta}
    if claim is not None:
        raw["spec"]["claimRef"] = {"namespace": "ns", "name": claim}
    return raw


MATCHABLE_CASES = {
    "an unclaimed PV of the class": ([classed_pv("a", "fast")], "fast", [], ["a"]),
    "a PV of another class": ([classed_pv("a", "slow")], "fast", [], []),
    "the beta annotation wins over the field": (
        [classed_pv("a", "slow", beta="fast"), classed_pv("b", "fast", beta="slow")],
        "fast",
        [],
        ["a"],
    ),
    "a PV claimed by another claim": ([classed_pv("a", "fast", claim="x")], "fast", ["ns/y"], []),
    "a PV claimed by one of the claims": (
        [classed_pv("a", "fast", claim="x")],
        "fast",
        ["ns/y", "ns/x"],
        ["a"],
    ),
    "a PV claimed by one of the claims, of another class": (
        [classed_pv("a", "slow", claim="x")],
        "fast",
        ["ns/x"],
        [],
    ),
}


@pytest.mark.parametrize(
    ("pvs", "class_name", "claims", "names"),
    MATCHABLE_CASES.values(),
    ids=MATCHABLE_CASES.keys(),
)
def test_matchable_volumes(
    pvs: list[Raw], class_name: str, claims: list[str], names: list[str]
) -> None:
    catalog = Volumes()
    for raw in pvs:
        catalog.set(volumes.PV, raw)
    assert sorted(v.name for v in catalog.matchable_volumes(class_name, claims)) == names
    assert_index_follows(catalog)


def test_the_catalog_finds_each_kind_by_its_key() -> None:
    catalog = Volumes()
    for kind, raw in [
        (volumes.PVC, PVC_RAW),
        (volumes.PV, PV_RAW),
        (volumes.STORAGE_CLASS, SC_RAW),
        (volumes.CSI_NODE, CSI_RAW),
        (volumes.CSI_DRIVER, DRIVER_RAW),
        (volumes.CSI_STORAGE_CAPACITY, CAPACITY_RAW),
        (volumes.VOLUME_ATTACHMENT, VA_RAW),
        (volumes.RESOURCE_CLAIM, RC_RAW),
    ]:
        catalog.set(kind, raw)
    assert catalog.claim("ns", "data") is not None and catalog.claim("other", "data") is None
    assert catalog.volume("data") is not None
    assert catalog.storage_class("fast") is not None
    assert catalog.csi_node("n1") is not None
    assert catalog.csi_driver("ebs.csi.aws.com") is not None
    assert [c.key for c in catalog.storage_capacities("fast")] == ["kube-system/csisc-1"]
    assert [a.key for a in catalog.volume_attachments("n1")] == ["csi-123"]
    assert catalog.resource_claim("ns", "gpu") is not None
    catalog.delete(volumes.PVC, PVC_RAW)
    assert catalog.claim("ns", "data") is None


def pod(volumes_: list[Raw], claims: Sequence[Raw] = (), statuses: Sequence[Raw] = ()) -> PodView:
    """Pod ns/web-0 with these volumes, resource claims and resourceClaimStatuses."""
    return PodView(
        {
            "metadata": {"name": "web-0", "namespace": "ns"},
            "spec": {"volumes": volumes_, "resourceClaims": list(claims)},
            "status": {"resourceClaimStatuses": list(statuses)},
        }
    )


CLAIM_NAME_CASES: dict[str, tuple[list[Raw], tuple[str, ...]]] = {
    "a persistentVolumeClaim volume uses its claim": (
        [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}],
        ("data-web-0",),
    ),
    "a generic ephemeral volume uses <pod>-<volume>": (
        [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
        ("web-0-scratch",),
    ),
    "other volumes use no claim, and the order is the volumes'": (
        [
            {"name": "cache", "emptyDir": {}},
            {"name": "b", "persistentVolumeClaim": {"claimName": "b"}},
            {"name": "cfg", "configMap": {"name": "c"}},
            {"name": "a", "ephemeral": {}},
        ],
        ("b", "web-0-a"),
    ),
    "a pod without volumes uses none": ([], ()),
}


@pytest.mark.parametrize(
    ("volumes_", "expected"), CLAIM_NAME_CASES.values(), ids=CLAIM_NAME_CASES.keys()
)
def test_a_pods_claim_names(volumes_: list[Raw], expected: tuple[str, ...]) -> None:
    assert pod(volumes_).claim_names == expected


RESOURCE_CLAIM_CASES: dict[str, tuple[list[Raw], list[Raw], tuple[tuple[str, str | None], ...]]] = {
    "a named claim is used as named": (
        [{"name": "gpu", "resourceClaimName": "shared-gpu"}],
        [],
        (("gpu", "shared-gpu"),),
    ),
    "a template's claim is the one its status names": (
        [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        [{"name": "gpu", "resourceClaimName": "web-0-gpu-x7k2p"}],
        (("gpu", "web-0-gpu-x7k2p"),),
    ),
    "a template's claim not made yet is None": (
        [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        [],
        (("gpu", None),),
    ),
    "a status naming no claim (none is needed) is None too": (
        [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        [{"name": "gpu"}],
        (("gpu", None),),
    ),
    "several entries keep their order": (
        [
            {"name": "b", "resourceClaimTemplateName": "t"},
            {"name": "a", "resourceClaimName": "shared"},
        ],
        [{"name": "b", "resourceClaimName": "made-b"}],
        (("b", "made-b"), ("a", "shared")),
    ),
}


@pytest.mark.parametrize(
    ("claims", "statuses", "expected"),
    RESOURCE_CLAIM_CASES.values(),
    ids=RESOURCE_CLAIM_CASES.keys(),
)
def test_a_pods_resource_claims(
    claims: list[Raw], statuses: list[Raw], expected: tuple[tuple[str, str | None], ...]
) -> None:
    assert pod([], claims, statuses).resource_claims == expected


def named(raw: Raw, name: str, **spec: Any) -> Raw:
    """``raw`` under another name (and uid), with these spec fields changed."""
    metadata = {**raw["metadata"], "name": name, "uid": f"uid-{name}"}
    return {**raw, "metadata": metadata, "spec": {**raw.get("spec", {}), **spec}}


def test_the_device_store_gives_slices_by_name_and_classes_by_name() -> None:
    store = Volumes()
    for name in ("b", "a"):
        store.set(volumes.RESOURCE_SLICE, named(SLICE_RAW, name))
    store.set(volumes.DEVICE_CLASS, CLASS_RAW)
    assert [s["metadata"]["name"] for s in store.resource_slices()] == ["a", "b"]
    assert dict(store.device_classes()) == {"gpu": CLASS_RAW}
    assert store.device_class("gpu") is not None and store.device_class("cpu") is None
    # What it gave is made again after a change of its kind, not before.
    assert store.resource_slices() is store.resource_slices()
    store.delete(volumes.RESOURCE_SLICE, named(SLICE_RAW, "a"))
    store.set(volumes.DEVICE_CLASS, named(CLASS_RAW, "nic"))
    assert [s["metadata"]["name"] for s in store.resource_slices()] == ["b"]
    assert sorted(store.device_classes()) == ["gpu", "nic"]


def in_use(store: Volumes) -> set[str]:
    """The devices the store counts as allocated, by name."""
    return {device.device for device in store.allocated().devices}


def test_allocated_devices_count_written_assumed_and_in_flight_allocations() -> None:
    store = Volumes()
    unallocated = named(RC_RAW, "new")
    unallocated["status"] = {}
    store.set(volumes.RESOURCE_CLAIM, RC_RAW)  # device 0
    claim = store.set(volumes.RESOURCE_CLAIM, unallocated)
    assert isinstance(claim, ResourceClaimView)
    assert in_use(store) == {"0"}
    result = {"request": "g", "driver": "d", "pool": "p", "device": "1"}
    chosen: Raw = {"devices": {"results": [result]}}
    store.allocate(claim, chosen)
    assert store.in_flight(claim) == chosen
    assert in_use(store) == {"0", "1"}
    # The informer brings the claim as PreBind wrote it while it is in flight: counted once.
    store.set(volumes.RESOURCE_CLAIM, {**unallocated, "status": {"allocation": chosen}})
    assert store.release(claim) and not store.release(claim)
    assert store.in_flight(claim) is None
    assert in_use(store) == {"0", "1"}
    store.set(volumes.RESOURCE_CLAIM, unallocated)  # deallocated
    assert in_use(store) == {"0"}
    # PreBind's write, assumed until the informer brings it.
    store.assume(ResourceClaimView({**unallocated, "status": {"allocation": chosen}}))
    assert in_use(store) == {"0", "1"}
    store.restore(volumes.RESOURCE_CLAIM, claim.key)
    store.delete(volumes.RESOURCE_CLAIM, RC_RAW)
    assert in_use(store) == set()
    # What it gave is the caller's: changing it changes nothing here.
    store.allocated().devices.clear()
    store.allocate(claim, chosen)
    assert in_use(store) == {"1"}
    # An in-flight allocation of a claim deleted meanwhile stays counted until released.
    store.delete(volumes.RESOURCE_CLAIM, unallocated)
    assert in_use(store) == {"1"} and store.release(claim) and in_use(store) == set()
