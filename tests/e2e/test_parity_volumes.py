"""Parity with kube-scheduler for the volume and claim plugins (issue 13): VolumeRestrictions,
NodeVolumeLimits (with VolumeAttachments), VolumeBinding (with CSIStorageCapacities), VolumeZone
and DynamicResources (allocated ResourceClaims).

The harness is test_parity's: each pending pod is decided by us over a dump of the cluster (its
PVCs, PVs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments and
ResourceClaims too) while
its scheduling gate holds kube-scheduler back, then kube-scheduler decides it. A pod that kube
rejects in PreFilter (a missing claim, an unbound Immediate claim) gets a message without node
counts: there the whole FailedScheduling message is compared, not only its reasons.

No PV controller runs here, nor any provisioner: :class:`PVController` stands in for both, as
kube-scheduler's integration tests do. kube-scheduler's PreBind (VolumeBinding's checkBindings)
waits until each claim it chose a PV for is fully bound (``spec.volumeName`` and the annotation
``pv.kubernetes.io/bind-completed``) and, for a claim it asked to provision (annotation
``volume.kubernetes.io/selected-node``), until a PV is bound to it; the stand-in does that while
the test waits for kube's decision. It stays on the bare cluster, not real_cluster: no provisioner
runs there either, and our offline decision must see the claims as kube-scheduler will, unbound.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import test_parity
import test_parity_conformance
from harness.e2e import Cluster, items
from test_parity import (
    SCENARIO_LABEL,
    STORAGE_KINDS,
    UNSCHEDULABLE,
    Scenario,
    Step,
    make_node,
    make_pod,
    run,
)
from test_parity_conformance import kube_scores, scheduler_name, score_differences

from policy_scheduler import simulate
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.runtime.schedule_one import Pipeline

prefix = test_parity.prefix
# The kube-scheduler that logs every plugin's score (its "least" profile is the default one).
verbose_log = test_parity_conformance.verbose_log
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CSI_DRIVER = "csi.example.com"
PROVISIONER = "example.com/fake-provisioner"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod"
)


def storage_class(
    name: str, *, provisioner: str = NO_PROVISIONER, wait: bool = True, **extra: Any
) -> dict[str, Any]:
    """A StorageClass; ``wait`` for WaitForFirstConsumer, else Immediate."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate",
        **extra,
    }


def host_affinity(*nodes: str) -> dict[str, Any]:
    """A PV's nodeAffinity: these nodes by hostname."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": list(nodes)}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def volume(
    name: str,
    *,
    size: str = "1Gi",
    storage_class: str = "",
    nodes: Iterable[str] = (),
    labels: dict[str, str] | None = None,
    claim: tuple[str, str] | None = None,
    modes: Iterable[str] = ("ReadWriteOnce",),
    driver: str = CSI_DRIVER,
    attributes_class: str = "",
) -> dict[str, Any]:
    """A PersistentVolume (of the VolumeAttributesClass ``attributes_class``, which the API
    server allows a CSI volume only): local on ``nodes`` when given (local volumes need a node
    affinity), else a CSI volume of ``driver``; bound (phase Bound, claimRef) to ``claim``
    (namespace, name) when given, else Available."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Retain",
    }
    if attributes_class:
        spec["volumeAttributesClassName"] = attributes_class
    nodes = list(nodes)
    if nodes:
        spec["local"] = {"path": f"/mnt/disks/{name}"}
        spec["nodeAffinity"] = host_affinity(*nodes)
    else:
        spec["csi"] = {"driver": driver, "volumeHandle": f"handle-{name}"}
    if claim is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim[0],
            "name": claim[1],
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": "Bound" if claim else "Available"},
    }


def claim(
    name: str,
    *,
    size: str = "1Gi",
    storage_class: str = "",
    volume_name: str = "",
    modes: Iterable[str] = ("ReadWriteOnce",),
    attributes_class: str = "",
) -> dict[str, Any]:
    """A PersistentVolumeClaim (of the VolumeAttributesClass ``attributes_class``), bound to
    ``volume_name`` as the PV controller binds (the volume name, bind-completed, phase Bound)
    when given, else Pending."""
    modes = list(modes)
    metadata: dict[str, Any] = {"name": name}
    spec: dict[str, Any] = {
        "accessModes": modes,
        "resources": {"requests": {"storage": size}},
        "storageClassName": storage_class,
    }
    if attributes_class:
        spec["volumeAttributesClassName"] = attributes_class
    status: dict[str, Any] = {"phase": "Pending"}
    if volume_name:
        spec["volumeName"] = volume_name
        metadata["annotations"] = {BIND_COMPLETED: "yes"}
        status = {"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def bound_pair(namespace: str, pv_name: str, pvc_name: str, **pv: Any) -> list[dict[str, Any]]:
    """A PV and the PVC bound to it, as the PV controller leaves them."""
    modes = pv.get("modes", ("ReadWriteOnce",))
    return [
        volume(pv_name, claim=(namespace, pvc_name), **pv),
        claim(
            pvc_name,
            size=pv.get("size", "1Gi"),
            storage_class=pv.get("storage_class", ""),
            volume_name=pv_name,
            modes=modes,
        ),
    ]


def using(*claims: str) -> dict[str, Any]:
    """A pod spec fragment: a volume for each PVC."""
    return {
        "volumes": [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ]
    }


class PVController:
    """One pass of kube-controller-manager's PV controller and of an external provisioner, for
    the claims of ``namespace``: a PV whose claimRef names a claim not bound yet (kube-scheduler
    wrote it, choosing the PV) is bound to it; a claim with the selected-node annotation and no
    volume gets a new PV (a CSI volume on that node, as a node-local provisioner makes it),
    bound to it. The PVs it makes are labelled with the scenario, for the ``prefix`` fixture."""

    def __init__(self, cluster: Cluster, namespace: str, prefix: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.prefix = prefix
        self.bound: dict[str, str] = {}
        """claim name -> the PV this stand-in bound it to."""

    def __call__(self) -> None:
        claims = {
            c["metadata"]["name"]: c
            for c in items(self.cluster, "persistentvolumeclaims", "-n", self.namespace)
            if not c["spec"].get("volumeName")
        }
        if not claims:
            return
        for pv in items(self.cluster, "persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if ref.get("namespace") == self.namespace and ref.get("name") in claims:
                self.bind(pv["metadata"]["name"], claims.pop(ref["name"]))
        for pvc in claims.values():
            node = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
            if node:
                self.bind(self.provision(pvc, node), pvc)

    def provision(self, pvc: dict[str, Any], node: str) -> str:
        name = f"pvc-{pvc['metadata']['uid']}"
        pv = volume(
            name,
            size=pvc["spec"]["resources"]["requests"]["storage"],
            storage_class=pvc["spec"].get("storageClassName", ""),
            modes=pvc["spec"]["accessModes"],
            labels={SCENARIO_LABEL: self.prefix},
        )
        pv["spec"]["nodeAffinity"] = host_affinity(node)
        pv["spec"]["claimRef"] = self.reference(pvc)
        pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": PROVISIONER}
        del pv["status"]
        self.cluster.apply(pv)
        return name

    def reference(self, pvc: dict[str, Any]) -> dict[str, Any]:
        metadata = pvc["metadata"]
        return {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "uid": metadata["uid"],
            "resourceVersion": metadata["resourceVersion"],
        }

    def bind(self, pv_name: str, pvc: dict[str, Any]) -> None:
        """What the PV controller's syncUnboundClaim does once the PV names the claim: the PV's
        claimRef (with the uid) and phase, then the claim's volume name, its annotations and
        its status."""
        name = pvc["metadata"]["name"]
        patch = {"spec": {"claimRef": self.reference(pvc)}}
        self.patch("persistentvolume", pv_name, patch)
        self.patch("persistentvolume", pv_name, {"status": {"phase": "Bound"}}, status=True)
        annotations = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
        self.patch(
            "persistentvolumeclaim",
            name,
            {"metadata": {"annotations": annotations}, "spec": {"volumeName": pv_name}},
            namespaced=True,
        )
        pv = json.loads(
            self.cluster.kubectl("get", "persistentvolume", pv_name, "-o", "json").stdout
        )
        status = {
            "phase": "Bound",
            "accessModes": pv["spec"]["accessModes"],
            "capacity": pv["spec"]["capacity"],
        }
        self.patch("persistentvolumeclaim", name, {"status": status}, namespaced=True, status=True)
        self.bound[name] = pv_name

    def patch(
        self,
        resource: str,
        name: str,
        body: dict[str, Any],
        *,
        namespaced: bool = False,
        status: bool = False,
    ) -> None:
        self.cluster.kubectl(
            "patch", resource, name, *(("-n", self.namespace) if namespaced else ()),
            *(("--subresource=status",) if status else ()),
            "--type=merge", "-p", json.dumps(body),
        )  # fmt: skip


@pytest.fixture(autouse=True)
def storage_in_dumps() -> None:
    """Our decision must read the storage kinds: without them every scenario here would compare
    kube-scheduler with a scheduler that ignores volumes."""
    missing = sorted(set(STORAGE_KINDS) - set(simulate.KINDS))
    if missing:
        pytest.fail(f"simulate's cluster dumps do not hold {', '.join(missing)} yet")


def test_claims_not_ready(cluster: Cluster, namespace: str, prefix: str) -> None:
    """VolumeRestrictions' and VolumeBinding's PreFilter: a claim that does not exist, a claim
    of an Immediate class that no PV is bound to yet. kube says why without counting nodes."""
    immediate = f"{prefix}-immediate"
    scenario = Scenario(
        nodes=[make_node("a"), make_node("b")],
        objects=[
            storage_class(immediate, provisioner=PROVISIONER, wait=False),
            claim("pending", storage_class=immediate),
        ],
        steps=[
            Step(make_pod("missing", spec=using("x")), UNSCHEDULABLE),
            Step(make_pod("waiting", spec=using("pending")), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_bound_volume_node_affinity(cluster: Cluster, namespace: str, prefix: str) -> None:
    """VolumeBinding's Filter for bound claims: the PV's nodeAffinity, and a PV that does not
    exist."""
    scenario = Scenario(
        nodes=[
            make_node("n1"),
            make_node("n2", cpu="16", memory="32Gi"),
            make_node("n3", cpu="8", memory="16Gi"),
        ],
        objects=[
            *bound_pair(
                namespace, f"{prefix}-local", "data", nodes=[f"{prefix}-n1", f"{prefix}-n3"]
            ),
            *bound_pair(namespace, f"{prefix}-elsewhere", "stranded", nodes=[f"{prefix}-gone"]),
            claim("orphan", volume_name=f"{prefix}-missing"),
        ],
        steps=[
            # n2 is the roomiest, but the PV allows only n1 and n3; n3 is the roomier.
            Step(make_pod("p1", spec=using("data")), "n3"),
            Step(make_pod("p2", spec=using("stranded")), UNSCHEDULABLE),
            # A claim bound to a PV that does not exist: VolumeBinding's PreFilter says so.
            Step(make_pod("p3", spec=using("orphan")), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_wait_for_first_consumer_local_volumes(
    cluster: Cluster, namespace: str, prefix: str
) -> None:
    """WaitForFirstConsumer with local PVs and no provisioner: kube picks a node whose PV fits
    the claim (the smallest that fits), writes the PV's claimRef and waits for the claim to be
    bound (by the stand-in) before binding the pod."""
    local = f"{prefix}-local"
    scenario = Scenario(
        nodes=[make_node("l1"), make_node("l2"), make_node("l3", cpu="16", memory="32Gi")],
        objects=[
            storage_class(local),
            volume(f"{prefix}-l1", size="1Gi", storage_class=local, nodes=[f"{prefix}-l1"]),
            volume(f"{prefix}-l2", size="5Gi", storage_class=local, nodes=[f"{prefix}-l2"]),
            claim("big", size="2Gi", storage_class=local),
            claim("more", size="2Gi", storage_class=local),
            claim("small", size="1Gi", storage_class=local),
        ],
        steps=[
            # Only l2's PV holds 2Gi; l3, the roomiest, has no PV at all.
            Step(make_pod("p-big", spec=using("big")), "l2"),
            # l2's PV is big's now, l1's too small.
            Step(make_pod("p-more", spec=using("more")), UNSCHEDULABLE),
            Step(make_pod("p-small", spec=using("small")), "l1"),
        ],
    )
    controller = PVController(cluster, namespace, prefix)
    scenario.stand_in = controller
    run(cluster, namespace, prefix, scenario)
    # kube-scheduler reserved those PVs (their claimRef), the stand-in only completed the binds.
    assert controller.bound == {"big": f"{prefix}-l2", "small": f"{prefix}-l1"}


def test_volume_attributes_class(cluster: Cluster, namespace: str, prefix: str) -> None:
    """FindMatchingVolume matches a claim's volumeAttributesClassName too (VolumeAttributesClass,
    GA since v1.34): a claim of "gold" only takes the gold PV, one of none only a PV of none."""
    local = f"{prefix}-local"
    # The API server wants a CSI volume for an attributes class: CSI PVs reaching one node each.
    on_v1 = volume(f"{prefix}-v1", storage_class=local)
    on_v2 = volume(f"{prefix}-v2", storage_class=local, attributes_class=f"{prefix}-gold")
    for pv, node in ((on_v1, "v1"), (on_v2, "v2")):
        pv["spec"]["nodeAffinity"] = host_affinity(f"{prefix}-{node}")
    scenario = Scenario(
        nodes=[make_node("v1"), make_node("v2", cpu="16", memory="32Gi")],
        objects=[
            storage_class(local),
            on_v1,
            on_v2,
            claim("plain", storage_class=local),
            claim("gold", storage_class=local, attributes_class=f"{prefix}-gold"),
        ],
        steps=[
            # v2 is the roomier, but its PV is gold.
            Step(make_pod("p1", spec=using("plain")), "v1"),
            Step(make_pod("p2", spec=using("gold")), "v2"),
        ],
    )
    controller = PVController(cluster, namespace, prefix)
    scenario.stand_in = controller
    run(cluster, namespace, prefix, scenario)
    assert controller.bound == {"plain": f"{prefix}-v1", "gold": f"{prefix}-v2"}


def test_wait_for_first_consumer_provisioning(
    cluster: Cluster, namespace: str, prefix: str
) -> None:
    """WaitForFirstConsumer with a provisioner: kube picks a node and writes it in the claim's
    selected-node annotation, for the provisioner (the stand-in); a class's allowedTopologies
    narrow the nodes."""
    fast, zonal = f"{prefix}-fast", f"{prefix}-zonal"
    in_a = [{"matchLabelExpressions": [{"key": ZONE, "values": [f"{prefix}-a"]}]}]
    scenario = Scenario(
        nodes=[
            make_node("a1", labels={ZONE: f"{prefix}-a"}),
            make_node("b1", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-b"}),
        ],
        objects=[
            storage_class(fast, provisioner=PROVISIONER),
            storage_class(zonal, provisioner=PROVISIONER, allowedTopologies=in_a),
            claim("fresh", storage_class=fast),
            claim("zoned", storage_class=zonal),
        ],
        steps=[
            Step(make_pod("p1", spec=using("fresh")), "b1"),
            Step(make_pod("p2", spec=using("zoned")), "a1"),
        ],
    )
    controller = PVController(cluster, namespace, prefix)
    scenario.stand_in = controller
    run(cluster, namespace, prefix, scenario)
    assert set(controller.bound) == {"fresh", "zoned"}


def csi_driver(name: str, **spec: Any) -> dict[str, Any]:
    """A CSIDriver (``spec``: storageCapacity, preventPodSchedulingIfMissing, ...)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": spec,
    }


def storage_capacity(
    name: str, storage_class: str, zone: str, capacity: str, **extra: Any
) -> dict[str, Any]:
    """A CSIStorageCapacity: ``capacity`` of ``storage_class`` for the nodes of ``zone``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": storage_class,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": capacity,
        **extra,
    }


def test_storage_capacity(cluster: Cluster, namespace: str, prefix: str) -> None:
    """VolumeBinding's capacity check: a claim to provision by a CSI driver whose CSIDriver sets
    storageCapacity needs a CSIStorageCapacity of its class, reaching the node, with room for
    it (maximumVolumeSize when given, else capacity): "node(s) did not have enough free
    storage"."""
    driver, fast = f"{prefix}.csi.example.com", f"{prefix}-fast"
    scenario = Scenario(
        nodes=[
            make_node("a1", labels={ZONE: f"{prefix}-a"}),
            make_node("b1", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-b"}),
            make_node("c1", cpu="8", memory="16Gi", labels={ZONE: f"{prefix}-c"}),
        ],
        objects=[
            csi_driver(driver, storageCapacity=True),
            storage_class(fast, provisioner=driver),
            storage_capacity(f"{prefix}-a", fast, f"{prefix}-a", "10Gi"),
            storage_capacity(f"{prefix}-b", fast, f"{prefix}-b", "1Gi"),
            storage_capacity(f"{prefix}-c", fast, f"{prefix}-c", "100Gi", maximumVolumeSize="2Gi"),
            claim("fits-a", size="5Gi", storage_class=fast),
            claim("too-big", size="50Gi", storage_class=fast),
        ],
        steps=[
            # b1 and c1 are roomier, but b1's capacity is 1Gi and c1's largest volume 2Gi.
            Step(make_pod("p1", spec=using("fits-a")), "a1"),
            Step(make_pod("p2", spec=using("too-big")), UNSCHEDULABLE),
        ],
    )
    controller = PVController(cluster, namespace, prefix)
    scenario.stand_in = controller
    run(cluster, namespace, prefix, scenario)
    assert set(controller.bound) == {"fits-a"}


def test_volume_binding_scores_the_storage_used(
    cluster: Cluster, namespace: str, prefix: str, verbose_log: Path
) -> None:
    """VolumeBinding's Score (StorageCapacityScoring, on in v1.37, default shape: 0% used
    scores 100, 100% scores 0): the node whose matched PV the claim fills the least, then the
    node whose CSIStorageCapacity the claim to provision fills the least, win over a roomier
    node (LeastAllocated and BalancedAllocation favour s1 by a few points only). The pods go to
    test_parity_conformance's kube-scheduler, which logs every plugin's score: VolumeBinding's
    on each node must be ours."""
    local, fast = f"{prefix}-local", f"{prefix}-fast"
    driver = f"{prefix}.csi.example.com"
    scenario = Scenario(
        nodes=[
            make_node("s1", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-a"}),
            make_node("s2", labels={ZONE: f"{prefix}-b"}),
        ],
        objects=[
            storage_class(local),
            # 1Gi of 2Gi (50) on s1, of 8Gi (88) on s2.
            volume(f"{prefix}-s1", size="2Gi", storage_class=local, nodes=[f"{prefix}-s1"]),
            volume(f"{prefix}-s2", size="8Gi", storage_class=local, nodes=[f"{prefix}-s2"]),
            claim("local", size="1Gi", storage_class=local),
            csi_driver(driver, storageCapacity=True),
            storage_class(fast, provisioner=driver),
            # 5Gi of 10Gi (50) on s1, of 100Gi (95) on s2.
            storage_capacity(f"{prefix}-a", fast, f"{prefix}-a", "10Gi"),
            storage_capacity(f"{prefix}-b", fast, f"{prefix}-b", "100Gi"),
            claim("fresh", size="5Gi", storage_class=fast),
        ],
        steps=[
            Step(make_pod("p1", spec=using("local")), "s2"),
            Step(make_pod("p2", spec=using("fresh")), "s2"),
        ],
    )
    controller = PVController(cluster, namespace, prefix)
    scenario.stand_in = controller

    def volume_binding_scores(name: str, pipeline: Pipeline, ours: Decision) -> list[str]:
        kube = kube_scores(verbose_log, f"{namespace}/{name}")
        differences = score_differences(pipeline, ours, kube)
        # The other scorers' parity is test_parity_conformance's and test_parity_defaults'.
        return [d for d in differences if " VolumeBinding: " in d or d.startswith("feasible")]

    run(
        cluster,
        namespace,
        prefix,
        scenario,
        scheduler=scheduler_name("least"),
        scores=volume_binding_scores,
    )
    assert controller.bound["local"] == f"{prefix}-s2"


def test_volume_restrictions(cluster: Cluster, namespace: str, prefix: str) -> None:
    """VolumeRestrictions: a ReadWriteOncePod claim in use by another pod, and an inline GCE PD
    another pod on the node mounts read-write (no kubelet needed: only the API objects)."""
    disk = {"name": "disk", "gcePersistentDisk": {"pdName": f"{prefix}-pd"}}
    scenario = Scenario(
        nodes=[make_node("r1", cpu="16", memory="32Gi"), make_node("r2")],
        objects=bound_pair(namespace, f"{prefix}-solo", "solo", modes=["ReadWriteOncePod"]),
        existing=[
            ("r1", make_pod("owner", spec=using("solo"))),
            ("r1", make_pod("disk-user", spec={"volumes": [disk]})),
        ],
        steps=[
            Step(make_pod("second", spec=using("solo")), UNSCHEDULABLE),
            # r1, the roomier, has the disk mounted read-write already.
            Step(make_pod("disk", spec={"volumes": [disk]}), "r2"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_volume_zone(cluster: Cluster, namespace: str, prefix: str) -> None:
    """VolumeZone: a bound PV labelled with a zone allows only nodes of that zone."""
    scenario = Scenario(
        nodes=[
            make_node("za", labels={ZONE: f"{prefix}-za"}),
            make_node("zb", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-zb"}),
        ],
        objects=[
            *bound_pair(namespace, f"{prefix}-in-a", "in-a", labels={ZONE: f"{prefix}-za"}),
            *bound_pair(namespace, f"{prefix}-in-c", "in-c", labels={ZONE: f"{prefix}-zc"}),
        ],
        steps=[
            Step(make_pod("p1", spec=using("in-a")), "za"),
            Step(make_pod("p2", spec=using("in-c")), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_csi_volume_limits(cluster: Cluster, namespace: str, prefix: str) -> None:
    """NodeVolumeLimits: a CSINode's allocatable count for a driver; a volume already attached
    to the node for another pod counts once."""
    rwx = ["ReadWriteMany"]
    csinode = csi_node(f"{prefix}-c1", (CSI_DRIVER, 1))
    scenario = Scenario(
        nodes=[make_node("c1", cpu="16", memory="32Gi"), make_node("c2")],
        objects=[
            csinode,
            *bound_pair(namespace, f"{prefix}-first", "first", modes=rwx),
            *bound_pair(namespace, f"{prefix}-second", "second", modes=rwx),
        ],
        existing=[("c1", make_pod("holder", spec=using("first")))],
        steps=[
            # c1, the roomier, has its one CSI volume attached already.
            Step(make_pod("p1", spec=using("second")), "c2"),
            # The same volume again is no new attachment.
            Step(make_pod("p2", spec=using("first")), "c1"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_csi_volume_attachments(cluster: Cluster, namespace: str, prefix: str) -> None:
    """NodeVolumeLimits counts a node's VolumeAttachments: one of a CSI volume that no pod uses
    fills a node that may attach one volume of the driver, until it is deleted."""
    attached = f"{prefix}-attached"
    attachment = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": attached},
        "spec": {
            "attacher": CSI_DRIVER,
            "nodeName": f"{prefix}-a1",
            "source": {"persistentVolumeName": attached},
        },
    }

    def detach(cluster: Cluster, namespace: str) -> None:
        cluster.kubectl("delete", "volumeattachment", attached)
        # kube-scheduler learns of the deletion through its informer: give it a moment.
        time.sleep(1.0)

    scenario = Scenario(
        nodes=[make_node("a1")],
        objects=[
            csi_node(f"{prefix}-a1", (CSI_DRIVER, 1)),
            volume(attached),
            attachment,
            *bound_pair(namespace, f"{prefix}-data", "data"),
        ],
        steps=[
            Step(make_pod("p1", spec=using("data")), UNSCHEDULABLE),
            Step(make_pod("p2", spec=using("data")), "a1", prepare=detach),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def csi_node(node: str, *drivers: tuple[str, int | None]) -> dict[str, Any]:
    """The CSINode of ``node``: each driver with its allocatable count (None: no count)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {
            "drivers": [
                {"name": name, "nodeID": node}
                | ({} if count is None else {"allocatable": {"count": count}})
                for name, count in drivers
            ]
        },
    }


def test_csi_driver_required_on_the_node(cluster: Cluster, namespace: str, prefix: str) -> None:
    """NodeVolumeLimits (VolumeLimitScaling, on in v1.37): a CSIDriver with
    preventPodSchedulingIfMissing keeps its volumes off the nodes whose CSINode lacks the driver
    (or that have no CSINode): "<driver> CSI driver is not installed on the node", which kube
    says Unschedulable (preemption is tried, and finds no victims that help)."""
    required, other = f"{prefix}.csi.example.com", f"{prefix}-other.csi.example.com"
    scenario = Scenario(
        nodes=[
            make_node("m1", cpu="16", memory="32Gi"),
            make_node("m2", cpu="8", memory="16Gi"),
            make_node("m3"),
        ],
        objects=[
            csi_driver(required, preventPodSchedulingIfMissing=True),
            csi_driver(other, preventPodSchedulingIfMissing=True),
            # m1, the roomiest, has no CSINode; m2's lacks the driver; m3's has it.
            csi_node(f"{prefix}-m2", (other, None)),
            csi_node(f"{prefix}-m3", (required, None)),
            *bound_pair(namespace, f"{prefix}-needs", "needs", driver=required),
            *bound_pair(
                namespace, f"{prefix}-nowhere", "nowhere", driver=f"{prefix}-x.example.com"
            ),
        ],
        steps=[
            Step(make_pod("p1", spec=using("needs")), "m3"),
            # A driver without a CSIDriver is not required.
            Step(make_pod("p2", spec=using("nowhere")), "m1"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_csi_driver_missing_everywhere(cluster: Cluster, namespace: str, prefix: str) -> None:
    """No node has the required driver: every node says so, and kube's preemption finds no
    victims."""
    required = f"{prefix}.csi.example.com"
    scenario = Scenario(
        nodes=[make_node("q1"), make_node("q2")],
        objects=[
            csi_driver(required, preventPodSchedulingIfMissing=True),
            csi_node(f"{prefix}-q2", (CSI_DRIVER, 5)),
            *bound_pair(namespace, f"{prefix}-needs", "needs", driver=required),
        ],
        steps=[Step(make_pod("p1", spec=using("needs")), UNSCHEDULABLE)],
    )
    run(cluster, namespace, prefix, scenario)
    # Unschedulable, not UnschedulableAndUnresolvable: "Preemption is not helpful" otherwise.
    # The pod is gone (run deletes a pod left pending); its event is not.
    events = items(
        cluster, "events", "-n", namespace, "--field-selector", "reason=FailedScheduling"
    )
    said = [e.get("message") or e.get("note", "") for e in events]
    assert any("2 No preemption victims found for incoming pod" in m for m in said), said


def allocated_claim(name: str, node: str) -> dict[str, Any]:
    """A ResourceClaim (resource.k8s.io/v1) allocated, as a DRA scheduler would, to a device
    reachable from ``node`` only. With its allocationTimestamp, as v1.37's allocator writes it:
    kube-scheduler v1.37 (DRADeviceBindingConditions) stamps an allocation that lacks one when
    it reserves the claim, which the API server refuses (allocation is immutable), forever."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": node,
                            "device": "gpu-0",
                        }
                    ]
                },
                "allocationTimestamp": "2026-01-01T00:00:00Z",
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        },
    }


def claiming(name: str) -> dict[str, Any]:
    """A pod spec fragment: the ResourceClaim ``name``."""
    return {"resourceClaims": [{"name": "gpu", "resourceClaimName": name}]}


def gpu_pod(name: str, claim_name: str) -> dict[str, Any]:
    return make_pod(
        name,
        cpu=None,
        memory=None,
        spec=claiming(claim_name),
        container={"resources": {"claims": [{"name": "gpu"}]}},
    )


def reserve(claim_name: str, pod_name: str) -> Callable[[Cluster, str], None]:
    """A Step's prepare: the claim's status.reservedFor names the pod (as kube-scheduler's
    PreBind would have written it)."""

    def prepare(cluster: Cluster, namespace: str) -> None:
        uid = json.loads(
            cluster.kubectl("get", "pod", pod_name, "-n", namespace, "-o", "json").stdout
        )["metadata"]["uid"]
        status = {"reservedFor": [{"resource": "pods", "name": pod_name, "uid": uid}]}
        cluster.kubectl(
            "patch", "resourceclaims.resource.k8s.io", claim_name, "-n", namespace,
            "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
        )  # fmt: skip

    return prepare


def test_allocated_resource_claim(cluster: Cluster, namespace: str, prefix: str) -> None:
    """DynamicResources with claims allocated already: the pod goes where the allocation's
    nodeSelector allows, whether or not the claim is reserved for it yet (kube-scheduler
    reserves it in PreBind)."""
    served = cluster.kubectl("api-resources", "--api-group=resource.k8s.io").stdout
    if "resourceclaims" not in served:
        pytest.skip("resource.k8s.io/v1 is not served by this control plane")
    scenario = Scenario(
        nodes=[make_node("d1", cpu="16", memory="32Gi"), make_node("d2"), make_node("d3")],
        objects=[allocated_claim("gpu", f"{prefix}-d2"), allocated_claim("tpu", f"{prefix}-d3")],
        steps=[
            # Reserved for the pod before it is decided.
            Step(gpu_pod("p1", "tpu"), "d3", prepare=reserve("tpu", "p1")),
            # Allocated, not reserved for anyone yet.
            Step(gpu_pod("p2", "gpu"), "d2"),
        ],
    )
    run(cluster, namespace, prefix, scenario)
