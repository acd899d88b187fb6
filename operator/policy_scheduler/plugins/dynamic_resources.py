"""DynamicResources: a pod's ResourceClaims (resource.k8s.io/v1, DRA) must exist and be usable
on the node, and those not allocated yet get their devices here (kube-scheduler's
DynamicResources with the structured-parameters allocator of
:mod:`~policy_scheduler.model.dra`).

**PreEnqueue** holds a pod out of the queue, as kube's PreEnqueue does, while a claim of a
``resourceClaimTemplateName`` has not been made (no entry in its ``status.resourceClaimStatuses``),
while a claim it names is not known to the scheduler, or while one is being deleted: the pod costs
no attempt until the resourceclaim controller's status update, or the claim's event (kube's
pre-queueing hint: a change of a claim in the pod's namespace that it uses), lets it in.
PreFilter says the same in case the claim went away meanwhile.

**PreFilter**, once per pod, looks up each claim of ``spec.resourceClaims`` in the pod's
namespace, as kube-scheduler does, and rejects the pod on every node (a PreFilter's
UnschedulableAndUnresolvable) with the first problem found, in kube's words:

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
- a claim not allocated whose allocation this scheduler has in flight (reserved for another
  pod, not written yet): ``resource claim <ns>/<claim> is in the process of being allocated``;
- a claim not allocated with a request (or ``firstAvailable`` subrequest) of a DeviceClass
  that does not exist: ``request <request>: device class <class> does not exist``
  (``<request>/<subrequest>`` for a subrequest); a request naming no class is an error status.

With claims to allocate, it builds the pod's :class:`~policy_scheduler.model.dra.Allocator`
from the devices in use (every claim's ``status.allocation`` and this scheduler's allocations in
flight, :meth:`~policy_scheduler.model.volumes.Volumes.allocated`; results with adminAccess do
not count, as kube's), the ResourceSlices with the DeviceTaintRules' taints, the DeviceClasses,
and the cluster state's
:class:`~policy_scheduler.model.cel.DeviceSelectors`, whose selector results outlive the pod.

**Filter**, per node: the ``status.allocation.nodeSelector`` of every allocated claim must match
the node, and an allocated claim whose devices' binding failed (a ``bindingFailureConditions``
condition True) or timed out (binding conditions not all True :data:`BINDING_TIMEOUT_SECONDS`
after its ``allocationTimestamp``) fits no node ("resourceclaim not available on the node", the
claim remembered for PostFilter); then the allocator must allocate every unallocated claim on
the node in one pass, all or nothing ("cannot allocate all claims"; the allocator's own reason,
which request failed and why, is kept per node for ``explain`` and the decisions). The node's
allocations are kept in the cycle's state for Score and Reserve. The allocator keeps each
node's answer in the cluster state's :class:`~policy_scheduler.model.dra.Outcomes` and gives it
again while nothing it depends on changed, so the pods of one template do not search again on
nodes where nothing changed; its answers are shared, and Reserve copies what it puts in flight.
A fatal allocator error (a CEL error, a broken pool, a search past
:data:`FILTER_TIMEOUT_SECONDS`) is kube's error status: the attempt fails, the pod is tried
again after its backoff.

**Score** (v1.37's DynamicResources is also a score plugin, weight 2 in its default profile):
for each request with ``firstAvailable`` subrequests, the subrequest at index ``i`` that the
node's allocation chose adds ``8 - i`` (FirstAvailableDeviceRequestMaxSize - i), normalized so
that the best node gets 100; a node for which nothing was allocated in the cycle scores 0. The
priority reads the allocations the filter kept in the cycle (``Cycle.shared``); a policy that
scores with it without filtering with it has them allocated per node.

Beyond kube-scheduler, which ranks nodes by the ``firstAvailable`` alternatives alone, the
priority's ``placement`` arg ranks them by the share (0..100) of the devices that serve the node
in use once the pod has its own there: ``Pack`` scores that share (the pod goes where devices are
already taken, leaving whole nodes free for large claims), ``Spread`` what is left. It replaces
kube's subrequest score, and shows in the plugin's column of the score breakdown.

Also beyond kube-scheduler, whose allocator takes the first devices that fit, the priority's
``preferSmallest`` (optionally with ``capacities``, the order they are compared in) and
``numaAttribute`` (with ``numaPlacement``: ``Pack``, the default, or ``Spread``) choose among
the devices that fit on each node (:class:`~policy_scheduler.model.dra.DeviceChoice`): the
priority allocates again on each feasible node in the choice's order, and those allocations
are the ones scored and reserved (the filter's first ones only said that the node fits: the
same nodes fit either way). ``explain``, ``simulate`` and ``status.decisions`` follow each
device with why it came first (its capacities compared, its NUMA domain).

**Reserve** records the chosen node's allocations as in flight
(:meth:`~policy_scheduler.model.volumes.Volumes.allocate`), so that the next cycles, which do
not wait for the bind, count those devices as taken, and a pod sharing the claim waits for it;
**Unreserve** drops them and the claims assumed after PreBind's writes, and removes the pod from
the ``reservedFor`` of an allocated claim reserved for it, as kube's does.

**PreBind**, for each claim not yet reserved for the pod, as kube's bindClaim: for a claim it
allocated, the finalizer ``resource.kubernetes.io/delete-protection`` (a patch of the claim, with
its ``resourceVersion``), then one write of the ``status`` subresource setting ``allocation`` and
appending the pod to ``reservedFor`` (for an allocated claim, the reservation alone), the
allocation stamped with its ``allocationTimestamp`` when it has none; on a 409 the claim is read
again and the write tried again (kube's DefaultRetry: 5 tries), failing with kube's words when
the claim was deleted, allocated or deallocated elsewhere meanwhile. The written claim is
assumed until the informer brings it, and the allocation is no longer in flight. Then, when a
device of the claims has ``bindingConditions``, it waits (at once, then every
:data:`BINDING_POLL_SECONDS`, for at most :data:`BINDING_TIMEOUT_SECONDS`) until the claims'
``status.devices`` say every one of them True, and fails the bind in kube's words when a
``bindingFailureConditions`` condition is True or the time is up.

**PostFilter**, when no node fits, does what kube-scheduler v1.37's does: an allocated claim
that some node's Filter found not available there, reserved for no pod or for this one alone, is
deallocated (its ``status`` cleared by a write in the background), saying "deallocation of
ResourceClaim completed"; otherwise nothing, and it says nothing — except "not found" when a
filter before this one rejected the pod in its pre-filter (kube's PreFilters stop there, so this
plugin's state is missing, an error that ends the post-filters: no preemption is tried).

**Extended resources backed by a DeviceClass** (kube's DRAExtendedResource,
:mod:`~policy_scheduler.plugins.dra_extended`): a pod requesting an extended resource that a
DeviceClass maps gets, in PreFilter, a claim in memory (``<extended-resources>``, to be made
for the pod), or the one an earlier attempt made. Filter, per node, fails with ``cannot
schedule extended resource claim`` when that earlier claim exists (PostFilter then deletes it,
saying "deletion of ResourceClaim completed", as kube's), with ``cannot
fit resource`` when the node neither lists a requested extended resource nor has it mapped;
the resources the node's allocatable lacks become the claim's requests for the node, allocated
with the pod's other claims in one pass. Reserve puts that allocation in flight (under the pod's
uid); PreBind creates the claim (``generateName: <pod>-extended-resources-``, the
``resource.kubernetes.io/extended-resource-claim: "true"`` annotation, the pod as its
controlling owner), writes its finalizer, allocation and reservation as for any claim, then
merge-patches the pod's ``status.extendedResourceClaimStatus`` (the claim's name and which
container's resource each request serves); Unreserve deletes a claim it created.

Not done, and what the pod is told: kube's ``BindingConditionsPending`` event while PreBind
waits (the plugins have no event port).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np

from policy_scheduler.framework.args import Args, ArgsError, FieldError, no_args, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    MAX_NODE_SCORE,
    NORMAL,
    SKIP,
    Explains,
    Filter,
    NodeStatuses,
    ObjectRef,
    ObjectWriter,
    PostFilter,
    PostFilterResult,
    PreBind,
    PreEnqueue,
    PreFilterResult,
    Reads,
    Rejections,
    Reserve,
    Scorer,
    Scores,
    Skip,
    StatusError,
    filter_each,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.dra import (
    AllocationError,
    Allocator,
    DeviceChoice,
    DeviceID,
    Unallocatable,
)
from policy_scheduler.model.dra.outcomes import copied
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView, Raw, _mapping, _sequence, rfc3339
from policy_scheduler.model.selectors import NodeSelector
from policy_scheduler.model.volumes import (
    DEVICE_CLASS,
    DEVICE_TAINT_RULE,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    ResourceClaimView,
    Volumes,
)
from policy_scheduler.plugins.dra_extended import (
    IN_MEMORY_NAME,
    STALE_CLAIM,
    TAKEN_ON,
    NodeClaim,
    claim_body,
    class_mapping,
    existing_claim,
    in_memory_claim,
    is_dra_extended_name,
    mapped_requests,
    node_claim,
)
from policy_scheduler.plugins.helper import normalize_to_max

NAME = "DynamicResources"

RESERVED_FOR_MAX_SIZE: Final = 256
"""kube's ResourceClaimReservedForMaxSize: the most consumers a claim's ``reservedFor`` holds."""
FIRST_AVAILABLE_MAX_SIZE: Final = 8
"""kube's FirstAvailableDeviceRequestMaxSize: the most subrequests a request lists."""
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
UPDATE_TRIES: Final = 5
"""kube's retry.DefaultRetry: how many times a claim's write is tried when it conflicts."""
CONFLICT: Final = 409
BINDING_TIMEOUT_SECONDS: Final = 600.0
"""kube's DynamicResourcesArgs.bindingTimeout default: how long PreBind waits for the devices'
binding conditions, from the allocation's ``allocationTimestamp``."""
BINDING_POLL_SECONDS: Final = 5.0
"""How often PreBind looks at the binding conditions again, as kube's."""
FILTER_TIMEOUT_SECONDS: Final = 10.0
"""kube's DynamicResourcesArgs.filterTimeout default (DRASchedulerFilterTimeout, on in v1.37):
the longest one node's allocation may search."""

NOT_AVAILABLE: Final = ("resourceclaim not available on the node",)
IN_USE: Final = "resourceclaim in use"
STATE_NOT_FOUND: Final = "not found"
DEALLOCATED: Final = "deallocation of ResourceClaim completed"
GROUP_CLAIMS_RELEASED: Final = "deallocation and deletion of ResourceClaims completed"
"""What kube's PodGroupPostFilter says of a pod group not placed (in v1.37, whatever it
released): the words a gang's pass tells after its verdict."""
DELETED: Final = "deletion of ResourceClaim completed"
API_VERSION: Final = "resource.k8s.io/v1"


def not_created(pod: PodView) -> str:
    return f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'


def not_found(namespace: str, name: str) -> str:
    return f'could not find ResourceClaim "{namespace}/{name}"'


def being_deleted(name: str) -> str:
    return f'resourceclaim "{name}" is being deleted'


def being_allocated(claim: ResourceClaimView) -> str:
    return f"resource claim {claim.key} is in the process of being allocated"


def no_class(request: str, class_name: str) -> str:
    return f"request {request}: device class {class_name} does not exist"


@dataclass(slots=True)
class ClaimState:
    """The pod's claims, in ``spec.resourceClaims`` order, or why no node can take the pod;
    for the claims to allocate, the pod's allocator, and what Filter found on each node (the
    allocations, in the order of :attr:`to_allocate`, or the allocator's reason); the claims
    found not available on some node (for PostFilter); and what Reserve put in flight."""

    claims: tuple[ResourceClaimView, ...] = ()
    rejection: str = ""
    selectors: tuple[tuple[int, NodeSelector], ...] = ()
    """Each allocated claim's node selector, with the claim's index in :attr:`claims`."""
    unbindable: tuple[int, ...] = ()
    """The allocated claims whose devices' binding failed or timed out: on no node."""
    to_allocate: tuple[ResourceClaimView, ...] = ()
    allocator: Allocator | None = None
    volumes: Volumes | None = None
    allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unallocatable: dict[str, str] = field(default_factory=dict)
    """Node name -> the allocator's reason for it (kube says "cannot allocate all claims")."""
    unavailable: set[int] = field(default_factory=set)
    reserved: dict[str, Raw] = field(default_factory=dict)
    """Claim uid -> the allocation Reserve put in flight for it."""
    in_use: set[DeviceID] = field(default_factory=set)
    """The devices in use before the cycle, for a priority's placement."""
    notes: dict[str, list[list[str]]] = field(default_factory=dict)
    """Node name -> per claim to allocate, per device, why a priority's device choice took it."""
    extended: ExtendedClaim | None = None
    """The pod's claim for extended resources backed by DeviceClasses, if it has one."""


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


def _uses(pod: PodView, claim: ResourceClaimView) -> bool:
    """Whether ``pod`` uses ``claim``, or may (a template's claim it does not name yet)."""
    if claim.namespace != pod.namespace:
        return False
    return any(name is None or name == claim.name for _, name in pod.resource_claims)


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


def _missing_class(claim: ResourceClaimView, volumes: Volumes) -> str:
    """Why the claim's requests cannot be allocated whatever the node (kube's
    validateDeviceClass): a class that does not exist; empty when every class does. A request
    of no known type, or naming no class, raises kube's error status."""
    for request in claim.requests:
        name = str(request.get("name", ""))
        exactly = request.get("exactly")
        if exactly is not None:
            wanted = [(name, str(_mapping(exactly).get("deviceClassName") or ""))]
        elif request.get("firstAvailable"):
            wanted = [
                (f"{name}/{_mapping(sub).get('name', '')}",
                 str(_mapping(sub).get("deviceClassName") or ""))
                for sub in _sequence(request["firstAvailable"])
            ]  # fmt: skip
        else:
            return f"resource claim {claim.key}, request {name}: unknown request type"
        for qualified, class_name in wanted:
            if not class_name:
                raise StatusError(
                    f'running PreFilter plugin "{NAME}": request {qualified}: '
                    "unsupported request type"
                )
            if volumes.device_class(class_name) is None:
                return no_class(qualified, class_name)
    return ""


def claim_state(pod: PodView, volumes: Volumes, now: datetime | None = None) -> ClaimState:
    """What PreFilter concludes of the pod's claims (see the module's docstring); ``now`` for
    the binding timeout of allocated claims (None: the current time)."""
    claims = _lookup(pod, volumes)
    if isinstance(claims, str):
        return ClaimState(rejection=claims)
    selectors: list[tuple[int, NodeSelector]] = []
    unbindable: list[int] = []
    to_allocate: list[ResourceClaimView] = []
    for index, claim in enumerate(claims):
        if claim.allocation is not None:
            reserved = pod.uid in claim.reserved_for
            if not reserved and len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE:
                return ClaimState(claims, IN_USE)
            if claim.allocated_nodes is not None:
                selectors.append((index, claim.allocated_nodes))
            ready, failure = binding_readiness(claim)
            if failure or (not ready and timed_out(claim, now or _now())):
                unbindable.append(index)
            continue
        if volumes.in_flight(claim) is not None:
            return ClaimState(claims, being_allocated(claim))
        missing = _missing_class(claim, volumes)
        if missing:
            return ClaimState(claims, missing)
        to_allocate.append(claim)
    allocator = _allocator(volumes) if to_allocate else None
    return ClaimState(
        claims,
        selectors=tuple(selectors),
        unbindable=tuple(unbindable),
        to_allocate=tuple(to_allocate),
        allocator=allocator,
        volumes=volumes,
    )


def _allocator(volumes: Volumes) -> Allocator:
    return Allocator(
        volumes.allocated(),
        volumes.device_classes(),
        volumes.resource_slices(),
        volumes.selectors,
        slice_cache=volumes.slice_cache,
        taint_rules=volumes.device_taint_rules(),
        outcomes=volumes.outcomes,
    )


def allocate(
    state: ClaimState,
    node: NodeInfo,
    choice: DeviceChoice | None = None,
    extra: Sequence[Raw] = (),
) -> list[dict[str, Any]] | Unallocatable:
    """The allocator's answer for the pod's claims to allocate on ``node`` (and the ``extra``
    claims after them), given at most :data:`FILTER_TIMEOUT_SECONDS`; an AllocationError (a
    timeout among them) is kube's error status, which ends the attempt. With a ``choice``
    (beyond kube) the devices are chosen by it, and why each was is kept in
    :attr:`ClaimState.notes`."""
    assert state.allocator is not None
    deadline = time.monotonic() + FILTER_TIMEOUT_SECONDS
    claims = [*(c.raw for c in state.to_allocate), *extra]
    notes: list[list[str]] = []
    try:
        found = state.allocator.allocate(
            node.name,
            node.node.labels,
            claims,
            expired=lambda: time.monotonic() > deadline,
            choice=choice,
            notes=notes,
        )
    except AllocationError as error:
        raise StatusError(f'running "{NAME}" filter plugin: {error.message}') from None
    if notes:
        state.notes[node.name] = notes[: len(state.to_allocate)]
    return found


def _now() -> datetime:
    return datetime.now(UTC)


def _waits(result: Mapping[str, Any]) -> bool:
    return bool(result.get("bindingConditions"))


def _results(claim: ResourceClaimView) -> list[Raw]:
    allocation = claim.allocation or {}
    return [_mapping(r) for r in _sequence(_mapping(allocation.get("devices")).get("results"))]


def _true(conditions: Sequence[Any], kind: object) -> Raw | None:
    """The condition of type ``kind`` among ``conditions`` if its status is True."""
    for condition in map(_mapping, conditions):
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def binding_readiness(claim: ResourceClaimView) -> tuple[bool, str]:
    """kube's isClaimReadyForBinding: whether every binding condition of the claim's devices
    is True in ``status.devices``, and kube's words when a binding failure condition is."""
    if claim.allocation is None:
        return False, ""
    statuses = [_mapping(d) for d in _sequence(claim.status.get("devices"))]
    for result in filter(_waits, _results(claim)):
        where = (result.get("driver"), result.get("pool"), result.get("device"))
        status = next(
            (d for d in statuses if (d.get("driver"), d.get("pool"), d.get("device")) == where),
            None,
        )
        if status is None:
            return False, ""
        conditions = _sequence(status.get("conditions"))
        for kind in _sequence(result.get("bindingFailureConditions")):
            failed = _true(conditions, kind)
            if failed is not None:
                message = json.dumps(str(failed.get("message") or ""), ensure_ascii=False)
                return False, (
                    f"device binding failed: claim={claim.name}, "
                    f"reason={failed.get('reason') or ''}, message={message}"
                )
        if any(_true(conditions, kind) is None for kind in _sequence(result["bindingConditions"])):
            return False, ""
    return True, ""


def timed_out(
    claim: ResourceClaimView, now: datetime, timeout: float = BINDING_TIMEOUT_SECONDS
) -> bool:
    """kube's isClaimTimeout: a device of the claim waits for binding conditions, and its
    ``allocationTimestamp`` is more than ``timeout`` seconds before ``now``."""
    stamp = (claim.allocation or {}).get("allocationTimestamp")
    if not stamp or not any(map(_waits, _results(claim))):
        return False
    try:
        allocated = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return False
    return (now - allocated).total_seconds() > timeout


def _consumer(pod: PodView) -> dict[str, str]:
    """The pod as a claim's ``reservedFor`` names it (kube's ResourceClaimConsumerReference)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def _ref(claim: ResourceClaimView, subresource: str = "") -> ObjectRef:
    return ObjectRef(API_VERSION, "resourceclaims", claim.name, claim.namespace, subresource)


def _devices(allocation: Mapping[str, Any], notes: Sequence[str] = ()) -> tuple[str, ...]:
    """An allocation's devices as people read them: ``request: driver/pool/device``, each
    followed by why a device choice took it, when one did (``notes``, per result)."""
    results = [_mapping(r) for r in _sequence(_mapping(allocation.get("devices")).get("results"))]
    return tuple(
        f"{r.get('request', '')}: {r.get('driver', '')}/{r.get('pool', '')}/{r.get('device', '')}"
        + (f" ({note})" if note else "")
        for r, note in zip(results, notes or [""] * len(results), strict=True)
    )


class _DynamicResourcesFilter(
    PreEnqueue,
    Filter[ClaimState],
    Explains[ClaimState],
    Reserve[ClaimState | None],
    PostFilter[ClaimState | None],
    PreBind[ClaimState | None],
):
    name = NAME

    # Every filter rejection is UnschedulableAndUnresolvable in kube-scheduler (it does not
    # preempt for devices).
    resolvable_reasons = frozenset()

    # kube's EventsToRegister: node labels decide an allocation's node selector and which
    # slices a node has; a claim's change may make, allocate, free or reserve it; a slice or a
    # class may bring devices; a deleted pod leaves the claims' reservedFor (kube's controller
    # then updates the claim, which also wakes the pod).
    wakes_on = (
        EventKind.RESOURCE_CLAIM_CHANGED
        | EventKind.RESOURCE_SLICE_CHANGED
        | EventKind.DEVICE_CLASS_CHANGED
        | EventKind.NODE_ADDED
        | EventKind.NODE_LABELS
        | EventKind.POD_DELETED
    )

    def __init__(
        self,
        binding_timeout: float = BINDING_TIMEOUT_SECONDS,
        poll_interval: float = BINDING_POLL_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = _now,
    ) -> None:
        self.binding_timeout = binding_timeout
        self.poll_interval = poll_interval
        self._sleep = sleep
        self._clock = clock
        self._now = now

    asks_again_on = EventKind.RESOURCE_CLAIM_CHANGED

    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        """A claim not made, not known or being deleted holds the pod (see the module's
        docstring)."""
        if not pod.resource_claims:
            return None
        claims = _lookup(pod, cluster.volumes)
        return claims if isinstance(claims, str) else None

    def pre_enqueue_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """The change of a claim the pod uses (or may use: a template's not named yet)."""
        claim = event.storage
        return isinstance(claim, ResourceClaimView) and _uses(pod, claim)

    def pre_filter(self, cycle: Cycle) -> ClaimState | Skip:
        # As kube-scheduler's PreFilter: a pod without claims, nor extended resources that a
        # DeviceClass maps, has nothing for this plugin.
        extended = extended_claim(cycle.pod, cycle.snapshot.volumes)
        if not cycle.pod.resource_claims and extended is None:
            return SKIP
        state = claim_state(cycle.pod, cycle.snapshot.volumes, self._now())
        if extended is not None and not state.rejection:
            state.extended = extended
            # NodeResourcesFit leaves these to this plugin on a node that lacks them.
            cycle.shared[TAKEN_ON] = frozenset(extended.requests.keys() & extended.mapping.keys())
            if state.allocator is None:
                state.allocator = _allocator(cycle.snapshot.volumes)
                state.volumes = cycle.snapshot.volumes
        # For the priority, which scores the allocations Filter keeps in it.
        cycle.shared[NAME] = state
        return state

    def pre_filter_result(self, state: ClaimState) -> PreFilterResult:
        return PreFilterResult(rejection=state.rejection) if state.rejection else ANY_NODE

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hint for claims: a claim's change matters to the pods of its namespace that
        use it, or that wait for a template's claim (a claim made from a template is not named
        in the pod until its status says so); a claim deallocated, or deleted allocated, frees
        devices for any pod."""
        claim, before = event.storage, event.old_storage
        if event.kind == EventKind.RESOURCE_CLAIM_CHANGED and claim is None:
            # Deleted: only an allocated claim's deletion frees devices.
            return not isinstance(before, ResourceClaimView) or before.allocation is not None
        if event.kind != EventKind.RESOURCE_CLAIM_CHANGED or not isinstance(
            claim, ResourceClaimView
        ):
            return True
        if (
            isinstance(before, ResourceClaimView)
            and before.allocation is not None
            and claim.allocation is None
        ):
            return True
        return _uses(pod, claim)

    def filter(self, state: ClaimState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        # In kube's order: the allocator's failure is told before an allocated claim's node
        # selector, and then that claim is not remembered as unavailable.
        name, labels = node.name, node.node.labels
        extended = filter_extended(state, pod, node)
        if isinstance(extended, str):
            return (extended,)
        if extended is None and not state.claims:
            return FITS
        unavailable = [i for i, s in state.selectors if not s.matches(name, labels)]
        unavailable += state.unbindable
        found: list[dict[str, Any]] | None = None
        if state.to_allocate or extended is not None:
            assert state.allocator is not None
            extra = [] if extended is None else [extended_raw(state, extended)]
            allocated = allocate(state, node, extra=extra)
            if isinstance(allocated, Unallocatable):
                state.unallocatable[name] = allocated.reason
                return (allocated.message,)
            found = allocated
        if unavailable:
            state.unavailable.update(unavailable)
            return NOT_AVAILABLE
        if found is not None:
            if extended is not None:
                assert state.extended is not None
                state.extended.nodes[name] = (extended, {})
                keep_extended(state, name, found.pop())
            if state.to_allocate:
                state.allocations[name] = found
        return FITS

    def details(self, state: ClaimState) -> Mapping[str, str]:
        """The allocator's reason for each node it found no allocation on."""
        return state.unallocatable

    def chosen(self, state: ClaimState, node: str) -> Mapping[str, tuple[str, ...]]:
        """The devices allocated on ``node`` in the cycle, by claim."""
        allocations = state.allocations.get(node)
        chosen: dict[str, tuple[str, ...]] = {}
        if allocations is not None:
            notes = state.notes.get(node) or [[] for _ in allocations]
            chosen = {
                c.name: _devices(a, n)
                for c, a, n in zip(state.to_allocate, allocations, notes, strict=True)
            }
        if state.extended is not None and node in state.extended.nodes:
            chosen[IN_MEMORY_NAME] = _devices(state.extended.nodes[node][1])
        return chosen

    def filter_nodes(self, state: ClaimState, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Most pods' claims are allocated for any node (a rejected pod has neither selectors
        # nor an allocator: no node is asked about it).
        if (
            not state.selectors
            and state.allocator is None
            and not state.unbindable
            and state.extended is None
        ):
            return {}
        return filter_each(self, state, pod, nodes)

    def reserve(self, state: ClaimState | None, pod: PodView, node: str) -> str | None:
        """Put the node's allocations in flight (see the module's docstring)."""
        if state is not None and state.volumes is not None:
            reserve_extended(state, state.volumes, pod, node)
        if state is None or not state.to_allocate or state.volumes is None:
            return None
        allocations = state.allocations.get(node)
        if allocations is None:
            return f'running Reserve plugin "{NAME}": claim allocation not found for node'
        for claim, found in zip(state.to_allocate, allocations, strict=True):
            # The allocator's answers are shared with the outcomes it keeps for other pods:
            # from here on the pod has its own.
            allocation = copied(found)
            state.volumes.allocate(claim, allocation)
            state.reserved[claim.uid] = allocation
        return None

    def unreserve(self, state: ClaimState | None, pod: PodView, node: str) -> None:
        """Drop the allocations in flight, and the claims assumed as PreBind wrote them while
        their allocation was still in flight (a later claim's write failed); the pod's
        reservations are taken back by :meth:`unreserve_writes`."""
        if state is None or state.volumes is None:
            return
        unreserve_extended(state, state.volumes)
        for claim in state.claims:
            if state.volumes.release(claim):
                state.volumes.restore(claim.kind, claim.key)
        state.reserved.clear()

    async def unreserve_writes(
        self, state: ClaimState | None, pod: PodView, node: str, objects: ObjectWriter
    ) -> None:
        """kube's Unreserve takes the pod out of the ``reservedFor`` of each allocated claim
        reserved for it (as PreBind wrote it, or as it was read), the claim's version as a
        precondition; and deletes the claim for extended resources PreBind created."""
        if state is None:
            return
        await delete_extended(state, objects)
        for claim in state.claims:
            if claim.allocation is None or pod.uid not in claim.reserved_for:
                continue
            kept = [
                ref
                for ref in _sequence(claim.status.get("reservedFor"))
                if _mapping(ref).get("uid") != pod.uid
            ]
            patch = {
                "metadata": {"resourceVersion": claim.resource_version},
                "status": {"reservedFor": kept},
            }
            await objects.patch(_ref(claim, "status"), patch)

    def post_filter(
        self, state: ClaimState | None, cycle: Cycle, statuses: NodeStatuses
    ) -> PostFilterResult:
        """kube-scheduler's DynamicResources PostFilter, which runs before DefaultPreemption
        (see the module's docstring)."""
        if statuses.pre_filtered is not None and self.name not in statuses.pre_filtered:
            # An earlier pre-filter rejected the pod: kube finds no state of this plugin, and
            # the error ends the post-filters.
            return PostFilterResult(STATE_NOT_FOUND, final=True)
        if state is None:
            return PostFilterResult()
        pod = cycle.pod
        for index in sorted(state.unavailable):
            claim = state.claims[index]
            if claim.reserved_for <= {pod.uid}:
                patch = {
                    "metadata": {"resourceVersion": claim.resource_version},
                    "status": {"reservedFor": None, "allocation": None, "devices": None},
                }
                return PostFilterResult(DEALLOCATED, writes=((_ref(claim, "status"), patch),))
        return delete_stale_extended(state)

    def pre_flight(self, state: ClaimState | None, pod: PodView, node: str) -> bool:
        """kube's PreBindPreFlight: work to do for any pod with claims, reserved or not."""
        return state is not None and (bool(state.claims) or state.extended is not None)

    async def pre_bind(
        self, state: ClaimState | None, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        """Allocate and reserve each claim not yet reserved for the pod (see the module's
        docstring); each claim written replaces the one read in ``state``, for Unreserve."""
        if state is None:
            return None
        claims = list(state.claims)
        for index, claim in enumerate(claims):
            if pod.uid in claim.reserved_for:
                continue
            try:
                allocation = state.reserved.get(claim.uid)
                written = await _bind_claim(claim, allocation, pod, objects, self._now())
            except Exception as error:  # an API error fails the bind, as kube's
                return f'running PreBind plugin "{NAME}": {error}'
            claims[index] = written
            state.claims = tuple(claims)
            if state.volumes is not None:
                state.volumes.assume(written)
        if state.volumes is not None:
            for claim in claims:
                state.volumes.release(claim)
        try:
            written_extended = await bind_extended(state, pod, node, objects, self._now())
        except Exception as error:  # an API error fails the bind, as kube's
            return f'running PreBind plugin "{NAME}": {error}'
        if written_extended is not None:
            claims.append(written_extended)
        if state.volumes is None or not any(map(_waits, (r for c in claims for r in _results(c)))):
            return None
        objects.event(
            pod,
            NORMAL,
            "BindingConditionsPending",
            f"waiting for binding conditions for device on node {node}",
            "Scheduling",
        )
        failure = await self._wait_for_binding(state.volumes, claims)
        return f'running PreBind plugin "{NAME}": {failure}' if failure else None

    async def _wait_for_binding(self, volumes: Volumes, claims: Sequence[ResourceClaimView]) -> str:
        """kube's wait for the devices' binding conditions (isPodReadyForBinding, at once and
        then every :data:`BINDING_POLL_SECONDS`, for at most the binding timeout), on the
        claims as the informers bring them: why the pod may not be bound, or "" once it may."""
        deadline = self._clock() + self.binding_timeout
        while True:
            for claim in claims:
                now = volumes.resource_claim(claim.namespace, claim.name)
                if now is None:
                    return f'resourceclaim "{claim.name}" not found'
                ready, failure = binding_readiness(now)
                if failure:
                    return failure
                if not ready:
                    if timed_out(now, self._now(), self.binding_timeout):
                        return f"device binding timeout: claim={claim.name}"
                    break
            else:
                return ""
            remaining = deadline - self._clock()
            if remaining <= 0:
                return "device binding timeout: context deadline exceeded"
            await self._sleep(min(self.poll_interval, remaining))


async def _bind_claim(
    claim: ResourceClaimView,
    allocation: Raw | None,
    pod: PodView,
    objects: ObjectWriter,
    now: datetime,
) -> ResourceClaimView:
    """kube's bindClaim: the claim as written, or an error in kube's words. A conflict reads
    the claim again and tries again, :data:`UPDATE_TRIES` times in all."""
    current = claim
    for _ in range(UPDATE_TRIES - 1):
        try:
            return await _write_claim(current, allocation, pod, objects, now)
        except _WriteError as error:
            if error.status != CONFLICT:
                raise
        try:
            current = ResourceClaimView(await objects.get(_ref(claim)))
        except Exception as error:
            message = f"get updated claim {claim.key} after conflict: {error}"
            raise ClaimChangedError(message) from None
    return await _write_claim(current, allocation, pod, objects, now)


async def _write_claim(
    claim: ResourceClaimView,
    allocation: Raw | None,
    pod: PodView,
    objects: ObjectWriter,
    now: datetime,
) -> ResourceClaimView:
    """One try of kube's bindClaim on the claim as last read: its finalizer, then its status."""
    if claim.deleting:
        raise ClaimChangedError(f"claim {claim.key} got deleted in the meantime")
    metadata = dict(_mapping(claim.raw.get("metadata")))
    if allocation is not None:
        if claim.allocation is not None:
            raise ClaimChangedError(f"claim {claim.key} got allocated elsewhere in the meantime")
        if FINALIZER not in claim.finalizers:
            metadata["finalizers"] = [*claim.finalizers, FINALIZER]
            patch = {
                "metadata": {
                    "resourceVersion": claim.resource_version,
                    "finalizers": metadata["finalizers"],
                }
            }
            what = f"add finalizer to claim {claim.key}"
            answer = await _write(objects, _ref(claim), patch, what)
            metadata["resourceVersion"] = _version(answer, claim.resource_version)
    status: dict[str, Any] = {
        "reservedFor": [*_sequence(claim.status.get("reservedFor")), _consumer(pod)]
    }
    added = "reservation"
    if allocation is not None:
        status["allocation"] = allocation
        added = "allocation and reservation"
    # With binding conditions (on in v1.37) every allocation gets its time, kube's start of
    # the binding timeout.
    allocated = allocation if allocation is not None else claim.allocation
    if allocated is None:
        raise ClaimChangedError(f"claim {claim.key} got deallocated elsewhere in the meantime")
    if not allocated.get("allocationTimestamp"):
        status["allocation"] = {**allocated, "allocationTimestamp": rfc3339(now)}
    version = str(metadata.get("resourceVersion", ""))
    patch = {"metadata": {"resourceVersion": version}, "status": status}
    what = f"add {added} to claim {claim.key}"
    answer = await _write(objects, _ref(claim, "status"), patch, what)
    metadata["resourceVersion"] = _version(answer, version)
    return ResourceClaimView(
        {**claim.raw, "metadata": metadata, "status": {**claim.status, **status}}
    )


def _version(answer: Mapping[str, Any], before: str) -> str:
    """The resourceVersion of the object a write returned (``before`` when it gives none)."""
    return str(_mapping(answer.get("metadata")).get("resourceVersion") or before)


async def _write(
    objects: ObjectWriter, ref: ObjectRef, patch: Mapping[str, Any], what: str
) -> Mapping[str, Any]:
    try:
        return await objects.patch(ref, patch)
    except Exception as error:
        raise _WriteError(f"{what}: {error}", getattr(error, "status", None)) from None


class ClaimChangedError(Exception):
    """The claim changed meanwhile so that PreBind cannot write it (kube's words)."""


class _WriteError(Exception):
    """A write of a claim the API server refused, in kube's words, with its HTTP status (a
    conflict is tried again)."""

    def __init__(self, message: str, status: object) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class ExtendedClaim:
    """The pod's claim for extended resources backed by DeviceClasses: ``claim`` is the one
    made up in memory (:data:`~policy_scheduler.plugins.dra_extended.IN_MEMORY_NAME`), the one
    an earlier attempt left, or, after PreBind, the one it created; ``nodes`` what Filter
    allocated for it on each node; ``reserved`` Reserve's choice."""

    claim: ResourceClaimView
    requests: dict[str, int]
    mapping: dict[str, str]
    nodes: dict[str, tuple[NodeClaim, Raw]] = field(default_factory=dict)
    reserved: tuple[NodeClaim, Raw] | None = None
    created: bool = False


def extended_claim(pod: PodView, volumes: Volumes) -> ExtendedClaim | None:
    """kube's preFilterExtendedResources: the pod's claim for the extended resources it
    requests that a DeviceClass maps; None when it requests none."""
    if not any(a and is_dra_extended_name(n) for n, a in pod.requests.items()):
        return None
    mapping = class_mapping(volumes.device_classes())
    wanted = mapped_requests(pod, mapping)
    if not wanted:
        return None
    claim = existing_claim(pod, volumes) or in_memory_claim(pod)
    return ExtendedClaim(claim, wanted, mapping)


def filter_extended(state: ClaimState, pod: PodView, node: NodeInfo) -> NodeClaim | str | None:
    """kube's filterExtendedResources: what to allocate on ``node`` for the pod's extended
    resources (None: nothing, the node's device plugins serve them all), or why the node does
    not fit."""
    extended = state.extended
    if extended is None:
        return None
    if extended.claim.requests:
        return STALE_CLAIM
    found = node_claim(extended.requests, extended.mapping, pod, node.node.allocatable)
    if isinstance(found, str):
        return found
    return found if found.requests and extended.claim.allocation is None else None


def extended_for(state: ClaimState, node: str) -> list[Raw]:
    """The claim for extended resources as Filter planned it on ``node``, to allocate again
    with the pod's claims (a priority's device choice): none when Filter planned none."""
    if state.extended is None or node not in state.extended.nodes:
        return []
    return [extended_raw(state, state.extended.nodes[node][0])]


def keep_extended(state: ClaimState, node: str, allocation: Raw) -> None:
    """The allocation of the claim for extended resources on ``node``, for Reserve."""
    assert state.extended is not None
    planned = state.extended.nodes[node][0]
    state.extended.nodes[node] = (planned, dict(allocation))


def extended_raw(state: ClaimState, node_claim_: NodeClaim) -> Raw:
    """The claim the allocator gets for the node: the pod's, with the node's requests."""
    assert state.extended is not None
    raw = state.extended.claim.raw
    return {**raw, "spec": {"devices": {"requests": list(node_claim_.requests)}}}


def _flight(claim: ResourceClaimView) -> ResourceClaimView:
    """The claim under which its allocation is in flight: every pod's in-memory claim has the
    same name, so its uid (the pod's) tells them apart."""
    metadata = _mapping(claim.raw.get("metadata"))
    name = f"{metadata.get('name', '')}/{metadata.get('uid', '')}"
    return ResourceClaimView({**claim.raw, "metadata": {**metadata, "name": name}})


def reserve_extended(state: ClaimState, volumes: Volumes, pod: PodView, node: str) -> None:
    """Reserve: the node's allocation for the extended resources in flight."""
    extended = state.extended
    if extended is None or node not in extended.nodes:
        return
    extended.reserved = extended.nodes[node]
    volumes.allocate(_flight(extended.claim), extended.reserved[1])


def unreserve_extended(state: ClaimState, volumes: Volumes) -> None:
    """Unreserve: the allocation for the extended resources no longer in flight, and a claim
    PreBind created and assumed no longer assumed."""
    extended = state.extended
    if extended is None:
        return
    volumes.release(_flight(extended.claim))
    if extended.created:
        volumes.restore(extended.claim.kind, extended.claim.key)


def delete_stale_extended(state: ClaimState) -> PostFilterResult:
    """PostFilter, when no node fits: the claim an earlier attempt made for the pod's extended
    resources is deleted, its finalizer removed first (kube's deallocateOrDeletePodClaims); the
    pod is tried anew once it is gone."""
    extended = state.extended
    if extended is None or extended.claim.name == IN_MEMORY_NAME:
        return PostFilterResult()
    claim = extended.claim
    kept = [f for f in claim.finalizers if f != FINALIZER]
    writes = (
        ()
        if kept == list(claim.finalizers)
        else ((_ref(claim), {"metadata": {"finalizers": kept}}),)
    )
    return PostFilterResult(DELETED, writes=writes, deletes=(_ref(claim),))


async def delete_extended(state: ClaimState, objects: ObjectWriter) -> None:
    """Unreserve: a claim PreBind created is deleted, its finalizer removed first (kube's
    deleteClaim)."""
    extended = state.extended
    if extended is None or not extended.created:
        return
    claim = extended.claim
    kept = [f for f in claim.finalizers if f != FINALIZER]
    if len(kept) != len(claim.finalizers):
        await objects.patch(_ref(claim), {"metadata": {"finalizers": kept}})
    await objects.delete(_ref(claim))
    extended.created = False


async def bind_extended(
    state: ClaimState, pod: PodView, node: str, objects: ObjectWriter, now: datetime
) -> ResourceClaimView | None:
    """PreBind for the extended resources: create the claim, allocate and reserve it as any
    claim, then tell the pod which request serves which container's resource."""
    extended = state.extended
    if extended is None or extended.reserved is None:
        return None
    planned, allocation = extended.reserved
    flight = _flight(extended.claim)
    body = claim_body(extended.claim, planned)
    collection = ObjectRef(API_VERSION, "resourceclaims", "", pod.namespace)
    try:
        created = ResourceClaimView(await objects.create(collection, body))
    except Exception as error:
        raise ClaimChangedError(
            f"create claim for extended resources {pod.namespace}/: {error}"
        ) from None
    extended.claim, extended.created = created, True
    written = await _bind_claim(created, allocation, pod, objects, now)
    extended.claim = written
    if state.volumes is not None:
        state.volumes.hand_over(flight, written)
    status = {
        "extendedResourceClaimStatus": {
            "requestMappings": [dict(m) for m in planned.mappings],
            "resourceClaimName": written.name,
        }
    }
    try:
        await objects.patch(
            ObjectRef("v1", "pods", pod.name, pod.namespace, "status"), {"status": status}
        )
    except Exception as error:
        raise ClaimChangedError(
            f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {error}"
        ) from None
    return written


def new_filter(args: Args, path: str) -> Filter[ClaimState]:
    no_args(NAME, args, path)
    return _DynamicResourcesFilter()


def subrequest_score(state: ClaimState, allocations: Sequence[Mapping[str, Any]]) -> int:
    """kube's computeScore: for each request with ``firstAvailable`` subrequests of the pod's
    claims, ``8 - i`` for the subrequest at index ``i`` chosen, by the node's ``allocations``
    (of :attr:`ClaimState.to_allocate`, in order) or, for a claim allocated before the cycle,
    by its own allocation."""
    chosen_for = dict(zip((c.uid for c in state.to_allocate), allocations, strict=True))
    score = 0
    for claim in state.claims:
        allocation = chosen_for.get(claim.uid, claim.allocation) or {}
        results = _sequence(_mapping(allocation.get("devices")).get("results"))
        chosen = {str(_mapping(r).get("request", "")) for r in results}
        for request in claim.requests:
            for i, sub in enumerate(_sequence(request.get("firstAvailable"))):
                if f"{request.get('name', '')}/{_mapping(sub).get('name', '')}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score


def _prioritized(claims: Sequence[ResourceClaimView]) -> bool:
    return any(r.get("firstAvailable") for claim in claims for r in claim.requests)


PACK: Final = "Pack"
SPREAD: Final = "Spread"
PLACEMENTS: Final = (PACK, SPREAD)


def _taken(allocations: Sequence[Mapping[str, Any]]) -> set[DeviceID]:
    return {
        DeviceID(str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
        for a in allocations
        for r in map(_mapping, _sequence(_mapping(a.get("devices")).get("results")))
    }


def placement_score(
    state: ClaimState, node: NodeInfo, allocations: Sequence[Mapping[str, Any]], placement: str
) -> int:
    """The share (0..100) of the devices that serve ``node`` in use once the pod's
    ``allocations`` there are made: :data:`PACK` scores it, :data:`SPREAD` what is left."""
    assert state.allocator is not None
    pools = state.allocator.pools(node.name, node.node.labels)
    devices = {d.id for pool in pools for s in pool.slices for d in s.devices}
    if not devices:
        return 0
    used = len(devices & (state.in_use | _taken(allocations)))
    share = used * MAX_NODE_SCORE // len(devices)
    return share if placement == PACK else MAX_NODE_SCORE - share


class _DynamicResourcesScorer(Scorer[ClaimState], Reads):
    """v1.37's score of the subrequests chosen (see the module's docstring), or, with a
    ``placement`` (beyond kube-scheduler), the share of the node's devices in use once the pod
    has its own. Unlike a SKIP, which kube-scheduler's DynamicResources never returns for
    Score, the nodes of a pod with nothing to score are scored, and shown with 0."""

    name = NAME
    # What its filter wakes on: a policy may score with it alone.
    reads = frozenset({RESOURCE_CLAIM, RESOURCE_SLICE, DEVICE_CLASS, DEVICE_TAINT_RULE})

    def __init__(self, placement: str = "", choice: DeviceChoice | None = None) -> None:
        self.placement = placement
        self.choice = choice
        # Its score allocates the devices Reserve puts in flight, in the choice's order.
        self.chooses_on_node = choice is not None

    def pre_score(self, cycle: Cycle, nodes: NodeBlock) -> ClaimState:
        if not cycle.pod.resource_claims:
            return ClaimState()
        filtered = cycle.shared.get(NAME)
        if isinstance(filtered, ClaimState):
            claims: tuple[ResourceClaimView, ...] | str = filtered.claims
        else:
            claims = _lookup(cycle.pod, cycle.snapshot.volumes)
        # Without firstAvailable requests kube's score is 0 on every node: nothing to allocate
        # (nor a claim to look at again, when one is missing).
        if isinstance(claims, str) or not (self.placement or self.choice or _prioritized(claims)):
            return ClaimState()
        state = (
            filtered
            if isinstance(filtered, ClaimState)
            else claim_state(cycle.pod, cycle.snapshot.volumes)
        )
        if state.allocator is None:
            return ClaimState()
        if self.placement:
            state.in_use = state.allocator.allocated.in_use()
        return state

    def score(self, state: ClaimState, pod: PodView, node: NodeInfo) -> int:
        if state.allocator is None:
            return 0
        if self.choice is not None:
            # The filter found kube's first solution; the devices are chosen again, in the
            # choice's order, and these are what Reserve puts in flight.
            extra = extended_for(state, node.name)
            found = allocate(state, node, self.choice, extra=extra)
            if not isinstance(found, Unallocatable):
                if extra:
                    keep_extended(state, node.name, found.pop())
                state.allocations[node.name] = found
        else:
            # What the filter allocated on the node; allocated here when the policy scores
            # with this plugin without filtering with it.
            found = state.allocations.get(node.name) or allocate(state, node)
        if isinstance(found, Unallocatable):
            return 0
        if self.placement:
            return placement_score(state, node, found, self.placement)
        return subrequest_score(state, found)

    def score_nodes(self, state: ClaimState, pod: PodView, nodes: NodeBlock) -> Scores:
        if state.allocator is None:
            return np.zeros(len(nodes), np.int64)
        return super().score_nodes(state, pod, nodes)

    def normalize(self, state: ClaimState, scores: Scores) -> None:
        # A placement's shares are scores already.
        if not self.placement:
            normalize_to_max(scores)


SCORER_ARGS: Final = ("placement", "preferSmallest", "capacities", "numaAttribute", "numaPlacement")


def _qualified(value: object) -> bool:
    """Whether ``value`` is a qualified name, ``domain/name``, as device attributes are named."""
    if not isinstance(value, str):
        return False
    domain, slash, name = value.partition("/")
    return bool(slash and domain and name and "/" not in name)


def _device_choice(args: Args, path: str, errors: list[FieldError]) -> DeviceChoice | None:
    """The device choice the args ask for (None: kube's first solution), its errors added to
    ``errors``."""
    smallest = args.get("preferSmallest", False)
    if not isinstance(smallest, bool):
        errors.append(FieldError(f"{path}.preferSmallest", f"must be a boolean, got {smallest!r}"))
        smallest = False
    capacities = args.get("capacities", [])
    if not isinstance(capacities, list):
        errors.append(
            FieldError(
                f"{path}.capacities", f"must be a list of capacity names, got {capacities!r}"
            )
        )
        capacities = []
    for i, name in enumerate(capacities):
        if not _qualified(name):
            errors.append(
                FieldError(
                    f"{path}.capacities[{i}]",
                    f"must be a capacity's qualified name (domain/name), got {name!r}",
                )
            )
    if capacities and not smallest:
        errors.append(FieldError(f"{path}.capacities", "only with preferSmallest: true"))
    attribute = args.get("numaAttribute", "")
    if attribute != "" and not _qualified(attribute):
        errors.append(
            FieldError(
                f"{path}.numaAttribute",
                f"must be a device attribute's qualified name (domain/name), got {attribute!r}",
            )
        )
    numa = args.get("numaPlacement", "")
    if numa != "" and numa not in PLACEMENTS:
        errors.append(
            FieldError(f"{path}.numaPlacement", f"must be one of {list(PLACEMENTS)}, got {numa!r}")
        )
    if numa != "" and not attribute:
        errors.append(FieldError(f"{path}.numaPlacement", "only with numaAttribute"))
    choice = DeviceChoice(
        smallest=smallest,
        capacities=tuple(map(str, capacities)),
        numa_attribute=str(attribute),
        numa_spread=numa == SPREAD,
    )
    return choice if choice.active else None


def new_scorer(args: Args, path: str) -> Scorer[ClaimState]:
    """No args: kube-scheduler's score. ``placement`` (not kube's): ``Pack`` prefers the nodes
    whose devices are most in use once the pod has its own (the fewest nodes used), ``Spread``
    the least. ``preferSmallest`` (with ``capacities``, the order they are compared in) and
    ``numaAttribute`` (with ``numaPlacement``, ``Pack`` by default) choose among the devices
    that fit on a node, beyond kube's first solution (:class:`DeviceChoice`)."""
    errors = unknown_fields(args, SCORER_ARGS, path)
    placement = args.get("placement", "")
    if placement != "" and placement not in PLACEMENTS:
        errors.append(
            FieldError(f"{path}.placement", f"must be one of {list(PLACEMENTS)}, got {placement!r}")
        )
    choice = _device_choice(args, path, errors)
    if errors:
        raise ArgsError(errors)
    return _DynamicResourcesScorer(str(placement), choice)
