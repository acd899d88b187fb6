"""NodeVolumeLimits: a node may attach no more CSI volumes of a driver than its CSINode allows,
nor volumes of a driver it must have and has not (kube-scheduler v1.37's NodeVolumeLimits, its
CSILimits plugin).

The volumes counted are those of ``persistentVolumeClaim`` and generic ephemeral volumes (whose
claim, ``<pod>-<volume>``, must be controlled by the pod). A claim bound to a PV with
``spec.csi`` is the volume ``driver/volumeHandle``: the same volume used by several pods on a
node counts once. A claim not bound yet, or bound to a PV that does not exist, counts as one
volume of its StorageClass's provisioner (a claim with no class, or a class that does not exist,
is not counted: it must be bound before scheduling).

In-tree volumes count as the CSI volumes kube's CSI translation makes of them, on a node with a
CSINode, where migration is on: AWS EBS, GCE PD, Azure Disk (of kind Managed only), Cinder and
Portworx (since v1.36 without the CSINode's migrated-plugins annotation), mounted inline, through
an in-tree PV, or provisioned by the in-tree provisioner. Azure File and vSphere volumes are
never counted (kube never turns their migration on here).

A driver of the pod's volumes whose CSIDriver sets ``preventPodSchedulingIfMissing`` (kube's
VolumeLimitScaling, beta and on in v1.37) must be among the drivers of the node's CSINode (a node
without a CSINode has none): "<driver> CSI driver is not installed on the node", for the first
such driver in the pod's volume order. A driver without a CSIDriver is not required.

For each driver of the pod's new volumes (those no pod of the node uses yet) that the node's CSINode
gives an ``allocatable.count``, the volumes attached to the node plus the new ones must not exceed
it: "node(s) exceed max volume count". The volumes attached are those the node's pods use and those
of the node's VolumeAttachments (``spec.nodeName``) that no pod of the node uses: each with an
attacher and a PersistentVolume that exists and is CSI, one volume (the attacher and the PV's
volumeHandle) of the attacher's driver. A new volume that a VolumeAttachment already attaches, and
no pod uses, counts a second time, as in kube. A node without a CSINode, or without a count for the
driver, has no limit. Evicting pods may lift either reason (kube says Unschedulable); the others are
UnschedulableAndUnresolvable.

A claim of the pod that does not exist fails every node (kube says it in Filter, not PreFilter)
with ``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>" not found``; an ephemeral
volume's claim that the pod does not control, or an inline volume kube cannot translate, fails
the node with kube's error text (kube fails the cycle with that error). A claim of a pod already
on a node that is missing, or that kube would fail on, is not counted. A pod without claims,
ephemeral or migratable inline volumes is skipped.

A VolumeAttachment's deletion may free room for a parked pod: one with a claim, or with an
inline volume that kube's CSI translation makes a volume of the attacher's driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, Filter, Reads, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model import volumes
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView, Raw, _mapping
from policy_scheduler.model.volumes import (
    ClaimView,
    CSINodeView,
    VolumeAttachmentView,
    Volumes,
    VolumeView,
)

NAME = "NodeVolumeLimits"

EXCEEDED = "node(s) exceed max volume count"
NOT_INSTALLED = "{} CSI driver is not installed on the node"
EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
AZURE_DISK = "kubernetes.io/azure-disk"
CINDER = "kubernetes.io/cinder"
PORTWORX = "kubernetes.io/portworx-volume"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
ZONE = "topology.kubernetes.io/zone"
_UNSPECIFIED = "UNSPECIFIED"
_EBS_VOLUME = re.compile(r"vol-[^/]*")

# The in-tree plugins whose provisioners kube counts as their CSI drivers when migration is on
# for the node: always, given a CSINode.
_MIGRATED: Mapping[str, str] = {
    EBS: "ebs.csi.aws.com",
    GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com",
    CINDER: "cinder.csi.openstack.org",
    PORTWORX: "pxd.portworx.com",
}
# Migratable too, but kube's isCSIMigrationOn is never true for them: never counted.
_NOT_MIGRATED = frozenset({"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"})
# Inline volume sources that kube's CSI translator can migrate: a pod with one is not skipped.
_INLINE_MIGRATABLE = (
    "awsElasticBlockStore",
    "gcePersistentDisk",
    "azureDisk",
    "azureFile",
    "cinder",
    "vsphereVolume",
    "portworxVolume",
)
# The CSI drivers kube's translator gives the inline volumes never counted here.
_TRANSLATED_ONLY: Mapping[str, str] = {
    "azureFile": "file.csi.azure.com",
    "vsphereVolume": "csi.vsphere.vmware.com",
}


@dataclass(frozen=True, slots=True)
class Attachment:
    """One volume a pod would attach: ``driver`` and ``handle`` (for a claim not bound yet, the
    claim's ``namespace/name``, with ``unbound`` set so that it never equals a real handle).
    ``in_tree`` names the in-tree plugin whose migration the node's CSINode must have on for the
    volume to count. ``error`` is kube's error for a volume it cannot count, which fails the node
    for the pod being scheduled (for an in-tree one, only where migration is on)."""

    driver: str
    handle: str
    unbound: bool = False
    in_tree: str = ""
    error: str = ""


def _error(text: str, in_tree: str = "") -> Attachment:
    return Attachment("", "", in_tree=in_tree, error=text)


def _from_class(claim: ClaimView, volumes: Volumes) -> Attachment | None:
    """kube's getCSIDriverInfoFromSC: the claim as one volume of its class's provisioner."""
    class_name = claim.class_name
    storage_class = volumes.storage_class(class_name) if class_name else None
    if storage_class is None:
        return None
    provisioner = storage_class.provisioner
    if provisioner in _NOT_MIGRATED:
        return None
    handle = f"{claim.namespace}/{claim.name}"
    if provisioner in _MIGRATED:
        return Attachment(_MIGRATED[provisioner], handle, True, provisioner)
    return Attachment(provisioner, handle, True)


def ebs_volume_id(kube_id: str) -> tuple[str, str]:
    """kube's KubernetesVolumeIDToEBSVolumeID: the EBS volume of ``aws://<zone>/<vol-id>`` or of
    a bare id, and the error ("" when none)."""
    if not kube_id.startswith("aws://"):
        return kube_id, ""
    volume_id = urlsplit(kube_id).path.strip("/")
    if not _EBS_VOLUME.fullmatch(volume_id):
        return "", f"Invalid format for AWS volume ({kube_id})"
    return volume_id, ""


def _gce_region(zones: Sequence[str]) -> str | None:
    """The one region of GCE zones (``{locale}-{region}-{zone}``); None when not one."""
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            return None
        regions.add("-".join(parts[:2]))
    return regions.pop() if len(regions) == 1 else None


def _in_tree_volume(volume: VolumeView) -> Attachment | None:
    """kube's translation of an in-tree PV to CSI; None when it is not counted (not migratable,
    or the translation fails, which kube only logs)."""
    spec = volume.spec
    if spec.get("awsElasticBlockStore") is not None:
        source = _mapping(spec["awsElasticBlockStore"])
        handle, error = ebs_volume_id(str(source.get("volumeID") or ""))
        return None if error else Attachment(_MIGRATED[EBS], handle, in_tree=EBS)
    if spec.get("gcePersistentDisk") is not None:
        disk = str(_mapping(spec["gcePersistentDisk"]).get("pdName") or "")
        zones = str(volume.labels.get(BETA_ZONE) or volume.labels.get(ZONE) or "").split("__")
        if len(zones) == 1 and zones[0]:
            handle = f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{disk}"
        elif len(zones) > 1:
            region = _gce_region(zones)
            if region is None:
                return None
            handle = f"projects/{_UNSPECIFIED}/regions/{region}/disks/{disk}"
        else:
            handle = f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{disk}"
        return Attachment(_MIGRATED[GCE_PD], handle, in_tree=GCE_PD)
    if spec.get("azureDisk") is not None:
        source = _mapping(spec["azureDisk"])
        if _azure_kind(source).lower() != "managed":
            return None
        return Attachment(
            _MIGRATED[AZURE_DISK], str(source.get("diskURI") or ""), in_tree=AZURE_DISK
        )
    for key, plugin in (("cinder", CINDER), ("portworxVolume", PORTWORX)):
        if spec.get(key) is not None:
            handle = str(_mapping(spec[key]).get("volumeID") or "")
            return Attachment(_MIGRATED[plugin], handle, in_tree=plugin)
    return None


def _azure_kind(source: Raw) -> str:
    # The API server defaults an Azure disk's kind to Shared, which kube does not migrate.
    return str(source.get("kind") or "Shared")


def _inline(volume: Raw) -> Attachment | None:
    """kube's checkAttachableInlineVolume: an inline volume migrated to CSI; None when kube
    never counts it (not migratable, or migration never on for its plugin)."""
    name = str(volume.get("name") or "")
    failed = f"converting volume({name}) from inline to csi: "
    if volume.get("awsElasticBlockStore") is not None:
        source = _mapping(volume["awsElasticBlockStore"])
        handle, error = ebs_volume_id(str(source.get("volumeID") or ""))
        if error:
            return _error(
                f"{failed}failed to translate Kubernetes ID to EBS Volume ID {error}", EBS
            )
        return Attachment(_MIGRATED[EBS], handle, in_tree=EBS)
    if volume.get("gcePersistentDisk") is not None:
        disk = str(_mapping(volume["gcePersistentDisk"]).get("pdName") or "")
        handle = f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{disk}"
        return Attachment(_MIGRATED[GCE_PD], handle, in_tree=GCE_PD)
    if volume.get("azureDisk") is not None:
        source = _mapping(volume["azureDisk"])
        kind = _azure_kind(source)
        if kind.lower() != "managed":
            return _error(f"{failed}kind({kind}) is not supported in csi migration", AZURE_DISK)
        return Attachment(
            _MIGRATED[AZURE_DISK], str(source.get("diskURI") or ""), in_tree=AZURE_DISK
        )
    for key, plugin in (("cinder", CINDER), ("portworxVolume", PORTWORX)):
        if volume.get(key) is not None:
            handle = str(_mapping(volume[key]).get("volumeID") or "")
            return Attachment(_MIGRATED[plugin], handle, in_tree=plugin)
    return None


def _of_claim(claim: ClaimView, volumes: Volumes) -> Attachment | None:
    """kube's getCSIDriverInfo: the CSI volume a claim stands for; None when not counted."""
    if not claim.volume_name:
        return _from_class(claim, volumes)
    volume = volumes.volume(claim.volume_name)
    if volume is None:
        # The PV was deleted, or the claim is pre-bound to one not created yet: kube falls back
        # to the class.
        return _from_class(claim, volumes)
    if volume.spec.get("csi") is None:
        return _in_tree_volume(volume)
    return Attachment(volume.csi_driver, volume.csi_handle)


def attachments(pod: PodView, volumes: Volumes, new: bool) -> list[Attachment]:
    """The volumes that ``pod`` attaches, in its volumes' order (kube's filterAttachableVolumes).
    For the pod being scheduled (``new``) the list ends at a claim kube cannot look up, with
    the error; for a pod already on a node a missing claim is not counted."""
    found: list[Attachment] = []
    for volume in pod.volumes:
        ephemeral = False
        if volume.get("persistentVolumeClaim") is not None:
            name = str(_mapping(volume["persistentVolumeClaim"]).get("claimName") or "")
        elif volume.get("ephemeral") is not None:
            name, ephemeral = f"{pod.name}-{volume.get('name', '')}", True
        else:
            inline = _inline(volume)
            if inline is not None:
                found.append(inline)
            continue
        if not name:
            found.append(_error("PersistentVolumeClaim had no name"))
            if new:
                break
            continue
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            if new:
                found.append(
                    _error(
                        f"looking up PVC {pod.namespace}/{name}: "
                        f'persistentvolumeclaim "{name}" not found'
                    )
                )
                break
            continue
        if ephemeral and claim.controller_uid != pod.uid:
            found.append(
                _error(
                    f"PVC {claim.namespace}/{claim.name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            )
            if new:
                break
            continue
        attachment = _of_claim(claim, volumes)
        if attachment is not None and attachment.driver and attachment.handle:
            found.append(attachment)
    return found


Counted = dict[tuple[str, str, bool], str]


def counted(found: Sequence[Attachment], csi_node: CSINodeView | None) -> Counted | str:
    """The volumes that count on a node with this CSINode, by identity, with their drivers; or
    the first error that applies there."""
    unique: Counted = {}
    for a in found:
        # kube's isCSIMigrationOn: on for every in-tree plugin of _MIGRATED, given a CSINode.
        if a.in_tree and csi_node is None:
            continue
        if a.error:
            return a.error
        unique[(a.driver, a.handle, a.unbound)] = a.driver
    return unique


def _volume_attachments(volumes: Volumes, node_name: str) -> Counted:
    """kube's getNodeVolumeAttachmentInfo: the volumes the node's VolumeAttachments attach, by
    identity, with their attachers; those without an attacher, or whose PV is missing or not
    CSI, are not counted."""
    found: Counted = {}
    for attachment in volumes.volume_attachments(node_name):
        if not attachment.attacher or not attachment.volume_name:
            continue
        volume = volumes.volume(attachment.volume_name)
        if volume is None or volume.spec.get("csi") is None:
            continue
        found[(attachment.attacher, volume.csi_handle, False)] = attachment.attacher
    return found


@dataclass(slots=True)
class _State:
    volumes: Volumes
    new: list[Attachment]
    """The pod's volumes, before the node decides which in-tree ones count."""
    on_nodes: dict[str, list[Attachment]] = field(default_factory=dict)
    """The volumes of the pods already on nodes, by pod uid, as they are looked up (without
    their errors: kube fails the cycle with an error there, the volume is not counted here)."""


def _uses_volumes(pod: PodView) -> bool:
    return any(
        v.get("persistentVolumeClaim") is not None
        or v.get("ephemeral") is not None
        or any(v.get(kind) is not None for kind in _INLINE_MIGRATABLE)
        for v in pod.volumes
    )


def _missing_driver(
    volumes: Volumes, drivers: Iterable[str], csi_node: CSINodeView | None
) -> str | None:
    """kube's checkCSIDriverOnNode: the first of ``drivers`` whose CSIDriver wants it on the
    node and that the node's CSINode lacks; None when none."""
    for driver in drivers:
        required = volumes.csi_driver(driver)
        if required is None or not required.prevents_scheduling_if_missing:
            continue
        if csi_node is None or driver not in csi_node.drivers:
            return driver
    return None


def _resolvable(reason: str) -> bool:
    """Whether kube says the reason Unschedulable: evicting pods may lift it."""
    prefix, suffix = NOT_INSTALLED.split("{}")
    return reason == EXCEEDED or (reason.startswith(prefix) and reason.endswith(suffix))


class _NodeVolumeLimitsFilter(Filter[_State], Reads):
    name = NAME
    # A claim's volume, or its class's provisioner, names the driver; the CSIDriver says
    # whether it attaches volumes at all; a node's VolumeAttachments attach volumes too.
    reads = frozenset(
        {volumes.PV, volumes.STORAGE_CLASS, volumes.CSI_DRIVER, volumes.VOLUME_ATTACHMENT}
    )

    # kube registers CSINode/Add|Update, AssignedPod/Delete, PVC/Add (the hint lets a claim's
    # update through as no addition) and VolumeAttachment/Delete. Not CSIDriver events.
    wakes_on = (
        EventKind.CSI_NODE_CHANGED
        | EventKind.POD_DELETED
        | EventKind.PVC_CHANGED
        | EventKind.VOLUME_ATTACHMENT_DELETED
    )

    def unresolvable(
        self, pod: PodView, nodes: NodeBlock, reasons: Sequence[str]
    ) -> npt.NDArray[np.bool_]:
        """kube says both of :func:`_resolvable`'s reasons Unschedulable (evicting pods frees
        attachments; for a missing driver, its dry run then finds no victims that help); the
        pod's own volumes failing to resolve (a claim not found) is UnschedulableAndUnresolvable
        in kube-scheduler."""
        return np.full(len(nodes), not all(map(_resolvable, reasons)))

    def pre_filter(self, cycle: Cycle) -> _State | Skip:
        pod = cycle.pod
        if not pod.volumes or not _uses_volumes(pod):
            return SKIP
        volumes = cycle.snapshot.volumes
        return _State(volumes, attachments(pod, volumes, new=True))

    def filter(self, state: _State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if not state.new:
            return FITS
        csi_node = state.volumes.csi_node(node.name)
        new = counted(state.new, csi_node)
        if isinstance(new, str):
            return (new,)
        missing = _missing_driver(state.volumes, new.values(), csi_node)
        if missing is not None:
            return (NOT_INSTALLED.format(missing),)
        if csi_node is None or not any(driver in csi_node.limits for driver in new.values()):
            return FITS
        attached: Counted = {}
        for existing in node.pods.values():
            attached.update(self._on_node(state, existing, csi_node))
        counts: dict[str, int] = {}
        for key, driver in attached.items():
            new.pop(key, None)
            counts[driver] = counts.get(driver, 0) + 1
        for key, driver in _volume_attachments(state.volumes, node.name).items():
            if key not in attached:
                counts[driver] = counts.get(driver, 0) + 1
        wanted: dict[str, int] = {}
        for driver in new.values():
            wanted[driver] = wanted.get(driver, 0) + 1
        for driver, count in wanted.items():
            limit = csi_node.limits.get(driver)
            if limit is not None and counts.get(driver, 0) + count > limit:
                return (EXCEEDED,)
        return FITS

    @staticmethod
    def _on_node(state: _State, pod: PodView, csi_node: CSINodeView) -> Counted:
        found = state.on_nodes.get(pod.uid)
        if found is None:
            found = [a for a in attachments(pod, state.volumes, new=False) if not a.error]
            state.on_nodes[pod.uid] = found
        result = counted(found, csi_node)
        assert not isinstance(result, str)
        return result

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints: a deleted pod with claims, ephemeral or migratable inline volumes; a
        new claim of the pod's namespace that the pod uses (kube reads the pod's name for an
        ephemeral volume's claim, which a hint may not: any claim of the namespace wakes a pod
        with one); a new CSINode, or one whose count for some driver grew (a driver added
        without a count wakes no pod); a deleted VolumeAttachment, for :func:`_detached`'s
        pods."""
        before, after = event.old_storage, event.storage
        if isinstance(before, VolumeAttachmentView) and after is None:
            return _detached(pod, before.attacher)
        if isinstance(before, CSINodeView) and isinstance(after, CSINodeView):
            grown = after.limits.items()
            return any(count > before.limits.get(driver, 0) for driver, count in grown)
        if event.kind & EventKind.POD_DELETED and event.pod is not None:
            deleted = event.pod
            if not deleted.node_name and not deleted.nominated_node_name:
                return False
            return _uses_volumes(deleted)
        if event.kind & EventKind.PVC_CHANGED and isinstance(event.storage, ClaimView):
            claim = event.storage
            if event.old_storage is not None or claim.namespace != pod.namespace:
                return False
            return any(_is_claim(v, claim.name) for v in pod.volumes)
        return True


def _detached(pod: PodView, attacher: str) -> bool:
    """kube's isSchedulableAfterVolumeAttachmentDeleted: whether a volume of ``attacher``
    detached may let ``pod`` pass: it has a claim (not an ephemeral volume), or an inline volume
    that kube translates to a volume of the attacher, or fails to translate."""
    for volume in pod.volumes:
        if volume.get("persistentVolumeClaim") is not None:
            return True
        inline = _inline(volume)
        if inline is not None:
            if inline.error or inline.driver == attacher:
                return True
            continue
        if any(volume.get(k) is not None and d == attacher for k, d in _TRANSLATED_ONLY.items()):
            return True
    return False


def _is_claim(volume: Raw, name: str) -> bool:
    if volume.get("ephemeral") is not None:
        return True
    source = volume.get("persistentVolumeClaim")
    return source is not None and _mapping(source).get("claimName") == name


def new_filter(args: Args, path: str) -> Filter[Any]:
    no_args(NAME, args, path)
    return _NodeVolumeLimitsFilter()
