"""Extended resources backed by a DeviceClass (kube-scheduler's DRAExtendedResource, GA in
v1.37): a container's request of an extended resource that a node does not list in its
allocatable is served by devices when a DeviceClass maps the name, through a ResourceClaim the
scheduler makes for the pod.

A DeviceClass maps its ``spec.extendedResourceName`` (when several classes name the same one,
the most recently created wins, the smaller name on a tie, as kube's cache) and, always, the
implicit ``deviceclass.resource.kubernetes.io/<class>``. NodeResourcesFit leaves such a
resource to DynamicResources on a node whose allocatable has none of it; DynamicResources
builds the claim's requests per node (:func:`node_requests`), one per container and resource
(``container-<i>-request-<j>``: ``i`` the container's index among init and regular containers,
``j`` the resource's index among the container's sorted request names), init containers reusing
the devices of the long-lived containers that start after them, as kube's
createRequestsAndMappings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policy_scheduler.model.cel import CelError
from policy_scheduler.model.dra.devices import Device, Slice
from policy_scheduler.model.objects import PodView, Raw, _mapping, _sequence, parse_resources
from policy_scheduler.model.volumes import ResourceClaimView, Volumes

DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""kube's ResourceDeviceClassPrefix: the implicit extended resource name of every class."""
CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
"""kube's ExtendedResourceClaimAnnotation, "true" on the claim the scheduler makes."""
IN_MEMORY_NAME: Final = "<extended-resources>"
"""The name of the claim before PreBind creates it (no valid object name, as kube's)."""

TAKEN_ON: Final = "DynamicResources/extended-resources"
"""Where a cycle's shared state (``Cycle.shared``) names the extended resources DynamicResources
took on for the pod, which NodeResourcesFit then leaves to it on a node that lacks them."""

CANNOT_FIT: Final = "cannot fit resource"
STALE_CLAIM: Final = "cannot schedule extended resource claim"


def is_dra_extended_name(name: str) -> bool:
    """kube's IsDRAExtendedResourceName: an extended resource name (``vendor/name`` outside
    ``kubernetes.io``) or a class's implicit name."""
    extended = "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
    return extended or name.startswith(DEVICE_CLASS_PREFIX)


def _created(raw: Raw) -> str:
    return str(_mapping(raw.get("metadata")).get("creationTimestamp") or "")


def class_mapping(classes: Mapping[str, Raw]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that serves it (kube's ExtendedResourceCache)."""
    explicit: dict[str, tuple[str, str]] = {}
    for name, raw in classes.items():
        resource = _mapping(raw.get("spec")).get("extendedResourceName")
        if not isinstance(resource, str) or not resource:
            continue
        # RFC 3339 in UTC sorts as the times do; newest first, then the smaller name.
        best = explicit.get(resource)
        if best is None or (_created(raw), best[1]) > (best[0], name):
            explicit[resource] = (_created(raw), name)
    mapping = {DEVICE_CLASS_PREFIX + name: name for name in classes}
    mapping.update((resource, name) for resource, (_, name) in explicit.items())
    return mapping


def mapped_requests(pod: PodView, mapping: Mapping[str, str]) -> dict[str, int]:
    """The pod's non-zero requests of extended resources, when at least one of them is mapped
    to a DeviceClass (kube's preFilterExtendedResources); empty otherwise."""
    requests = {n: a for n, a in pod.requests.items() if a and is_dra_extended_name(n)}
    return requests if any(n in mapping for n in requests) else {}


@dataclass(frozen=True)
class NodeClaim:
    """The pod's claim for one node: the device requests (empty: the node serves every mapped
    resource by device plugin) and ``pod.status.extendedResourceClaimStatus.requestMappings``."""

    requests: tuple[Raw, ...]
    mappings: tuple[Raw, ...]


def node_claim(
    requests: Mapping[str, int], mapping: Mapping[str, str], pod: PodView, allocatable: Raw
) -> NodeClaim | str:
    """kube's filterExtendedResources for a node of ``allocatable``: the requests to allocate
    there, or :data:`CANNOT_FIT` when the node neither lists a requested resource nor has it
    mapped."""
    by_devices: list[str] = []
    for name in sorted(requests):
        if name in mapping and not allocatable.get(name, 0):
            by_devices.append(name)
        elif name not in allocatable:
            return CANNOT_FIT
    return _requests_and_mappings(pod, by_devices, mapping)


def _container_requests(container: Raw, path: str) -> dict[str, int]:
    return parse_resources(_mapping(container.get("resources")).get("requests"), path)


def _request(index: int, own: Mapping[str, int], resource: str, class_name: str, count: int) -> Raw:
    position = sorted(own).index(resource)
    return {
        "name": f"container-{index}-request-{position}",
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count},
    }


def _mapping_of(container: Raw, resource: str, request: Raw) -> Raw:
    return {
        "containerName": str(container.get("name", "")),
        "resourceName": resource,
        "requestName": request["name"],
    }


def _requests_and_mappings(
    pod: PodView, resources: Sequence[str], mapping: Mapping[str, str]
) -> NodeClaim:
    """kube's createRequestsAndMappings, resource by resource in name order; the requests
    sorted by name."""
    containers = [*pod.init_containers, *pod.containers]
    inits = len(pod.init_containers)
    own = [
        _container_requests(c, f"spec.{'initContainers' if i < inits else 'containers'}[{i}]")
        for i, c in enumerate(containers)
    ]
    short_lived = [
        i for i, c in enumerate(containers) if i < inits and c.get("restartPolicy") != "Always"
    ]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    requests: list[Raw] = []
    mappings: list[Raw] = []
    for resource in resources:
        class_name = mapping[resource]
        lasting: dict[int, Raw] = {}
        for i in long_lived:
            if own[i].get(resource, 0) > 0:
                lasting[i] = _request(i, own[i], resource, class_name, own[i][resource])
                mappings.append(_mapping_of(containers[i], resource, lasting[i]))
        largest: Raw | None = None
        init_mappings: list[Raw] = []
        for i in short_lived:
            wanted = own[i].get(resource, 0)
            if wanted <= 0:
                continue
            reused = 0
            for j in sorted(lasting):
                if j < i:
                    continue
                reused += lasting[j]["exactly"]["count"]
                init_mappings.append(_mapping_of(containers[i], resource, lasting[j]))
                if reused >= wanted:
                    break
            if reused >= wanted:
                continue
            extra = _request(i, own[i], resource, class_name, wanted - reused)
            init_mappings.append(_mapping_of(containers[i], resource, extra))
            if largest is None or largest["exactly"]["count"] < extra["exactly"]["count"]:
                largest = extra
        if largest is not None:
            # One request serves the init containers, which run one at a time: the largest.
            names = {m["requestName"] for m in init_mappings} - {
                r["name"] for r in lasting.values()
            }
            init_mappings = [
                {**m, "requestName": largest["name"]} if m["requestName"] in names else m
                for m in init_mappings
            ]
            requests.append(largest)
        requests.extend(lasting[i] for i in sorted(lasting))
        mappings.extend(init_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return NodeClaim(tuple(requests), tuple(mappings))


def existing_claim(pod: PodView, volumes: Volumes) -> ResourceClaimView | None:
    """The claim made for the pod in an earlier attempt (kube's findExtendedResourceClaim):
    annotated, and controlled by the pod."""
    for claim in volumes.resource_claims(pod.namespace):
        metadata = _mapping(claim.raw.get("metadata"))
        if _mapping(metadata.get("annotations")).get(CLAIM_ANNOTATION) != "true":
            continue
        for owner in map(_mapping, _sequence(metadata.get("ownerReferences"))):
            if owner.get("controller") is True and (owner.get("name"), owner.get("uid")) == (
                pod.name,
                pod.uid,
            ):
                return claim
    return None


def in_memory_claim(pod: PodView) -> ResourceClaimView:
    """The claim as PreFilter makes it up, before PreBind creates it (kube's, with the pod's
    uid standing for its temporary one: allocations in flight are kept by it)."""
    return ResourceClaimView(
        {
            "metadata": {
                "namespace": pod.namespace,
                "name": IN_MEMORY_NAME,
                "uid": pod.uid,
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod.name,
                        "uid": pod.uid,
                        "controller": True,
                    }
                ],
                "annotations": {CLAIM_ANNOTATION: "true"},
            },
            "spec": {},
            "status": {},
        }
    )


def claim_body(claim: ResourceClaimView, node: NodeClaim) -> dict[str, Any]:
    """The ResourceClaim PreBind creates: the in-memory claim's metadata without name and uid
    (the API server names it from ``generateName``), with the node's requests."""
    metadata = {
        k: v for k, v in _mapping(claim.raw.get("metadata")).items() if k not in ("name", "uid")
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": {"devices": {"requests": [dict(r) for r in node.requests]}},
    }


class DeviceCount:
    """The devices of one DeviceClass per node, for the resource scorers (kube's
    calculateDRAResourceTotals): how many devices that serve the node match the class's
    selectors, and how many of those are in use. Every slice counts, whatever its pool's
    generation, as in kube; a slice naming no node, no selector and not all nodes counts for
    every node, as in kube's; a selector that fails leaves the resource out of the node's score
    (0 devices)."""

    def __init__(self, volumes: Volumes, class_name: str) -> None:
        self._volumes = volumes
        self._expressions = [
            str(_mapping(s.get("cel")).get("expression", ""))
            for s in map(
                _mapping,
                _sequence(
                    _mapping(volumes.device_classes().get(class_name, {}).get("spec")).get(
                        "selectors"
                    )
                ),
            )
            if s.get("cel") is not None
        ]
        self._in_use = volumes.allocated().in_use()
        self._slices: list[Slice] = []
        for raw in volumes.resource_slices():
            try:
                self._slices.append(volumes.slice_cache.model(raw))
            except ValueError:
                continue  # the allocator reports a slice it cannot read

    def _matches(self, device: Device) -> bool:
        return all(
            self._volumes.selectors.matches(e, device.id.driver, device.raw, device.cel_key)
            for e in self._expressions
        )

    def on(self, node_name: str, labels: Mapping[str, str]) -> tuple[int, int]:
        """(devices of the class that serve the node, those of them in use)."""
        total = used = 0
        try:
            for slice_ in self._slices:
                if slice_.per_device:
                    devices = [
                        d for d in slice_.devices
                        if d.node is not None and d.node.matches(node_name, labels)
                    ]  # fmt: skip
                elif slice_.node.given and not slice_.node.matches(node_name, labels):
                    continue
                else:
                    devices = list(slice_.devices)
                for device in filter(self._matches, devices):
                    total += 1
                    used += device.id in self._in_use
        except CelError:
            return 0, 0
        return total, used
