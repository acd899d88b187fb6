"""The kinds of object the scheduler reads from the API server, each declared once.

A :class:`Kind` says where its objects are listed and watched (API group, version and resource;
whether a cluster may not serve its API), what of each object is kept (the model's slim form), what
the cache does with a change or a deletion (:class:`Store`), which cluster events a change and a
deletion raise, what a cluster dump's object of the kind must pass, and whether it is watched always
(nodes, pods, SchedulingPolicies) or only while a served policy has a plugin that reads it
(:func:`needed`). Everything else follows from :data:`KINDS`: the operator's watches and their count
(:mod:`~policy_scheduler.kube.scheduler`), the loop's feed (:meth:`~policy_scheduler.
scheduling.eventhandlers.EventHandlers.feed`), the kinds ``simulate`` takes from a cluster dump and
``explain`` reads from a live cluster, and the list-and-watch rules of ``deploy/rbac.yaml`` (which a
unit test holds to these declarations).

Adding a watched kind is one declaration here, with what its store in the model keeps, and the
plugins that read it saying so (their ``reads``, or the events their filters wake on).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import Filter, Reads
from policy_scheduler.model import disruption, namespaces, objects, podgroups, volumes, workloads
from policy_scheduler.model.nodeinfo import ClusterState
from policy_scheduler.model.objects import Raw
from policy_scheduler.model.podgroups import PodGroup
from policy_scheduler.model.volumes import StorageObject
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.policy.schema import GROUP, VERSION

Slim = Callable[[Raw], dict[str, Any]]
Stored = tuple[StorageObject | PodGroup | None, StorageObject | PodGroup | None]
"""A change as the cache took it: the object before (None: new) and as kept now, for the event
it raises (both None for a kind that raises none)."""

NOTHING: Stored = (None, None)
NO_EVENTS = EventKind(0)


@dataclass(frozen=True)
class Store:
    """What the cache does with the objects of one kind: where a change and a deletion go in
    its :class:`~policy_scheduler.model.nodeinfo.ClusterState`. A deletion gives the object as
    it was kept, for the event it raises (None: not known, or a kind that raises none)."""

    set: Callable[[ClusterState, Raw], Stored]
    delete: Callable[[ClusterState, Raw], StorageObject | None]


@dataclass(frozen=True)
class Kind:
    """One kind of object the scheduler reads (see the module's docstring)."""

    name: str
    """The objects' ``kind``, as a cluster dump and the model name them; for the kinds of
    several APIs that share one (the PodGroups), ``<kind>.<API group>`` (:func:`dump_kind`)."""
    group: str
    """The API group; "" for the core one."""
    version: str
    plural: str
    """The resource, as its collection's path and an RBAC rule name it."""
    store: Store | None = None
    """None: the loop takes these objects itself (nodes, pods, SchedulingPolicies)."""
    slim: Slim | None = None
    """What a watch keeps of each object; None: all but its managed fields."""
    events: EventKind = NO_EVENTS
    """The events a change raises: none for the kinds no filter of kube-scheduler registers for
    (kube raises none for them either), whose objects count from the next decision on."""
    deleted: EventKind = NO_EVENTS
    """The events a deletion raises: none for the kinds whose deletion no filter of
    kube-scheduler registers for, whose objects stop counting from the next decision on."""
    always: bool = False
    """Watched whatever the policies; otherwise only while a served policy reads the kind."""
    optional: bool = False
    """A cluster may not serve its API (a 404): it then has no objects of the kind."""
    field_selector: str = ""
    keeps_little: bool = False
    """Only a small part of each object is kept (a selector, a few fields): the watch lists it
    in small pages, as a page is decoded whole before it is slimmed."""
    check: Callable[[Raw], object] | None = None
    """What a cluster dump's object of the kind must pass to be one the API server would hold:
    it raises ObjectError (or ValueError) naming what is broken."""
    source: str = ""
    """The watch's name (in readiness, metrics and :meth:`~policy_scheduler.scheduling.scheduler.
    Scheduler.watch_confirmed`), when not :attr:`plural`."""

    @property
    def watch(self) -> str:
        """The name of the kind's watch."""
        return self.source or self.plural


def _workloads(kind: str) -> Store:
    def change(state: ClusterState, raw: Raw) -> Stored:
        state.workloads.set(kind, raw)
        return NOTHING

    return Store(change, lambda state, raw: state.workloads.delete(kind, raw))


def _namespace(state: ClusterState, raw: Raw) -> Stored:
    state.namespaces.set(raw)
    return NOTHING


def _disruption_budget(state: ClusterState, raw: Raw) -> Stored:
    state.disruption_budgets.set(raw)
    return NOTHING


def _pod_groups(kind: str) -> Store:
    def change(state: ClusterState, raw: Raw) -> Stored:
        return state.pod_groups.set(kind, raw)

    def delete(state: ClusterState, raw: Raw) -> None:
        state.pod_groups.delete(kind, raw)

    return Store(change, delete)


def _storage(kind: str) -> Store:
    def change(state: ClusterState, raw: Raw) -> Stored:
        before = state.volumes.known(kind, raw)
        return before, state.volumes.set(kind, raw)

    def delete(state: ClusterState, raw: Raw) -> StorageObject | None:
        return state.volumes.delete(kind, raw)

    return Store(change, delete)


def _check_storage(kind: str) -> Callable[[Raw], None]:
    return lambda raw: volumes.view_of(kind, raw).validate()


def _workload(name: str, group: str, plural: str) -> Kind:
    """A Service or a controller: its selector, for default topology spreading."""
    return Kind(
        name,
        group,
        "v1",
        plural,
        _workloads(name),
        workloads.slim,
        keeps_little=True,
    )


def _storage_kind(
    name: str,
    group: str,
    plural: str,
    events: EventKind,
    deleted: EventKind = NO_EVENTS,
    *,
    keeps_little: bool = True,
) -> Kind:
    """A storage or device object, as the volume plugins and DynamicResources read it."""
    return Kind(
        name,
        group,
        "v1",
        plural,
        _storage(name),
        functools.partial(volumes.slim, name),
        events,
        deleted,
        # The core ones are always served; an API group may not be.
        optional=bool(group),
        keeps_little=keeps_little,
        check=_check_storage(name),
    )


def _pod_group_kind(api: str) -> Kind:
    """The PodGroups of one API, which GangScheduling reads. A change lets the members it holds
    be asked again; a deletion raises nothing (the members of a group that is gone wait)."""
    name = podgroups.KIND_NAMES[api]
    group, version = podgroups.API_VERSIONS[api].split("/")
    return Kind(
        name,
        group,
        version,
        podgroups.PLURAL,
        _pod_groups(name),
        events=EventKind.POD_GROUP_CHANGED,
        # Kubernetes serves its own behind the GenericWorkload gate; the others are CRDs.
        optional=True,
        check=functools.partial(podgroups.parse, api),
        # The three share the resource's name.
        source=f"{podgroups.PLURAL}.{group}",
    )


def dump_kind(raw: Raw) -> str:
    """The :attr:`Kind.name` of a cluster dump's object: its ``kind``, but for a PodGroup the
    kind of the API its ``apiVersion`` names (another API's PodGroup keeps ``PodGroup``, no
    kind declared here)."""
    kind = str(raw.get("kind"))
    if kind == podgroups.KIND:
        return podgroups.kind_of(raw) or kind
    return kind


SCHEDULING_POLICY = "SchedulingPolicy"
# kube-scheduler's informer drops finished pods too. Assigned pods of every scheduler must be
# seen (they use node resources), so the selector cannot narrow the watch to pending pods of our
# scheduler names: a field selector cannot OR several values.
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"

NODES = Kind("Node", "", "v1", "nodes", slim=objects.slim_node, always=True)
PODS = Kind(
    "Pod",
    "",
    "v1",
    "pods",
    slim=objects.slim_pod,
    always=True,
    field_selector=UNFINISHED_PODS,
)
POLICIES = Kind(
    SCHEDULING_POLICY, GROUP, VERSION, "schedulingpolicies", always=True, source="policies"
)

KINDS: tuple[Kind, ...] = (
    NODES,
    PODS,
    POLICIES,
    # Its labels, which pod affinity's namespaceSelector matches.
    Kind(
        namespaces.KIND,
        "",
        "v1",
        "namespaces",
        Store(_namespace, lambda state, raw: state.namespaces.delete(raw)),
        namespaces.slim,
        keeps_little=True,
    ),
    _workload(workloads.SERVICE, "", "services"),
    _workload(workloads.REPLICATION_CONTROLLER, "", "replicationcontrollers"),
    _workload(workloads.REPLICA_SET, "apps", "replicasets"),
    _workload(workloads.STATEFUL_SET, "apps", "statefulsets"),
    _storage_kind(volumes.PVC, "", "persistentvolumeclaims", EventKind.PVC_CHANGED),
    _storage_kind(volumes.PV, "", "persistentvolumes", EventKind.PV_CHANGED),
    _storage_kind(
        volumes.STORAGE_CLASS, "storage.k8s.io", "storageclasses", EventKind.STORAGE_CLASS_CHANGED
    ),
    _storage_kind(volumes.CSI_NODE, "storage.k8s.io", "csinodes", EventKind.CSI_NODE_CHANGED),
    _storage_kind(volumes.CSI_DRIVER, "storage.k8s.io", "csidrivers", EventKind.CSI_DRIVER_CHANGED),
    _storage_kind(
        volumes.CSI_STORAGE_CAPACITY,
        "storage.k8s.io",
        "csistoragecapacities",
        EventKind.CSI_STORAGE_CAPACITY_CHANGED,
    ),
    # The volumes attached to a node, which NodeVolumeLimits counts. kube registers only their
    # deletion, which may free room under a node's limit.
    _storage_kind(
        volumes.VOLUME_ATTACHMENT,
        "storage.k8s.io",
        "volumeattachments",
        NO_EVENTS,
        EventKind.VOLUME_ATTACHMENT_DELETED,
    ),
    # kube registers a claim's deletion too: an allocated claim's devices are free again.
    _storage_kind(
        volumes.RESOURCE_CLAIM,
        "resource.k8s.io",
        "resourceclaims",
        EventKind.RESOURCE_CLAIM_CHANGED,
        EventKind.RESOURCE_CLAIM_CHANGED,
    ),
    # The devices the allocator hands out, and the classes claims ask for: kube registers
    # their addition and update (a deleted slice or class frees nothing).
    _storage_kind(
        volumes.RESOURCE_SLICE,
        "resource.k8s.io",
        "resourceslices",
        EventKind.RESOURCE_SLICE_CHANGED,
        # A slice is kept whole but for its managed fields.
        keeps_little=False,
    ),
    _storage_kind(
        volumes.DEVICE_CLASS, "resource.k8s.io", "deviceclasses", EventKind.DEVICE_CLASS_CHANGED
    ),
    # Taints of the devices they name: kube's slice tracker hands a rule's change (or deletion)
    # on as a change of the slices, which is the event it raises here.
    _storage_kind(
        volumes.DEVICE_TAINT_RULE,
        "resource.k8s.io",
        "devicetaintrules",
        EventKind.RESOURCE_SLICE_CHANGED,
        EventKind.RESOURCE_SLICE_CHANGED,
    ),
    # Which pods a budget protects, for preemption to spare them where it can. policy/v1 is
    # served by every Kubernetes this operator supports (since 1.21): not optional.
    Kind(
        disruption.KIND,
        "policy",
        "v1",
        "poddisruptionbudgets",
        Store(_disruption_budget, lambda state, raw: state.disruption_budgets.delete(raw)),
        disruption.slim,
        keeps_little=True,
        # Preemption would take a broken selector for one that protects nothing: say so.
        check=disruption.selector,
    ),
    *(_pod_group_kind(api) for api in podgroups.APIS),
)
NAMED: Mapping[str, Kind] = {kind.name: kind for kind in KINDS}
STORES: Mapping[str, Store] = {kind.name: kind.store for kind in KINDS if kind.store is not None}
"""The kinds the cache keeps in stores (all but nodes, pods and policies), by name."""
OPTIONAL = frozenset(kind.name for kind in KINDS if not kind.always)
"""The kinds watched only while a served policy reads them."""


def needed(policies: Iterable[CompiledPolicy]) -> frozenset[str]:
    """The kinds, of those not always watched, that the plugins of ``policies`` read: those a
    plugin says it reads (:class:`~policy_scheduler.framework.interface.Reads`) and those whose
    events (of a change or a deletion) a filter wakes on (kube-scheduler's EventsToRegister)."""
    names: set[str] = set()
    for policy in policies:
        for plugin in _plugins(policy):
            if isinstance(plugin, Reads):
                names |= plugin.reads
            if isinstance(plugin, Filter):
                names |= {
                    kind.name for kind in KINDS if (kind.events | kind.deleted) & plugin.wakes_on
                }
    return frozenset(names & OPTIONAL)


def _plugins(policy: CompiledPolicy) -> Iterator[object]:
    """Every plugin of ``policy``, at every extension point."""
    yield from policy.pipeline.filters
    yield from (weighted.scorer for weighted in policy.pipeline.scorers)
    extensions = policy.extensions
    for point in dataclasses.fields(extensions):
        yield from getattr(extensions, point.name)
