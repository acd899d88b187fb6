"""Read-only views over raw Kubernetes Pod and Node dicts, as the API server returns them.

Views never copy or rewrite the object; they parse what the scheduler needs once, on first use
(``cached_property``), so a pod that sits in the cache for hours is parsed at most once. A
malformed quantity raises :class:`ObjectError` naming the object and the field.
:func:`slim_pod` and :func:`slim_node` are what the informers keep of each object: what the views
and the plugins read, and nothing else.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from typing import Any

import orjson

from policy_scheduler.model.quantity import CPU, MEMORY, PODS, QuantityError, to_int
from policy_scheduler.model.selectors import RequiredNodeAffinity

Raw = Mapping[str, Any]
Resources = dict[str, int]
AffinityGroup = tuple[str, frozenset[tuple[str, str]], str]

# kube-scheduler scores a container that requests no CPU or memory as if it asked for these
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), so that empty pods still
# spread instead of all landing on the node that looks emptiest.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    CPU: DEFAULT_MILLI_CPU_REQUEST,
    MEMORY: DEFAULT_MEMORY_REQUEST,
}

REQUIRED_NODE_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"


def _pod_level(name: str) -> bool:
    """component-helpers' IsSupportedPodLevelResource: pod-level requests (spec.resources) may
    set only these; the rest still come from containers."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


class ObjectError(ValueError):
    """A Pod or Node the scheduler cannot read, with the object and field named."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An API object the scheduler writes: ``resource`` is the plural path of its collection, as
    ``persistentvolumeclaims``; ``namespace`` is empty for a cluster-scoped one; ``subresource``
    names the part written, e.g. ``status`` (empty: the object itself)."""

    api_version: str
    resource: str
    name: str
    namespace: str = ""
    subresource: str = ""


def rfc3339(moment: datetime) -> str:
    """A time as Kubernetes writes a ``metav1.Time`` in a status: RFC 3339, seconds, UTC (a
    time without a zone is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _mapping(value: object) -> Raw:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


@lru_cache(maxsize=4096)
def _timestamp(text: str) -> float:
    # Pods started together share the text: parsed once for all their views.
    return datetime.fromisoformat(text).timestamp()


# What the scheduler reads of a Pod (PodView, the plugins, the loop) besides its spec: the rest of
# its metadata and status (annotations, the containers' statuses, IPs, ...) and most of each
# container (command, env, probes, mounts, ...) is bookkeeping of other controllers, often most of
# a running pod's bytes. kube-scheduler keeps whole pods; we keep this.
_POD_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
)
# The pod-level resources and allocatedResources: what an in-place resize has come to.
_POD_STATUS = (
    "phase",
    "conditions",
    "nominatedNodeName",
    "startTime",
    "resourceClaimStatuses",
    "resources",
    "allocatedResources",
)
# Of each container's status only what an in-place resize has come to.
_CONTAINER_STATUS = ("name", "resources", "allocatedResources")
_CONTAINER_STATUS_LISTS = ("containerStatuses", "initContainerStatuses")
# Requests, host ports, images (ImageLocality), sidecars (restartPolicy of an init container) and
# restart rules (a node feature, NodeDeclaredFeatures).
_CONTAINER = ("name", "image", "resources", "ports", "restartPolicy", "restartPolicyRules")
_CONTAINER_LISTS = ("containers", "initContainers")
# Ephemeral containers request nothing and are never scheduled: of them, as of the other
# containers' volume mounts, only the mounts with bindMountOptions are kept, a node feature.
_EPHEMERAL_CONTAINERS = "ephemeralContainers"
# Of the annotations, only Volcano's naming the pod's PodGroup (model/podgroups.py).
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_POD_ANNOTATIONS = (VOLCANO_GROUP_ANNOTATION,)
_NODE_METADATA = ("name", "uid", "resourceVersion", "labels")
_NODE_SPEC = ("unschedulable", "taints")
_NODE_STATUS = ("allocatable", "images", "declaredFeatures")

# The node features (a node's status.declaredFeatures) a pod needs to be scheduled there, as
# k8s.io/component-helpers' nodedeclaredfeatures infers them for scheduling (InferForScheduling
# of its registered features; the others are inferred for pod updates only, which the kubelet
# checks, or never).
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
"""A container's ``restartPolicyRules`` with the action ``RestartAllContainers``."""
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
"""``hostNetwork: true`` with ``hostUsers: false``."""
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"
"""A volume mount with ``bindMountOptions``, of any container, ephemeral ones included."""


DISRUPTION_TARGET = "DisruptionTarget"
"""The pod condition a scheduler's preemption sets on its victims, with this reason:"""
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _canonical(value: object) -> str:
    """``value`` as JSON with sorted keys: equal for equal values, whatever their keys' order.
    Anything JSON has no type for is written as its ``str``, a key that is not a string (from a
    hand-written YAML file) as its text."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    try:
        return orjson.dumps(value, default=str, option=option).decode()
    except TypeError:
        # An integer beyond 64 bits, which orjson does not write (the API server refuses them
        # too, so only a hand-written file has one): the standard library does.
        return json.dumps(value, sort_keys=True, default=str)


def _only(raw: object, keys: Sequence[str]) -> dict[str, Any]:
    mapping = _mapping(raw)
    return {key: mapping[key] for key in keys if key in mapping}


def slim_pod(raw: Raw) -> dict[str, Any]:
    """What the scheduler reads of a Pod, as an informer keeps it: all of its spec but each
    container's command, environment, probes and the like (of ephemeral containers and volume
    mounts only the mounts with ``bindMountOptions``, a node feature), and of its metadata and
    status only what scheduling reads (the uid and resourceVersion among them, for the informer;
    of the annotations, Volcano's group name; of the containers' statuses, their resources).
    Built anew, so that the decoded object's memory goes back whole."""
    spec = {
        key: [_slim_container(c) for c in _sequence(value)] if key in _CONTAINER_LISTS else value
        for key, value in _mapping(raw.get("spec")).items()
        if key != _EPHEMERAL_CONTAINERS
    }
    ephemeral = [
        {"name": c.get("name"), "volumeMounts": mounts}
        for c in map(_mapping, _sequence(_mapping(raw.get("spec")).get(_EPHEMERAL_CONTAINERS)))
        if (mounts := _bind_mounts(c))
    ]
    if ephemeral:
        spec[_EPHEMERAL_CONTAINERS] = ephemeral
    metadata = _only(raw.get("metadata"), _POD_METADATA)
    annotations = _only(_mapping(raw.get("metadata")).get("annotations"), _POD_ANNOTATIONS)
    if annotations:
        metadata["annotations"] = annotations
    return {
        "metadata": metadata,
        "spec": spec,
        "status": {
            **_only(raw.get("status"), _POD_STATUS),
            **{
                key: [_only(c, _CONTAINER_STATUS) for c in _sequence(value)]
                for key, value in _mapping(raw.get("status")).items()
                if key in _CONTAINER_STATUS_LISTS
            },
        },
    }


def _bind_mounts(container: Raw) -> list[Any]:
    """The container's volume mounts that set ``bindMountOptions``."""
    return [
        m for m in _sequence(container.get("volumeMounts")) if _mapping(m).get("bindMountOptions")
    ]


def _slim_container(raw: object) -> dict[str, Any]:
    container = _only(raw, _CONTAINER)
    mounts = _bind_mounts(_mapping(raw))
    if mounts:
        container["volumeMounts"] = mounts
    return container


def slim_node(raw: Raw) -> dict[str, Any]:
    """What :class:`NodeView` (and an informer, to resume and relist) reads of a Node: its
    name, uid, resourceVersion and labels, ``spec.unschedulable`` and taints, and its
    allocatable, images and declared features; not its conditions, addresses, capacity or
    system info."""
    return {
        "metadata": _only(raw.get("metadata"), _NODE_METADATA),
        "spec": _only(raw.get("spec"), _NODE_SPEC),
        "status": _only(raw.get("status"), _NODE_STATUS),
    }


def parse_resources(raw: object, where: str) -> Resources:
    """A ResourceList (``{cpu: 500m, memory: 1Gi}``) as integers; ``where`` names it in errors."""
    result: Resources = {}
    for name, quantity in _mapping(raw).items():
        try:
            result[str(name)] = to_int(str(name), quantity)
        except QuantityError as error:
            raise ObjectError(f"{where}.{name}: {error}") from None
    return result


def add_into(total: Resources, extra: Mapping[str, int]) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def max_into(total: Resources, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if name not in total or amount > total[name]:
            total[name] = amount


@dataclass(frozen=True, slots=True)
class HostPort:
    """A (hostIP, protocol, hostPort) a container asks the node for."""

    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol, on the same IP or where either listens on every IP."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("0.0.0.0", "")
        return self.ip == other.ip or self.ip in wildcard or other.ip in wildcard


class PodView:
    """The parts of a Pod the scheduler reads."""

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        metadata = _mapping(raw.get("metadata"))
        self.spec: Raw = _mapping(raw.get("spec"))
        self.name: str = str(metadata.get("name", ""))
        self.namespace: str = str(metadata.get("namespace") or "default")
        self.uid: str = str(metadata.get("uid") or f"{self.namespace}/{self.name}")
        self.key = f"{self.namespace}/{self.name}"
        self.labels: Mapping[str, str] = _mapping(metadata.get("labels"))
        self.metadata = metadata
        self.creation_timestamp: str = str(metadata.get("creationTimestamp") or "")
        self.deleting = metadata.get("deletionTimestamp") is not None
        generation = metadata.get("generation")
        self.generation: int = generation if isinstance(generation, int) else 0
        self.node_name: str = str(self.spec.get("nodeName") or "")
        self.scheduler_name: str = str(self.spec.get("schedulerName") or "default-scheduler")
        priority = self.spec.get("priority")
        self.priority: int = priority if isinstance(priority, int) else 0

    def __repr__(self) -> str:
        return f"PodView({self.key})"

    @property
    def scheduling_order(self) -> tuple[int, str, str]:
        """Sort key for pending pods: higher priority first, then older, then by name."""
        return (-self.priority, self.creation_timestamp, self.key)

    @property
    def phase(self) -> str:
        return str(_mapping(self.raw.get("status")).get("phase") or "Pending")

    @cached_property
    def terminating_by_preemption(self) -> bool:
        """Being deleted, with a ``DisruptionTarget`` condition that a scheduler's preemption set
        (kube's podTerminatingByPreemption: only the first such condition counts)."""
        if not self.deleting:
            return False
        conditions = _mapping(self.raw.get("status")).get("conditions")
        for condition in conditions if isinstance(conditions, list) else ():
            if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
                return bool(
                    condition.get("status") == "True"
                    and condition.get("reason") == PREEMPTION_BY_SCHEDULER
                )
        return False

    @cached_property
    def start_time(self) -> float:
        """``status.startTime`` in seconds since the epoch; a pod not started yet (or whose time
        does not parse) counts as starting now, later than any that started: ``math.inf``
        (kube's GetPodStartTime). Preemption sorts every candidate node's victims by it."""
        text = _mapping(self.raw.get("status")).get("startTime")
        if isinstance(text, str) and text:
            try:
                return _timestamp(text)
            except ValueError:
                pass
        return math.inf

    @cached_property
    def nominated_node_name(self) -> str:
        """The node a preemption reserved for this pending pod (``status.nominatedNodeName``)."""
        return str(_mapping(self.raw.get("status")).get("nominatedNodeName") or "")

    @cached_property
    def hint_signature(self) -> tuple[frozenset[tuple[str, int]], tuple[HostPort, ...], str]:
        """What queueing hints may read of a pod: its requests, its host ports, and as text its
        ``nodeSelector``, affinity, tolerations, topology spread constraints, and its namespace,
        volumes and resource claims. Pods with equal signatures are asked about as one."""
        placement = [
            self.namespace,
            self.node_selector,
            self.affinity,
            self.tolerations,
            self.topology_spread_constraints,
            self.volumes,
            self.resource_claims,
        ]
        text = _canonical(placement)
        return frozenset(self.requests.items()), self.host_ports, text

    @cached_property
    def scheduling_gates(self) -> tuple[str, ...]:
        """The names of ``spec.schedulingGates``: while any is left the pod is not scheduled."""
        return tuple(
            str(_mapping(g).get("name", "")) for g in _sequence(self.spec.get("schedulingGates"))
        )

    @property
    def terminated(self) -> bool:
        """Succeeded and Failed pods hold no resources on their node any more."""
        return self.phase in ("Succeeded", "Failed")

    @cached_property
    def containers(self) -> Sequence[Raw]:
        return [_mapping(c) for c in _sequence(self.spec.get("containers"))]

    @cached_property
    def init_containers(self) -> Sequence[Raw]:
        return [_mapping(c) for c in _sequence(self.spec.get("initContainers"))]

    @cached_property
    def _container_statuses(self) -> Mapping[str, tuple[Raw, str]]:
        """Each container's status, with its path, by the container's name; as component-helpers'
        findContainerStatus, ``containerStatuses`` first, then ``initContainerStatuses``."""
        found: dict[str, tuple[Raw, str]] = {}
        status = _mapping(self.raw.get("status"))
        for key in _CONTAINER_STATUS_LISTS:
            for i, entry in enumerate(map(_mapping, _sequence(status.get(key)))):
                found.setdefault(str(entry.get("name", "")), (entry, f"status.{key}[{i}]"))
        return found

    @cached_property
    def resize_status(self) -> tuple[object, ...]:
        """What of the pod's status its requests read (how far an in-place resize has come):
        two views of one pod with equal specs and equal resize statuses request alike."""
        status = _mapping(self.raw.get("status"))
        # A container status without resources counts as none (its container's spec counts).
        containers = tuple(
            tuple(
                _only(entry, _CONTAINER_STATUS)
                for entry in map(_mapping, _sequence(status.get(key)))
                if "resources" in entry or "allocatedResources" in entry
            )
            for key in _CONTAINER_STATUS_LISTS
        )
        pod_level = (status.get("resources"), status.get("allocatedResources"))
        return (containers, pod_level, self.resize_infeasible)

    @cached_property
    def resize_infeasible(self) -> bool:
        """Whether the pod's ``PodResizePending`` condition (the first) says ``Infeasible``: the
        kubelet will not resize it, so its spec no longer counts (IsPodResizeInfeasible)."""
        conditions = _mapping(self.raw.get("status")).get("conditions")
        for condition in map(_mapping, _sequence(conditions)):
            if condition.get("type") == "PodResizePending":
                return condition.get("reason") == "Infeasible"
        return False

    def _spec_requests(self, container: Raw, path: str) -> Resources:
        requests = _mapping(container.get("resources")).get("requests")
        return parse_resources(requests, f"{path}.resources.requests")

    def _allocated_requests(self, container: Raw, path: str) -> Resources | None:
        """What the kubelet allocated to the container (``allocatedResources``), else, unless the
        resize is infeasible, its spec (component-helpers' containerAllocatedRequests)."""
        found = self._container_statuses.get(str(container.get("name", "")))
        if found is not None and isinstance(found[0].get("allocatedResources"), Mapping):
            entry, where = found
            return parse_resources(entry["allocatedResources"], f"{where}.allocatedResources")
        return None if self.resize_infeasible else self._spec_requests(container, path)

    def _actuated_requests(self, container: Raw, path: str) -> Resources | None:
        """What the container runs with (its status' ``resources.requests``), else what
        :meth:`_allocated_requests` says (component-helpers' containerActuatedRequests)."""
        found = self._container_statuses.get(str(container.get("name", "")))
        if found is not None:
            entry, where = found
            requests = _mapping(entry.get("resources")).get("requests")
            if isinstance(requests, Mapping):
                return parse_resources(requests, f"{where}.resources.requests")
        return self._allocated_requests(container, path)

    def pod_requests(
        self, non_missing: Mapping[str, int] = {}, *, pod_level: bool = True
    ) -> Resources:
        """What the pod takes from its node, computed as k8s.io/component-helpers' PodRequests
        with the status' resources, as kube-scheduler v1.37 counts a pod on its node.

        Regular containers run together, so they add up. Init containers run one at a time before
        them, except restartable ("sidecar") init containers, which keep running beside everything
        started after them. The pod needs the larger of the two phases' peaks; the pod-level
        requests (``spec.resources``, unless ``pod_level`` is False) replace that for the
        resources they name; the overhead adds to it. ``non_missing`` (PodRequests'
        NonMissingContainerRequests) stands in for what a container does not request.

        While an in-place resize is under way, the spec, what the kubelet allocated and what the
        containers run with differ: each resource counts as the largest of the three (summed as
        above, each on its own; the status' pod-level ``allocatedResources`` and
        ``resources.requests``, when both are there, stand for the containers'), and the pod-level
        requests as the largest of their spec and the status' pod-level figures. A resize the
        kubelet found infeasible leaves the spec out. For a pod no kubelet runs yet, the status
        holds none of these and the spec alone counts.
        """
        try:
            total = self._containers_requests(non_missing)
            if pod_level and any(_pod_level(name) for name in self._pod_level_requests):
                total.update(
                    (name, amount)
                    for name, amount in self._effective_pod_level_requests.items()
                    if _pod_level(name)
                )
            add_into(total, parse_resources(self.spec.get("overhead"), "spec.overhead"))
        except ObjectError as error:
            raise ObjectError(f"pod {self.key}: {error}") from None
        return total

    def _containers_requests(self, non_missing: Mapping[str, int]) -> Resources:
        """component-helpers' AggregateContainerRequests with UseStatusResources (and
        InPlacePodLevelResourcesVerticalScaling, on by default in v1.37)."""
        spec = self._sum_container_requests(non_missing, self._spec_requests)
        status = _mapping(self.raw.get("status"))
        allocated_raw = status.get("allocatedResources")
        actuated_raw = _mapping(status.get("resources")).get("requests")
        if isinstance(allocated_raw, Mapping) and isinstance(actuated_raw, Mapping):
            allocated = parse_resources(allocated_raw, "status.allocatedResources")
            actuated = parse_resources(actuated_raw, "status.resources.requests")
        elif not self._container_statuses and not self.resize_infeasible:
            # Every container's allocated and actuated requests are then its spec's.
            return spec
        else:
            allocated = self._sum_container_requests(non_missing, self._allocated_requests)
            actuated = self._sum_container_requests(non_missing, self._actuated_requests)
        total: Resources = {} if self.resize_infeasible else spec
        max_into(total, actuated)
        max_into(total, allocated)
        return total

    @cached_property
    def _effective_pod_level_requests(self) -> Resources:
        """The pod-level requests, with the status' pod-level figures while a resize is under
        way (component-helpers' effectivePodLevelResources)."""
        status = _mapping(self.raw.get("status"))
        if not isinstance(status.get("resources"), Mapping):
            return self._pod_level_requests
        effective: Resources = {} if self.resize_infeasible else dict(self._pod_level_requests)
        requests = _mapping(status["resources"]).get("requests")
        max_into(effective, parse_resources(requests, "status.resources.requests"))
        allocated = status.get("allocatedResources")
        max_into(effective, parse_resources(allocated, "status.allocatedResources"))
        return effective

    def _sum_container_requests(
        self,
        non_missing: Mapping[str, int],
        requests_of: Callable[[Raw, str], Resources | None],
    ) -> Resources:
        """The containers' requests, each as ``requests_of`` (the container and its path) says,
        with ``non_missing`` for what it lacks, summed as :meth:`pod_requests` says."""

        def requests(container: Raw, path: str) -> Resources:
            found = dict(requests_of(container, path) or {})
            for name, amount in non_missing.items():
                found.setdefault(name, amount)
            return found

        total: Resources = {}
        for i, container in enumerate(self.containers):
            add_into(total, requests(container, f"spec.containers[{i}]"))
        sidecars: Resources = {}
        init_peak: Resources = {}
        for i, container in enumerate(self.init_containers):
            wanted = requests(container, f"spec.initContainers[{i}]")
            if container.get("restartPolicy") == "Always":
                add_into(total, wanted)
                add_into(sidecars, wanted)
                max_into(init_peak, sidecars)
            else:
                running = dict(wanted)
                add_into(running, sidecars)
                max_into(init_peak, running)
        max_into(total, init_peak)
        return total

    @cached_property
    def _pod_level_requests(self) -> Resources:
        return parse_resources(
            _mapping(self.spec.get("resources")).get("requests"), "spec.resources.requests"
        )

    @cached_property
    def requests(self) -> Resources:
        """Resources the pod reserves on its node (what NodeResourcesFit checks): for a pod
        being placed, which no kubelet runs yet, what its spec requests, as kube-scheduler's
        NodeResourcesFit reads it; for a pod on its node, with the status' resources."""
        return self.pod_requests()

    @cached_property
    def nonzero_requests(self) -> Resources:
        """What the pod counts for on its node in the resource scorers' eyes (kube-scheduler's
        PodInfo.CalculateResource, NodeInfo's NonZeroRequested): CPU and memory a container does
        not request count as the defaults, except that with pod-level requests only a resource
        requested nowhere in the pod gets them."""
        non_missing = NON_ZERO_DEFAULTS
        if any(_pod_level(name) for name in self._pod_level_requests):
            non_missing = {n: a for n, a in NON_ZERO_DEFAULTS.items() if n not in self.requests}
        return self.pod_requests(non_missing)

    @cached_property
    def container_nonzero_requests(self) -> Resources:
        """The containers' requests (and the overhead) with the defaults for CPU and memory a
        container does not request, without the pod-level requests: what kube-scheduler v1.37's
        NodeResourcesFit scoring strategies count for the pod being placed."""
        return self.pod_requests(NON_ZERO_DEFAULTS, pod_level=False)

    @cached_property
    def required_node_features(self) -> frozenset[str]:
        """The node features (a node's ``status.declaredFeatures``) the pod needs, as
        component-helpers' nodedeclaredfeatures infers them for scheduling."""
        features: set[str] = set()
        containers = (*self.containers, *self.init_containers)
        if any(
            _mapping(rule).get("action") == "RestartAllContainers"
            for container in containers
            for rule in _sequence(container.get("restartPolicyRules"))
        ):
            features.add(RESTART_ALL_CONTAINERS)
        # hostUsers false, not merely unset: an unset hostUsers shares the host's user namespace.
        if self.spec.get("hostNetwork") is True and self.spec.get("hostUsers") is False:
            features.add(USER_NAMESPACES_HOST_NETWORK)
        ephemeral = map(_mapping, _sequence(self.spec.get(_EPHEMERAL_CONTAINERS)))
        if any(_bind_mounts(container) for container in (*containers, *ephemeral)):
            features.add(VOLUME_BIND_MOUNT_OPTIONS)
        return frozenset(features)

    @cached_property
    def host_ports(self) -> tuple[HostPort, ...]:
        """Host ports of the containers and the restartable ("sidecar") init containers, as
        kube-scheduler v1.37's GetHostPorts: other init containers have exited before the pod's
        containers start, so their ports are free again while the pod runs."""
        sidecars = (c for c in self.init_containers if c.get("restartPolicy") == "Always")
        ports = []
        for container in (*self.containers, *sidecars):
            for port in map(_mapping, _sequence(container.get("ports"))):
                host_port = port.get("hostPort")
                if isinstance(host_port, int) and host_port > 0:
                    ports.append(
                        HostPort(
                            str(port.get("hostIP") or "0.0.0.0"),
                            str(port.get("protocol") or "TCP"),
                            host_port,
                        )
                    )
        return tuple(ports)

    @cached_property
    def tolerations(self) -> Sequence[Raw]:
        return [_mapping(t) for t in _sequence(self.spec.get("tolerations"))]

    @cached_property
    def node_selector(self) -> Mapping[str, str]:
        return {str(k): str(v) for k, v in _mapping(self.spec.get("nodeSelector")).items()}

    @cached_property
    def affinity(self) -> Raw:
        return _mapping(self.spec.get("affinity"))

    @cached_property
    def label_group(self) -> tuple[str, bool, frozenset[tuple[str, str]]]:
        """Namespace, whether terminating, and labels: all that label and namespace selectors
        see of a pod, so pods of one group match every selector alike and NodeInfo counts a
        node's pods per group. (The API server accepts only string labels, so they hash.)"""
        return (self.namespace, self.deleting, frozenset(self.labels.items()))

    @cached_property
    def has_pod_affinity(self) -> bool:
        """Whether ``spec.affinity`` holds ``podAffinity`` or ``podAntiAffinity`` (as objects),
        the only pods whose terms InterPodAffinity must read; the snapshot indexes them."""
        return any(
            isinstance(self.affinity.get(kind), Mapping)
            for kind in ("podAffinity", "podAntiAffinity")
        )

    @cached_property
    def affinity_group(self) -> AffinityGroup:
        """Namespace, labels and the pod (anti-)affinity as canonical JSON: everything the parsed
        terms depend on (the namespace and labels through the default namespace and
        ``matchLabelKeys``), so pods of one group have the same terms and the snapshot counts
        them per group. Only meaningful for pods with ``has_pod_affinity``."""
        terms = {kind: self.affinity.get(kind) for kind in ("podAffinity", "podAntiAffinity")}
        raw = _canonical(terms)
        return (self.namespace, frozenset(self.labels.items()), raw)

    @cached_property
    def required_node_affinity(self) -> RequiredNodeAffinity:
        """The nodeSelector and the required node affinity (component-helpers'
        GetRequiredNodeAffinity); an invalid term matches no node and is listed in ``errors``."""
        node_affinity = self.affinity.get("nodeAffinity")
        # Anything but an object is passed on, so that parsing it reports the problem.
        required = (
            node_affinity.get(REQUIRED_NODE_AFFINITY)
            if isinstance(node_affinity, Mapping)
            else node_affinity
        )
        return RequiredNodeAffinity.parse(
            self.node_selector, required, f"spec.affinity.nodeAffinity.{REQUIRED_NODE_AFFINITY}"
        )

    @cached_property
    def controller_ref(self) -> Raw | None:
        """The ownerReference with ``controller: true`` (the pod's ReplicaSet, StatefulSet, ...),
        or None when nothing controls the pod."""
        for owner in map(_mapping, _sequence(self.metadata.get("ownerReferences"))):
            if owner.get("controller") is True:
                return owner
        return None

    @cached_property
    def images(self) -> tuple[str, ...]:
        return tuple(
            str(c["image"]) for c in (*self.init_containers, *self.containers) if c.get("image")
        )

    @cached_property
    def topology_spread_constraints(self) -> Sequence[Raw]:
        return [_mapping(c) for c in _sequence(self.spec.get("topologySpreadConstraints"))]

    @cached_property
    def volumes(self) -> Sequence[Raw]:
        """``spec.volumes``."""
        return [_mapping(v) for v in _sequence(self.spec.get("volumes"))]

    @cached_property
    def claim_names(self) -> tuple[str, ...]:
        """The PersistentVolumeClaims the pod's volumes use, in its namespace, in volume order:
        a ``persistentVolumeClaim`` volume's claim, and for a generic ephemeral volume the
        claim its controller creates, named ``<pod>-<volume>``."""
        names: list[str] = []
        for volume in self.volumes:
            claim = _mapping(volume.get("persistentVolumeClaim"))
            if claim.get("claimName"):
                names.append(str(claim["claimName"]))
            elif volume.get("ephemeral") is not None:
                names.append(f"{self.name}-{volume.get('name', '')}")
        return tuple(names)

    @cached_property
    def resource_claims(self) -> tuple[tuple[str, str | None], ...]:
        """The pod's ``spec.resourceClaims``: each entry's name, with the ResourceClaim it
        uses: ``resourceClaimName``, or for a ``resourceClaimTemplateName`` the claim that
        ``status.resourceClaimStatuses`` says was made for it, None when none is made yet."""
        made = {
            str(_mapping(s).get("name", "")): _mapping(s).get("resourceClaimName")
            for s in _sequence(_mapping(self.raw.get("status")).get("resourceClaimStatuses"))
        }
        claims: list[tuple[str, str | None]] = []
        for entry in map(_mapping, _sequence(self.spec.get("resourceClaims"))):
            name = str(entry.get("name", ""))
            if entry.get("resourceClaimName"):
                claims.append((name, str(entry["resourceClaimName"])))
            else:
                claim = made.get(name)
                claims.append((name, str(claim) if claim else None))
        return tuple(claims)


@dataclass(frozen=True, slots=True)
class Taint:
    """One of a node's ``spec.taints``."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}"


class NodeView:
    """The parts of a Node the scheduler reads."""

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        metadata = _mapping(raw.get("metadata"))
        spec = _mapping(raw.get("spec"))
        status = _mapping(raw.get("status"))
        self.name: str = str(metadata.get("name", ""))
        self.labels: Mapping[str, str] = _mapping(metadata.get("labels"))
        self.unschedulable = bool(spec.get("unschedulable"))
        self.taints: tuple[Taint, ...] = tuple(
            Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
            for t in map(_mapping, _sequence(spec.get("taints")))
        )
        try:
            self.allocatable = parse_resources(status.get("allocatable"), "status.allocatable")
        except ObjectError as error:
            raise ObjectError(f"node {self.name}: {error}") from None
        self.declared_features: frozenset[str] = frozenset(
            str(f) for f in _sequence(status.get("declaredFeatures"))
        )
        """``status.declaredFeatures``: the features the node's kubelet says it has."""
        self.images: tuple[tuple[tuple[str, ...], int], ...] = tuple(
            (tuple(str(n) for n in _sequence(image.get("names"))), int(image.get("sizeBytes") or 0))
            for image in map(_mapping, _sequence(status.get("images")))
        )
        # Each image name the node lists, with the size of the first entry listing it: one look-up
        # per wanted image instead of a walk over every name of every node on each decision.
        self.image_sizes: dict[str, int] = {}
        for names, size in self.images:
            for image_name in names:
                self.image_sizes.setdefault(image_name, size)

    def __repr__(self) -> str:
        return f"NodeView({self.name})"

    @property
    def allowed_pods(self) -> int:
        return self.allocatable.get(PODS, 0)
