"""NodeVolumeLimits rejects nodes where the pod's new CSI volumes would exceed their CSINode's
count for a driver, counting volumes (of the node's pods and VolumeAttachments) as kube-scheduler
v1.37 does, and nodes whose CSINode lacks a driver whose CSIDriver sets
preventPodSchedulingIfMissing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from plugin_harness import Around, Change, filter_nodes, make_node, make_pod, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, Filter
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import ObjectError, PodView
from policy_scheduler.model.volumes import (
    CSI_DRIVER,
    CSI_NODE,
    PV,
    PVC,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ClaimView,
    CSINodeView,
    VolumeAttachmentView,
    Volumes,
)
from policy_scheduler.plugins import node_volume_limits

EXCEEDED = ("node(s) exceed max volume count",)
Object = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Storage(Around):
    """A snapshot that also holds these storage objects, as ``(kind, object)``."""

    objects: Sequence[Object] = ()

    def snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        volumes = Volumes()
        for kind, raw in self.objects:
            volumes.set(kind, raw)
        return Snapshot(nodes, volumes=volumes)


def claim(
    name: str,
    volume: str = "",
    storage_class: str = "",
    owner: str = "",
    annotations: Mapping[str, str] | None = None,
) -> Object:
    spec: dict[str, Any] = {}
    if volume:
        spec["volumeName"] = volume
    if storage_class:
        spec["storageClassName"] = storage_class
    metadata: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner:
        metadata["ownerReferences"] = [
            {"kind": "Pod", "name": "p", "uid": owner, "controller": True}
        ]
    if annotations:
        metadata["annotations"] = dict(annotations)
    return PVC, {"metadata": metadata, "spec": spec}


def csi_volume(name: str, driver: str = "d", handle: str | None = None) -> Object:
    source = {"driver": driver, "volumeHandle": handle or f"h-{name}"}
    return PV, {"metadata": {"name": name}, "spec": {"csi": source}}


def bound(name: str, driver: str = "d", handle: str | None = None) -> list[Object]:
    """A claim ``name`` bound to a CSI PV ``pv-<name>``."""
    return [claim(name, f"pv-{name}"), csi_volume(f"pv-{name}", driver, handle)]


def storage_class(name: str, provisioner: str) -> Object:
    return STORAGE_CLASS, {"metadata": {"name": name}, "provisioner": provisioner}


def csi_node(
    node: str, annotations: Mapping[str, str] | None = None, **counts: int | None
) -> Object:
    drivers = [
        {"name": name.replace("_", "."), "nodeID": node}
        | ({} if count is None else {"allocatable": {"count": count}})
        for name, count in counts.items()
    ]
    metadata: dict[str, Any] = {"name": node, "annotations": dict(annotations or {})}
    return CSI_NODE, {"metadata": metadata, "spec": {"drivers": drivers}}


def pvc(name: str) -> dict[str, Any]:
    return {"name": f"v-{name}", "persistentVolumeClaim": {"claimName": name}}


def ephemeral(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def pod(*volumes: Any, name: str = "p") -> PodView:
    return make_pod(name, "ns", containers=[{"name": "c"}], volumes=list(volumes))


def node(name: str, *claims: str) -> NodeInfo:
    """A node running one pod per claim, each using that claim."""
    return make_node(name, None, *(pod(pvc(c), name=f"on-{name}-{c}") for c in claims))


def plugin() -> Filter[Any]:
    return node_volume_limits.new_filter({}, "spec.predicates[0].args")


def run(
    the_pod: PodView, nodes: Sequence[NodeInfo], objects: Sequence[Object]
) -> list[tuple[str, ...]]:
    return filter_nodes(plugin(), the_pod, nodes, around=Storage(objects=objects))


# Claims a..d bound to CSI volumes of driver "d"; "e" of driver "e"; node "n" may attach two
# volumes of "d" and has no count for "e".
CLUSTER = [*bound("a"), *bound("b"), *bound("c"), *bound("d"), *bound("e", "e")]
LIMITED = csi_node("n", d=2, e=None)


@pytest.mark.parametrize(
    ("the_pod", "on_node", "objects", "reasons"),
    [
        pytest.param(pod(pvc("a")), [], [LIMITED], FITS, id="under the limit"),
        pytest.param(pod(pvc("a"), pvc("b")), [], [LIMITED], FITS, id="at the limit"),
        pytest.param(
            pod(pvc("a"), pvc("b"), pvc("c")), [], [LIMITED], EXCEEDED, id="over the limit"
        ),
        pytest.param(pod(pvc("c")), ["a"], [LIMITED], FITS, id="with a volume attached"),
        pytest.param(
            pod(pvc("c")), ["a", "b"], [LIMITED], EXCEEDED, id="node's volumes at the limit"
        ),
        pytest.param(
            pod(pvc("a")), ["a", "b"], [LIMITED], FITS, id="a volume the node has counts once"
        ),
        pytest.param(
            pod(pvc("a"), pvc("a"), pvc("c")),
            [],
            [LIMITED],
            FITS,
            id="a volume the pod uses twice counts once",
        ),
        pytest.param(
            pod(pvc("c")),
            ["a", "a", "b"],
            [LIMITED],
            EXCEEDED,
            id="a volume several pods use counts once",
        ),
        pytest.param(
            pod(pvc("e"), pvc("c")), ["a"], [LIMITED], FITS, id="a driver without a count"
        ),
        pytest.param(pod(pvc("c")), ["a", "b"], [], FITS, id="a node without a CSINode"),
        pytest.param(
            pod(pvc("c")),
            ["a", "b"],
            [csi_node("n", e=1)],
            FITS,
            id="a CSINode without the driver",
        ),
        pytest.param(
            pod(pvc("c")),
            ["a", "b"],
            [csi_node("n", d=0)],
            EXCEEDED,
            id="a zero count",
        ),
        pytest.param(
            pod(pvc("x")),
            ["a"],
            [LIMITED, *bound("x", handle="h-pv-a")],
            FITS,
            id="same driver and handle is the same volume",
        ),
        pytest.param(
            pod(pvc("x")),
            ["a", "b"],
            [LIMITED, *bound("x", "e", handle="h-pv-a")],
            FITS,
            id="same handle of another driver is another volume",
        ),
    ],
)
def test_bound_csi_volumes(
    the_pod: PodView, on_node: list[str], objects: list[Object], reasons: tuple[str, ...]
) -> None:
    assert run(the_pod, [node("n", *on_node)], [*CLUSTER, *objects]) == [reasons]


ONE_D = csi_node("n", d=1)


@pytest.mark.parametrize(
    ("the_pod", "on_node", "objects", "reasons"),
    [
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [ONE_D, claim("u", storage_class="s"), storage_class("s", "d")],
            EXCEEDED,
            id="an unbound claim counts as its class's provisioner",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [ONE_D, claim("u", storage_class="s"), storage_class("s", "other")],
            FITS,
            id="of another provisioner",
        ),
        pytest.param(
            pod(pvc("u")),
            ["u"],
            [ONE_D, claim("u", storage_class="s"), storage_class("s", "d")],
            FITS,
            id="an unbound claim the node's pods use counts once",
        ),
        pytest.param(
            pod(pvc("u")), ["a"], [ONE_D, claim("u")], FITS, id="an unbound claim without class"
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [ONE_D, claim("u", storage_class="gone")],
            FITS,
            id="an unbound claim of a missing class",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [
                ONE_D,
                claim(
                    "u",
                    storage_class="other",
                    annotations={"volume.beta.kubernetes.io/storage-class": "s"},
                ),
                storage_class("s", "d"),
                storage_class("other", "other"),
            ],
            EXCEEDED,
            id="the beta class annotation wins",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [ONE_D, claim("u", "missing-pv", "s"), storage_class("s", "d")],
            EXCEEDED,
            id="a claim whose PV is missing counts by its class",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [
                csi_node("n", ebs_csi_aws_com=0),
                claim("u", storage_class="s"),
                storage_class("s", "kubernetes.io/aws-ebs"),
            ],
            EXCEEDED,
            id="an in-tree provisioner counts as its CSI driver",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [
                csi_node("n", pxd_portworx_com=0),
                claim("u", storage_class="s"),
                storage_class("s", "kubernetes.io/portworx-volume"),
            ],
            EXCEEDED,
            id="Portworx counts without the CSINode's migrated-plugins annotation (v1.36+)",
        ),
        pytest.param(
            pod(pvc("u")),
            ["a"],
            [
                csi_node("n", file_csi_azure_com=0),
                claim("u", storage_class="s"),
                storage_class("s", "kubernetes.io/azure-file"),
            ],
            FITS,
            id="Azure File is never migrated here",
        ),
        pytest.param(
            pod(ephemeral("scratch")),
            ["a"],
            [ONE_D, claim("p-scratch", "pv-s", owner="ns/p"), csi_volume("pv-s")],
            EXCEEDED,
            id="an ephemeral volume's claim",
        ),
        pytest.param(
            pod(pvc("c")),
            ["missing"],
            [ONE_D],
            FITS,
            id="a missing claim of a pod on the node is not counted",
        ),
    ],
)
def test_what_counts(
    the_pod: PodView, on_node: list[str], objects: list[Object], reasons: tuple[str, ...]
) -> None:
    assert run(the_pod, [node("n", *on_node)], [*CLUSTER, *objects]) == [reasons]


def attachment(
    name: str, volume: str | None = None, attacher: str = "d", node_name: str = "n"
) -> Object:
    """A VolumeAttachment of ``volume`` (a PV's name; None: an inline volume's) to the node."""
    source = {} if volume is None else {"persistentVolumeName": volume}
    spec: dict[str, Any] = {"nodeName": node_name, "source": source}
    if attacher:
        spec["attacher"] = attacher
    return VOLUME_ATTACHMENT, {"metadata": {"name": name}, "spec": spec}


TWO_D = csi_node("n", d=2)
LOCAL_PV: Object = (PV, {"metadata": {"name": "local"}, "spec": {"local": {"path": "/mnt"}}})


@pytest.mark.parametrize(
    ("the_pod", "on_node", "objects", "reasons"),
    [
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-a")],
            EXCEEDED,
            id="a node at its limit through a VolumeAttachment no pod uses",
        ),
        pytest.param(
            pod(pvc("c")), [], [TWO_D, attachment("va", "pv-a")], FITS, id="under the limit"
        ),
        pytest.param(
            pod(pvc("c")),
            ["a"],
            [TWO_D, attachment("va", "pv-a")],
            FITS,
            id="a VolumeAttachment of a volume a pod on the node uses counts once",
        ),
        pytest.param(
            pod(pvc("c")),
            ["b"],
            [TWO_D, attachment("va", "pv-a")],
            EXCEEDED,
            id="with another volume a pod on the node uses",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [TWO_D, attachment("va", "pv-a"), attachment("vb", "pv-a")],
            FITS,
            id="two VolumeAttachments of one volume count once",
        ),
        pytest.param(
            pod(pvc("a")),
            [],
            [ONE_D, attachment("va", "pv-a")],
            EXCEEDED,
            id="the pod's own volume attached and used by no pod counts again, as in kube",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-a", attacher="")],
            FITS,
            id="without an attacher, not counted",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va")],
            FITS,
            id="without a PV (an inline volume's), not counted",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-gone")],
            FITS,
            id="of a PV that does not exist, not counted",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, LOCAL_PV, attachment("va", "local")],
            FITS,
            id="of a PV that is not CSI, not counted",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-a", node_name="m")],
            FITS,
            id="of another node, not counted",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-e", attacher="e")],
            FITS,
            id="of another attacher, counted for that driver",
        ),
        pytest.param(
            pod(pvc("c")),
            [],
            [ONE_D, attachment("va", "pv-e", attacher="d")],
            EXCEEDED,
            id="counted for its attacher, whatever the PV's driver",
        ),
    ],
)
def test_volume_attachments(
    the_pod: PodView, on_node: list[str], objects: list[Object], reasons: tuple[str, ...]
) -> None:
    """kube's getNodeVolumeAttachmentInfo: a node's VolumeAttachments with an attacher and a CSI
    PV each count one volume (attacher and the PV's handle) for the attacher, unless a pod on
    the node uses that volume."""
    assert run(the_pod, [node("n", *on_node)], [*CLUSTER, *objects]) == [reasons]


def test_a_volume_kube_fails_on_for_a_pod_on_the_node_is_left_out_alone() -> None:
    on_node = pod(ephemeral("scratch"), pvc("a"), name="on")
    objects = [*CLUSTER, ONE_D, claim("on-scratch", "pv-a", owner="someone-else")]
    nodes = [make_node("n", None, on_node)]
    assert run(pod(pvc("b")), nodes, objects) == [EXCEEDED]


def test_per_node() -> None:
    nodes = [node("n", "a"), node("free", "a"), node("other")]
    objects = [*CLUSTER, ONE_D, csi_node("other", d=1)]
    assert run(pod(pvc("b")), nodes, objects) == [EXCEEDED, FITS, FITS]


def driver(name: str, **spec: Any) -> Object:
    return CSI_DRIVER, {"metadata": {"name": name}, "spec": spec}


REQUIRED_D = driver("d", preventPodSchedulingIfMissing=True)
MISSING_D = ("d CSI driver is not installed on the node",)
EBS_INLINE = {"name": "g", "awsElasticBlockStore": {"volumeID": "vol-1"}}


# kube's checkCSIDriverOnNode (VolumeLimitScaling, on in v1.37), on node "n".
DRIVER_CASES: dict[str, tuple[PodView, list[str], list[Object], tuple[str, ...]]] = {
    "a required driver the CSINode has": (pod(pvc("a")), [], [REQUIRED_D, LIMITED], FITS),
    "a required driver the CSINode lacks": (
        pod(pvc("a")),
        [],
        [REQUIRED_D, csi_node("n", e=None)],
        MISSING_D,
    ),
    "a required driver on a node without CSINode": (pod(pvc("a")), [], [REQUIRED_D], MISSING_D),
    "a driver without CSIDriver is not required": (pod(pvc("a")), [], [csi_node("n")], FITS),
    "a driver whose CSIDriver does not ask is not required": (
        pod(pvc("a")),
        [],
        [driver("d", preventPodSchedulingIfMissing=False), csi_node("n")],
        FITS,
    ),
    "a volume the node's pods use already is checked too": (
        pod(pvc("a")),
        ["a"],
        [REQUIRED_D, csi_node("n", e=None)],
        MISSING_D,
    ),
    "checked before the counts: a full node lacking it says it lacks it": (
        pod(pvc("a"), pvc("e")),
        [],
        [driver("e", preventPodSchedulingIfMissing=True), csi_node("n", d=0)],
        ("e CSI driver is not installed on the node",),
    ),
    "the first missing driver in the pod's volume order is named": (
        pod(pvc("e"), pvc("a")),
        [],
        [REQUIRED_D, driver("e", preventPodSchedulingIfMissing=True), csi_node("n")],
        ("e CSI driver is not installed on the node",),
    ),
    "an in-tree volume on a node without CSINode is not counted, nor checked": (
        pod(EBS_INLINE),
        [],
        [driver("ebs.csi.aws.com", preventPodSchedulingIfMissing=True)],
        FITS,
    ),
    "an in-tree volume counts as its CSI driver, which is checked": (
        pod(EBS_INLINE),
        [],
        [driver("ebs.csi.aws.com", preventPodSchedulingIfMissing=True), csi_node("n")],
        ("ebs.csi.aws.com CSI driver is not installed on the node",),
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "on_node", "objects", "reasons"), DRIVER_CASES.values(), ids=DRIVER_CASES.keys()
)
def test_required_drivers(
    the_pod: PodView, on_node: list[str], objects: list[Object], reasons: tuple[str, ...]
) -> None:
    assert run(the_pod, [node("n", *on_node)], [*CLUSTER, *objects]) == [reasons]


def test_a_missing_driver_and_too_many_volumes_may_be_lifted_by_preemption() -> None:
    nodes = NodeBlock.of(node("n"))
    filt = plugin()
    assert not filt.unresolvable(pod(), nodes, MISSING_D)[0]
    assert not filt.unresolvable(pod(), nodes, EXCEEDED)[0]
    assert filt.unresolvable(pod(), nodes, ('persistentvolumeclaim "x" not found',))[0]


def test_a_bad_csidriver_fails_the_node_naming_it() -> None:
    objects = [*CLUSTER, driver("d", preventPodSchedulingIfMissing="yes"), LIMITED]
    with pytest.raises(ObjectError, match=r"csidriver d: spec\.preventPodSchedulingIfMissing"):
        run(pod(pvc("a")), [node("n")], objects)


@pytest.mark.parametrize(
    ("the_pod", "objects", "reason"),
    [
        pytest.param(
            pod(pvc("gone")),
            [],
            'looking up PVC ns/gone: persistentvolumeclaim "gone" not found',
            id="a missing claim",
        ),
        pytest.param(
            pod(ephemeral("scratch")),
            [claim("p-scratch", owner="someone-else")],
            "PVC ns/p-scratch was not created for pod ns/p (pod is not owner)",
            id="an ephemeral claim the pod does not control",
        ),
        pytest.param(
            pod(ephemeral("scratch")),
            [],
            'looking up PVC ns/p-scratch: persistentvolumeclaim "p-scratch" not found',
            id="an ephemeral claim not created yet",
        ),
    ],
)
def test_claims_kube_cannot_count_fail_every_node(
    the_pod: PodView, objects: list[Object], reason: str
) -> None:
    nodes = [node("n"), node("no-csinode")]
    assert run(the_pod, nodes, [LIMITED, *objects]) == [(reason,), (reason,)]


@pytest.mark.parametrize(
    "the_pod",
    [
        pytest.param(pod(), id="no volumes"),
        pytest.param(pod({"name": "e", "emptyDir": {}}), id="no claims"),
        pytest.param(pod({"name": "h", "hostPath": {"path": "/x"}}), id="a host path"),
    ],
)
def test_skips(the_pod: PodView) -> None:
    cycle = Cycle(the_pod, Storage(objects=[LIMITED]).snapshot([node("n")]))
    assert plugin().pre_filter(cycle) is SKIP


EBS, PD, AZURE = "ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com"
IN_TREE_LIMITS = csi_node(
    "n",
    ebs_csi_aws_com=1,
    pd_csi_storage_gke_io=1,
    disk_csi_azure_com=1,
    cinder_csi_openstack_org=1,
    pxd_portworx_com=1,
    file_csi_azure_com=0,
)


def inline(source_kind: str, name: str = "inline", /, **source: Any) -> dict[str, Any]:
    return {"name": name, source_kind: source}


def in_tree_pv(
    name: str, source_kind: str, labels: Mapping[str, str] | None = None, /, **source: Any
) -> list[Object]:
    """A claim ``name`` bound to an in-tree PV ``pv-<name>`` of this source."""
    metadata = {"name": f"pv-{name}", "labels": dict(labels or {})}
    return [claim(name, f"pv-{name}"), (PV, {"metadata": metadata, "spec": {source_kind: source}})]


GCE_ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize(
    ("the_pod", "on_node", "objects", "reasons"),
    [
        pytest.param(
            pod(inline("awsElasticBlockStore", volumeID="vol-2")),
            [pvc("a")],
            bound("a", EBS, "vol-1"),
            EXCEEDED,
            id="inline EBS counts as its CSI driver",
        ),
        pytest.param(
            pod(inline("awsElasticBlockStore", volumeID="aws://us-east-1a/vol-1")),
            [pvc("a")],
            bound("a", EBS, "vol-1"),
            FITS,
            id="inline EBS with a zone is the same CSI volume",
        ),
        pytest.param(
            pod(pvc("t")),
            [pvc("a")],
            [*bound("a", EBS, "vol-1"), *in_tree_pv("t", "awsElasticBlockStore", volumeID="vol-1")],
            FITS,
            id="an in-tree EBS PV is the same CSI volume",
        ),
        pytest.param(
            pod(pvc("t")),
            [inline("awsElasticBlockStore", volumeID="vol-1")],
            in_tree_pv("t", "awsElasticBlockStore", volumeID="vol-2"),
            EXCEEDED,
            id="in-tree EBS PV over an inline one",
        ),
        pytest.param(
            pod(pvc("t")),
            [inline("awsElasticBlockStore", volumeID="vol-1")],
            in_tree_pv("t", "awsElasticBlockStore", volumeID="aws://zone/bad"),
            FITS,
            id="an EBS PV kube cannot translate is not counted",
        ),
        pytest.param(
            pod(inline("awsElasticBlockStore", volumeID="aws://zone/bad")),
            [],
            [],
            (
                "converting volume(inline) from inline to csi: failed to translate Kubernetes ID"
                " to EBS Volume ID Invalid format for AWS volume (aws://zone/bad)",
            ),
            id="an inline EBS volume kube cannot translate",
        ),
        pytest.param(
            pod(inline("gcePersistentDisk", pdName="d2")),
            [pvc("a")],
            bound("a", PD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1"),
            EXCEEDED,
            id="inline GCE PD counts",
        ),
        pytest.param(
            pod(inline("gcePersistentDisk", pdName="d1")),
            [pvc("a")],
            bound("a", PD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1"),
            FITS,
            id="inline GCE PD handle",
        ),
        pytest.param(
            pod(pvc("t")),
            [pvc("a")],
            [
                *bound("a", PD, "projects/UNSPECIFIED/zones/z-a-1/disks/d1"),
                *in_tree_pv("t", "gcePersistentDisk", {GCE_ZONE: "z-a-1"}, pdName="d1"),
            ],
            FITS,
            id="zonal GCE PD PV handle",
        ),
        pytest.param(
            pod(pvc("t")),
            [pvc("a")],
            [
                *bound("a", PD, "projects/UNSPECIFIED/regions/us-central1/disks/d1"),
                *in_tree_pv(
                    "t",
                    "gcePersistentDisk",
                    {GCE_ZONE: "us-central1-a__us-central1-b"},
                    pdName="d1",
                ),
            ],
            FITS,
            id="regional GCE PD PV handle",
        ),
        pytest.param(
            pod(pvc("t")),
            [pvc("a")],
            [
                *bound("a", PD, "x"),
                *in_tree_pv("t", "gcePersistentDisk", {GCE_ZONE: "a__b"}, pdName="d1"),
            ],
            FITS,
            id="GCE PD PV in zones of no one region is not counted",
        ),
        pytest.param(
            pod(inline("azureDisk", diskURI="/disk/2", kind="Managed")),
            [inline("azureDisk", diskURI="/disk/1", kind="managed")],
            [],
            EXCEEDED,
            id="managed Azure disks count",
        ),
        pytest.param(
            pod(inline("azureDisk", "az", diskURI="/disk/2")),
            [],
            [],
            (
                "converting volume(az) from inline to csi: kind(Shared) is not supported in csi"
                " migration",
            ),
            id="an inline Azure disk's kind defaults to Shared",
        ),
        pytest.param(
            pod(pvc("t")),
            [inline("azureDisk", diskURI="/disk/1", kind="Managed")],
            in_tree_pv("t", "azureDisk", diskURI="/disk/2"),
            FITS,
            id="a shared Azure disk PV is not counted",
        ),
        pytest.param(
            pod(pvc("t")),
            [inline("azureDisk", diskURI="/disk/1", kind="Managed")],
            in_tree_pv("t", "azureDisk", diskURI="/disk/2", kind="Managed"),
            EXCEEDED,
            id="a managed Azure disk PV counts",
        ),
        pytest.param(
            pod(inline("cinder", volumeID="c2")),
            [pvc("t")],
            in_tree_pv("t", "cinder", volumeID="c1"),
            EXCEEDED,
            id="Cinder counts",
        ),
        pytest.param(
            pod(inline("portworxVolume", volumeID="x2")),
            [pvc("t")],
            in_tree_pv("t", "portworxVolume", volumeID="x1"),
            EXCEEDED,
            id="Portworx counts",
        ),
        pytest.param(
            pod(inline("azureFile", shareName="s", secretName="x")),
            [],
            [],
            FITS,
            id="Azure File is never counted",
        ),
    ],
)
def test_in_tree_volumes(
    the_pod: PodView, on_node: list[Any], objects: list[Object], reasons: tuple[str, ...]
) -> None:
    nodes = [make_node("n", None, pod(*on_node, name="on")), node("no-csinode")]
    verdicts = run(the_pod, nodes, [IN_TREE_LIMITS, *objects])
    # Without a CSINode, migration is off: no in-tree volume counts, none fails.
    assert verdicts == [reasons, FITS]


def test_inline_migratable_volumes_are_not_skipped() -> None:
    the_pod = pod(inline("vsphereVolume", volumePath="/x"))
    cycle = Cycle(the_pod, Storage(objects=[LIMITED]).snapshot([node("n")]))
    assert plugin().pre_filter(cycle) is not SKIP


@pytest.mark.parametrize(
    ("kube_id", "result"),
    [
        pytest.param("vol-1", ("vol-1", ""), id="bare"),
        pytest.param("aws://us-east-1a/vol-1", ("vol-1", ""), id="with a zone"),
        pytest.param("aws:///vol-1", ("vol-1", ""), id="without a zone"),
        pytest.param(
            "aws://z/disk-1", ("", "Invalid format for AWS volume (aws://z/disk-1)"), id="bad"
        ),
    ],
)
def test_ebs_volume_id(kube_id: str, result: tuple[str, str]) -> None:
    assert node_volume_limits.ebs_volume_id(kube_id) == result


def deleted(*volumes: Any, node_name: str = "n") -> Change:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "volumes": list(volumes)}
    if node_name:
        spec["nodeName"] = node_name
    return Change(EventKind.POD_DELETED, pod=make_pod("q", "ns", **spec))


@pytest.mark.parametrize(
    ("change", "woken"),
    [
        pytest.param(deleted(pvc("a")), True, id="deleted pod with a claim"),
        pytest.param(deleted(ephemeral("s")), True, id="deleted pod with an ephemeral volume"),
        pytest.param(
            deleted({"name": "g", "awsElasticBlockStore": {"volumeID": "v"}}),
            True,
            id="deleted pod with a migratable inline volume",
        ),
        pytest.param(deleted({"name": "e", "emptyDir": {}}), False, id="deleted pod, no claim"),
        pytest.param(deleted(), False, id="deleted pod without volumes"),
        pytest.param(deleted(pvc("a"), node_name=""), False, id="deleted pod on no node"),
        pytest.param(Change(EventKind.NODE_ADDED), False, id="node added"),
        pytest.param(Change(EventKind.POD_ADDED), False, id="pod added"),
    ],
)
def test_wakes_on(change: Change, woken: bool) -> None:
    assert wakes(plugin(), pod(pvc("c")), change) is woken


def claim_event(name: str, namespace: str = "ns", *, updated: bool = False) -> ClusterEvent:
    """Claim ``name`` added, or ``updated`` (the event then carries it as it was)."""
    view = ClaimView({"metadata": {"name": name, "namespace": namespace}, "spec": {}})
    return ClusterEvent(EventKind.PVC_CHANGED, storage=view, old_storage=view if updated else None)


def csi_node_event(
    before: Mapping[str, int | None] | None, after: Mapping[str, int | None]
) -> ClusterEvent:
    """CSINode n changed: its drivers' counts before (None: it is new) and after."""

    def view(counts: Mapping[str, int | None]) -> CSINodeView:
        return CSINodeView(csi_node("n", None, **counts)[1])

    old = None if before is None else view(before)
    return ClusterEvent(EventKind.CSI_NODE_CHANGED, storage=view(after), old_storage=old)


# kube's isSchedulableAfterCSINodeUpdated (a new CSINode always wakes the pod).
CSI_NODE_HINTS: dict[str, tuple[tuple[Mapping[str, int | None] | None, Any], bool]] = {
    "a new CSINode": ((None, {"d": 1}), True),
    "a driver's count grew": (({"d": 1}, {"d": 2}), True),
    "a driver's count shrank": (({"d": 2}, {"d": 1}), False),
    "a driver added with a count": (({"d": 1}, {"d": 1, "e": 1}), True),
    "a driver added without a count wakes no pod": (({"d": 1}, {"d": 1, "e": None}), False),
    "a driver's count given where it had none": (({"d": None}, {"d": 3}), True),
    "nothing changed": (({"d": 1}, {"d": 1}), False),
}


@pytest.mark.parametrize(
    ("the_pod", "event", "woken"),
    [
        pytest.param(pod(pvc("c")), claim_event("c"), True, id="the pod's claim"),
        pytest.param(pod(pvc("c")), claim_event("d"), False, id="another claim"),
        pytest.param(pod(pvc("c")), claim_event("c", "other"), False, id="another namespace"),
        pytest.param(
            pod(pvc("c")),
            claim_event("c", updated=True),
            False,
            id="the pod's claim updated (kube registers additions only)",
        ),
        pytest.param(
            pod(ephemeral("s")), claim_event("any"), True, id="any claim, for ephemeral volumes"
        ),
        pytest.param(
            pod(ephemeral("s")), claim_event("p-s", "other"), False, id="not in other namespaces"
        ),
        pytest.param(
            pod(pvc("c")),
            ClusterEvent(EventKind.CSI_NODE_CHANGED),
            True,
            id="a CSINode added or changed",
        ),
        *(
            pytest.param(pod(pvc("c")), csi_node_event(*counts), woken, id=name)
            for name, (counts, woken) in CSI_NODE_HINTS.items()
        ),
    ],
)
def test_storage_events(the_pod: PodView, event: ClusterEvent, woken: bool) -> None:
    the_plugin = plugin()
    assert event.kind & the_plugin.wakes_on
    assert the_plugin.queueing_hint(the_pod, event) is woken


def detached(attacher: str = EBS) -> ClusterEvent:
    """A VolumeAttachment of ``attacher`` deleted."""
    spec = {"attacher": attacher, "nodeName": "n", "source": {"persistentVolumeName": "pv"}}
    view = VolumeAttachmentView({"metadata": {"name": "va"}, "spec": spec})
    return ClusterEvent(EventKind.VOLUME_ATTACHMENT_DELETED, old_storage=view)


# kube's isSchedulableAfterVolumeAttachmentDeleted: a claim (not an ephemeral volume), or an
# inline volume that translates to the attacher's driver or fails to translate.
DETACHED_HINTS: dict[str, tuple[PodView, ClusterEvent, bool]] = {
    "a pod with a claim": (pod(pvc("c")), detached(), True),
    "a pod with only an ephemeral volume": (pod(ephemeral("s")), detached(), False),
    "a pod without volumes that attach": (pod({"name": "e", "emptyDir": {}}), detached(), False),
    "an inline volume of the attacher": (pod(EBS_INLINE), detached(EBS), True),
    "an inline volume of another driver": (pod(EBS_INLINE), detached(PD), False),
    "an inline Azure File volume of the attacher (never counted, still translated)": (
        pod(inline("azureFile", shareName="s", secretName="x")),
        detached("file.csi.azure.com"),
        True,
    ),
    "an inline vSphere volume of the attacher": (
        pod(inline("vsphereVolume", volumePath="/x")),
        detached("csi.vsphere.vmware.com"),
        True,
    ),
    "an inline volume that fails to translate": (
        pod(inline("azureDisk", diskURI="/disk/1")),
        detached(),
        True,
    ),
    "a claim after an inline volume of another driver": (
        pod(EBS_INLINE, pvc("c")),
        detached(PD),
        True,
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "event", "woken"), DETACHED_HINTS.values(), ids=DETACHED_HINTS.keys()
)
def test_a_volume_attachment_deleted(the_pod: PodView, event: ClusterEvent, woken: bool) -> None:
    the_plugin = plugin()
    assert event.kind & the_plugin.wakes_on
    assert the_plugin.queueing_hint(the_pod, event) is woken


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="NodeVolumeLimits takes no args"):
        node_volume_limits.new_filter({"x": 1}, "spec.predicates[0].args")
