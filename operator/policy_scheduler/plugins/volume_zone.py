"""VolumeZone: a pod's bound volumes must be in the node's zone and region (kube-scheduler's
VolumeZone).

For each ``persistentVolumeClaim`` volume of the pod (generic ephemeral volumes are not looked
at), the claim's PersistentVolume's zone and region labels (``topology.kubernetes.io/zone``,
``topology.kubernetes.io/region`` and the deprecated ``failure-domain.beta.kubernetes.io/zone``
and ``/region``) must each hold the node's value of that label; a value may name several zones
joined by ``__`` (kube's ``volumehelpers.LabelZonesToSet``; a value with an empty member is
ignored). A deprecated label of the volume is matched by the node's deprecated label, else by its
GA one. A node with none of the four labels fits (a single-zone cluster), and so does a node
whose labels match; any other fails with "node(s) had no available volume zone".

At pre-filter, as kube's: a claim the pod names that does not exist rejects the pod with the
lister's text (``persistentvolumeclaim "data" not found``), as does a missing volume or class; an
unbound claim is skipped when its StorageClass binds WaitForFirstConsumer, and otherwise rejects
the pod ("PersistentVolume had no name", or "PersistentVolumeClaim had no pv name and
storageClass name" when it names no class). A pod whose volumes carry no zone labels is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    SKIP,
    Filter,
    PreFilterResult,
    Rejections,
    Skip,
    filter_each,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView, _mapping
from policy_scheduler.model.volumes import (
    WAIT_FOR_FIRST_CONSUMER,
    ClaimView,
    StorageClassView,
    VolumeView,
)
from policy_scheduler.plugins.helper import filter_alike

NAME = "VolumeZone"

CONFLICT = "node(s) had no available volume zone"

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
# In kube's order: a volume's topologies are checked in it.
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
_MULTI_ZONE_DELIMITER = "__"


def label_zones(value: str) -> frozenset[str] | None:
    """kube's ``LabelZonesToSet``: the ``__``-separated zones, trimmed; None when one is empty."""
    zones = [zone.strip() for zone in value.split(_MULTI_ZONE_DELIMITER)]
    return None if "" in zones else frozenset(zones)


def volume_topologies(volume: VolumeView) -> tuple[tuple[str, frozenset[str]], ...]:
    """The zone and region labels of a PV, in kube's order, with the values each allows."""
    topologies = []
    for key in TOPOLOGY_LABELS:
        if key in volume.labels:
            zones = label_zones(str(volume.labels[key]))
            if zones is not None:
                topologies.append((key, zones))
    return tuple(topologies)


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[tuple[str, frozenset[str]], ...] = ()
    """Each label key a volume of the pod carries, with the values it allows."""
    rejection: str = ""


def _claim_names(pod: PodView) -> list[str]:
    return [
        str(_mapping(v["persistentVolumeClaim"]).get("claimName") or "")
        for v in pod.volumes
        if v.get("persistentVolumeClaim") is not None
    ]


def _topologies(pod: PodView, snapshot: Snapshot) -> _State:
    volumes = snapshot.volumes
    topologies: list[tuple[str, frozenset[str]]] = []
    for name in _claim_names(pod):
        if not name:
            return _State(rejection="PersistentVolumeClaim had no name")
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            return _State(rejection=f'persistentvolumeclaim "{name}" not found')
        if not claim.volume_name:
            class_name = claim.class_name
            if not class_name:
                return _State(
                    rejection="PersistentVolumeClaim had no pv name and storageClass name"
                )
            storage_class: StorageClassView | None = volumes.storage_class(class_name)
            if storage_class is None:
                return _State(rejection=f'storageclass.storage.k8s.io "{class_name}" not found')
            # The API server defaults a class's binding mode to Immediate, so kube's "not set"
            # error cannot happen for a class it reads; the view defaults it the same way.
            if storage_class.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            return _State(rejection="PersistentVolume had no name")
        volume = volumes.volume(claim.volume_name)
        if volume is None:
            return _State(rejection=f'persistentvolume "{claim.volume_name}" not found')
        topologies.extend(volume_topologies(volume))
    return _State(tuple(topologies))


def _fits(topologies: Sequence[tuple[str, frozenset[str]]], labels: Mapping[str, str]) -> bool:
    if not any(key in labels for key in TOPOLOGY_LABELS):
        # A node without zone labels: a single-zone cluster.
        return True
    for key, zones in topologies:
        value = labels.get(key)
        if value is None:
            value = labels.get(_GA.get(key, key))
        if value is None or value not in zones:
            return False
    return True


class _VolumeZoneFilter(Filter[_State]):
    name = NAME

    # UnschedulableAndUnresolvable in kube-scheduler: a volume's zone does not change.
    resolvable_reasons = frozenset()

    # kube registers Node/Add|UpdateNodeLabel (v1.37 always runs queueing hints; v1.34 added
    # node taint updates only with them off), StorageClass/Add, PVC/Add|Update and PV/Add|Update.
    wakes_on = (
        EventKind.NODE_ADDED
        | EventKind.NODE_LABELS
        | EventKind.PVC_CHANGED
        | EventKind.PV_CHANGED
        | EventKind.STORAGE_CLASS_CHANGED
    )

    def pre_filter(self, cycle: Cycle) -> _State | Skip:
        if not cycle.pod.volumes:
            return SKIP
        state = _topologies(cycle.pod, cycle.snapshot)
        return state if state.rejection or state.topologies else SKIP

    def pre_filter_result(self, state: _State) -> PreFilterResult:
        return PreFilterResult(rejection=state.rejection) if state.rejection else ANY_NODE

    def filter(self, state: _State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return FITS if _fits(state.topologies, node.node.labels) else (CONFLICT,)

    def filter_nodes(self, state: _State, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Nodes with the same zone and region labels get the same verdict.
        kinds = nodes.label_kinds(TOPOLOGY_LABELS)
        if kinds is None:
            return filter_each(self, state, pod, nodes)
        return filter_alike(self, state, pod, nodes, kinds)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints: a claim the pod names, in its namespace; a new WaitForFirstConsumer
        class (kube registers StorageClass additions only); a new PV, or one whose zone and
        region labels changed."""
        storage, before = event.storage, event.old_storage
        if event.kind & EventKind.PVC_CHANGED and isinstance(storage, ClaimView):
            return storage.namespace == pod.namespace and storage.name in _claim_names(pod)
        if event.kind & EventKind.STORAGE_CLASS_CHANGED and isinstance(storage, StorageClassView):
            return before is None and storage.binding_mode == WAIT_FOR_FIRST_CONSUMER
        if isinstance(storage, VolumeView) and isinstance(before, VolumeView):
            return volume_topologies(before) != volume_topologies(storage)
        return True


def new_filter(args: Args, path: str) -> Filter[Any]:
    no_args(NAME, args, path)
    return _VolumeZoneFilter()
