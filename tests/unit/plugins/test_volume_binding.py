"""VolumeBinding's verdicts, reasons and binding steps, as kube-scheduler v1.37's VolumeBinding.

Each case builds a catalog of claims, volumes and classes (namespace "ns"), runs PreFilter, then
Filter on every node (one by one, and as one block, which must agree). Reserve, Unreserve and
PreBind are run against the same catalog; an in-memory ObjectWriter applies the merge patches to
it as the API server and the informers would, and a fake clock's sleep plays the PV controller.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from plugin_harness import Change, make_node, make_pod, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, ObjectRef
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import ObjectError, PodView
from policy_scheduler.model.volumes import (
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    PV,
    PVC,
    SELECTED_NODE,
    STORAGE_CLASS,
    CSIDriverView,
    CSINodeView,
    StorageCapacityView,
    StorageClassView,
    Volumes,
)
from policy_scheduler.plugins import volume_binding as vb
from policy_scheduler.runtime.framework import ExtensionPoints

GI = 1 << 30
AFFINITY = ("node(s) didn't match PersistentVolume's node affinity",)
NO_PV = ("node(s) didn't find available persistent volumes to bind",)
MISSING_PV = ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",)
NO_SPACE = ("node(s) did not have enough free storage",)
ZONE = "topology.kubernetes.io/zone"


def claim(
    name: str,
    *,
    cls: str | None = "wait",
    size: int = GI,
    volume: str = "",
    bound: bool = False,
    modes: Sequence[str] = ("ReadWriteOnce",),
    annotations: Mapping[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A claim in "ns"; ``bound`` adds the bind-completed annotation of a finished bind."""
    notes = dict(annotations or {})
    if bound:
        notes[vb.BIND_COMPLETED] = "yes"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": str(size)}},
    }
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    spec.update(extra.pop("spec", {}))
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "annotations": notes,
        **extra,
    }
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Bound" if volume else ""}}


def volume(
    name: str,
    *,
    cls: str = "wait",
    size: int = GI,
    zone: str | None = None,
    claimed: str | None = None,
    phase: str = "Available",
    modes: Sequence[str] = ("ReadWriteOnce",),
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A PV; ``zone`` gives it node affinity to that zone, ``claimed`` a claimRef to that
    claim of "ns" (with its uid)."""
    body: dict[str, Any] = {
        "capacity": {"storage": str(size)},
        "accessModes": list(modes),
        "storageClassName": cls,
        **spec,
    }
    if zone is not None:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if claimed is not None:
        body["claimRef"] = {"namespace": "ns", "name": claimed, "uid": f"uid-{claimed}"}
    metadata = {"name": name, "resourceVersion": "1", "labels": dict(labels or {})}
    return {"metadata": metadata, "spec": body, "status": {"phase": phase}}


def storage_class(
    name: str,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "kubernetes.io/no-provisioner",
    zones: Sequence[str] = (),
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones:
        raw["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}
        ]
    return raw


CLASSES = (
    storage_class("wait"),
    storage_class("now", mode="Immediate"),
    storage_class("dynamic", provisioner="csi.example.com"),
    storage_class("zonal", provisioner="csi.example.com", zones=("a",)),
)


def catalog(*objects: tuple[str, dict[str, Any]], classes: bool = True) -> Volumes:
    volumes = Volumes()
    for raw in CLASSES if classes else ():
        volumes.set(STORAGE_CLASS, raw)
    for kind, raw in objects:
        volumes.set(kind, raw)
    return volumes


def driver(storage_capacity: bool = True) -> tuple[str, dict[str, Any]]:
    """The CSIDriver of csi.example.com, the provisioner of the classes "dynamic" and "zonal"."""
    spec = {"storageCapacity": storage_capacity}
    return CSI_DRIVER, {"metadata": {"name": "csi.example.com"}, "spec": spec}


def capacity(
    name: str,
    size: str | None = "10Gi",
    *,
    cls: str = "dynamic",
    zone: str | None = "a",
    maximum: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """A CSIStorageCapacity of ``cls`` for the nodes of ``zone`` (None: no nodeTopology)."""
    raw: dict[str, Any] = {"metadata": {"name": name, "namespace": "kube-system"}}
    raw["storageClassName"] = cls
    if zone is not None:
        raw["nodeTopology"] = {"matchLabels": {ZONE: zone}}
    if size is not None:
        raw["capacity"] = size
    if maximum is not None:
        raw["maximumVolumeSize"] = maximum
    return CSI_STORAGE_CAPACITY, raw


def pvc(*args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    return PVC, claim(*args, **kwargs)


def pv(*args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    return PV, volume(*args, **kwargs)


def pod(*claims: str, ephemeral: Sequence[str] = ()) -> PodView:
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": name}}
        for i, name in enumerate(claims)
    ]
    volumes += [{"name": name, "ephemeral": {"volumeClaimTemplate": {}}} for name in ephemeral]
    volumes.append({"name": "scratch", "emptyDir": {}})
    return make_pod("p", "ns", containers=[{"name": "c"}], volumes=volumes)


OWNED_BY_POD = {"kind": "Pod", "name": "p", "uid": "ns/p", "controller": True}
NODES = (make_node("n-a", {ZONE: "a"}), make_node("n-b", {ZONE: "b"}))


def plugin(**args: Any) -> Any:
    return vb.new_filter(args, "spec.predicates[0].args")


def run(the_pod: PodView, volumes: Volumes, nodes: Sequence[NodeInfo] = NODES) -> Any:
    """The pre-filter's rejection, or SKIP, or each node's reasons (block and per node agree)."""
    snapshot = Snapshot(nodes, volumes=volumes)
    filt = plugin()
    state = filt.pre_filter(Cycle(the_pod, snapshot))
    if state is SKIP:
        return SKIP
    rejection = filt.pre_filter_result(state).rejection
    if rejection:
        return rejection
    each = [tuple(filt.filter(state, the_pod, info)) for info in nodes]
    table = snapshot.table
    block = table.block(np.array([table.position(info) for info in nodes], np.intp))
    verdicts: list[tuple[str, ...]] = [FITS for _ in nodes]
    for reasons, indices in filt.filter_nodes(state, the_pod, block).items():
        for i in indices:
            verdicts[i] = reasons
    assert verdicts == each
    return each


# kube's hasEnoughCapacity: a claim to provision by a CSI driver that asks for capacity checks.
CAPACITY_CASES: dict[str, tuple[PodView, Volumes, Any]] = {
    "a CSIDriver without storageCapacity: capacity is not checked": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(storage_capacity=False)),
        [FITS, FITS],
    ),
    "a provisioner without CSIDriver: capacity is not checked": (
        pod("c"),
        catalog(pvc("c", cls="dynamic")),
        [FITS, FITS],
    ),
    "a node a big enough capacity reaches": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(), capacity("s")),
        [FITS, NO_SPACE],
    ),
    "a capacity smaller than the claim": (
        pod("c"),
        catalog(pvc("c", cls="dynamic", size=20 * GI), driver(), capacity("s")),
        [NO_SPACE, NO_SPACE],
    ),
    "exactly the claim's size is enough": (
        pod("c"),
        catalog(pvc("c", cls="dynamic", size=10 * GI), driver(), capacity("s")),
        [FITS, NO_SPACE],
    ),
    "the maximum volume size counts, not the capacity": (
        pod("c"),
        catalog(pvc("c", cls="dynamic", size=2 * GI), driver(), capacity("s", maximum="1Gi")),
        [NO_SPACE, NO_SPACE],
    ),
    "a maximum volume size without capacity is enough": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(), capacity("s", None, maximum="1Gi")),
        [FITS, NO_SPACE],
    ),
    "a capacity without sizes is none": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(), capacity("s", None)),
        [NO_SPACE, NO_SPACE],
    ),
    "a capacity of another class": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(), capacity("s", cls="zonal")),
        [NO_SPACE, NO_SPACE],
    ),
    "a capacity without nodeTopology reaches no node": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(), capacity("s", zone=None)),
        [NO_SPACE, NO_SPACE],
    ),
    "any capacity of the class that reaches the node will do": (
        pod("c"),
        catalog(
            pvc("c", cls="dynamic", size=5 * GI),
            driver(),
            capacity("small-b", "1Gi", zone="b"),
            capacity("big-b", "8Gi", zone="b"),
        ),
        [NO_SPACE, FITS],
    ),
    "a claim that asks for no storage is not checked": (
        pod("c"),
        catalog(pvc("c", cls="dynamic", spec={"resources": {}}), driver()),
        [FITS, FITS],
    ),
    "topology is checked before capacity": (
        pod("c"),
        catalog(pvc("c", cls="zonal"), driver(), capacity("s", cls="zonal", zone="b")),
        [NO_SPACE, NO_PV],
    ),
    "a claim given to a node's provisioner is checked on that node": (
        pod("c"),
        catalog(pvc("c", cls="dynamic", annotations={SELECTED_NODE: "n-b"}), driver()),
        [NO_PV, NO_SPACE],
    ),
    "the first claim to provision decides, smallest first": (
        pod("c", "d"),
        catalog(pvc("c", cls="dynamic"), pvc("d", size=2 * GI), driver()),
        [NO_SPACE, NO_SPACE],
    ),
    "no room for the smaller claim, or no provisioner for the larger one, on each node": (
        pod("c", "d"),
        catalog(pvc("c", size=2 * GI), pvc("d", cls="dynamic"), driver(), capacity("s")),
        [NO_PV, NO_SPACE],
    ),
    "a bound volume out of reach and no room": (
        pod("b", "c"),
        catalog(
            pvc("b", volume="v", bound=True),
            pv("v", zone="b", claimed="b"),
            pvc("c", cls="dynamic"),
            driver(),
        ),
        [AFFINITY + NO_SPACE, NO_SPACE],
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "volumes", "expected"),
    [
        pytest.param(pod(), catalog(), SKIP, id="pod without claims is skipped"),
        pytest.param(
            pod("c"), catalog(), 'persistentvolumeclaim "c" not found', id="missing claim"
        ),
        pytest.param(
            pod(ephemeral=["data"]),
            catalog(),
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-data"',
            id="ephemeral claim not created yet",
        ),
        pytest.param(
            pod("c"),
            catalog((PVC, {**claim("c", volume="gone"), "status": {"phase": "Lost"}})),
            'persistentvolumeclaim "c" bound to non-existent persistentvolume "gone"',
            id="lost claim",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", deletionTimestamp="2026-01-01T00:00:00Z")),
            'persistentvolumeclaim "c" is being deleted',
            id="claim being deleted",
        ),
        pytest.param(
            pod(ephemeral=["data"]),
            catalog(pvc("p-data", ownerReferences=[{"uid": "other", "controller": True}])),
            "PVC ns/p-data was not created for pod ns/p (pod is not owner)",
            id="ephemeral claim of another pod",
        ),
        pytest.param(
            pod(ephemeral=["data"]),
            catalog(pvc("p-data")),
            "PVC ns/p-data was not created for pod ns/p (pod is not owner)",
            id="ephemeral claim without owner",
        ),
        pytest.param(
            pod(ephemeral=["data"]),
            catalog(pvc("p-data", cls="dynamic", ownerReferences=[OWNED_BY_POD])),
            [FITS, FITS],
            id="ephemeral claim of the pod",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls="now")),
            vb.UNBOUND_IMMEDIATE,
            id="unbound claim of an Immediate class",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls="unknown")),
            vb.UNBOUND_IMMEDIATE,
            id="unbound claim of an unknown class binds immediately",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls=None)),
            vb.UNBOUND_IMMEDIATE,
            id="unbound claim without class",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", volume="v"), pv("v", claimed="c")),
            vb.UNBOUND_IMMEDIATE,
            id="bind not completed by the PV controller is immediate",
        ),
        pytest.param(
            pod("missing", "now"),
            catalog(pvc("now", cls="now")),
            'persistentvolumeclaim "missing" not found',
            id="every claim is found before binding modes are read",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", volume="v", bound=True), pv("v", claimed="c")),
            SKIP,
            id="bound to a volume without node affinity is skipped",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", volume="v", bound=True), pv("v", zone="a", claimed="c")),
            [FITS, AFFINITY],
            id="bound volume's node affinity",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", volume="v", bound=True)),
            [MISSING_PV, MISSING_PV],
            id="bound to a missing volume",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", zone="a")),
            [FITS, NO_PV],
            id="delayed claim finds a volume on the node",
        ),
        pytest.param(
            pod("c"), catalog(pvc("c")), [NO_PV, NO_PV], id="no volume and no provisioner"
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls="dynamic")),
            [FITS, FITS],
            id="dynamic provisioning",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls="zonal")),
            [FITS, NO_PV],
            id="provisioning only where allowedTopologies admit",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", cls="dynamic", annotations={SELECTED_NODE: "n-b"})),
            [NO_PV, FITS],
            id="claim given to a node's provisioner fits that node only",
        ),
        pytest.param(
            pod("b", "c"),
            catalog(
                pvc("b", volume="v", bound=True),
                pv("v", zone="b", claimed="b"),
                pvc("c", cls="dynamic", annotations={SELECTED_NODE: "n-b"}),
            ),
            [AFFINITY + NO_PV, FITS],
            id="two reasons in kube's order",
        ),
        pytest.param(
            pod("c", "d"),
            catalog(pvc("c"), pvc("d"), pv("v", zone="a")),
            [NO_PV, NO_PV],
            id="a volume serves one claim of the pod",
        ),
        pytest.param(
            pod("c", "d"),
            catalog(pvc("c"), pvc("d"), pv("v", zone="a"), pv("w")),
            [FITS, NO_PV],
            id="two claims, two volumes",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c", size=2 * GI), pv("v", size=GI)),
            [NO_PV, NO_PV],
            id="volume too small",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", modes=("ReadOnlyMany",))),
            [NO_PV, NO_PV],
            id="access modes not offered",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", volumeMode="Block")),
            [NO_PV, NO_PV],
            id="volume mode differs",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", cls="other")),
            [NO_PV, NO_PV],
            id="volume of another class",
        ),
        pytest.param(
            pod("c"),
            catalog(
                pvc("c", spec={"volumeAttributesClassName": "gold"}),
                pv("v", volumeAttributesClassName="silver"),
                pv("w", zone="b", volumeAttributesClassName="gold"),
            ),
            [NO_PV, FITS],
            id="volume of another attributes class",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", volumeAttributesClassName="gold"), pv("w", zone="b")),
            [NO_PV, FITS],
            id="a claim without attributes class takes no volume with one",
        ),
        pytest.param(
            pod("c"),
            catalog(
                pvc("c", spec={"volumeAttributesClassName": "gold"}),
                pv("v", zone="a", claimed="c", phase="Bound"),
            ),
            [NO_PV, NO_PV],
            id="a pre-bound volume of another attributes class is no match",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", claimed="someone")),
            [NO_PV, NO_PV],
            id="volume claimed by another claim",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", phase="Released")),
            [NO_PV, NO_PV],
            id="volume not available",
        ),
        pytest.param(
            pod("c"),
            catalog(
                pvc("c", spec={"selector": {"matchLabels": {"tier": "fast"}}}),
                pv("v", labels={"tier": "slow"}),
                pv("w", zone="b", labels={"tier": "fast"}),
            ),
            [NO_PV, FITS],
            id="claim's selector on volume labels",
        ),
        pytest.param(
            pod("c"),
            catalog(pvc("c"), pv("v", zone="b", claimed="c", phase="Bound"), pv("w")),
            [NO_PV, FITS],
            id="pre-bound volume out of reach wins over any other",
        ),
        *(
            pytest.param(the_pod, volumes, expected, id=name)
            for name, (the_pod, volumes, expected) in CAPACITY_CASES.items()
        ),
    ],
)
def test_verdicts(the_pod: PodView, volumes: Volumes, expected: Any) -> None:
    assert run(the_pod, volumes) == expected


def test_a_bad_storage_capacity_fails_the_filter_naming_it() -> None:
    volumes = catalog(pvc("c", cls="dynamic"), driver(), capacity("s", "lots"))
    with pytest.raises(ObjectError, match="csistoragecapacity kube-system/s: capacity: 'lots'"):
        run(pod("c"), volumes)


def reserved_on(
    the_pod: PodView, volumes: Volumes, node: str, nodes: Sequence[NodeInfo] = NODES
) -> tuple[Any, Any]:
    filt = plugin()
    state = filt.pre_filter(Cycle(the_pod, Snapshot(nodes, volumes=volumes)))
    assert state is not SKIP
    assert filt.reserve(state, the_pod, node) is None
    return filt, state


def test_smallest_fitting_volume_is_reserved() -> None:
    volumes = catalog(
        pvc("c", size=GI), pv("big", size=4 * GI), pv("fit", size=2 * GI), pv("small", size=1)
    )
    filt, state = reserved_on(pod("c"), volumes, "n-a")
    chosen = volumes.volume("fit")
    assert chosen is not None and chosen.claimed_by == "ns/c"
    assert chosen.claim_ref is not None and chosen.claim_ref["uid"] == "uid-c"
    assert chosen.annotations[vb.BOUND_BY_CONTROLLER] == "yes"
    assert volumes.is_assumed(PV, "fit") and not volumes.is_assumed(PV, "big")
    filt.unreserve(state, pod("c"), "n-a")
    assert not volumes.is_assumed(PV, "fit")
    restored = volumes.volume("fit")
    assert restored is not None and restored.claim_ref is None


def test_reserved_volume_is_not_given_to_another_pod() -> None:
    volumes = catalog(pvc("c"), pvc("d"), pv("v"))
    reserved_on(pod("c"), volumes, "n-a")
    assert run(pod("d"), volumes) == [NO_PV, NO_PV]


def test_only_volumes_that_may_match_are_walked_per_node() -> None:
    """PVs bound to other claims match no node: the pre-filter leaves them out once, rather
    than every node trying each of them (with a thousand bound PVs the filter was the whole
    cost of a cycle)."""
    bound = [pv(f"other-{i}", claimed=f"x{i}", phase="Bound") for i in range(3)]
    volumes = catalog(pvc("c"), pv("free"), pv("mine", claimed="c"), *bound)
    state = plugin().pre_filter(Cycle(pod("c"), Snapshot(NODES, volumes=volumes)))
    assert [v.name for v in state.candidates["wait"]] == ["free", "mine"]


def test_provisioned_claim_is_assumed_with_the_selected_node() -> None:
    volumes = catalog(pvc("c", cls="dynamic"))
    filt, state = reserved_on(pod("c"), volumes, "n-b")
    assumed = volumes.claim("ns", "c")
    assert assumed is not None and assumed.selected_node == "n-b"
    assert run(pod("c"), volumes) == [NO_PV, FITS]
    filt.unreserve(state, pod("c"), "n-b")
    claim_now = volumes.claim("ns", "c")
    assert claim_now is not None and SELECTED_NODE not in claim_now.annotations


def test_reserve_refuses_when_the_match_is_gone() -> None:
    volumes = catalog(pvc("c"), pv("v"))
    filt = plugin()
    state = filt.pre_filter(Cycle(pod("c"), Snapshot(NODES, volumes=volumes)))
    volumes.delete(PV, volume("v"))
    assert filt.reserve(state, pod("c"), "n-a") == NO_PV[0]


def test_skipped_pod_reserves_and_binds_nothing() -> None:
    filt = plugin()
    objects = FakeApi(Volumes())
    assert filt.reserve(None, pod(), "n-a") is None
    filt.unreserve(None, pod(), "n-a")
    assert asyncio.run(filt.pre_bind(None, pod(), "n-a", objects)) is None
    assert objects.patches == []


def test_plugin_is_reserve_and_pre_bind() -> None:
    points = ExtensionPoints.of([plugin()])
    assert len(points.reserve) == 1 and len(points.pre_bind) == 1


class FakeApi:
    """The API server and the informers in one: a merge patch bumps the object's
    resourceVersion and the catalog sees the new version at once."""

    def __init__(self, volumes: Volumes, fail: str = "") -> None:
        self.volumes = volumes
        self.patches: list[tuple[ObjectRef, Mapping[str, Any]]] = []
        self.fail = fail

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.fail:
            raise RuntimeError(self.fail)
        self.patches.append((ref, patch))
        return self.write(*self.located(ref), patch)

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        kind, key = self.located(ref)
        return self.volumes._objects[kind][key].raw

    async def create(self, ref: ObjectRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
        raise AssertionError(f"VolumeBinding creates nothing: {ref}")

    async def delete(self, ref: ObjectRef) -> None:
        raise AssertionError(f"VolumeBinding deletes nothing: {ref}")

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        raise AssertionError(f"VolumeBinding tells nothing: {reason}")

    @staticmethod
    def located(ref: ObjectRef) -> tuple[str, str]:
        kind = PV if ref.resource == "persistentvolumes" else PVC
        return kind, f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name

    def write(self, kind: str, key: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        known = self.volumes._objects[kind][key]  # the informer's version, under any assumption
        raw = merge(copy.deepcopy(dict(known.raw)), patch)
        raw["metadata"]["resourceVersion"] = str(int(known.resource_version) + 1)
        self.volumes.set(kind, raw)
        return raw


def merge(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def pv_controller(api: FakeApi) -> None:
    """Binds every claim a PV's claimRef names, and provisions a volume for every claim with a
    selected node, as the PV controller and a provisioner would."""
    for pv_view in list(api.volumes.volumes()):
        if pv_view.claim_ref is not None:
            ref = pv_view.claim_ref
            claim_view = api.volumes.claim(ref["namespace"], ref["name"])
            if claim_view is not None and not claim_view.volume_name:
                api.write(
                    PVC,
                    claim_view.key,
                    {
                        "metadata": {"annotations": {vb.BIND_COMPLETED: "yes"}},
                        "spec": {"volumeName": pv_view.name},
                    },
                )
    for key in list(api.volumes._objects[PVC]):
        claim_view = api.volumes.claim(*key.split("/"))
        if claim_view is not None and claim_view.selected_node and not claim_view.volume_name:
            api.volumes.set(PV, volume(f"pvc-{claim_view.name}", cls="dynamic", claimed="c"))
            api.write(
                PVC,
                key,
                {
                    "metadata": {"annotations": {vb.BIND_COMPLETED: "yes"}},
                    "spec": {"volumeName": f"pvc-{claim_view.name}"},
                },
            )


class FakeTime:
    """A clock whose sleep advances it, and runs ``during`` (the world acting meanwhile)."""

    def __init__(self, during: Callable[[], None] = lambda: None) -> None:
        self.now = 0.0
        self.during = during
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1
        self.during()


def bind(
    volumes: Volumes,
    node: str,
    the_pod: PodView,
    *,
    api: FakeApi | None = None,
    during: Callable[[FakeApi], None] = pv_controller,
    timeout: int = 10,
) -> tuple[str | None, FakeApi, FakeTime]:
    """Reserve the pod on ``node``, then PreBind it with a fake API, clock and controller."""
    api = api or FakeApi(volumes)
    fake = FakeTime(lambda: during(api))
    filt = vb._VolumeBinding(timeout, 1.0, fake.sleep, fake.clock)
    state = filt.pre_filter(Cycle(the_pod, Snapshot(NODES, volumes=volumes)))
    assert state is not SKIP
    assert filt.reserve(state, the_pod, node) is None
    return asyncio.run(filt.pre_bind(state, the_pod, node, api)), api, fake


def test_pre_bind_writes_the_claim_ref_and_waits_for_the_bind() -> None:
    volumes = catalog(pvc("c"), pv("v", zone="a"))
    refusal, api, fake = bind(volumes, "n-a", pod("c"))
    assert refusal is None
    [(ref, patch)] = api.patches
    assert ref == ObjectRef("v1", "persistentvolumes", "v")
    assert patch["spec"]["claimRef"]["name"] == "c" and patch["spec"]["claimRef"]["uid"] == "uid-c"
    bound = volumes.claim("ns", "c")
    assert bound is not None and bound.volume_name == "v" and fake.sleeps == 1


def test_pre_bind_annotates_a_claim_to_provision() -> None:
    volumes = catalog(pvc("c", cls="dynamic"))
    refusal, api, _ = bind(volumes, "n-a", pod("c"))
    assert refusal is None
    assert api.patches == [
        (
            ObjectRef("v1", "persistentvolumeclaims", "c", "ns"),
            {"metadata": {"annotations": {SELECTED_NODE: "n-a"}}},
        )
    ]


def test_pre_bind_of_bound_claims_writes_nothing() -> None:
    volumes = catalog(pvc("c", volume="v", bound=True), pv("v", zone="a", claimed="c"))
    refusal, api, fake = bind(volumes, "n-a", pod("c"))
    assert refusal is None and api.patches == [] and fake.sleeps == 0


def test_pre_bind_times_out() -> None:
    volumes = catalog(pvc("c"), pv("v"))
    refusal, _, fake = bind(volumes, "n-a", pod("c"), during=lambda api: None, timeout=5)
    assert refusal == (
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
    )
    assert fake.now == 5


def test_pre_bind_api_error_restores_the_assumption() -> None:
    volumes = catalog(pvc("c"), pv("v"))
    api = FakeApi(volumes, fail='persistentvolumes "v" is forbidden')
    refusal, _, _ = bind(volumes, "n-a", pod("c"), api=api)
    assert refusal == 'running PreBind plugin "VolumeBinding": persistentvolumes "v" is forbidden'
    assert not volumes.is_assumed(PV, "v")


def reset_claim_ref(api: FakeApi) -> None:
    api.write(PV, "v", {"spec": {"claimRef": None}})


def delete_claim(api: FakeApi) -> None:
    api.volumes.delete(PVC, claim("c"))


def deselect_node(api: FakeApi) -> None:
    api.write(PVC, "ns/c", {"metadata": {"annotations": {SELECTED_NODE: "n-b"}}})


@pytest.mark.parametrize(
    ("volumes", "during", "why"),
    [
        pytest.param(
            catalog(pvc("c"), pv("v")),
            reset_claim_ref,
            'ClaimRef got reset for pv "v"',
            id="claimRef reset",
        ),
        pytest.param(
            catalog(pvc("c"), pv("v")),
            delete_claim,
            'failed to check binding: could not find v1.PersistentVolumeClaim "ns/c"',
            id="claim deleted",
        ),
        pytest.param(
            catalog(pvc("c", cls="dynamic")),
            deselect_node,
            'provisioning failed for PVC "c"',
            id="provisioner gave the claim back",
        ),
        pytest.param(
            catalog(pvc("c", cls="dynamic")),
            delete_claim,
            'failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "ns/c"',
            id="claim to provision deleted",
        ),
    ],
)
def test_pre_bind_refusals(volumes: Volumes, during: Callable[[FakeApi], None], why: str) -> None:
    refusal, _, _ = bind(volumes, "n-a", pod("c"), during=during)
    assert refusal == f'running PreBind plugin "VolumeBinding": binding volumes: {why}'


CLAIM_EVENT = EventKind.PVC_CHANGED


def inline_csi_pod() -> PodView:
    """A pod with an inline CSI volume of csi.example.com."""
    inline = {"name": "i", "csi": {"driver": "csi.example.com"}}
    return make_pod("p", "ns", containers=[{"name": "c"}], volumes=[inline])


def driver_event(before: bool | None, after: bool | str) -> ClusterEvent:
    """csi.example.com's CSIDriver changed: its storageCapacity before (None: it is new) and
    after."""

    def view(flag: bool | str) -> CSIDriverView:
        return CSIDriverView(
            {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": flag}}
        )

    old = None if before is None else view(before)
    return ClusterEvent(EventKind.CSI_DRIVER_CHANGED, storage=view(after), old_storage=old)


DRIVER_HINTS: dict[str, tuple[tuple[bool | None, bool | str], bool]] = {
    "a new CSIDriver wakes no pod (kube registers its updates only)": ((None, False), False),
    "a CSIDriver that stops asking for capacity checks": ((True, False), True),
    "a CSIDriver that starts asking for them": ((False, True), False),
    "a CSIDriver that keeps asking for them": ((True, True), False),
    "a CSIDriver that cannot be read wakes the pod, as kube's hint errors do": (
        (True, "no"),
        True,
    ),
}


def capacity_event(before: Mapping[str, str] | None, after: Mapping[str, str]) -> ClusterEvent:
    """A CSIStorageCapacity changed: its sizes before (None: it is new) and after."""

    def view(sizes: Mapping[str, str]) -> StorageCapacityView:
        return StorageCapacityView({"metadata": {"name": "s", "namespace": "ns"}, **sizes})

    old = None if before is None else view(before)
    return ClusterEvent(
        EventKind.CSI_STORAGE_CAPACITY_CHANGED, storage=view(after), old_storage=old
    )


CAPACITY_HINTS: dict[str, tuple[tuple[Mapping[str, str] | None, Mapping[str, str]], bool]] = {
    "a new CSIStorageCapacity": ((None, {}), True),
    "a capacity that grew": (({"capacity": "1Gi"}, {"capacity": "2Gi"}), True),
    "a capacity that shrank": (({"capacity": "2Gi"}, {"capacity": "1Gi"}), False),
    "a capacity unchanged": (({"capacity": "1Gi"}, {"capacity": "1Gi"}), False),
    "a capacity given where there was none": (({}, {"capacity": "1Gi"}), True),
    "a capacity taken away": (({"capacity": "1Gi"}, {}), False),
    "the maximum volume size counts, not the capacity": (
        (
            {"capacity": "1Gi", "maximumVolumeSize": "1Gi"},
            {"capacity": "9Gi", "maximumVolumeSize": "1Gi"},
        ),
        False,
    ),
    "a maximum volume size that grew": (
        ({"maximumVolumeSize": "1Gi"}, {"maximumVolumeSize": "2Gi"}),
        True,
    ),
    "a capacity that cannot be read wakes the pod": (
        ({"capacity": "1Gi"}, {"capacity": "lots"}),
        True,
    ),
}


def changed(
    kind: EventKind, view: type[Any], before: dict[str, Any] | None, after: dict[str, Any]
) -> ClusterEvent:
    """An event of ``kind``: the object ``before`` (None: it is new) and ``after``."""
    return ClusterEvent(
        kind, storage=view(after), old_storage=None if before is None else view(before)
    )


IN_A = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
MIGRATED = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
CLASS_AND_CSI_NODE_HINTS: dict[str, tuple[ClusterEvent, bool]] = {
    "a new StorageClass": (
        changed(EventKind.STORAGE_CLASS_CHANGED, StorageClassView, None, storage_class("s")),
        True,
    ),
    "a StorageClass whose allowedTopologies changed": (
        changed(
            EventKind.STORAGE_CLASS_CHANGED,
            StorageClassView,
            storage_class("s"),
            {**storage_class("s"), "allowedTopologies": IN_A},
        ),
        True,
    ),
    "a StorageClass updated otherwise": (
        changed(
            EventKind.STORAGE_CLASS_CHANGED,
            StorageClassView,
            storage_class("s"),
            {**storage_class("s"), "metadata": {"name": "s", "labels": {"x": "y"}}},
        ),
        False,
    ),
    "a new CSINode": (
        changed(EventKind.CSI_NODE_CHANGED, CSINodeView, None, {"metadata": {"name": "n"}}),
        True,
    ),
    "a CSINode whose migrated plugins changed": (
        changed(
            EventKind.CSI_NODE_CHANGED,
            CSINodeView,
            {"metadata": {"name": "n"}},
            {"metadata": {"name": "n", "annotations": MIGRATED}},
        ),
        True,
    ),
    "a CSINode updated otherwise (a driver added)": (
        changed(
            EventKind.CSI_NODE_CHANGED,
            CSINodeView,
            {"metadata": {"name": "n"}},
            {"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "d"}]}},
        ),
        False,
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "event", "woken"),
    [
        pytest.param(pod("c"), ClusterEvent(CLAIM_EVENT), True, id="claim event without claim"),
        pytest.param(
            pod("c"),
            ClusterEvent(CLAIM_EVENT, storage=Volumes().set(PVC, claim("c"))),
            True,
            id="the pod's claim",
        ),
        pytest.param(
            pod("c"),
            ClusterEvent(CLAIM_EVENT, storage=Volumes().set(PVC, claim("d"))),
            False,
            id="another claim",
        ),
        pytest.param(
            pod("c"),
            ClusterEvent(
                CLAIM_EVENT, storage=Volumes().set(PVC, {**claim("c"), "metadata": {"name": "c"}})
            ),
            False,
            id="a claim of another namespace",
        ),
        pytest.param(
            pod(ephemeral=["data"]),
            ClusterEvent(CLAIM_EVENT, storage=Volumes().set(PVC, claim("d"))),
            True,
            id="a pod with ephemeral volumes wakes on its namespace's claims",
        ),
        pytest.param(pod("c"), ClusterEvent(EventKind.PV_CHANGED), True, id="volume events always"),
        *(
            pytest.param(inline_csi_pod(), driver_event(*change), woken, id=name)
            for name, (change, woken) in DRIVER_HINTS.items()
        ),
        pytest.param(
            pod("c"),
            driver_event(True, False),
            False,
            id="a CSIDriver update wakes no pod without an inline volume of the driver",
        ),
        *(
            pytest.param(pod("c"), capacity_event(*change), woken, id=name)
            for name, (change, woken) in CAPACITY_HINTS.items()
        ),
        *(
            pytest.param(pod("c"), event, woken, id=name)
            for name, (event, woken) in CLASS_AND_CSI_NODE_HINTS.items()
        ),
    ],
)
def test_queueing_hint(the_pod: PodView, event: ClusterEvent, woken: bool) -> None:
    assert plugin().queueing_hint(the_pod, event) is woken


def test_wakes_on_kube_events() -> None:
    filt = plugin()
    assert wakes(filt, pod("c"), Change(EventKind.NODE_LABELS, NODES[0]))
    assert not wakes(filt, pod("c"), Change(EventKind.NODE_TAINTS, NODES[0]))
    assert not wakes(filt, pod("c"), Change(EventKind.POD_DELETED))
    assert filt.wakes_on & EventKind.CSI_DRIVER_CHANGED
    assert filt.wakes_on & EventKind.CSI_STORAGE_CAPACITY_CHANGED


def test_args() -> None:
    assert plugin().bind_timeout == vb.DEFAULT_BIND_TIMEOUT_SECONDS
    assert plugin(bindTimeoutSeconds=30).bind_timeout == 30
    with pytest.raises(ArgsError) as error:
        plugin(bindTimeoutSeconds=-1, shape=[], extra=1)
    assert [str(e) for e in error.value.errors] == [
        "spec.predicates[0].args.extra: unknown field; expected one of "
        "['bindTimeoutSeconds', 'shape']",
        "spec.predicates[0].args.bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be "
        "a negative value",
        "spec.predicates[0].args.shape: the VolumeBinding priority's arg (spec.priorities), "
        "not the predicate's",
    ]
    with pytest.raises(ArgsError, match="must be an integer"):
        plugin(bindTimeoutSeconds="10")


def scores(
    the_pod: PodView, volumes: Volumes, nodes: Sequence[NodeInfo] = NODES, **args: Any
) -> Any:
    """The priority's score of each node, or SKIP (the nodes are taken as feasible)."""
    scorer = vb.new_scorer(args, "spec.priorities[0].args")
    snapshot = Snapshot(nodes, volumes=volumes)
    table = snapshot.table
    block = table.block(np.array([table.position(info) for info in nodes], np.intp))
    state = scorer.pre_score(Cycle(the_pod, snapshot), block)
    if state is SKIP:
        return SKIP
    each = [scorer.score(state, the_pod, info) for info in nodes]
    assert list(scorer.score_nodes(state, the_pod, block)) == each
    return each


SCORE_CASES: dict[str, tuple[PodView, Volumes, dict[str, Any], Any]] = {
    "a pod without claims is not scored": (pod(), catalog(), {}, SKIP),
    "a pod whose claims are bound is not scored": (
        pod("c"),
        catalog(pvc("c", volume="v", bound=True), pv("v", zone="a", claimed="c")),
        {},
        SKIP,
    ),
    "matched PVs: the claim's request over the PV's capacity, the emptier wins": (
        pod("c"),
        catalog(pvc("c"), pv("v", zone="a", size=2 * GI), pv("w", zone="b", size=4 * GI)),
        {},
        [50, 75],
    ),
    "a PV of no capacity for a claim of none is full": (
        pod("c"),
        catalog(pvc("c", size=0), pv("v", size=0)),
        {},
        [0, 0],
    ),
    "two classes: the average, rounded half away from zero": (
        pod("c", "d"),
        catalog(
            pvc("c"),
            pvc("d", cls="dynamic", size=GI),
            pv("v", size=2 * GI),
            pv("w", cls="dynamic", size=3 * GI),
        ),
        {},
        [59, 59],
    ),
    "provisioning: the claim's request over the node's CSIStorageCapacity": (
        pod("c"),
        catalog(
            pvc("c", cls="dynamic", size=5 * GI),
            driver(),
            capacity("a", "10Gi"),
            capacity("b", "20Gi", zone="b"),
        ),
        {},
        [50, 75],
    ),
    "provisioning: two claims of a class share its capacity": (
        pod("c", "d"),
        catalog(
            pvc("c", cls="dynamic", size=5 * GI),
            pvc("d", cls="dynamic", size=5 * GI),
            driver(),
            capacity("a", "20Gi"),
            capacity("b", "20Gi", zone="b"),
        ),
        {},
        [50, 50],
    ),
    "provisioning without capacity checks scores nothing": (
        pod("c"),
        catalog(pvc("c", cls="dynamic"), driver(storage_capacity=False)),
        {},
        [0, 0],
    ),
    "a capacity found by its maximum volume size alone has no capacity: full": (
        pod("c"),
        catalog(
            pvc("c", cls="dynamic"),
            driver(),
            capacity("a", None, maximum="4Gi"),
            capacity("b", None, zone="b", maximum="4Gi"),
        ),
        {},
        [0, 0],
    ),
    "matched PVs count, not the claims to provision beside them": (
        pod("c", "d"),
        catalog(
            pvc("c", size=GI),
            pv("v", size=4 * GI),
            pvc("d", cls="dynamic", size=GI),
            driver(),
            capacity("a", "1Gi"),
            capacity("b", "1Gi", zone="b"),
        ),
        {},
        [75, 75],
    ),
    "a shape of one's own: the fuller wins": (
        pod("c"),
        catalog(pvc("c"), pv("v", zone="a", size=2 * GI), pv("w", zone="b", size=4 * GI)),
        {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
        [50, 25],
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "volumes", "args", "expected"), SCORE_CASES.values(), ids=SCORE_CASES.keys()
)
def test_scores(the_pod: PodView, volumes: Volumes, args: dict[str, Any], expected: Any) -> None:
    assert scores(the_pod, volumes, **args) == expected


def test_scorer_args() -> None:
    with pytest.raises(ArgsError) as error:
        vb.new_scorer({"bindTimeoutSeconds": 1, "shape": []}, "spec.priorities[0].args")
    assert [str(e) for e in error.value.errors] == [
        "spec.priorities[0].args.bindTimeoutSeconds: unknown field; expected one of ['shape']",
        "spec.priorities[0].args.shape: at least one point {utilization, score} is required",
    ]
