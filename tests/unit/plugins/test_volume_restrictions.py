"""VolumeRestrictions rejects nodes where the pod's inline disks conflict with their pods', and
every node when a ReadWriteOncePod claim of the pod is in use, as kube-scheduler v1.37 does."""

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
from policy_scheduler.model.volumes import PVC, ClaimView, Volumes
from policy_scheduler.plugins import volume_restrictions

DISK = ("node(s) had no available disk",)
RWOP = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already"
    " in-use by another pod",
)


@dataclass(frozen=True)
class Storage(Around):
    """A snapshot that also holds these PersistentVolumeClaims."""

    claims: Sequence[Mapping[str, Any]] = ()

    def snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        volumes = Volumes()
        for raw in self.claims:
            volumes.set(PVC, raw)
        return Snapshot(nodes, volumes=volumes)


def claim(name: str, *modes: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": list(modes or ["ReadWriteOnce"])},
    }


def pvc(name: str) -> dict[str, Any]:
    return {"name": f"v-{name}", "persistentVolumeClaim": {"claimName": name}}


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "gce", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def ebs(volume_id: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "ebs", "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    source = {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}
    return {"name": "iscsi", "iscsi": source}


def rbd(
    monitors: Sequence[str], image: str, pool: str | None = None, read_only: bool = False
) -> dict[str, Any]:
    source: dict[str, Any] = {"monitors": list(monitors), "image": image, "readOnly": read_only}
    if pool is not None:
        source["pool"] = pool
    return {"name": "rbd", "rbd": source}


def pod(*volumes: Any, name: str = "p", namespace: str = "ns") -> PodView:
    return make_pod(name, namespace, containers=[{"name": "c"}], volumes=list(volumes))


def plugin() -> Filter[Any]:
    return volume_restrictions.new_filter({}, "spec.predicates[0].args")


def run(
    the_pod: PodView, nodes: Sequence[NodeInfo], claims: Sequence[Mapping[str, Any]] = ()
) -> list[tuple[str, ...]]:
    return filter_nodes(plugin(), the_pod, nodes, around=Storage(claims=claims))


def on_node(*volumes: Any, name: str = "existing", namespace: str = "ns") -> NodeInfo:
    return make_node("n", None, pod(*volumes, name=name, namespace=namespace))


@pytest.mark.parametrize(
    ("mine", "theirs", "reasons"),
    [
        pytest.param(gce("a"), gce("a"), DISK, id="same GCE PD"),
        pytest.param(gce("a", True), gce("a"), DISK, id="same GCE PD, one read-only"),
        pytest.param(gce("a", True), gce("a", True), FITS, id="same GCE PD, both read-only"),
        pytest.param(gce("a"), gce("b"), FITS, id="other GCE PD"),
        pytest.param(ebs("v1"), ebs("v1"), DISK, id="same EBS volume"),
        pytest.param(ebs("v1", True), ebs("v1", True), DISK, id="same EBS volume, read-only"),
        pytest.param(ebs("v1"), ebs("v2"), FITS, id="other EBS volume"),
        pytest.param(iscsi("iqn.a"), iscsi("iqn.a"), DISK, id="same ISCSI target"),
        pytest.param(
            iscsi("iqn.a", True), iscsi("iqn.a", True), FITS, id="same ISCSI target, read-only"
        ),
        pytest.param(iscsi("iqn.a"), iscsi("iqn.b"), FITS, id="other ISCSI target"),
        pytest.param(rbd(["m1", "m2"], "i"), rbd(["m2"], "i"), DISK, id="RBD: shared monitor"),
        pytest.param(rbd(["m1"], "i"), rbd(["m2"], "i"), FITS, id="RBD: no shared monitor"),
        pytest.param(rbd(["m1"], "i"), rbd(["m1"], "j"), FITS, id="RBD: other image"),
        pytest.param(rbd(["m1"], "i", "a"), rbd(["m1"], "i", "b"), FITS, id="RBD: other pool"),
        pytest.param(
            rbd(["m1"], "i", "rbd"), rbd(["m1"], "i"), DISK, id="RBD: pool defaults to rbd"
        ),
        pytest.param(
            rbd(["m1"], "i", read_only=True),
            rbd(["m1"], "i", read_only=True),
            FITS,
            id="RBD: both read-only",
        ),
        pytest.param(gce("a"), ebs("a"), FITS, id="different kinds never conflict"),
    ],
)
def test_disk_conflicts(mine: Any, theirs: Any, reasons: tuple[str, ...]) -> None:
    assert run(pod(mine), [on_node(theirs)]) == [reasons]


def test_disk_conflicts_are_per_node() -> None:
    nodes = [make_node("empty"), on_node(gce("a")), make_node("other", None, pod(gce("b")))]
    assert run(pod(gce("a")), nodes) == [FITS, DISK, FITS]


def test_disk_conflicts_ignore_namespaces() -> None:
    assert run(pod(ebs("v1")), [on_node(ebs("v1"), namespace="other")]) == [DISK]


@pytest.mark.parametrize(
    ("the_pod", "nodes", "claims", "reasons"),
    [
        pytest.param(
            pod(pvc("c")),
            [make_node("a"), on_node(pvc("c"))],
            [claim("c", "ReadWriteOncePod")],
            [RWOP, RWOP],
            id="claim in use: every node fails",
        ),
        pytest.param(
            pod(pvc("c")),
            [make_node("a")],
            [claim("c", "ReadWriteOncePod")],
            [FITS],
            id="claim not in use",
        ),
        pytest.param(
            pod(pvc("c")),
            [on_node(pvc("c"))],
            [claim("c", "ReadWriteOnce", "ReadOnlyMany")],
            [FITS],
            id="other access modes may be shared",
        ),
        pytest.param(
            pod(pvc("c")),
            [on_node(pvc("c"), namespace="other")],
            [claim("c", "ReadWriteOncePod"), claim("c", namespace="other")],
            [FITS],
            id="same claim name in another namespace",
        ),
        pytest.param(
            pod(pvc("c"), gce("a")),
            [on_node(pvc("c"), gce("a")), make_node("b")],
            [claim("c", "ReadWriteOncePod")],
            [DISK, RWOP],
            id="a disk conflict is reported first",
        ),
    ],
)
def test_read_write_once_pod(
    the_pod: PodView,
    nodes: list[NodeInfo],
    claims: list[dict[str, Any]],
    reasons: list[tuple[str, ...]],
) -> None:
    assert run(the_pod, nodes, claims) == reasons


def cycle(the_pod: PodView, claims: Sequence[Mapping[str, Any]] = ()) -> Cycle:
    return Cycle(the_pod, Storage(claims=claims).snapshot([on_node(pvc("c"))]))


@pytest.mark.parametrize(
    ("the_pod", "claims"),
    [
        pytest.param(pod(), [], id="no volumes"),
        pytest.param(pod({"name": "e", "emptyDir": {}}), [], id="no disks or claims"),
        pytest.param(pod(pvc("c")), [claim("c")], id="claims without ReadWriteOncePod"),
        pytest.param(
            pod(pvc("free")),
            [claim("free", "ReadWriteOncePod")],
            id="ReadWriteOncePod claim not in use",
        ),
        pytest.param(
            pod({"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}),
            [],
            id="ephemeral volumes are not looked up",
        ),
    ],
)
def test_skips(the_pod: PodView, claims: list[dict[str, Any]]) -> None:
    assert plugin().pre_filter(cycle(the_pod, claims)) is SKIP


def test_a_missing_claim_rejects_the_pod_at_pre_filter() -> None:
    the_plugin = plugin()
    state = the_plugin.pre_filter(cycle(pod(gce("a"), pvc("gone"))))
    assert state is not SKIP
    rejection = the_plugin.pre_filter_result(state).rejection
    assert rejection == 'persistentvolumeclaim "gone" not found'


def test_a_pod_with_disks_is_not_rejected_at_pre_filter() -> None:
    the_plugin = plugin()
    state = the_plugin.pre_filter(cycle(pod(gce("a"))))
    assert state is not SKIP
    assert the_plugin.pre_filter_result(state).rejection == ""
    assert the_plugin.pre_filter_result(state).node_names is None


def claim_event(name: str, namespace: str = "ns", *, updated: bool = False) -> ClusterEvent:
    """Claim ``name`` added, or ``updated`` (the event then carries it as it was)."""
    view = ClaimView(claim(name, namespace=namespace))
    return ClusterEvent(EventKind.PVC_CHANGED, storage=view, old_storage=view if updated else None)


@pytest.mark.parametrize(
    ("the_pod", "change", "woken"),
    [
        pytest.param(pod(gce("a")), Change(EventKind.NODE_ADDED), True, id="node added"),
        pytest.param(pod(gce("a")), Change(EventKind.NODE_LABELS), False, id="node labels"),
        pytest.param(
            pod(gce("a")),
            Change(EventKind.POD_DELETED, pod=pod(gce("a"), name="q")),
            True,
            id="deleted pod held the disk",
        ),
        pytest.param(
            pod(gce("a")),
            Change(EventKind.POD_DELETED, pod=pod(gce("b"), name="q")),
            False,
            id="deleted pod held another disk",
        ),
        pytest.param(
            pod(gce("a")),
            Change(EventKind.POD_DELETED, pod=pod(gce("a"), name="q", namespace="other")),
            False,
            id="deleted pod in another namespace",
        ),
        pytest.param(
            pod(pvc("c")),
            Change(EventKind.POD_DELETED, pod=pod(pvc("c"), name="q")),
            True,
            id="deleted pod used the claim",
        ),
        pytest.param(
            pod(pvc("c")),
            Change(EventKind.POD_DELETED, pod=pod(pvc("d"), name="q")),
            False,
            id="deleted pod used another claim",
        ),
        pytest.param(pod(pvc("c")), Change(EventKind.POD_ADDED), False, id="pod added"),
    ],
)
def test_wakes_on(the_pod: PodView, change: Change, woken: bool) -> None:
    assert wakes(plugin(), the_pod, change) is woken


@pytest.mark.parametrize(
    ("event", "woken"),
    [
        pytest.param(claim_event("c"), True, id="the pod's claim"),
        pytest.param(claim_event("d"), False, id="another claim"),
        pytest.param(claim_event("c", "other"), False, id="a claim in another namespace"),
        pytest.param(
            claim_event("c", updated=True),
            False,
            id="the pod's claim updated (kube registers additions only)",
        ),
    ],
)
def test_claim_events(event: ClusterEvent, woken: bool) -> None:
    the_plugin = plugin()
    assert event.kind & the_plugin.wakes_on
    assert the_plugin.queueing_hint(pod(pvc("c")), event) is woken


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="VolumeRestrictions takes no args"):
        volume_restrictions.new_filter({"x": 1}, "spec.predicates[0].args")
