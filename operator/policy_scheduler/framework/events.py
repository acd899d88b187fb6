"""Cluster events: what changed in the cluster, as kube-scheduler's ClusterEvent names a resource
and an action (pkg/scheduler/framework/events.go and types.go). Filters register for the events
that can turn a rejection into a fit; the queue moves a parked pod only on such an event.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.podgroups import PodGroup
from policy_scheduler.model.volumes import StorageObject


class EventKind(enum.Flag):
    """What changed in the cluster, as kube-scheduler's ClusterEvent names a resource and an
    action. Pod events are about assigned pods (bound, or assumed by this scheduler)."""

    NODE_ADDED = enum.auto()
    NODE_DELETED = enum.auto()
    NODE_ALLOCATABLE = enum.auto()
    NODE_LABELS = enum.auto()
    NODE_TAINTS = enum.auto()
    NODE_UNSCHEDULABLE = enum.auto()
    NODE_DECLARED_FEATURES = enum.auto()
    POD_ADDED = enum.auto()
    POD_DELETED = enum.auto()
    POD_LABELS = enum.auto()
    POD_SCALED_DOWN = enum.auto()
    # A storage or device object was added or changed (kube-scheduler registers Add|Update).
    PVC_CHANGED = enum.auto()
    PV_CHANGED = enum.auto()
    STORAGE_CLASS_CHANGED = enum.auto()
    CSI_NODE_CHANGED = enum.auto()
    CSI_DRIVER_CHANGED = enum.auto()
    CSI_STORAGE_CAPACITY_CHANGED = enum.auto()
    RESOURCE_CLAIM_CHANGED = enum.auto()
    RESOURCE_SLICE_CHANGED = enum.auto()
    DEVICE_CLASS_CHANGED = enum.auto()
    # A storage object was deleted (kube-scheduler registers Delete for this kind only).
    VOLUME_ATTACHMENT_DELETED = enum.auto()
    # A pod group (of any API the GangScheduling plugin reads) was added or changed; no filter
    # registers for it, so it is not in ALL_EVENTS: it lets held members be asked again.
    POD_GROUP_CHANGED = enum.auto()


NODE_EVENTS: Final = (
    EventKind.NODE_ADDED
    | EventKind.NODE_DELETED
    | EventKind.NODE_ALLOCATABLE
    | EventKind.NODE_LABELS
    | EventKind.NODE_TAINTS
    | EventKind.NODE_UNSCHEDULABLE
    | EventKind.NODE_DECLARED_FEATURES
)


POD_EVENTS: Final = (
    EventKind.POD_ADDED | EventKind.POD_DELETED | EventKind.POD_LABELS | EventKind.POD_SCALED_DOWN
)


STORAGE_EVENTS: Final = (
    EventKind.PVC_CHANGED
    | EventKind.PV_CHANGED
    | EventKind.STORAGE_CLASS_CHANGED
    | EventKind.CSI_NODE_CHANGED
    | EventKind.CSI_DRIVER_CHANGED
    | EventKind.CSI_STORAGE_CAPACITY_CHANGED
    | EventKind.RESOURCE_CLAIM_CHANGED
    | EventKind.RESOURCE_SLICE_CHANGED
    | EventKind.DEVICE_CLASS_CHANGED
    | EventKind.VOLUME_ATTACHMENT_DELETED
)


ALL_EVENTS: Final = NODE_EVENTS | POD_EVENTS | STORAGE_EVENTS


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """One change: its kinds (a node update may change labels and taints at once), the node it
    is about (as it is now; the deleted node for NODE_DELETED; for a pod event, the pod's node,
    when known), the pod, for a pod event, for a node update, the node as it was before
    (None when not known: a hint then reads the update as it would the node's addition), and
    for a storage event (or a pod group's), the object as it is now and as it was
    (``old_storage``, None for an addition: a hint tells an Add from an Update by it, as kube's
    hints do; ``storage`` None for a deletion, ``old_storage`` the object as it was last
    known)."""

    kind: EventKind
    node: NodeView | None = None
    pod: PodView | None = None
    old_node: NodeView | None = None
    storage: StorageObject | PodGroup | None = None
    old_storage: StorageObject | PodGroup | None = None
