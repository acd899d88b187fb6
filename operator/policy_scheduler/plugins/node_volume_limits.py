"""NodeVolumeLimits: a node may attach no more CSI volumes of a driver than its CSINode allows
(kube-scheduler's NodeVolumeLimits, its CSILimits plugin).

The volumes counted are those of ``persistentVolumeClaim`` and generic ephemeral volumes (whose
claim, ``<pod>-<volume>``, must be controlled by the pod). A claim bound to a PV with
``spec.csi`` is the volume ``driver/volumeHandle``: the same volume used by several pods on a
node counts once. A claim not bound yet, or bound to a PV that does not exist, counts as one
volume of its StorageClass's provisioner (a claim with no class, or a class that does not exist,
is not counted: it must be bound before scheduling). A provisioner of an in-tree plugin migrated
to CSI counts as its CSI driver on a node that has a CSINode (AWS EBS, GCE PD, Azure Disk,
Cinder; Portworx where the CSINode lists it as migrated); other in-tree provisioners are not
counted.

For each driver of the pod's new volumes (those no pod of the node uses yet) that the node's
CSINode gives an ``allocatable.count``, the volumes the node's pods use plus the new ones must
not exceed it: "node(s) exceed max volume count". A node without a CSINode, or without a count
for the driver, has no limit.

A claim of the pod that does not exist fails every node (kube says it in Filter, not PreFilter)
with ``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>" not found``; an ephemeral
volume's claim that the pod does not control fails every node with kube's error text. A claim
of a pod already on a node that is missing is not counted. A pod without claims or ephemeral
volumes is skipped.

Not modelled (kube counts them): VolumeAttachments of the node whose PV no pod uses, and in-tree
volumes migrated to CSI that a pod mounts inline or through an in-tree PersistentVolume.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView, Raw, _mapping
from policy_scheduler.model.volumes import ClaimView, CSINodeView, Volumes
from policy_scheduler.plugins.base import (
    FITS,
    SKIP,
    Args,
    ClusterEvent,
    Cycle,
    EventKind,
    Filter,
    Skip,
    no_args,
)

NAME = "NodeVolumeLimits"

EXCEEDED = "node(s) exceed max volume count"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
PORTWORX = "kubernetes.io/portworx-volume"

# The in-tree plugins whose provisioners kube counts as their CSI drivers when migration is on
# for the node: always, given a CSINode, except Portworx (listed in the CSINode's annotation).
_MIGRATED: Mapping[str, str] = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
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


@dataclass(frozen=True, slots=True)
class Attachment:
    """One volume a pod would attach: ``driver`` and ``handle`` (for a claim not bound yet, the
    claim's ``namespace/name``, with ``unbound`` set so that it never equals a real handle);
    ``in_tree`` names the in-tree plugin whose migration the node's CSINode must have on for the
    volume to count."""

    driver: str
    handle: str
    unbound: bool = False
    in_tree: str = ""


class VolumeError(Exception):
    """A volume of the pod that kube cannot count: its text fails every node."""


def _claim_class(claim: ClaimView) -> str:
    # kube's GetPersistentVolumeClaimClass: the deprecated annotation wins over the field.
    if BETA_STORAGE_CLASS in claim.annotations:
        return str(claim.annotations[BETA_STORAGE_CLASS])
    return claim.storage_class


def _from_class(claim: ClaimView, volumes: Volumes) -> Attachment | None:
    """kube's getCSIDriverInfoFromSC: the claim as one volume of its class's provisioner."""
    class_name = _claim_class(claim)
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
        # An in-tree PV: counted by kube once migrated to CSI, which is not modelled.
        return None
    return Attachment(volume.csi_driver, volume.csi_handle)


def attachments(pod: PodView, volumes: Volumes, new: bool) -> list[Attachment]:
    """The CSI volumes that ``pod`` attaches (kube's filterAttachableVolumes). For the pod being
    scheduled (``new``) a claim that is missing raises :class:`VolumeError`; for a pod already
    on a node it is not counted."""
    found: list[Attachment] = []
    for volume in pod.volumes:
        ephemeral = False
        if volume.get("persistentVolumeClaim") is not None:
            name = str(_mapping(volume["persistentVolumeClaim"]).get("claimName") or "")
        elif volume.get("ephemeral") is not None:
            name, ephemeral = f"{pod.name}-{volume.get('name', '')}", True
        else:
            continue
        if not name:
            raise VolumeError("PersistentVolumeClaim had no name")
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            if new:
                raise VolumeError(
                    f"looking up PVC {pod.namespace}/{name}: "
                    f'persistentvolumeclaim "{name}" not found'
                )
            continue
        if ephemeral and claim.controller_uid != pod.uid:
            # kube returns this as an error for any pod, new or on the node.
            raise VolumeError(
                f"PVC {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        attachment = _of_claim(claim, volumes)
        if attachment is not None and attachment.driver and attachment.handle:
            found.append(attachment)
    return found


def _migrated(csi_node: CSINodeView | None, plugin: str) -> bool:
    """kube's isCSIMigrationOn for the in-tree plugins of :data:`_MIGRATED`."""
    if csi_node is None:
        return False
    if plugin != PORTWORX:
        return True
    listed = str(csi_node.annotations.get(MIGRATED_PLUGINS) or "")
    return plugin in listed.split(",")


def _unique(
    found: Sequence[Attachment], csi_node: CSINodeView | None
) -> dict[tuple[str, str, bool], str]:
    """The volumes that count on this node, by identity, with their drivers."""
    return {
        (a.driver, a.handle, a.unbound): a.driver
        for a in found
        if not a.in_tree or _migrated(csi_node, a.in_tree)
    }


@dataclass(slots=True)
class _State:
    volumes: Volumes
    new: list[Attachment]
    """The pod's volumes, before the node decides which in-tree ones count."""
    error: str = ""
    """Why every node fails (a claim kube cannot look up)."""
    on_nodes: dict[str, list[Attachment]] = field(default_factory=dict)
    """The volumes of the pods already on nodes, by pod uid, as they are looked up."""


def _uses_volumes(pod: PodView) -> bool:
    return any(
        v.get("persistentVolumeClaim") is not None
        or v.get("ephemeral") is not None
        or any(v.get(kind) is not None for kind in _INLINE_MIGRATABLE)
        for v in pod.volumes
    )


class _NodeVolumeLimitsFilter(Filter[_State]):
    name = NAME
    # kube registers CSINode/Add|Update, Pod/Delete, PVC/Add and VolumeAttachment/Delete (not
    # modelled here); a claim's update is reported with its addition.
    wakes_on = EventKind.CSI_NODE_CHANGED | EventKind.POD_DELETED | EventKind.PVC_CHANGED

    def pre_filter(self, cycle: Cycle) -> _State | Skip:
        pod = cycle.pod
        if not pod.volumes or not _uses_volumes(pod):
            return SKIP
        volumes = cycle.snapshot.volumes
        try:
            return _State(volumes, attachments(pod, volumes, new=True))
        except VolumeError as error:
            return _State(volumes, [], str(error))

    def filter(self, state: _State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if state.error:
            return (state.error,)
        if not state.new:
            return FITS
        csi_node = state.volumes.csi_node(node.name)
        if csi_node is None or not csi_node.limits:
            return FITS
        new = _unique(state.new, csi_node)
        if not any(driver in csi_node.limits for driver in new.values()):
            return FITS
        attached: dict[tuple[str, str, bool], str] = {}
        for existing in node.pods.values():
            attached.update(_unique(self._on_node(state, existing), csi_node))
        counts: dict[str, int] = {}
        for key, driver in attached.items():
            new.pop(key, None)
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
    def _on_node(state: _State, pod: PodView) -> list[Attachment]:
        found = state.on_nodes.get(pod.uid)
        if found is None:
            try:
                found = attachments(pod, state.volumes, new=False)
            except VolumeError:
                # kube fails the cycle with an error here; the pod's volumes are not counted.
                found = []
            state.on_nodes[pod.uid] = found
        return found

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints: a deleted pod with claims, ephemeral or migratable inline volumes; a
        claim of the pod's namespace that the pod uses (kube reads the pod's name for an
        ephemeral volume's claim, which a hint may not: any claim of the namespace wakes a pod
        with one)."""
        if event.kind & EventKind.POD_DELETED and event.pod is not None:
            deleted = event.pod
            if not deleted.node_name and not deleted.nominated_node_name:
                return False
            return _uses_volumes(deleted)
        if event.kind & EventKind.PVC_CHANGED and isinstance(event.storage, ClaimView):
            claim = event.storage
            if claim.namespace != pod.namespace:
                return False
            return any(_is_claim(v, claim.name) for v in pod.volumes)
        return True


def _is_claim(volume: Raw, name: str) -> bool:
    if volume.get("ephemeral") is not None:
        return True
    source = volume.get("persistentVolumeClaim")
    return source is not None and _mapping(source).get("claimName") == name


def new_filter(args: Args, path: str) -> Filter[Any]:
    no_args(NAME, args, path)
    return _NodeVolumeLimitsFilter()
