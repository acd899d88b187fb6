"""DynamicResources: a pod's ResourceClaims (resource.k8s.io/v1, DRA) must exist and be usable
on the node (kube-scheduler's DynamicResources, without its device allocator).

**PreFilter**, once per pod, looks up each claim of ``spec.resourceClaims`` in the pod's
namespace, as kube-scheduler does, and rejects the pod on every node (a PreFilter's
UnschedulableAndUnresolvable) with the first problem found, in kube's words where kube has any:

- a claim from a ``resourceClaimTemplateName`` that the resourceclaim controller has not made yet
  (no entry in the pod's ``status.resourceClaimStatuses``):
  ``pod "<ns>/<pod>": ResourceClaim not created yet``; an entry without a claim name means the
  pod needs no claim for it, and it is passed over, as in kube;
- a claim the scheduler does not know: ``could not find ResourceClaim "<ns>/<claim>"``;
- a claim being deleted: ``resourceclaim "<claim>" is being deleted``;

then, claim by claim in the pod's order:

- an allocated claim whose ``status.reservedFor`` is full (ResourceClaimReservedForMaxSize, 256,
  the most the API accepts) without this pod: ``resourceclaim in use``. (Kube v1.34's
  CanBeReserved no longer checks the size and would fail later, writing the reservation; the
  API's limit is the same, so refusing here says it earlier.)
- a claim not allocated: this scheduler does not allocate devices yet: rejected, saying so.

**Filter**, per node: the ``status.allocation.nodeSelector`` of every claim must match the node,
or the node fails with kube's "resourceclaim not available on the node". Claims allocated
without a node selector fit every node.

**PostFilter**, when no node fits, does what kube-scheduler v1.37's does for claims it did not
allocate: nothing, and it says nothing (v1.34's "no new claims to deallocate" and "still not
schedulable" are gone) — except "not found" when a filter before this one rejected the pod in
its pre-filter (kube's PreFilters stop there, so this plugin's state is missing, an error that
ends the post-filters: no preemption is tried). Unlike kube-scheduler's, it never deallocates a
claim to let the pod's devices be allocated elsewhere: this scheduler allocates none.

**Score** (v1.37's DynamicResources is also a score plugin, weight 2 in its default profile):
kube-scheduler scores only the devices its Filter allocated in this cycle, preferring a request's
earlier ``firstAvailable`` subrequests (the allocated subrequest at index ``i`` adds ``8 - i``),
normalized so that the best node gets 100. A node for which it allocated nothing, as for every
pod whose claims were all allocated before its cycle, scores 0; such claims are the only ones
this scheduler places pods with, so every node scores 0 here too, as kube logs them.

**PreBind** adds the pod to the ``status.reservedFor`` of each claim not yet reserved for it, as
kube-scheduler's does: the kubelet starts no pod its claims are not reserved for. The write goes
to the ``status`` subresource (the API server ignores status in a write to the claim itself)
and carries the claim's ``resourceVersion``, so that a reservation written meanwhile by someone
else is not overwritten (the API answers 409 and the pod is tried again).

Where device allocation will plug in (a later issue), following kube-scheduler's layout:

- PreFilter keeps the claims to allocate (today's "not allocated" rejection goes) and gathers
  the ResourceSlices, DeviceClasses and the devices already allocated (kube's
  allocatedDevices, with this scheduler's in-flight allocations);
- Filter runs the allocator per node for those claims, after the node selector check here,
  remembering each node's allocation in the cycle's state ("cannot allocate all claims" when it
  finds none);
- Score ranks each node by the subrequests its allocation chose, as kube's does (above);
- Reserve records the chosen node's allocations as in-flight (assumed, in
  :class:`~policy_scheduler.model.volumes.Volumes`' assume cache), so that the next cycles,
  which do not wait for the bind, do not hand the same devices out again; Unreserve drops them;
- PreBind also writes each new claim's ``status.allocation``, with the reservation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    SKIP,
    Filter,
    NodeStatuses,
    ObjectRef,
    ObjectWriter,
    PostFilter,
    PostFilterResult,
    PreBind,
    PreFilterResult,
    Rejections,
    Scorer,
    Scores,
    Skip,
    filter_each,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView, _mapping, _sequence
from policy_scheduler.model.selectors import NodeSelector
from policy_scheduler.model.volumes import ResourceClaimView, Volumes

NAME = "DynamicResources"

RESERVED_FOR_MAX_SIZE: Final = 256
"""kube's ResourceClaimReservedForMaxSize: the most consumers a claim's ``reservedFor`` holds."""

NOT_AVAILABLE: Final = ("resourceclaim not available on the node",)
IN_USE: Final = "resourceclaim in use"
STATE_NOT_FOUND: Final = "not found"


def not_created(pod: PodView) -> str:
    return f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'


def not_found(namespace: str, name: str) -> str:
    return f'could not find ResourceClaim "{namespace}/{name}"'


def being_deleted(name: str) -> str:
    return f'resourceclaim "{name}" is being deleted'


def not_allocated(name: str) -> str:
    return (
        f'resourceclaim "{name}" is not allocated: policy-scheduler does not allocate devices '
        "yet; allocate it (or let kube-scheduler place this pod)"
    )


@dataclass(frozen=True, slots=True)
class ClaimState:
    """The pod's claims, in ``spec.resourceClaims`` order (what a later Reserve and PreBind
    write), the node selectors of their allocations (the claims allocated for any node add
    none), or why no node can take the pod."""

    claims: tuple[ResourceClaimView, ...] = ()
    selectors: tuple[NodeSelector, ...] = ()
    rejection: str = ""


def _claim_names(pod: PodView) -> list[str] | str:
    """The names of the claims the pod uses, or why one of them cannot be known yet.

    :attr:`PodView.resource_claims` gives None both for a template's claim not made yet and for
    one the controller says the pod does not need (a status entry without a claim name); kube
    waits for the first and passes over the second, so the status is read again here."""
    statuses = {
        str(_mapping(s).get("name", ""))
        for s in _sequence(_mapping(pod.raw.get("status")).get("resourceClaimStatuses"))
    }
    names: list[str] = []
    for entry, name in pod.resource_claims:
        if name is not None:
            names.append(name)
        elif entry not in statuses:
            return not_created(pod)
    return names


def _lookup(pod: PodView, volumes: Volumes) -> tuple[ResourceClaimView, ...] | str:
    """The pod's claims, or why one of them is missing (kube's foreachPodResourceClaim)."""
    names = _claim_names(pod)
    if isinstance(names, str):
        return names
    claims: list[ResourceClaimView] = []
    for name in names:
        claim = volumes.resource_claim(pod.namespace, name)
        if claim is None:
            return not_found(pod.namespace, name)
        if claim.deleting:
            return being_deleted(name)
        claims.append(claim)
    return tuple(claims)


def claim_state(pod: PodView, volumes: Volumes) -> ClaimState:
    """What PreFilter concludes of the pod's claims (see the module's docstring)."""
    claims = _lookup(pod, volumes)
    if isinstance(claims, str):
        return ClaimState(rejection=claims)
    selectors: list[NodeSelector] = []
    for claim in claims:
        if claim.allocation is None:
            return ClaimState(claims, rejection=not_allocated(claim.name))
        reserved = pod.uid in claim.reserved_for
        if not reserved and len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE:
            return ClaimState(claims, rejection=IN_USE)
        if claim.allocated_nodes is not None:
            selectors.append(claim.allocated_nodes)
    return ClaimState(claims, tuple(selectors))


class _DynamicResourcesFilter(
    Filter[ClaimState], PostFilter[ClaimState | None], PreBind[ClaimState | None]
):
    name = NAME

    # Every filter rejection is UnschedulableAndUnresolvable in kube-scheduler (v1.34
    # does not preempt for devices).
    resolvable_reasons = frozenset()

    # Node labels decide an allocation's node selector; a claim's change may make, allocate
    # or reserve it; a deleted pod leaves the claims' reservedFor (kube's controller
    # then updates the claim, which also wakes the pod).
    wakes_on = (
        EventKind.RESOURCE_CLAIM_CHANGED
        | EventKind.RESOURCE_SLICE_CHANGED
        | EventKind.DEVICE_CLASS_CHANGED
        | EventKind.NODE_ADDED
        | EventKind.NODE_LABELS
        | EventKind.POD_DELETED
    )

    def pre_filter(self, cycle: Cycle) -> ClaimState | Skip:
        # As kube-scheduler's PreFilter: a pod without claims has nothing for this plugin.
        if not cycle.pod.resource_claims:
            return SKIP
        return claim_state(cycle.pod, cycle.snapshot.volumes)

    def pre_filter_result(self, state: ClaimState) -> PreFilterResult:
        return PreFilterResult(rejection=state.rejection) if state.rejection else ANY_NODE

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """A claim's change matters only to the pods of its namespace that use it, or that
        wait for a template's claim (kube asks whether the pod uses the claim; a claim made from
        a template is not named in the pod until its status says so)."""
        claim = event.storage
        if event.kind != EventKind.RESOURCE_CLAIM_CHANGED or not isinstance(
            claim, ResourceClaimView
        ):
            return True
        if claim.namespace != pod.namespace:
            return False
        return any(name is None or name == claim.name for _, name in pod.resource_claims)

    def filter(self, state: ClaimState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        name, labels = node.name, node.node.labels
        for selector in state.selectors:
            if not selector.matches(name, labels):
                return NOT_AVAILABLE
        return FITS

    def filter_nodes(self, state: ClaimState, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Most allocations are for any node (a rejected pod has no selectors either: no node is
        # asked about it).
        if not state.selectors:
            return {}
        return filter_each(self, state, pod, nodes)

    def post_filter(
        self, state: ClaimState | None, cycle: Cycle, statuses: NodeStatuses
    ) -> PostFilterResult:
        """kube-scheduler's DynamicResources PostFilter, which runs before DefaultPreemption:
        silent, unless its state is missing (see the module's docstring)."""
        if statuses.pre_filtered is not None and self.name not in statuses.pre_filtered:
            # An earlier pre-filter rejected the pod: kube finds no state of this plugin, and
            # the error ends the post-filters.
            return PostFilterResult(STATE_NOT_FOUND, final=True)
        return PostFilterResult()

    def pre_flight(self, state: ClaimState | None, pod: PodView, node: str) -> bool:
        """kube's PreBindPreFlight: work to do for any pod with claims, reserved or not."""
        return state is not None and bool(state.claims)

    async def pre_bind(
        self, state: ClaimState | None, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        """Reserve each claim not yet reserved for the pod (see the module's docstring)."""
        if state is None:
            return None
        consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        for claim in state.claims:
            if pod.uid in claim.reserved_for:
                continue
            reserved = [*_sequence(claim.status.get("reservedFor")), consumer]
            patch = {
                "metadata": {"resourceVersion": claim.resource_version},
                "status": {"reservedFor": reserved},
            }
            ref = ObjectRef(
                "resource.k8s.io/v1", "resourceclaims", claim.name, claim.namespace, "status"
            )
            try:
                await objects.patch(ref, patch)
            except Exception as error:  # an API error fails the bind, as kube's
                return f'running PreBind plugin "{NAME}": {claim.name}: {error}'
        return None


def new_filter(args: Args, path: str) -> Filter[ClaimState]:
    no_args(NAME, args, path)
    return _DynamicResourcesFilter()


class _DynamicResourcesScorer(Scorer[None]):
    """Every node 0: kube's score for claims allocated before the cycle (see the module's
    docstring). Unlike a SKIP, which kube-scheduler's DynamicResources never returns for Score,
    the nodes are scored, and shown with 0."""

    name = NAME

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        return 0

    def score_nodes(self, state: None, pod: PodView, nodes: NodeBlock) -> Scores:
        return np.zeros(len(nodes), np.int64)


def new_scorer(args: Args, path: str) -> Scorer[None]:
    no_args(NAME, args, path)
    return _DynamicResourcesScorer()
