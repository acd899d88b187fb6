"""NodeResourcesFit: the node must have room for the pod's requests (kube-scheduler's
NodeResourcesFit filter; its scoring strategies are the LeastAllocated, MostAllocated and
RequestedToCapacityRatio scorers here).

A node fails with one reason per shortfall, all of them reported:

- "Too many pods" when the node already runs ``allocatable.pods`` pods;
- "Insufficient <resource>" when the pod's request exceeds ``allocatable - requested`` for cpu,
  memory, ephemeral-storage or an extended/scalar resource (``vendor/name``, ``hugepages-*``);
  a resource the node lacks has allocatable 0. An extended resource that a DeviceClass maps
  (its ``extendedResourceName`` or ``deviceclass.resource.kubernetes.io/<class>``) is not
  checked on a node whose allocatable has none of it: DynamicResources allocates devices for it
  there (:mod:`~policy_scheduler.plugins.dra_extended`), as kube's shouldDelegateResourceToDRA.
  Only what the policy's DynamicResources took on for the pod in its pre-filter is left to it
  (``Cycle.shared``): a policy without DynamicResources leaves nothing to devices it would not
  allocate.

Requests are the pod's effective requests (init containers, sidecars, overhead and pod-level
resources included); a resource the pod requests 0 of is never checked, so an overcommitted
node still takes pods that do not ask for what it lacks. A pod already on the node that is being
resized in place counts there as the largest of its spec, what the kubelet allocated and what it
runs with (:meth:`~policy_scheduler.model.objects.PodView.pod_requests`). (The scoring strategies
do not read the pod-level requests, as kube-scheduler v1.37.2's do not: see
:mod:`policy_scheduler.plugins.resource_allocation`.)

Queueing hint: a pod this filter rejected waits for a node added that could hold it when empty,
a node whose allocatable grew (of a resource it requests, or of pods) to that size, or an assigned
pod deleted (or scaled down) on such a node. kube-scheduler's hint is the same for nodes, and
takes any deletion for one that may help. A node's update is not held back by a resource the
pod requests that the node lacks when a DeviceClass may serve it. Not done: kube's also wakes
the pod for a DeviceClass added or changed that maps a resource it requests.

Args (optional, as kube's NodeResourcesFitArgs): ``ignoredResources: [name]`` and
``ignoredResourceGroups: [group]`` (the part before ``/``) name extended resources to skip.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import Filter, Rejections
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock, plus
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from policy_scheduler.model.selectors import label_key_problem
from policy_scheduler.model.volumes import DeviceClassView
from policy_scheduler.plugins.dra_extended import (
    DEVICE_CLASS_PREFIX,
    TAKEN_ON,
    is_dra_extended_name,
)
from policy_scheduler.plugins.helper import group_failures
from policy_scheduler.plugins.resource_allocation import is_scalar_resource

NAME = "NodeResourcesFit"

TOO_MANY_PODS = "Too many pods"

_Check = tuple[str, int, str, Mapping[str, Any]]
"""(resource, amount the pod requests, reason when the node lacks it, the cycle's shared
state: a resource DynamicResources took on there (:data:`TAKEN_ON`) is left to it on a node
with none of it in its allocatable). The filters run after every pre-filter: DynamicResources'
has run by then, whatever the order of the two."""

_Number = Any
"""One node's number (an int), or a block's array of them: the rule reads both alike."""


def _is_extended(name: str) -> bool:
    """kube's IsExtendedResourceName: a ``vendor/name`` outside the kubernetes.io namespace."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _class_may_serve(pod: PodView, event: ClusterEvent) -> bool:
    """kube's hint for a DeviceClass added or changed: a new class whose implicit name, or whose
    ``extendedResourceName`` (new, or changed), the pod requests."""
    added, before = event.storage, event.old_storage
    if not isinstance(added, DeviceClassView):
        return False
    resource = added.spec.get("extendedResourceName")
    requests = pod.requests
    if isinstance(before, DeviceClassView):
        if before.spec.get("extendedResourceName") == resource:
            return False
    elif requests.get(DEVICE_CLASS_PREFIX + added.name):
        return True
    return isinstance(resource, str) and bool(requests.get(resource))


class _FitFilter(Filter[tuple[_Check, ...]]):
    """The state is the pod's non-zero requests that this filter checks."""

    name = NAME
    wakes_on = (
        EventKind.NODE_ADDED
        | EventKind.NODE_ALLOCATABLE
        | EventKind.POD_DELETED
        | EventKind.POD_SCALED_DOWN
    )
    # A class may come to serve an extended resource no node lists (DRAExtendedResource), in a
    # policy whose DynamicResources maps them (and watches the classes).
    wakes_on_if_watched = EventKind.DEVICE_CLASS_CHANGED

    def __init__(self, ignored: frozenset[str], ignored_groups: frozenset[str]) -> None:
        self._ignored = ignored
        self._ignored_groups = ignored_groups

    def _skipped(self, name: str) -> bool:
        return _is_extended(name) and (
            name in self._ignored or name.partition("/")[0] in self._ignored_groups
        )

    def pre_filter(self, cycle: Cycle) -> tuple[_Check, ...]:
        return self._checks(cycle.pod, cycle.shared)

    def _checks(self, pod: PodView, shared: Mapping[str, Any] | None = None) -> tuple[_Check, ...]:
        requests = pod.requests
        names = [CPU, MEMORY, EPHEMERAL_STORAGE]
        names += (n for n in requests if is_scalar_resource(n) and not self._skipped(n))
        return tuple(
            (name, requests[name], f"Insufficient {name}", {} if shared is None else shared)
            for name in names
            if requests.get(name, 0) > 0
        )

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """No event on a node can make room that the node does not have even when empty (kube's
        hint for a node asks the same; for a deleted pod it queues whatever the node), and a
        node's update helps only if it raised the number of pods it allows or the allocatable of
        a resource the pod requests (as kube's)."""
        if event.kind == EventKind.DEVICE_CLASS_CHANGED:
            return _class_may_serve(pod, event)
        node, old = event.node, event.old_node
        if node is None:
            return True
        allocatable = node.allocatable
        # Without the classes at hand, a resource the node lacks that a class may map is
        # taken as served by devices: waking the pod for nothing costs one attempt.
        checks = [
            c
            for c in self._checks(pod)
            if allocatable.get(c[0], 0) or not is_dra_extended_name(c[0])
        ]
        if node.allowed_pods <= 0 or any(
            amount > allocatable.get(name, 0) for name, amount, _, _ in checks
        ):
            return False
        return (
            old is None
            or old.allowed_pods < node.allowed_pods
            or any(
                old.allocatable.get(name, 0) < allocatable.get(name, 0) for name, _, _, _ in checks
            )
        )

    def unresolvable(
        self, pod: PodView, nodes: NodeBlock, reasons: Sequence[str]
    ) -> npt.NDArray[np.bool_]:
        # kube-scheduler marks a resource unresolvable when the pod requests more of it than
        # the node has at all (no eviction makes that room); "Too many pods" may be lifted.
        unresolvable = np.zeros(len(nodes), np.bool_)
        for name, amount, reason, _ in self._checks(pod):
            if reason in reasons:
                unresolvable |= amount > nodes.allocatable(name)
        return unresolvable

    def filter(self, state: tuple[_Check, ...], pod: PodView, node: NodeInfo) -> Sequence[str]:
        # One node (a preemption's what-if asks thousands of times per pod): the rule on its own
        # numbers, without a block of it.
        failing = _failing_on(state, node)
        return tuple(
            reason for reason, fails in zip(_reasons(state), failing, strict=True) if fails
        )

    def rejects_with(
        self, state: tuple[_Check, ...], pod: PodView, node: NodeInfo, added: PodView
    ) -> bool:
        if added.uid in node.pods:
            return False  # adding it would replace the view counted: unsure
        return any(_failing_on(state, node, added))

    def filter_nodes(self, state: tuple[_Check, ...], pod: PodView, nodes: NodeBlock) -> Rejections:
        failing = _failing(state, nodes.pod_count(), nodes.allocatable, nodes.requested, plus)
        return group_failures(failing, _reasons(state))


def _failing(
    state: tuple[_Check, ...],
    pods: _Number,
    allocatable: Callable[[str], _Number],
    requested: Callable[[str], _Number],
    add: Callable[[_Number, int], _Number],
) -> list[Any]:
    """Whether the nodes fail each check, in the order of :func:`_reasons`: the rule for one
    node's integers and for a block's arrays alike. The pod fits when requested + amount <=
    allocatable (the amount is at most the room left); a resource a DeviceClass maps is not
    checked where the node's allocatable has none."""
    failing = [pods >= allocatable(PODS)]
    for name, amount, _, shared in state:
        has = allocatable(name)
        fails = add(requested(name), amount) > has
        failing.append(fails & (has > 0) if name in shared.get(TAKEN_ON, ()) else fails)
    return failing


def _failing_on(
    state: tuple[_Check, ...], node: NodeInfo, added: PodView | None = None
) -> list[bool]:
    """:func:`_failing` on one node's own numbers, with ``added`` counted there too if given,
    as adding it would make them."""
    allocatable, requested = node.node.allocatable, node.requested
    extra = {} if added is None else added.requests
    return _failing(
        state,
        len(node.pods) + (added is not None),
        lambda name: allocatable.get(name, 0),
        lambda name: requested.get(name, 0) + extra.get(name, 0),
        operator.add,
    )


def _reasons(state: tuple[_Check, ...]) -> list[str]:
    return [TOO_MANY_PODS, *(reason for _, _, reason, _ in state)]


def _names(raw: object, where: str, group: bool, errors: list[FieldError]) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, list):
        errors.append(FieldError(where, "must be a list of resource names"))
        return frozenset()
    names = set()
    for i, name in enumerate(raw):
        problem = (
            "must be a resource name"
            if not isinstance(name, str)
            else "a resource group must not contain '/'"
            if group and "/" in name
            else label_key_problem(name)
        )
        if problem:
            errors.append(FieldError(f"{where}[{i}]", problem))
        else:
            names.add(str(name))
    return frozenset(names)


def new_filter(args: Args, path: str) -> Filter[tuple[_Check, ...]]:
    errors = unknown_fields(args, ("ignoredResources", "ignoredResourceGroups"), path)
    ignored = _names(args.get("ignoredResources"), f"{path}.ignoredResources", False, errors)
    groups = _names(
        args.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups", True, errors
    )
    if errors:
        raise ArgsError(errors)
    return _FitFilter(ignored, groups)
