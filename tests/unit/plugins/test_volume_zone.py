"""VolumeZone rejects nodes outside the zones and regions of the pod's bound volumes, and
rejects at pre-filter the pods whose claims kube-scheduler v1.37 cannot resolve."""

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
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.volumes import (
    PV,
    PVC,
    STORAGE_CLASS,
    ClaimView,
    StorageClassView,
    Volumes,
    VolumeView,
)
from policy_scheduler.plugins import volume_zone

CONFLICT = ("node(s) had no available volume zone",)
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


@dataclass(frozen=True)
class Storage(Around):
    """A snapshot that also holds these storage objects, as ``(kind, object)``."""

    objects: Sequence[tuple[str, Mapping[str, Any]]] = ()

    def snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        volumes = Volumes()
        for kind, raw in self.objects:
            volumes.set(kind, raw)
        return Snapshot(nodes, volumes=volumes)


def claim(
    name: str = "c",
    volume: str = "",
    storage_class: str = "",
    annotations: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, Any]]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"]}
    if volume:
        spec["volumeName"] = volume
    if storage_class:
        spec["storageClassName"] = storage_class
    metadata: dict[str, Any] = {"name": name, "namespace": "ns"}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return PVC, {"metadata": metadata, "spec": spec}


def volume(name: str = "v", **labels: str) -> tuple[str, dict[str, Any]]:
    return PV, {"metadata": {"name": name, "labels": labels}, "spec": {}}


def zoned(name: str = "v", labels: Mapping[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    return PV, {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": {}}


def storage_class(name: str, mode: str | None = None) -> tuple[str, dict[str, Any]]:
    raw: dict[str, Any] = {"metadata": {"name": name}, "provisioner": "example.com/disk"}
    if mode is not None:
        raw["volumeBindingMode"] = mode
    return STORAGE_CLASS, raw


def pvc(name: str = "c") -> dict[str, Any]:
    return {"name": f"v-{name}", "persistentVolumeClaim": {"claimName": name}}


def pod(*volumes: Any) -> PodView:
    return make_pod("p", "ns", containers=[{"name": "c"}], volumes=list(volumes))


def node(name: str = "n", **labels: str) -> NodeInfo:
    return make_node(name, labels)


def labelled(labels: Mapping[str, str], name: str = "n") -> NodeInfo:
    return make_node(name, labels)


def plugin() -> Filter[Any]:
    return volume_zone.new_filter({}, "spec.predicates[0].args")


def run(
    the_pod: PodView, nodes: Sequence[NodeInfo], objects: Sequence[tuple[str, Any]]
) -> list[tuple[str, ...]]:
    return filter_nodes(plugin(), the_pod, nodes, around=Storage(objects=objects))


BOUND = claim(volume="v")


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "reasons"),
    [
        pytest.param({ZONE: "a"}, {ZONE: "a"}, FITS, id="same zone"),
        pytest.param({ZONE: "a"}, {ZONE: "b"}, CONFLICT, id="other zone"),
        pytest.param({ZONE: "a"}, {}, FITS, id="node without zone labels"),
        pytest.param({ZONE: "a"}, {REGION: "r"}, CONFLICT, id="node without the zone label"),
        pytest.param({ZONE: "a__b"}, {ZONE: "b"}, FITS, id="one of several zones"),
        pytest.param({ZONE: "a__ b "}, {ZONE: "b"}, FITS, id="zones are trimmed"),
        pytest.param({ZONE: "a__b"}, {ZONE: "c"}, CONFLICT, id="none of several zones"),
        pytest.param({ZONE: "a____b"}, {ZONE: "c"}, FITS, id="an empty zone: label ignored"),
        pytest.param({REGION: "r"}, {REGION: "r", ZONE: "x"}, FITS, id="same region"),
        pytest.param({REGION: "r"}, {REGION: "s"}, CONFLICT, id="other region"),
        pytest.param(
            {ZONE: "a", REGION: "r"}, {ZONE: "a", REGION: "s"}, CONFLICT, id="zone and region"
        ),
        pytest.param({BETA_ZONE: "a"}, {BETA_ZONE: "a"}, FITS, id="beta zone"),
        pytest.param({BETA_ZONE: "a"}, {ZONE: "a"}, FITS, id="beta zone matches GA label"),
        pytest.param({BETA_ZONE: "a"}, {BETA_ZONE: "b", ZONE: "a"}, CONFLICT, id="beta label wins"),
        pytest.param({ZONE: "a"}, {BETA_ZONE: "a"}, CONFLICT, id="GA zone needs GA label"),
        pytest.param({BETA_REGION: "r"}, {REGION: "r"}, FITS, id="beta region matches GA"),
        pytest.param({"other": "x"}, {ZONE: "b"}, FITS, id="no topology labels on the PV"),
    ],
)
def test_filter(
    pv_labels: dict[str, str], node_labels: dict[str, str], reasons: tuple[str, ...]
) -> None:
    objects = [BOUND, zoned("v", pv_labels)]
    assert run(pod(pvc()), [labelled(node_labels)], objects) == [reasons]


def test_every_volume_must_match() -> None:
    objects = [
        claim("c1", "v1"),
        claim("c2", "v2"),
        zoned("v1", {ZONE: "a"}),
        zoned("v2", {ZONE: "b"}),
    ]
    nodes = [labelled({ZONE: "a"}, "a"), labelled({ZONE: "b"}, "b"), labelled({}, "none")]
    assert run(pod(pvc("c1"), pvc("c2")), nodes, objects) == [CONFLICT, CONFLICT, FITS]


def test_nodes_alike_share_a_verdict() -> None:
    nodes = [labelled({ZONE: z, "x": str(i)}, f"n{i}") for i, z in enumerate("abab")]
    objects = [BOUND, zoned("v", {ZONE: "a"})]
    assert run(pod(pvc()), nodes, objects) == [FITS, CONFLICT, FITS, CONFLICT]


def pre_filter(the_pod: PodView, objects: Sequence[tuple[str, Any]]) -> object:
    the_plugin = plugin()
    state = the_plugin.pre_filter(Cycle(the_pod, Storage(objects=objects).snapshot([node()])))
    if state is SKIP:
        return SKIP
    return the_plugin.pre_filter_result(state).rejection


@pytest.mark.parametrize(
    ("the_pod", "objects", "outcome"),
    [
        pytest.param(pod(), [], SKIP, id="no volumes"),
        pytest.param(pod({"name": "e", "emptyDir": {}}), [], SKIP, id="no claims"),
        pytest.param(
            pod({"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}),
            [],
            SKIP,
            id="ephemeral volumes are not looked at",
        ),
        pytest.param(pod(pvc()), [BOUND, volume("v")], SKIP, id="volume without zone labels"),
        pytest.param(
            pod(pvc()), [BOUND, zoned("v", {ZONE: "a"})], "", id="zoned volume: no rejection"
        ),
        pytest.param(
            pod(pvc("gone")),
            [],
            'persistentvolumeclaim "gone" not found',
            id="missing claim",
        ),
        pytest.param(pod(pvc()), [BOUND], 'persistentvolume "v" not found', id="missing volume"),
        pytest.param(
            pod(pvc("")),
            [],
            "PersistentVolumeClaim had no name",
            id="claim without a name",
        ),
        pytest.param(
            pod(pvc()),
            [claim()],
            "PersistentVolumeClaim had no pv name and storageClass name",
            id="unbound claim without a class",
        ),
        pytest.param(
            pod(pvc()),
            [claim(storage_class="fast")],
            'storageclass.storage.k8s.io "fast" not found',
            id="missing class",
        ),
        pytest.param(
            pod(pvc()),
            [claim(storage_class="fast"), storage_class("fast", "WaitForFirstConsumer")],
            SKIP,
            id="unbound WaitForFirstConsumer claim is skipped",
        ),
        pytest.param(
            pod(pvc()),
            [claim(storage_class="fast"), storage_class("fast", "Immediate")],
            "PersistentVolume had no name",
            id="unbound Immediate claim",
        ),
        pytest.param(
            pod(pvc()),
            [claim(storage_class="fast"), storage_class("fast")],
            "PersistentVolume had no name",
            id="binding mode defaults to Immediate",
        ),
        pytest.param(
            pod(pvc()),
            [
                claim(
                    storage_class="fast",
                    annotations={"volume.beta.kubernetes.io/storage-class": "late"},
                ),
                storage_class("fast", "Immediate"),
                storage_class("late", "WaitForFirstConsumer"),
            ],
            SKIP,
            id="the beta class annotation wins",
        ),
        pytest.param(
            pod(pvc("c1"), pvc("c2")),
            [
                claim("c1", storage_class="late"),
                storage_class("late", "WaitForFirstConsumer"),
                claim("c2", "v"),
                zoned("v", {ZONE: "a"}),
            ],
            "",
            id="a skipped claim, then a zoned one",
        ),
    ],
)
def test_pre_filter(the_pod: PodView, objects: list[tuple[str, Any]], outcome: object) -> None:
    assert pre_filter(the_pod, objects) == outcome


@pytest.mark.parametrize(
    ("change", "woken"),
    [
        pytest.param(Change(EventKind.NODE_ADDED), True, id="node added"),
        pytest.param(Change(EventKind.NODE_LABELS), True, id="node labels"),
        pytest.param(Change(EventKind.NODE_TAINTS), False, id="node taints"),
        pytest.param(Change(EventKind.POD_DELETED), False, id="pod deleted"),
    ],
)
def test_wakes_on(change: Change, woken: bool) -> None:
    assert wakes(plugin(), pod(pvc()), change) is woken


def event(kind: EventKind, storage: Any, before: Any = None) -> ClusterEvent:
    """An event of ``kind``: the object now, and as it was (None: it is new)."""
    return ClusterEvent(kind, storage=storage, old_storage=before)


def volume_view(**labels: str) -> VolumeView:
    return VolumeView(volume(**labels)[1])


@pytest.mark.parametrize(
    ("the_event", "woken"),
    [
        pytest.param(event(EventKind.PVC_CHANGED, ClaimView(claim()[1])), True, id="its claim"),
        pytest.param(
            event(EventKind.PVC_CHANGED, ClaimView(claim("d")[1])), False, id="another claim"
        ),
        pytest.param(
            event(EventKind.PVC_CHANGED, ClaimView({"metadata": {"name": "c"}})),
            False,
            id="a claim in another namespace",
        ),
        pytest.param(event(EventKind.PV_CHANGED, VolumeView(volume()[1])), True, id="a volume"),
        pytest.param(
            event(
                EventKind.STORAGE_CLASS_CHANGED,
                StorageClassView(storage_class("s", "WaitForFirstConsumer")[1]),
            ),
            True,
            id="a WaitForFirstConsumer class",
        ),
        pytest.param(
            event(EventKind.STORAGE_CLASS_CHANGED, StorageClassView(storage_class("s")[1])),
            False,
            id="an Immediate class",
        ),
        pytest.param(
            event(
                EventKind.STORAGE_CLASS_CHANGED,
                StorageClassView(storage_class("s", "WaitForFirstConsumer")[1]),
                StorageClassView(storage_class("s", "WaitForFirstConsumer")[1]),
            ),
            False,
            id="a class updated (kube registers additions only)",
        ),
        pytest.param(
            event(EventKind.PV_CHANGED, volume_view(**{ZONE: "b"}), volume_view(**{ZONE: "a"})),
            True,
            id="a volume whose zone changed",
        ),
        pytest.param(
            event(EventKind.PV_CHANGED, volume_view(**{ZONE: "a"}), volume_view()),
            True,
            id="a volume given a zone",
        ),
        pytest.param(
            event(
                EventKind.PV_CHANGED,
                volume_view(**{ZONE: "a", "tier": "db"}),
                volume_view(**{ZONE: "a"}),
            ),
            False,
            id="a volume updated, its zone unchanged",
        ),
    ],
)
def test_storage_events(the_event: ClusterEvent, woken: bool) -> None:
    the_plugin = plugin()
    assert the_event.kind & the_plugin.wakes_on
    assert the_plugin.queueing_hint(pod(pvc()), the_event) is woken


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="VolumeZone takes no args"):
        volume_zone.new_filter({"x": 1}, "spec.predicates[0].args")
