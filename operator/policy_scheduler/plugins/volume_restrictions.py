"""VolumeRestrictions: volumes that two pods may not share (kube-scheduler's VolumeRestrictions).

Two checks, in kube-scheduler v1.37's order (as v1.34's):

* **Disk conflicts** between the pod's inline volumes and those of the pods already on the node:
  the same GCE PD (``pdName``) unless both mount it read-only; the same AWS EBS volume
  (``volumeID``), always; the same ISCSI target (``iqn``) unless both are read-only; the same
  Ceph RBD image (a shared monitor, same pool and image) unless both are read-only. A conflict
  fails the node with "node(s) had no available disk".
* **ReadWriteOncePod**: when a PersistentVolumeClaim of the pod (a ``persistentVolumeClaim``
  volume; generic ephemeral volumes are not looked at) has that access mode and a pod in the
  snapshot, on any node, already uses the claim, every node fails with "node(s) unavailable due
  to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod". kube
  says so per node (Unschedulable, so that preemption may free the claim), not in PreFilter.

A claim the pod names that does not exist rejects the pod at pre-filter, with the lister's
not-found text (``persistentvolumeclaim "data" not found``). A pod with neither inline disks of
those kinds nor a ReadWriteOncePod claim in use is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

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
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView, Raw, _mapping, _sequence
from policy_scheduler.model.volumes import READ_WRITE_ONCE_POD, ClaimView
from policy_scheduler.plugins.helper import filter_where

NAME = "VolumeRestrictions"

DISK_CONFLICT = "node(s) had no available disk"
READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already"
    " in-use by another pod"
)
_DISK_KINDS = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")


def claim_not_found(name: str) -> str:
    """The text of the PVC lister's NotFound error, which kube-scheduler's plugins report."""
    return f'persistentvolumeclaim "{name}" not found'


def _claim_volume_names(pod: PodView) -> list[str]:
    """The claims of the pod's ``persistentVolumeClaim`` volumes (not its ephemeral ones)."""
    return [
        str(_mapping(v["persistentVolumeClaim"]).get("claimName") or "")
        for v in pod.volumes
        if v.get("persistentVolumeClaim") is not None
    ]


def _needs_check(volume: Raw) -> bool:
    return any(volume.get(kind) is not None for kind in _DISK_KINDS)


def _read_only(source: Raw) -> bool:
    return source.get("readOnly") is True


def _conflict(volume: Raw, existing: Raw) -> bool:
    """Whether two pods' volumes are the same disk, used in a way that kube forbids."""
    for kind in _DISK_KINDS:
        if volume.get(kind) is None or existing.get(kind) is None:
            continue
        mine, theirs = _mapping(volume[kind]), _mapping(existing[kind])
        both_read_only = _read_only(mine) and _read_only(theirs)
        if kind == "gcePersistentDisk":
            if mine.get("pdName") == theirs.get("pdName") and not both_read_only:
                return True
        elif kind == "awsElasticBlockStore":
            # EBS volumes conflict even when both are read-only.
            if mine.get("volumeID") == theirs.get("volumeID"):
                return True
        elif kind == "iscsi":
            if mine.get("iqn") == theirs.get("iqn") and not both_read_only:
                return True
        elif (
            set(map(str, _sequence(mine.get("monitors"))))
            & set(map(str, _sequence(theirs.get("monitors"))))
            and mine.get("pool", "rbd") == theirs.get("pool", "rbd")
            and mine.get("image") == theirs.get("image")
            and not both_read_only
        ):
            # RBD: the API server defaults the pool to "rbd".
            return True
    return False


def _conflicts_with(disks: Sequence[Raw], pod: PodView) -> bool:
    return any(_conflict(disk, existing) for disk in disks for existing in pod.volumes)


@dataclass(frozen=True, slots=True)
class _State:
    disks: tuple[Raw, ...]
    """The pod's volumes of the kinds that can conflict."""
    in_use: bool = False
    """A ReadWriteOncePod claim of the pod is used by a pod in the snapshot."""
    rejection: str = ""
    """Why no node fits (a claim is missing)."""
    read_write_once_pod: frozenset[str] = frozenset()
    """The pod's ReadWriteOncePod claims, for ``add_pod`` and ``remove_pod``."""
    users: int = 0
    """How many times the pods of the snapshot use them (kube's conflictingPVCRefCount):
    ``in_use`` when not 0."""


class _VolumeRestrictionsFilter(Filter[_State]):
    name = NAME

    # Disk and ReadWriteOncePod conflicts are with pods that may be evicted; anything else
    # (a claim not found) is UnschedulableAndUnresolvable in kube-scheduler.
    resolvable_reasons = frozenset({DISK_CONFLICT, READ_WRITE_ONCE_POD_CONFLICT})
    # Whether a ReadWriteOncePod claim is in use counts the pods using it (kube's AddPod/
    # RemovePod update that count); it skips only when none is, which fewer pods cannot change.
    pre_filter_counts_pods = True

    # kube registers Node/Add (v1.37 always runs queueing hints; v1.34 added node label and
    # taint updates only with them off), AssignedPod/Delete and PVC/Add (the hint lets a
    # claim's update through as no addition).
    wakes_on = EventKind.NODE_ADDED | EventKind.POD_DELETED | EventKind.PVC_CHANGED

    def pre_filter(self, cycle: Cycle) -> _State | Skip:
        pod = cycle.pod
        if not pod.volumes:
            return SKIP
        disks = tuple(v for v in pod.volumes if _needs_check(v))
        exclusive: set[str] = set()
        for name in _claim_volume_names(pod):
            claim: ClaimView | None = cycle.snapshot.volumes.claim(pod.namespace, name)
            if claim is None:
                return _State(disks, rejection=claim_not_found(name))
            if READ_WRITE_ONCE_POD in claim.access_modes:
                exclusive.add(name)
        users = sum(
            cycle.snapshot.claim_users.get(f"{pod.namespace}/{name}", 0) for name in exclusive
        )
        if not disks and not users:
            return SKIP
        return _State(disks, bool(users), read_write_once_pod=frozenset(exclusive), users=users)

    def add_pod(self, state: _State, cycle: Cycle, pod: PodView, node: NodeInfo) -> _State:
        return _with_pod(state, cycle.pod, pod, 1)

    def remove_pod(self, state: _State, cycle: Cycle, pod: PodView, node: NodeInfo) -> _State:
        return _with_pod(state, cycle.pod, pod, -1)

    def pre_filter_result(self, state: _State) -> PreFilterResult:
        return PreFilterResult(rejection=state.rejection) if state.rejection else ANY_NODE

    def filter(self, state: _State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if state.disks and any(_conflicts_with(state.disks, p) for p in node.pods.values()):
            return (DISK_CONFLICT,)
        if state.in_use:
            return (READ_WRITE_ONCE_POD_CONFLICT,)
        return FITS

    def filter_nodes(self, state: _State, pod: PodView, nodes: NodeBlock) -> Rejections:
        if not state.disks:
            # Only the claim in use can fail a node, and it fails them all alike.
            every = np.arange(len(nodes), dtype=np.intp)
            return {(READ_WRITE_ONCE_POD_CONFLICT,): every} if state.in_use else {}
        if state.in_use:
            return super().filter_nodes(state, pod, nodes)
        # Only a node with pods can hold a conflicting disk.
        return filter_where(self, state, pod, nodes, nodes.pod_count() > 0)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints: a deleted pod of the pod's namespace that held a conflicting disk or
        used one of its claims; a new claim of the pod's namespace that the pod names."""
        if event.kind & EventKind.POD_DELETED and event.pod is not None:
            deleted = event.pod
            if deleted.namespace != pod.namespace:
                return False
            disks = [v for v in pod.volumes if _needs_check(v)]
            if disks and _conflicts_with(disks, deleted):
                return True
            return bool(set(_claim_volume_names(pod)) & set(_claim_volume_names(deleted)))
        if event.kind & EventKind.PVC_CHANGED and isinstance(event.storage, ClaimView):
            claim = event.storage
            if event.old_storage is not None:
                return False
            return claim.namespace == pod.namespace and claim.name in _claim_volume_names(pod)
        return True


def _with_pod(state: _State, incoming: PodView, pod: PodView, delta: int) -> _State:
    """``state`` with ``pod``'s uses of the ReadWriteOncePod claims counted ``delta`` more
    times, as the snapshot's claim users count them (kube's updateWithPod)."""
    if pod.namespace != incoming.namespace or not state.read_write_once_pod:
        return state
    uses = sum(name in state.read_write_once_pod for name in pod.claim_names)
    if not uses:
        return state
    users = state.users + delta * uses
    return replace(state, in_use=bool(users), users=users)


def new_filter(args: Args, path: str) -> Filter[Any]:
    no_args(NAME, args, path)
    return _VolumeRestrictionsFilter()
