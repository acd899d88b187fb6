"""The storage and device objects that the volume and claim plugins read: PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments,
and ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules (resource.k8s.io/v1), as
kube-scheduler reads them through its listers.

Each kind has a read-only view over the raw object (parsed on first use, as
:class:`~policy_scheduler.model.objects.PodView` is) and :class:`Volumes` keeps them all, by
namespace and name, fed by the informers (or a cluster file). :func:`slim` is what an informer
keeps of each: the fields the plugins read, not the rest (a PV's mount options, a claim's device
results beyond the node they allow).

The API server validates these objects; one that is not valid (a cluster file, written by hand)
is kept, and a view raises :class:`~policy_scheduler.model.objects.ObjectError`, naming the object
and the field, when a plugin reads the bad field: the pods whose cycle reads it fail with that
error, the others are scheduled.

**Assumed objects** are kube-scheduler's assume cache: when VolumeBinding reserves a PV for a
claim, it assumes the PV with the claim's ``claimRef`` before the API has it, so that the next
pod's cycle, which does not wait for the write, cannot give the PV to another claim. An assumed
object shadows the informer's until the informer brings a newer version of it (another
``resourceVersion``), or until :meth:`Volumes.restore` drops it (the write failed).

**Allocations in flight** are kube-scheduler's in-flight claims: DynamicResources' Reserve
records the devices it chose for a claim (:meth:`Volumes.allocate`) before PreBind writes them, so
that the next cycles count those devices as taken and wait for the
claim rather than allocate it twice; PreBind assumes the claim as written and drops the record,
Unreserve drops it (:meth:`Volumes.release`). The devices of all of them are counted as they
change (:meth:`Volumes.allocated`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any, TypeVar

from policy_scheduler.model.cel import DeviceSelectors
from policy_scheduler.model.dra import AllocatedState, Outcomes, SliceCache
from policy_scheduler.model.objects import ObjectError, Raw, _mapping, _sequence
from policy_scheduler.model.quantity import QuantityError, to_int
from policy_scheduler.model.selectors import LabelSelector, NodeSelector, SelectorError

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"
DEVICE_TAINT_RULE = "DeviceTaintRule"
VOLUME_ATTACHMENT = "VolumeAttachment"
KINDS = (
    PVC, PV, STORAGE_CLASS, CSI_NODE, CSI_DRIVER, CSI_STORAGE_CAPACITY, VOLUME_ATTACHMENT,
    RESOURCE_CLAIM, RESOURCE_SLICE, DEVICE_CLASS, DEVICE_TAINT_RULE,
)  # fmt: skip
NAMESPACED = frozenset({PVC, CSI_STORAGE_CAPACITY, RESOURCE_CLAIM})

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
"""The deprecated annotation naming a claim's or a PV's class, which wins over the field."""
STORAGE = "storage"

# The fields each kind's plugins read; the rest of an object is dropped by slim().
_KEPT_METADATA = (
    "name", "namespace", "uid", "resourceVersion", "labels", "annotations", "deletionTimestamp",
    "ownerReferences",
)  # fmt: skip
# A claim's finalizers, which PreBind adds to and PostFilter takes from; a DeviceClass's
# creationTimestamp, which decides between classes mapping one extended resource.
_MORE_METADATA: Mapping[str, tuple[str, ...]] = {
    RESOURCE_CLAIM: ("finalizers",),
    DEVICE_CLASS: ("creationTimestamp",),
}
_KEPT: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    PVC: (("volumeName", "storageClassName", "accessModes", "resources", "selector", "volumeMode",
           "volumeAttributesClassName"),
          ("phase",)),
    PV: (
        (
            "capacity", "accessModes", "storageClassName", "nodeAffinity", "claimRef",
            "volumeMode", "csi", "gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi",
            "azureDisk", "cinder", "portworxVolume",
            "persistentVolumeReclaimPolicy", "volumeAttributesClassName",
        ),
        ("phase",),
    ),
    CSI_NODE: (("drivers",), ()),
    CSI_DRIVER: (("storageCapacity", "preventPodSchedulingIfMissing"), ()),
    # The devices' statuses hold the binding conditions PreBind waits for.
    RESOURCE_CLAIM: (("devices",), ("allocation", "reservedFor", "devices")),
    # All the allocator reads: the pool, the nodes it serves, the devices and their counters.
    RESOURCE_SLICE: (
        (
            "driver", "pool", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection",
            "devices", "sharedCounters",
        ),
        (),
    ),
    DEVICE_CLASS: (("selectors", "config", "extendedResourceName"), ()),
    DEVICE_TAINT_RULE: (("deviceSelector", "taint"), ()),
    # The source is a PV's name, or (a migrated inline volume's) the volume's spec.
    VOLUME_ATTACHMENT: (("attacher", "nodeName", "source"), ()),
}  # fmt: skip
# The kinds whose fields are top-level, not under spec and status: the fields kept of each.
_TOP_LEVEL: Mapping[str, tuple[str, ...]] = {
    STORAGE_CLASS: ("provisioner", "volumeBindingMode", "allowedTopologies"),
    CSI_STORAGE_CAPACITY: ("storageClassName", "nodeTopology", "capacity", "maximumVolumeSize"),
}


def slim(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`Volumes` (and an informer, to resume and relist) keeps of an object of
    ``kind``: its identity, labels and annotations, and the spec and status fields the plugins
    read (a StorageClass and a CSIStorageCapacity keep the top-level ones)."""
    metadata = _mapping(raw.get("metadata"))
    names = (*_KEPT_METADATA, *_MORE_METADATA.get(kind, ()))
    kept: dict[str, Any] = {"metadata": {k: metadata[k] for k in names if k in metadata}}
    if kind in _TOP_LEVEL:
        kept.update({k: raw[k] for k in _TOP_LEVEL[kind] if k in raw})
        return kept
    spec_fields, status_fields = _KEPT[kind]
    spec, status = _mapping(raw.get("spec")), _mapping(raw.get("status"))
    kept["spec"] = {k: spec[k] for k in spec_fields if k in spec}
    kept["status"] = {k: status[k] for k in status_fields if k in status}
    return kept


class StorageObject:
    """The parts of a storage or device object that every kind shares: one view class per
    kind below."""

    kind: str = ""

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        metadata = _mapping(raw.get("metadata"))
        self.name = str(metadata.get("name", ""))
        # As a pod's: an object of a namespaced kind without one (in a cluster file) is in
        # "default".
        self.namespace = str(
            metadata.get("namespace") or ("default" if self.kind in NAMESPACED else "")
        )
        self.uid = str(metadata.get("uid", ""))
        self.resource_version = str(metadata.get("resourceVersion", ""))
        self.labels: Mapping[str, str] = _mapping(metadata.get("labels"))
        self.annotations: Mapping[str, str] = _mapping(metadata.get("annotations"))
        self.spec = _mapping(raw.get("spec"))
        self.status = _mapping(raw.get("status"))

    def validate(self) -> None:
        """Read every field that raises ObjectError when the API server would not hold it, so
        that a cluster file's bad object is told at once (nothing to read: a kind without
        such fields)."""

    @property
    def key(self) -> str:
        """``namespace/name`` for a namespaced object, ``name`` otherwise."""
        return f"{self.namespace}/{self.name}" if self.kind in NAMESPACED else self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key})"


def _storage(raw: object) -> int | None:
    """A ``storage`` quantity in bytes; None when absent or unreadable (kube then treats the
    object as having none)."""
    value = _mapping(raw).get(STORAGE)
    if value is None:
        return None
    try:
        return to_int(STORAGE, value)
    except QuantityError:
        return None


def _class_name(annotations: Mapping[str, str], field: str) -> str:
    if BETA_STORAGE_CLASS in annotations:
        return str(annotations[BETA_STORAGE_CLASS])
    return field


class ClaimView(StorageObject):
    """A PersistentVolumeClaim."""

    kind = PVC

    @property
    def volume_name(self) -> str:
        """The PV the claim is bound to, or being bound to; empty when none."""
        return str(self.spec.get("volumeName") or "")

    @property
    def storage_class(self) -> str:
        """``spec.storageClassName``; empty for none (and for a claim that names no class: the
        default class is the admission plugin's business, kube-scheduler reads the field)."""
        return str(self.spec.get("storageClassName") or "")

    @property
    def class_name(self) -> str:
        """kube's GetPersistentVolumeClaimClass: :data:`BETA_STORAGE_CLASS`, else the field."""
        return _class_name(self.annotations, self.storage_class)

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def bound(self) -> bool:
        """Whether the claim is bound to a volume (kube-scheduler reads ``spec.volumeName``)."""
        return bool(self.volume_name)

    @cached_property
    def access_modes(self) -> frozenset[str]:
        return frozenset(map(str, _sequence(self.spec.get("accessModes"))))

    @cached_property
    def storage_request(self) -> int | None:
        """``resources.requests.storage`` in bytes; None when the claim gives none."""
        return _storage(_mapping(self.spec.get("resources")).get("requests"))

    @property
    def requested_storage(self) -> int:
        """The storage the claim asks for, in bytes (0 when it asks for none)."""
        return self.storage_request or 0

    @cached_property
    def selector(self) -> LabelSelector | None:
        """The claim's PV selector; None when it has none. The API server validates it: an
        invalid one (from a cluster file) raises ObjectError naming the claim."""
        raw = self.spec.get("selector")
        if raw is None:
            return None
        try:
            return LabelSelector.parse(raw, "spec.selector")
        except SelectorError as error:
            raise ObjectError(f"persistentvolumeclaim {self.key}: {error}") from None

    def validate(self) -> None:
        _ = self.selector

    @property
    def volume_mode(self) -> str:
        return str(self.spec.get("volumeMode") or "Filesystem")

    @property
    def attributes_class(self) -> str:
        """``spec.volumeAttributesClassName``; empty for none."""
        return str(self.spec.get("volumeAttributesClassName") or "")

    @property
    def selected_node(self) -> str:
        """The node a WaitForFirstConsumer claim was given to the provisioner for."""
        return str(self.annotations.get(SELECTED_NODE) or "")

    @property
    def controller_uid(self) -> str:
        """The uid of the claim's controller (the pod of a generic ephemeral volume's claim,
        which kube checks); empty when it has none."""
        owners = _sequence(_mapping(self.raw.get("metadata")).get("ownerReferences"))
        for owner in map(_mapping, owners):
            if owner.get("controller") is True:
                return str(owner.get("uid") or "")
        return ""


class VolumeView(StorageObject):
    """A PersistentVolume."""

    kind = PV

    @cached_property
    def capacity(self) -> int:
        return _storage(self.spec.get("capacity")) or 0

    @cached_property
    def access_modes(self) -> frozenset[str]:
        return frozenset(map(str, _sequence(self.spec.get("accessModes"))))

    @property
    def storage_class(self) -> str:
        return str(self.spec.get("storageClassName") or "")

    @property
    def class_name(self) -> str:
        """kube's GetPersistentVolumeClass: :data:`BETA_STORAGE_CLASS`, else the field."""
        return _class_name(self.annotations, self.storage_class)

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def volume_mode(self) -> str:
        return str(self.spec.get("volumeMode") or "Filesystem")

    @property
    def attributes_class(self) -> str:
        """``spec.volumeAttributesClassName``; empty for none."""
        return str(self.spec.get("volumeAttributesClassName") or "")

    @property
    def claim_ref(self) -> Raw | None:
        """``spec.claimRef`` (namespace, name, uid of the claim it is bound or reserved to)."""
        ref = self.spec.get("claimRef")
        return ref if isinstance(ref, Mapping) else None

    @property
    def claimed_by(self) -> str:
        """``namespace/name`` of the claim in ``claimRef``; empty when none."""
        ref = self.claim_ref
        if ref is None:
            return ""
        return f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"

    @cached_property
    def node_affinity(self) -> NodeSelector | None:
        """``spec.nodeAffinity.required``: the nodes that can reach the volume; None for any.
        An invalid one matches no node (kube: "volume node affinity conflict")."""
        required = _mapping(self.spec.get("nodeAffinity")).get("required")
        if required is None:
            return None
        return NodeSelector.parse_lenient(required, "spec.nodeAffinity.required")[0]

    @property
    def csi_driver(self) -> str:
        return str(_mapping(self.spec.get("csi")).get("driver") or "")

    @property
    def csi_handle(self) -> str:
        return str(_mapping(self.spec.get("csi")).get("volumeHandle") or "")


class StorageClassView(StorageObject):
    """A StorageClass (its fields are top-level, not under ``spec``)."""

    kind = STORAGE_CLASS

    @property
    def provisioner(self) -> str:
        return str(self.raw.get("provisioner") or "")

    @property
    def binding_mode(self) -> str:
        return str(self.raw.get("volumeBindingMode") or IMMEDIATE)

    @property
    def allowed_topologies(self) -> Sequence[Raw]:
        return [_mapping(t) for t in _sequence(self.raw.get("allowedTopologies"))]


class CSINodeView(StorageObject):
    """A CSINode: how many volumes of each CSI driver its node may attach."""

    kind = CSI_NODE

    @cached_property
    def drivers(self) -> frozenset[str]:
        """The names of the CSI drivers installed on the node."""
        return frozenset(
            str(driver.get("name", ""))
            for driver in map(_mapping, _sequence(self.spec.get("drivers")))
        )

    @cached_property
    def limits(self) -> Mapping[str, int]:
        """Driver name -> ``allocatable.count``, for the drivers that give one."""
        limits: dict[str, int] = {}
        for driver in map(_mapping, _sequence(self.spec.get("drivers"))):
            count = _mapping(driver.get("allocatable")).get("count")
            if isinstance(count, int) and not isinstance(count, bool):
                limits[str(driver.get("name", ""))] = count
        return limits


class CSIDriverView(StorageObject):
    """A CSIDriver: whether VolumeBinding checks its CSIStorageCapacities, and whether
    NodeVolumeLimits keeps its volumes off the nodes whose CSINode lacks it."""

    kind = CSI_DRIVER

    @property
    def storage_capacity(self) -> bool:
        """``spec.storageCapacity``; unset is false."""
        return self._flag("storageCapacity")

    @property
    def prevents_scheduling_if_missing(self) -> bool:
        """``spec.preventPodSchedulingIfMissing``; unset is false."""
        return self._flag("preventPodSchedulingIfMissing")

    def validate(self) -> None:
        _ = self.storage_capacity, self.prevents_scheduling_if_missing

    def _flag(self, name: str) -> bool:
        value = self.spec.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ObjectError(
                f"csidriver {self.key}: spec.{name}: must be true or false, got {value!r}"
            )
        return value


class StorageCapacityView(StorageObject):
    """A CSIStorageCapacity: how much storage of a class the nodes of a topology can still have
    provisioned (its fields are top-level, not under ``spec``)."""

    kind = CSI_STORAGE_CAPACITY

    @property
    def storage_class(self) -> str:
        return str(self.raw.get("storageClassName") or "")

    @cached_property
    def node_topology(self) -> LabelSelector | None:
        """``nodeTopology``, the nodes that reach the storage; None when unset (no node)."""
        raw = self.raw.get("nodeTopology")
        if raw is None:
            return None
        try:
            return LabelSelector.parse(raw, "nodeTopology")
        except SelectorError as error:
            raise ObjectError(f"csistoragecapacity {self.key}: {error}") from None

    @cached_property
    def capacity(self) -> int | None:
        """``capacity`` in bytes; None when unset (kube then counts it as no capacity)."""
        return self._quantity("capacity")

    @cached_property
    def maximum_volume_size(self) -> int | None:
        return self._quantity("maximumVolumeSize")

    @property
    def volume_limit(self) -> int | None:
        """kube's volumeLimit: the largest volume it can provision, ``maximumVolumeSize`` when
        set (more precise), else ``capacity``; None when neither is."""
        size = self.maximum_volume_size
        return size if size is not None else self.capacity

    def validate(self) -> None:
        _ = self.node_topology, self.capacity, self.maximum_volume_size

    def _quantity(self, name: str) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        try:
            return to_int(STORAGE, value)
        except QuantityError as error:
            raise ObjectError(f"csistoragecapacity {self.key}: {name}: {error}") from None


def _check(condition: bool, what: str, field: str, problem: str) -> None:
    if not condition:
        raise ObjectError(f"{what}: {field}: {problem}")


def _check_requests(what: str, requests: object, field: str) -> None:
    """Each request of a claim's ``spec.devices.requests`` (or of a ``firstAvailable`` list) is
    an object with a name, as the API server requires."""
    _check(isinstance(requests, Sequence) and not isinstance(requests, str), what, field,
           "must be a list")  # fmt: skip
    for i, request in enumerate(_sequence(requests)):
        _check(isinstance(request, Mapping), what, f"{field}[{i}]", "must be an object")
        name = _mapping(request).get("name")
        _check(isinstance(name, str) and bool(name), what, f"{field}[{i}].name", "required")


class ResourceClaimView(StorageObject):
    """A ResourceClaim (resource.k8s.io/v1): whether it is allocated, and on which nodes the
    allocation may be used."""

    kind = RESOURCE_CLAIM

    @property
    def allocation(self) -> Raw | None:
        allocation = self.status.get("allocation")
        return allocation if isinstance(allocation, Mapping) else None

    @cached_property
    def allocated_nodes(self) -> NodeSelector | None:
        """``status.allocation.nodeSelector``: the nodes the allocated devices can be used on;
        None for any node (or when the claim is not allocated)."""
        allocation = self.allocation
        if allocation is None or allocation.get("nodeSelector") is None:
            return None
        return NodeSelector.parse_lenient(
            allocation["nodeSelector"], "status.allocation.nodeSelector"
        )[0]

    @property
    def deleting(self) -> bool:
        """Whether the claim has a ``deletionTimestamp`` (DynamicResources then waits)."""
        return _mapping(self.raw.get("metadata")).get("deletionTimestamp") is not None

    @cached_property
    def reserved_for(self) -> frozenset[str]:
        """The uids of the consumers (pods) the claim is reserved for."""
        return frozenset(
            str(_mapping(ref).get("uid", "")) for ref in _sequence(self.status.get("reservedFor"))
        )

    @property
    def finalizers(self) -> tuple[str, ...]:
        return tuple(map(str, _sequence(_mapping(self.raw.get("metadata")).get("finalizers"))))

    @property
    def requests(self) -> Sequence[Raw]:
        """``spec.devices.requests``: what the claim asks the allocator for."""
        return [_mapping(r) for r in _sequence(_mapping(self.spec.get("devices")).get("requests"))]

    def validate(self) -> None:
        what = f"resourceclaim {self.key}"
        allocation = self.status.get("allocation")
        if allocation is not None:
            _check(isinstance(allocation, Mapping), what, "status.allocation", "must be an object")
            field = "status.allocation.devices.results"
            results = _mapping(_mapping(allocation).get("devices")).get("results", [])
            _check(isinstance(results, Sequence) and not isinstance(results, str), what, field,
                   "must be a list")  # fmt: skip
            for i, result in enumerate(map(_mapping, _sequence(results))):
                for name in ("driver", "pool", "device"):
                    value = result.get(name)
                    _check(isinstance(value, str) and bool(value), what, f"{field}[{i}].{name}",
                           "required")  # fmt: skip
        devices = self.spec.get("devices")
        if devices is None:
            return
        _check(isinstance(devices, Mapping), what, "spec.devices", "must be an object")
        requests = _mapping(devices).get("requests")
        if requests is None:
            return
        _check_requests(what, requests, "spec.devices.requests")
        for i, request in enumerate(map(_mapping, _sequence(requests))):
            if request.get("firstAvailable") is not None:
                field = f"spec.devices.requests[{i}].firstAvailable"
                _check_requests(what, request["firstAvailable"], field)


class ResourceSliceView(StorageObject):
    """A ResourceSlice (resource.k8s.io/v1): devices of one driver's pool, published for a node
    (``nodeName``), some nodes (``nodeSelector``) or all of them (``allNodes``)."""

    kind = RESOURCE_SLICE

    @property
    def driver(self) -> str:
        return str(self.spec.get("driver") or "")

    @property
    def pool(self) -> str:
        return str(_mapping(self.spec.get("pool")).get("name") or "")

    @property
    def node_name(self) -> str:
        return str(self.spec.get("nodeName") or "")

    def validate(self) -> None:
        what = f"resourceslice {self.key}"
        _check(bool(self.driver), what, "spec.driver", "required")
        pool = self.spec.get("pool")
        _check(isinstance(pool, Mapping), what, "spec.pool", "required")
        _check(bool(self.pool), what, "spec.pool.name", "required")
        for field in ("generation", "resourceSliceCount"):
            value = _mapping(pool).get(field)
            _check(
                isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                what,
                f"spec.pool.{field}",
                "must be a non-negative integer",
            )
        devices = self.spec.get("devices", [])
        _check(isinstance(devices, Sequence) and not isinstance(devices, str), what,
               "spec.devices", "must be a list")  # fmt: skip
        for i, device in enumerate(_sequence(devices)):
            name = _mapping(device).get("name")
            _check(isinstance(name, str) and bool(name), what, f"spec.devices[{i}].name",
                   "required")  # fmt: skip


class DeviceClassView(StorageObject):
    """A DeviceClass (resource.k8s.io/v1): the selectors and configuration a claim's request
    of the class gets."""

    kind = DEVICE_CLASS

    def validate(self) -> None:
        what = f"deviceclass {self.key}"
        selectors = self.spec.get("selectors", [])
        _check(isinstance(selectors, Sequence) and not isinstance(selectors, str), what,
               "spec.selectors", "must be a list")  # fmt: skip
        for i, selector in enumerate(_sequence(selectors)):
            cel = _mapping(_mapping(selector).get("cel"))
            _check(isinstance(cel.get("expression"), str), what,
                   f"spec.selectors[{i}].cel.expression", "required")  # fmt: skip


class DeviceTaintRuleView(StorageObject):
    """A DeviceTaintRule (resource.k8s.io/v1): a taint on the devices its selector names (by
    driver, pool and device), which the allocator counts as theirs."""

    kind = DEVICE_TAINT_RULE

    def validate(self) -> None:
        what = f"devicetaintrule {self.key}"
        taint = self.spec.get("taint")
        _check(isinstance(taint, Mapping), what, "spec.taint", "required")
        for field in ("key", "effect"):
            value = _mapping(taint).get(field)
            _check(isinstance(value, str) and bool(value), what, f"spec.taint.{field}", "required")


class VolumeAttachmentView(StorageObject):
    """A VolumeAttachment: a volume that ``attacher``, a CSI driver, attaches (or keeps attached)
    to a node, which NodeVolumeLimits counts against the node's limit for the driver."""

    kind = VOLUME_ATTACHMENT

    @property
    def node_name(self) -> str:
        return str(self.spec.get("nodeName") or "")

    @property
    def attacher(self) -> str:
        """The CSI driver that attaches the volume; empty when unset."""
        return str(self.spec.get("attacher") or "")

    @property
    def volume_name(self) -> str:
        """``source.persistentVolumeName``: the PV attached; empty for an inline volume's."""
        return str(_mapping(self.spec.get("source")).get("persistentVolumeName") or "")


_VIEWS: Mapping[str, type[StorageObject]] = {
    PVC: ClaimView,
    PV: VolumeView,
    STORAGE_CLASS: StorageClassView,
    CSI_NODE: CSINodeView,
    CSI_DRIVER: CSIDriverView,
    CSI_STORAGE_CAPACITY: StorageCapacityView,
    VOLUME_ATTACHMENT: VolumeAttachmentView,
    RESOURCE_CLAIM: ResourceClaimView,
    RESOURCE_SLICE: ResourceSliceView,
    DEVICE_CLASS: DeviceClassView,
    DEVICE_TAINT_RULE: DeviceTaintRuleView,
}
V = TypeVar("V", bound=StorageObject)


def view_of(kind: str, raw: Raw) -> StorageObject:
    """The view of an object of ``kind`` (one of :data:`KINDS`)."""
    return _VIEWS[kind](raw)


class Volumes:
    """Every PVC, PV, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment,
    ResourceClaim, ResourceSlice and DeviceClass the scheduler knows, by kind and key, with the
    assumed ones shadowing what the informers brought, and the allocations in flight (see the
    module's docstring)."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, StorageObject]] = {kind: {} for kind in KINDS}
        # kind -> key -> (the assumed object, the resourceVersion it was assumed upon)
        self._assumed: dict[str, dict[str, tuple[StorageObject, str]]] = {
            kind: {} for kind in KINDS
        }
        # The PVs' names as VolumeBinding looks them up (kube's assume cache indexes them by
        # class): those without a claimRef by class, the others by the claim they name; each
        # as it reads now, assumed or not. A cluster holds thousands of PVs bound to other
        # claims, which no pod's claim can match.
        self._unclaimed: dict[str, set[str]] = {}
        self._claimed: dict[str, set[str]] = {}
        # The CSIStorageCapacities' keys by class: VolumeBinding reads those of one class.
        self._capacities: dict[str, set[str]] = {}
        # The VolumeAttachments' keys by node: NodeVolumeLimits reads those of one node.
        self._attachments: dict[str, set[str]] = {}
        # claim key -> the allocation Reserve chose, not written yet
        self._in_flight: dict[str, Raw] = {}
        # The devices of every claim's allocation (in flight, else as the claim reads now),
        # kept up to date claim by claim, as kube's allocated-devices tracker: each pod with
        # claims to allocate starts from a copy instead of counting every claim again.
        self._allocated = AllocatedState()
        # What every pod with a claim to allocate reads, made again only after a change of its
        # kind: the slices and the classes.
        self._slices: tuple[Raw, ...] | None = None
        self._classes: dict[str, Raw] | None = None
        self._taint_rules: tuple[Raw, ...] | None = None
        self.selectors = DeviceSelectors()
        """The device selectors' results, which outlive a pod's cycle (kube's CEL cache)."""
        self.slice_cache = SliceCache()
        """The slices as the allocator parsed them, until they change."""
        self.outcomes = Outcomes()
        """What the allocator found on each node per claims specification, kept while nothing
        it read changed (the allocations counted here stamp their pools)."""

    def __repr__(self) -> str:
        return "Volumes(" + ", ".join(f"{k}={len(v)}" for k, v in self._objects.items()) + ")"

    def set(self, kind: str, raw: Raw) -> StorageObject:
        """An object was added or changed (from a watch); the view now kept. A newer version of
        an assumed object replaces the assumption."""
        view = view_of(kind, raw)
        before = self._get(kind, view.key)
        self._objects[kind][view.key] = view
        assumed = self._assumed[kind].get(view.key)
        if assumed is not None and assumed[1] != view.resource_version:
            del self._assumed[kind][view.key]
        self._reindex(kind, view.key, before)
        return view

    def known(self, kind: str, raw: Raw) -> StorageObject | None:
        """The view the informers brought of the object that ``raw`` is a version of (same kind
        and key), assumptions aside; None when none: what a change of it replaces."""
        return self._objects[kind].get(view_of(kind, raw).key)

    def delete(self, kind: str, raw: Raw) -> StorageObject | None:
        """An object was deleted; the view it had, if known."""
        key = view_of(kind, raw).key
        before = self._get(kind, key)
        self._assumed[kind].pop(key, None)
        gone = self._objects[kind].pop(key, None)
        self._reindex(kind, key, before)
        return gone

    def assume(self, view: V) -> None:
        """Take ``view`` (a changed copy of a known object) as the object until the informer
        brings a newer version, or :meth:`restore` is called."""
        known = self._objects[view.kind].get(view.key)
        version = known.resource_version if known is not None else ""
        before = self._get(view.kind, view.key)
        self._assumed[view.kind][view.key] = (view, version)
        self._reindex(view.kind, view.key, before)

    def restore(self, kind: str, key: str) -> None:
        """Drop the assumption about the object ``key`` of ``kind``: back to the informer's."""
        before = self._get(kind, key)
        self._assumed[kind].pop(key, None)
        self._reindex(kind, key, before)

    def _reindex(self, kind: str, key: str, before: StorageObject | None) -> None:
        """Index the PV, CSIStorageCapacity or VolumeAttachment ``key`` as it reads now, no
        longer as ``before`` read; forget what was derived from the objects of ``kind``."""
        if kind == RESOURCE_SLICE:
            self._slices = None
        elif kind == DEVICE_CLASS:
            self._classes = None
        elif kind == DEVICE_TAINT_RULE:
            self._taint_rules = None
        elif kind == RESOURCE_CLAIM and key not in self._in_flight:
            counted = before.allocation if isinstance(before, ResourceClaimView) else None
            self._recount(counted, self._counted(key))
        if kind not in (PV, CSI_STORAGE_CAPACITY, VOLUME_ATTACHMENT):
            return
        after = self._get(kind, key)
        if after is before:
            return
        for view, adding in ((before, False), (after, True)):
            if isinstance(view, StorageCapacityView):
                index, value = self._capacities, view.storage_class
            elif isinstance(view, VolumeAttachmentView):
                index, value = self._attachments, view.node_name
            elif isinstance(view, VolumeView):
                index, value = (
                    (self._unclaimed, view.class_name)
                    if view.claim_ref is None
                    else (self._claimed, view.claimed_by)
                )
            else:
                continue
            names = index.setdefault(value, set())
            if adding:
                names.add(key)
            else:
                names.discard(key)
                if not names:
                    del index[value]

    def is_assumed(self, kind: str, key: str) -> bool:
        return key in self._assumed[kind]

    def _get(self, kind: str, key: str) -> StorageObject | None:
        assumed = self._assumed[kind].get(key)
        return assumed[0] if assumed is not None else self._objects[kind].get(key)

    def _all(self, kind: str) -> Iterator[StorageObject]:
        for key in self._objects[kind].keys() | self._assumed[kind].keys():
            view = self._get(kind, key)
            if view is not None:
                yield view

    def claim(self, namespace: str, name: str) -> ClaimView | None:
        view = self._get(PVC, f"{namespace}/{name}")
        return view if isinstance(view, ClaimView) else None

    def volume(self, name: str) -> VolumeView | None:
        view = self._get(PV, name)
        return view if isinstance(view, VolumeView) else None

    def volumes(self) -> Iterator[VolumeView]:
        """Every PV, assumed ones as assumed, in no particular order."""
        return (v for v in self._all(PV) if isinstance(v, VolumeView))

    def matchable_volumes(self, class_name: str, claims: Iterable[str]) -> list[VolumeView]:
        """The PVs of the class (:attr:`VolumeView.class_name`) that no claim holds, or whose
        claimRef names one of ``claims`` (``namespace/name``): those VolumeBinding may match
        a claim of that class with. Found through the index, without walking every PV."""
        names = set(self._unclaimed.get(class_name, ()))
        for claim in claims:
            names.update(self._claimed.get(claim, ()))
        found = (self._get(PV, name) for name in names)
        return [v for v in found if isinstance(v, VolumeView) and v.class_name == class_name]

    def storage_class(self, name: str) -> StorageClassView | None:
        view = self._get(STORAGE_CLASS, name)
        return view if isinstance(view, StorageClassView) else None

    def csi_node(self, name: str) -> CSINodeView | None:
        view = self._get(CSI_NODE, name)
        return view if isinstance(view, CSINodeView) else None

    def csi_driver(self, name: str) -> CSIDriverView | None:
        view = self._get(CSI_DRIVER, name)
        return view if isinstance(view, CSIDriverView) else None

    def storage_capacities(self, class_name: str) -> list[StorageCapacityView]:
        """The CSIStorageCapacities of the class, by key (the same order every time)."""
        found = (
            self._get(CSI_STORAGE_CAPACITY, key) for key in self._capacities.get(class_name, ())
        )
        return sorted((v for v in found if isinstance(v, StorageCapacityView)), key=lambda v: v.key)

    def volume_attachments(self, node_name: str) -> list[VolumeAttachmentView]:
        """The VolumeAttachments of the node (``spec.nodeName``), by key."""
        found = (self._get(VOLUME_ATTACHMENT, key) for key in self._attachments.get(node_name, ()))
        return sorted(
            (v for v in found if isinstance(v, VolumeAttachmentView)), key=lambda v: v.key
        )

    def resource_claim(self, namespace: str, name: str) -> ResourceClaimView | None:
        view = self._get(RESOURCE_CLAIM, f"{namespace}/{name}")
        return view if isinstance(view, ResourceClaimView) else None

    def resource_claims(self, namespace: str) -> list[ResourceClaimView]:
        """The ResourceClaims of ``namespace`` (assumed ones as assumed), by name."""
        prefix = f"{namespace}/"
        found = (v for v in self._all(RESOURCE_CLAIM) if v.key.startswith(prefix))
        return sorted((v for v in found if isinstance(v, ResourceClaimView)), key=lambda v: v.key)

    def resource_slices(self) -> Sequence[Raw]:
        """Every ResourceSlice, by name (the allocator orders pools itself)."""
        if self._slices is None:
            views = sorted(self._all(RESOURCE_SLICE), key=lambda v: v.key)
            self._slices = tuple(v.raw for v in views)
            self.slice_cache.retain(self._slices)
        return self._slices

    def device_taint_rules(self) -> Sequence[Raw]:
        """Every DeviceTaintRule, by name."""
        if self._taint_rules is None:
            views = sorted(self._all(DEVICE_TAINT_RULE), key=lambda v: v.key)
            self._taint_rules = tuple(v.raw for v in views)
        return self._taint_rules

    def device_class(self, name: str) -> DeviceClassView | None:
        view = self._get(DEVICE_CLASS, name)
        return view if isinstance(view, DeviceClassView) else None

    def device_classes(self) -> Mapping[str, Raw]:
        """Every DeviceClass, by name."""
        if self._classes is None:
            self._classes = {v.key: v.raw for v in self._all(DEVICE_CLASS)}
        return self._classes

    def allocated(self) -> AllocatedState:
        """The devices of every ResourceClaim's allocation (assumed ones as assumed) and of the
        allocations in flight, which no other claim may be given: a copy, the caller's."""
        return self._allocated.copy()

    def _counted(self, key: str) -> Raw | None:
        """The allocation counted for the claim ``key``: in flight, else the claim's."""
        if key in self._in_flight:
            return self._in_flight[key]
        view = self._get(RESOURCE_CLAIM, key)
        return view.allocation if isinstance(view, ResourceClaimView) else None

    def _recount(self, before: Raw | None, after: Raw | None) -> None:
        if before == after:
            return
        if before is not None:
            self._allocated.discard(before)
        if after is not None:
            self._allocated.add(after)

    def allocate(self, claim: ResourceClaimView, allocation: Raw) -> None:
        """Record ``allocation`` for ``claim`` as in flight (Reserve chose it, PreBind has not
        written it yet)."""
        before = self._counted(claim.key)
        self._in_flight[claim.key] = allocation
        self._recount(before, allocation)

    def in_flight(self, claim: ResourceClaimView) -> Raw | None:
        """The allocation in flight for ``claim``, if any."""
        return self._in_flight.get(claim.key)

    def hand_over(self, flight: ResourceClaimView, claim: ResourceClaimView) -> None:
        """The allocation in flight under ``flight`` (a claim not made yet when Reserve chose
        it) is now the written ``claim``'s: assumed, its devices counted once, also when the
        informer brought the claim, the same devices, meanwhile (the count is of devices, not
        of the claims holding them: dropping the flight would free them)."""
        allocation = self._in_flight.pop(flight.key, None)
        if allocation is not None:
            self._allocated.discard(allocation)
            counted = self._counted(claim.key)
            if counted is not None:
                self._allocated.add(counted)
        self.assume(claim)

    def release(self, claim: ResourceClaimView) -> bool:
        """Drop the allocation in flight for ``claim``: whether there was one."""
        before = self._in_flight.pop(claim.key, None)
        if before is None:
            return False
        self._recount(before, self._counted(claim.key))
        return True
