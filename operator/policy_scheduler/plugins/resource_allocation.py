"""What the resource scorers share: kube-scheduler's resourceAllocationScorer (noderesources).

LeastAllocated, MostAllocated, RequestedToCapacityRatio and BalancedAllocation all score a node
from, per configured resource, the amount that would be requested once the pod is placed there,
the amount requested without it (only BalancedAllocation reads that) and the node's allocatable
amount; they differ only in how they combine those. This module
parses their common ``resources: [{name, weight}]`` args and gathers the pairs as kube does:

- the requested amount is what the node's pods request plus what the pod requests. CPU and memory
  count the non-zero defaults (100m, 200Mi) for containers that request none, unless the scorer
  uses plain requests (BalancedAllocation); every other resource always counts plain requests;
- the pod being placed counts its pod-level requests (``spec.resources``) with BalancedAllocation
  only. LeastAllocated, MostAllocated and RequestedToCapacityRatio count its containers' requests
  (with the defaults) and its overhead, and not its pod-level requests, however much those say:
  kube-scheduler (v1.34.4 and v1.37.2 alike) builds its NodeResourcesFit scoring strategies
  without the PodLevelResources feature flag (``nodeResourceStrategyTypeMap`` in fit.go leaves
  ``enablePodLevelResources`` false, where BalancedAllocation's constructor passes it on), so they
  read the pod with ``SkipPodLevelResources``. That is an upstream oversight rather than a design,
  but it decides placements, and a policy that mirrors kube-scheduler must place pods where it
  does; NodeResourcesFit's filter counts the pod-level requests. The node's pods count as
  kube-scheduler's NodeInfo counts them, pod-level requests included
  (:attr:`~policy_scheduler.model.objects.PodView.nonzero_requests`);
- a resource the node does not have (allocatable 0 or absent) is left out of the node's score,
  unless a DeviceClass maps it (an extended resource backed by devices, kube's
  DRAExtendedResource): then its allocatable is the number of the class's devices that serve
  the node and its requested amount those of them in use plus the pod's request
  (:class:`~policy_scheduler.plugins.dra_extended.DeviceCount`);
- so is an extended/scalar resource (``vendor/name``, ``hugepages-*``) the pod does not request,
  and a resource name that is neither CPU, memory, ephemeral storage nor scalar.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.interface import SKIP, Scorer, Scores, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import Array, NodeBlock, plus
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY
from policy_scheduler.plugins.dra_extended import DeviceCount, class_mapping, is_dra_extended_name

MAX_RESOURCE_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class Amount:
    """One resource over the nodes of a block (entry ``i`` for the ``i``-th node)."""

    requested: Array
    """What would be requested with the pod placed on the node."""
    allocated: Array
    """What the node's pods request, without the pod (BalancedAllocation compares the two)."""
    allocatable: Array
    """The node's allocatable amount; 1 where the resource does not count (no division by 0)."""
    counts: npt.NDArray[np.bool_]
    """Whether the resource counts in the node's score: the node has some of it."""
    weight: int


Combine = Callable[[Sequence[Amount], int], Scores]
"""Turns the amounts of the scored resources over a block of the given size into its scores;
on each node only the resources that count for it may contribute."""

_Entry = tuple[str, bool, int, int]
"""Per pod and resource: (name, whether the node's non-zero requests apply, pod request, weight)."""


@dataclass(frozen=True, slots=True)
class _State:
    """The resources that can count for the pod, and the devices of the classes that map those
    of them backed by devices."""

    entries: tuple[_Entry, ...]
    devices: Mapping[str, DeviceCount]


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One entry of ``resources``: a resource name and its weight in the average."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU), ResourceSpec(MEMORY))


def is_scalar_resource(name: str) -> bool:
    """kube's IsScalarResourceName: extended (``vendor/name``), ``kubernetes.io/`` prefixed,
    hugepages and attachable-volume resources, which nodes track by name."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def _parse_resource(
    item: object, here: str, seen: set[str], weighted: bool, errors: list[FieldError]
) -> ResourceSpec | None:
    if not isinstance(item, Mapping):
        errors.append(FieldError(here, "must be an object {name, weight}"))
        return None
    problems = unknown_fields(item, ("name", "weight"), here)
    name = item.get("name")
    weight = item.get("weight", 1)
    if not isinstance(name, str) or not name:
        problems.append(FieldError(f"{here}.name", "must be a non-empty resource name"))
    elif name in seen:
        problems.append(FieldError(f"{here}.name", f"duplicate resource {name!r}"))
    else:
        seen.add(name)
    if isinstance(weight, bool) or not isinstance(weight, int):
        problems.append(FieldError(f"{here}.weight", "must be an integer"))
    elif weighted and not 1 <= weight <= MAX_RESOURCE_WEIGHT:
        problems.append(
            FieldError(f"{here}.weight", f"must be between 1 and {MAX_RESOURCE_WEIGHT}")
        )
    elif not weighted and weight != 1:
        problems.append(FieldError(f"{here}.weight", "must be 1: this scorer does not weight"))
    errors.extend(problems)
    return None if problems else ResourceSpec(str(name), int(weight))


def collect_resources(
    args: Args,
    path: str,
    errors: list[FieldError],
    *,
    other_fields: Collection[str] = (),
    weighted: bool = True,
) -> tuple[ResourceSpec, ...]:
    """Parse ``resources`` (default: cpu and memory, weight 1), appending every problem with it,
    and with unknown fields other than ``other_fields``, to ``errors``.

    ``weighted=False`` (BalancedAllocation) accepts only weight 1, as kube-scheduler does.
    """
    errors += unknown_fields(args, ("resources", *other_fields), path)
    raw = args.get("resources")
    if raw is None:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        errors.append(FieldError(f"{path}.resources", "must be a list of {name, weight}"))
        return ()
    seen: set[str] = set()
    specs = [
        _parse_resource(item, f"{path}.resources[{i}]", seen, weighted, errors)
        for i, item in enumerate(raw)
    ]
    # kube-scheduler's defaulting also replaces an empty list by cpu and memory.
    return tuple(s for s in specs if s is not None) or DEFAULT_RESOURCES


def parse_resources(args: Args, path: str, *, weighted: bool = True) -> tuple[ResourceSpec, ...]:
    """:func:`collect_resources` for scorers whose only arg is ``resources``."""
    errors: list[FieldError] = []
    resources = collect_resources(args, path, errors, weighted=weighted)
    if errors:
        raise ArgsError(errors)
    return resources


def weighted_average(per_resource: Callable[[Array, Array], Array]) -> Combine:
    """Weighted average of ``per_resource(requested, allocatable)``, rounded down as kube's
    integer division does; 0 for a node where no resource counts."""

    def combine(amounts: Sequence[Amount], size: int) -> Scores:
        total: Array = np.zeros(size, np.int64)
        weights: Array = np.zeros(size, np.int64)
        for amount in amounts:
            share = per_resource(amount.requested, amount.allocatable)
            total = total + np.where(amount.counts, share * amount.weight, 0)
            weights = weights + amount.counts * amount.weight
        return np.where(weights > 0, total // np.maximum(weights, 1), 0).astype(np.int64)

    return combine


class ResourceAllocationScorer(Scorer[_State]):
    """Scores a node by ``combine`` over the amounts of the configured resources.

    ``use_requested`` selects plain requests for CPU and memory instead of the non-zero ones;
    ``skip_best_effort`` skips the pod when it requests none of the resources (every node 0).
    """

    def __init__(
        self,
        name: str,
        resources: Sequence[ResourceSpec],
        combine: Combine,
        *,
        use_requested: bool = False,
        skip_best_effort: bool = False,
    ) -> None:
        self.name = name
        self.resources = tuple(resources)
        self._combine = combine
        self._use_requested = use_requested
        self._skip_best_effort = skip_best_effort

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> _State | Skip:
        pod = cycle.pod
        # The strategies do not read pod-level requests: see the module's docstring.
        pod_requests = pod.requests if self._use_requested else pod.container_nonzero_requests
        requests = [pod_requests.get(spec.name, 0) for spec in self.resources]
        if self._skip_best_effort and not any(requests):
            return SKIP
        entries = []
        for spec, request in zip(self.resources, requests, strict=True):
            if spec.name in (CPU, MEMORY):
                entries.append((spec.name, not self._use_requested, request, spec.weight))
            elif spec.name == EPHEMERAL_STORAGE or (is_scalar_resource(spec.name) and request):
                entries.append((spec.name, False, request, spec.weight))
        devices: dict[str, DeviceCount] = {}
        if any(is_dra_extended_name(name) for name, _, _, _ in entries):
            volumes = cycle.snapshot.volumes
            mapping = class_mapping(volumes.device_classes())
            devices = {
                name: DeviceCount(volumes, mapping[name])
                for name, _, _, _ in entries
                if name in mapping
            }
        return _State(tuple(entries), devices)

    def score(self, state: _State, pod: PodView, node: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeBlock.of(node))[0])

    def score_nodes(self, state: _State, pod: PodView, nodes: NodeBlock) -> Scores:
        amounts = []
        for name, nonzero, request, weight in state.entries:
            allocatable = nodes.allocatable(name)
            used = nodes.nonzero_requested(name) if nonzero else nodes.requested(name)
            if name in state.devices:
                allocatable, used = _with_devices(state.devices[name], nodes, allocatable, used)
            counts = allocatable != 0
            amounts.append(
                Amount(plus(used, request), used, np.where(counts, allocatable, 1), counts, weight)
            )
        return self._combine(amounts, len(nodes))


def _with_devices(
    devices: DeviceCount, nodes: NodeBlock, allocatable: Array, used: Array
) -> tuple[Array, Array]:
    """``allocatable`` and ``used`` with, on the nodes that have none of the resource, the
    class's devices that serve them and those in use (where there are any)."""
    allocatable, used = np.array(allocatable), np.array(used)
    for i in np.flatnonzero(allocatable == 0):
        node = nodes[int(i)]
        total, in_use = devices.on(node.name, node.node.labels)
        if total:
            allocatable[i], used[i] = total, in_use
    return allocatable, used
