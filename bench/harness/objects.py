"""Node, Pod and SchedulingPolicy objects as the tests and benchmarks create them, and the
objects of dynamic resource allocation (resource.k8s.io/v1): DeviceClasses, ResourceSlices with
their devices, ResourceClaims with their requests, ResourceClaimTemplates, and pods that use
claims; and the pod groups of gang scheduling (Kubernetes', Volcano's and scheduler-plugins'
PodGroups) with the pods that are their members."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

HOSTNAME = "kubernetes.io/hostname"
PAUSE = "registry.k8s.io/pause:3.10"


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node object as a kubelet would register it (on a cluster with kwok, kwok then keeps it
    Ready; on a bare one no kubelet runs)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod(
    name: str,
    scheduler: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "64Mi",
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    claims: Mapping[str, str] | None = None,
    templates: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod of one pause container requesting ``cpu`` and ``memory`` (None: nothing of it) and
    ``requests`` (extended resources, with limits equal, as the API server wants), for
    ``scheduler``; ``extra`` added to its spec. ``claims`` (pod claim name -> ResourceClaim name)
    and ``templates`` (pod claim name -> ResourceClaimTemplate name) become its
    ``spec.resourceClaims``, each used by the container."""
    wanted = {key: amount for key, amount in (("cpu", cpu), ("memory", memory)) if amount}
    resources: dict[str, Any] = {"requests": {**wanted, **(requests or {})}}
    if requests:
        resources["limits"] = dict(requests)
    pod_claims = [
        {"name": name, field: source}
        for field, named in (
            ("resourceClaimName", claims or {}),
            ("resourceClaimTemplateName", templates or {}),
        )
        for name, source in named.items()
    ]
    if pod_claims:
        resources["claims"] = [{"name": c["name"]} for c in pod_claims]
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": PAUSE, "resources": resources}],
    }
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {**spec, **(extra or {})},
    }


def policy(name: str, pool: str, **spec: Any) -> dict[str, Any]:
    """A SchedulingPolicy whose node pool is the nodes labelled ``pool=<pool>``."""
    return {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name, "labels": {"pool": pool}},
        "spec": {
            "nodeSelector": {"matchLabels": {"pool": pool}},
            "predicates": [{"name": "NodeResourcesFit"}, {"name": "TaintToleration"}],
            "priorities": [{"name": "LeastAllocated", "weight": 1}],
            **spec,
        },
    }


# --- dynamic resource allocation (resource.k8s.io/v1) -------------------------------------------

RESOURCE = "resource.k8s.io/v1"
AttributeValue = bool | int | str


def cel(*expressions: str) -> list[dict[str, Any]]:
    """Device selectors: one CEL expression each (all must hold)."""
    return [{"cel": {"expression": expression}} for expression in expressions]


def opaque(driver: str, parameters: Mapping[str, Any], requests: Iterable[str] = ()) -> Any:
    """An opaque device configuration for ``driver`` (limited to ``requests`` when given, for a
    claim's config; a class's config has no requests)."""
    config: dict[str, Any] = {"opaque": {"driver": driver, "parameters": dict(parameters)}}
    if requests:
        config["requests"] = list(requests)
    return config


def device_class(
    name: str,
    *,
    selectors: Sequence[str] = (),
    config: Sequence[Mapping[str, Any]] = (),
    extended_resource_name: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A DeviceClass: its CEL ``selectors``, its ``config`` (see :func:`opaque`) and the extended
    resource that pods may request instead of a claim (``extendedResourceName``)."""
    spec: dict[str, Any] = {}
    if selectors:
        spec["selectors"] = cel(*selectors)
    if config:
        spec["config"] = [dict(c) for c in config]
    if extended_resource_name is not None:
        spec["extendedResourceName"] = extended_resource_name
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def _attribute(value: AttributeValue) -> dict[str, Any]:
    """A device attribute of the API's typed union; a string "v1.2.3"-like stays a string (use
    :func:`version` for a semantic version)."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


def version(value: str) -> dict[str, Any]:
    """A semantic-version device attribute (``device.attributes[...].x`` is a semver in CEL)."""
    return {"version": value}


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, Any]:
    """A device taint (NoSchedule, NoExecute or None)."""
    return {"key": key, "effect": effect, **({"value": value} if value else {})}


def toleration(
    key: str = "", operator: str = "Exists", value: str = "", effect: str = ""
) -> dict[str, Any]:
    """A device toleration in a request (an empty key with Exists tolerates every taint)."""
    found: dict[str, Any] = {"operator": operator}
    found |= {k: v for k, v in (("key", key), ("value", value), ("effect", effect)) if v}
    return found


def device(
    name: str,
    *,
    attributes: Mapping[str, AttributeValue | Mapping[str, Any]] | None = None,
    capacity: Mapping[str, str | Mapping[str, Any]] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    consumes_counters: Mapping[str, Mapping[str, str]] | None = None,
    allow_multiple_allocations: bool = False,
    binding_conditions: Sequence[str] = (),
    binding_failure_conditions: Sequence[str] = (),
    binds_to_node: bool = False,
) -> dict[str, Any]:
    """A device of a ResourceSlice. ``attributes``: name -> a bool, int or string, or an
    attribute as the API spells it (:func:`version`); ``capacity``: name -> a quantity, or a
    capacity with its requestPolicy (``{"value": "40Gi", "requestPolicy": {...}}``);
    ``consumes_counters``: counter set -> counter -> quantity (partitionable devices);
    ``allow_multiple_allocations``: consumable capacity, the device shared between claims;
    ``binding_conditions``: the conditions that must be true on the claim's device status before
    the pod binds (with ``binds_to_node``, as the API requires)."""
    found: dict[str, Any] = {"name": name}
    if attributes:
        found["attributes"] = {
            key: dict(value) if isinstance(value, Mapping) else _attribute(value)
            for key, value in attributes.items()
        }
    if capacity:
        found["capacity"] = {
            key: dict(value) if isinstance(value, Mapping) else {"value": value}
            for key, value in capacity.items()
        }
    if taints:
        found["taints"] = [dict(t) for t in taints]
    if consumes_counters:
        found["consumesCounters"] = [
            {"counterSet": counter_set, "counters": _counters(counters)}
            for counter_set, counters in consumes_counters.items()
        ]
    if allow_multiple_allocations:
        found["allowMultipleAllocations"] = True
    if binding_conditions:
        found["bindingConditions"] = list(binding_conditions)
    if binding_failure_conditions:
        found["bindingFailureConditions"] = list(binding_failure_conditions)
    if binds_to_node:
        found["bindsToNode"] = True
    return found


def _counters(counters: Mapping[str, str]) -> dict[str, Any]:
    return {name: {"value": value} for name, value in counters.items()}


ALL_NODES: Literal["all"] = "all"


def resource_slice(
    name: str,
    driver: str,
    pool: str,
    *,
    node: str | Literal["all"] | Mapping[str, Any] | None = None,
    devices: Sequence[Mapping[str, Any]] = (),
    generation: int = 1,
    slice_count: int = 1,
    shared_counters: Mapping[str, Mapping[str, str]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceSlice of ``driver``'s ``pool`` (at ``generation``, one of ``slice_count``
    slices). ``node``: the node whose devices these are (a node name), ``ALL_NODES`` (reachable
    from every node), a NodeSelector (the nodes it selects), or None (each device says its own
    node: perDeviceNodeSelection). ``shared_counters``: counter set -> counter -> quantity,
    which partitionable devices consume."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": slice_count},
    }
    if node is None:
        spec["perDeviceNodeSelection"] = True
    elif node == ALL_NODES:
        spec["allNodes"] = True
    elif isinstance(node, str):
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = dict(node)
    if devices:
        spec["devices"] = [dict(d) for d in devices]
    if shared_counters:
        spec["sharedCounters"] = [
            {"name": counter_set, "counters": _counters(counters)}
            for counter_set, counters in shared_counters.items()
        ]
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def _device_choice(
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | Literal["All"] = 1,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What an exact request and a subrequest share: the class, selectors, allocation mode and
    count, tolerations and capacity requests."""
    choice: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        choice["selectors"] = cel(*selectors)
    if count == "All":
        choice["allocationMode"] = "All"
    else:
        choice["allocationMode"] = "ExactCount"
        choice["count"] = count
    if tolerations:
        choice["tolerations"] = [dict(t) for t in tolerations]
    if capacity:
        choice["capacity"] = {"requests": dict(capacity)}
    return choice


def exactly(
    name: str,
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | Literal["All"] = 1,
    admin_access: bool = False,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A claim's request of ``count`` devices (or "All" of them) of ``device_class`` matching
    ``selectors``; ``admin_access`` for monitoring devices in use (the namespace needs the label
    resource.kubernetes.io/admin-access=true); ``capacity``: the share of each device's capacity
    it consumes (consumable capacity)."""
    choice = _device_choice(
        device_class, selectors=selectors, count=count, tolerations=tolerations, capacity=capacity
    )
    if admin_access:
        choice["adminAccess"] = True
    return {"name": name, "exactly": choice}


def subrequest(
    name: str,
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | Literal["All"] = 1,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One alternative of :func:`first_available` (the allocation names it ``<request>/<name>``)."""
    return {
        "name": name,
        **_device_choice(
            device_class,
            selectors=selectors,
            count=count,
            tolerations=tolerations,
            capacity=capacity,
        ),
    }


def first_available(name: str, *alternatives: Mapping[str, Any]) -> dict[str, Any]:
    """A claim's request satisfied by the first of ``alternatives`` (:func:`subrequest`) that can
    be allocated."""
    return {"name": name, "firstAvailable": [dict(a) for a in alternatives]}


def match_attribute(attribute: str, *requests: str) -> dict[str, Any]:
    """A claim constraint: the devices of ``requests`` (all requests if none) share the value of
    ``attribute`` (unqualified: in each device's driver's domain)."""
    constraint: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        constraint["requests"] = list(requests)
    return constraint


def distinct_attribute(attribute: str, *requests: str) -> dict[str, Any]:
    """A claim constraint: the devices of ``requests`` (all if none) differ in ``attribute``."""
    constraint: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        constraint["requests"] = list(requests)
    return constraint


def claim_spec(
    requests: Sequence[Mapping[str, Any]],
    *,
    constraints: Sequence[Mapping[str, Any]] = (),
    config: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A ResourceClaim's spec (also a template's): its ``requests`` (:func:`exactly`,
    :func:`first_available`), ``constraints`` and ``config``."""
    devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    if config:
        devices["config"] = [dict(c) for c in config]
    return {"devices": devices}


def resource_claim(
    name: str,
    requests: Sequence[Mapping[str, Any]],
    *,
    constraints: Sequence[Mapping[str, Any]] = (),
    config: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim, not allocated (its namespace is the one it is created in)."""
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": claim_spec(requests, constraints=constraints, config=config),
    }


def resource_claim_template(
    name: str,
    requests: Sequence[Mapping[str, Any]],
    *,
    constraints: Sequence[Mapping[str, Any]] = (),
    config: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    claim_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaimTemplate, from which kube-controller-manager's resourceclaim controller
    makes one claim per pod that names it (labelled ``claim_labels``)."""
    spec: dict[str, Any] = {
        "spec": claim_spec(requests, constraints=constraints, config=config),
    }
    if claim_labels:
        spec["metadata"] = {"labels": dict(claim_labels)}
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


# --- pod groups (gang scheduling) ---------------------------------------------------------------

NATIVE = "native"
VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"
GROUP_APIS = (NATIVE, VOLCANO, SCHEDULER_PLUGINS)
POD_GROUP_API_VERSIONS = {
    NATIVE: "scheduling.k8s.io/v1beta1",
    VOLCANO: "scheduling.volcano.sh/v1beta1",
    SCHEDULER_PLUGINS: "scheduling.x-k8s.io/v1alpha1",
}
"""The apiVersion of each API's PodGroup."""
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def pod_group(
    api: str,
    name: str,
    min_member: Any,
    *,
    priority_class: str | None = None,
    timeout: int | None = None,
    min_resources: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PodGroup of ``api`` (one of GROUP_APIS) that needs ``min_member`` members placed at
    once: the native ``spec.schedulingPolicy.gang.minCount``, the others' ``spec.minMember``
    (any value, for the tests of bad input). ``priority_class``: the native group's (kube's
    group preemption reads the group's priority) or Volcano's ``priorityClassName``;
    ``timeout``: scheduler-plugins' ``scheduleTimeoutSeconds``; ``min_resources``: Volcano's
    and scheduler-plugins' ``minResources``."""
    spec: dict[str, Any]
    if api == NATIVE:
        spec = {"schedulingPolicy": {"gang": {"minCount": min_member}}}
    else:
        spec = {"minMember": min_member}
        if min_resources:
            spec["minResources"] = dict(min_resources)
    if priority_class is not None:
        if api == SCHEDULER_PLUGINS:
            # Coscheduling orders and preempts by the members' own priority.
            raise ValueError("scheduler-plugins' PodGroup has no priorityClassName")
        spec["priorityClassName"] = priority_class
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": POD_GROUP_API_VERSIONS[api],
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def member(made: Mapping[str, Any], api: str, group: str) -> dict[str, Any]:
    """The pod ``made`` (of :func:`pod`) as a member of the PodGroup ``group`` of ``api``, named
    where that API's scheduler looks: the native ``spec.schedulingGroup.podGroupName``,
    Volcano's annotation, scheduler-plugins' label."""
    metadata = dict(made["metadata"])
    spec = dict(made["spec"])
    if api == NATIVE:
        spec["schedulingGroup"] = {"podGroupName": group}
    elif api == VOLCANO:
        metadata["annotations"] = {
            **metadata.get("annotations", {}),
            VOLCANO_GROUP_ANNOTATION: group,
        }
    else:
        metadata["labels"] = {**metadata.get("labels", {}), SCHEDULER_PLUGINS_GROUP_LABEL: group}
    return {**made, "metadata": metadata, "spec": spec}
