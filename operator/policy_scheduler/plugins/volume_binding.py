"""VolumeBinding: the pod's PersistentVolumeClaims must be bound, or bindable, on the node
(kube-scheduler v1.37's VolumeBinding, legacy predicate CheckVolumeBinding).

**PreFilter** reads the pod's claims (its ``persistentVolumeClaim`` volumes, and the claims of
its generic ephemeral volumes) in volume order: a missing, lost or deleted claim rejects the pod
with kube's text, and so does a claim that is not bound and whose class binds immediately (or is
unknown): "pod has unbound immediate PersistentVolumeClaims". A claim counts as bound, as in
kube, when it names a volume *and* has the ``pv.kubernetes.io/bind-completed`` annotation.

**Filter** checks, per node, that the bound claims' volumes exist and that their node affinity
admits the node, then finds for each unbound WaitForFirstConsumer claim (smallest request first)
the smallest available PV of its class that fits it on this node (kube's FindMatchingVolume, the
volumeAttributesClassName too; a PV pre-bound to the claim wins), no PV serving two claims of the
pod; the claims left over, and those already given to a node's provisioner, must be dynamically
provisionable there (a real provisioner, the class's allowedTopologies admit the node and, when the
provisioner is a CSI driver whose CSIDriver sets ``storageCapacity``, a CSIStorageCapacity of the
class whose ``nodeTopology`` selects the node offers a volume as big as the claim asks for: its
``maximumVolumeSize``, else its ``capacity``); the first claim that cannot be decides. Its reasons,
in kube's order: "node(s) didn't match PersistentVolume's node affinity", "node(s) didn't find
available persistent volumes to bind", "node(s) did not have enough free storage" (without the
previous one: kube lets provisioning answer for the claims no PV matched), "node(s) unavailable due
to one or more pvc(s) bound to non-existent pv(s)". (The in-tree to CSI translation of PVs is not
modelled.)

**Reserve** finds the matches again on the chosen node and *assumes* them in the
:class:`~policy_scheduler.model.volumes.Volumes` catalog (each PV with its ``claimRef``, each
claim to provision with the selected-node annotation), so that the next cycles, which do not
wait for the API, cannot give a PV away twice. **Unreserve** restores them. **PreBind** writes
them (merge patches) and waits, polling the catalog the informers feed, until every claim is
bound, up to ``bindTimeoutSeconds``; its refusals are kube's texts.

**Score** (the priority VolumeBinding, kube's StorageCapacityScoring, beta and on in v1.37)
finds the node's matches again and scores, per storage class, the utilization ``requested * 100
// capacity`` (100 when over, or when the capacity is 0) through ``shape``, a broken linear curve
(default: 0% scores 100, 100% scores 0, so the node where the pod's volumes take the smallest
share wins); the node's score is the average over the classes, rounded half away from zero.
When PVs are matched, the classes are the PVs' (``spec.storageClassName``), with the claims'
requests over the PVs' capacities; otherwise each claim to provision whose driver's capacity was
checked counts its request against the ``capacity`` of the CSIStorageCapacity found for it (the
claims' own ``storageClassName``). A pod whose claims are all bound scores 0 everywhere.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    MAX_NODE_SCORE,
    SKIP,
    Filter,
    ObjectRef,
    ObjectWriter,
    PreBind,
    PreFilterResult,
    Reads,
    Reserve,
    Scorer,
    Skip,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import ObjectError, PodView, Raw, _mapping, _sequence
from policy_scheduler.model.volumes import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NO_PROVISIONER,
    PV,
    PVC,
    SELECTED_NODE,
    STORAGE_CLASS,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimView,
    CSIDriverView,
    CSINodeView,
    StorageCapacityView,
    StorageClassView,
    Volumes,
    VolumeView,
)
from policy_scheduler.plugins.requested_to_capacity_ratio import (
    MAX_UTILIZATION,
    Shape,
    broken_linear,
    parse_shape,
)

NAME = "VolumeBinding"
LEGACY_NAME = "CheckVolumeBinding"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
POLL_INTERVAL_SECONDS = 1.0
"""kube polls the bindings once a second."""

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""A CSINode's annotation listing the in-tree plugins migrated on its node; kube's VolumeBinding
translates in-tree PVs by it (not modelled here), so a change of it wakes the pods it parked."""
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
_AVAILABLE = "Available"
_LOST = "Lost"
_PRE_BIND_FAILED = f'running PreBind plugin "{NAME}": '
_TIMEOUT = "binding volumes: context deadline exceeded"

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


# --- what kube's storage helpers read of claims and volumes ---------------------------------


def _deleting(raw: Raw) -> bool:
    return _mapping(raw.get("metadata")).get("deletionTimestamp") is not None


def _fully_bound(claim: ClaimView) -> bool:
    """kube's isPVCFullyBound: a volume is named and the PV controller finished the bind."""
    return claim.bound and BIND_COMPLETED in claim.annotations


def _bound_to(volume: VolumeView, claim: ClaimView) -> bool:
    """The PV's claimRef names the claim (its uid too, when the ref has one)."""
    ref = volume.claim_ref
    if ref is None:
        return False
    if ref.get("name") != claim.name or (ref.get("namespace") or "") != claim.namespace:
        return False
    uid = ref.get("uid") or ""
    return not uid or uid == claim.uid


def _reaches(volume: VolumeView, labels: Mapping[str, str]) -> bool:
    """kube's CheckNodeAffinity, which builds a node of the labels only: so a ``matchFields``
    term on ``metadata.name`` matches no node, hence the empty name."""
    affinity = volume.node_affinity
    return affinity is None or affinity.matches("", labels)


def _topology_admits(terms: Sequence[Raw], labels: Mapping[str, str]) -> bool:
    """kube's MatchTopologySelectorTerms: no term admits every node; a term admits a node when
    each of its (non-empty) expressions finds the label among its values; an empty term, or an
    expression without values, admits none."""
    if not terms:
        return True
    for term in terms:
        expressions = [_mapping(e) for e in _sequence(term.get("matchLabelExpressions"))]
        if expressions and all(
            _sequence(e.get("values"))
            and labels.get(str(e.get("key"))) in _sequence(e.get("values"))
            for e in expressions
        ):
            return True
    return False


def _version(raw: Mapping[str, Any]) -> int:
    """An object's resourceVersion as kube's assume cache compares them; -1 when unreadable."""
    try:
        return int(str(_mapping(raw.get("metadata")).get("resourceVersion", "")))
    except ValueError:
        return -1


# --- the pod's claims ------------------------------------------------------------------------


def _claim_refs(pod: PodView) -> list[tuple[str, bool]]:
    """The claims the pod's volumes use, in volume order, each with whether it is an ephemeral
    volume's (created by the ephemeral volume controller, named ``<pod>-<volume>``)."""
    refs: list[tuple[str, bool]] = []
    for volume in pod.volumes:
        claim = _mapping(volume.get("persistentVolumeClaim"))
        if claim.get("claimName"):
            refs.append((str(claim["claimName"]), False))
        elif volume.get("ephemeral") is not None:
            refs.append((f"{pod.name}-{volume.get('name', '')}", True))
    return refs


def _owned_by(claim: ClaimView, pod: PodView) -> bool:
    """kube's VolumeIsForPod: the pod is the claim's controller."""
    return claim.namespace == pod.namespace and claim.controller_uid == pod.uid


@dataclass
class _Reservation:
    """What Reserve assumed for the pod on ``node``: the PVs with their claimRef, with the
    claims they serve, and the claims to provision with the selected-node annotation (each
    as written, and whether it was assumed: a PV already bound to its claim is not)."""

    node: str
    bindings: list[tuple[VolumeView, ClaimView, bool]] = field(default_factory=list)
    provisions: list[ClaimView] = field(default_factory=list)


@dataclass
class _PodClaims:
    """The state of a cycle: the pod's claims as PreFilter sorted them (or why it rejected the
    pod), the PVs of the delayed claims' classes as they were then, the catalog and snapshot to
    reserve and wait on, and what Reserve assumed."""

    volumes: Volumes
    snapshot: Snapshot
    rejection: str = ""
    bound: list[ClaimView] = field(default_factory=list)
    delayed: list[ClaimView] = field(default_factory=list)
    candidates: dict[str, list[VolumeView]] = field(default_factory=dict)
    reserved: _Reservation | None = None


def _read_claims(pod: PodView, volumes: Volumes, snapshot: Snapshot) -> _PodClaims:
    """kube's podHasPVCs and GetPodVolumeClaims: the first claim found wanting rejects the pod,
    in volume order, checks of every claim before the binding modes are looked at."""
    state = _PodClaims(volumes, snapshot)
    claims: list[ClaimView] = []
    for name, ephemeral in _claim_refs(pod):
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            state.rejection = (
                "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                f'"{name}"'
                if ephemeral
                else f'persistentvolumeclaim "{name}" not found'
            )
            return state
        if claim.phase == _LOST:
            state.rejection = (
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                f'"{claim.volume_name}"'
            )
            return state
        if _deleting(claim.raw):
            state.rejection = f'persistentvolumeclaim "{name}" is being deleted'
            return state
        if ephemeral and not _owned_by(claim, pod):
            state.rejection = (
                f"PVC {claim.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} "
                "(pod is not owner)"
            )
            return state
        claims.append(claim)
    for claim in claims:
        if _fully_bound(claim):
            state.bound.append(claim)
        elif _delays_binding(claim, volumes) and not claim.volume_name:
            state.delayed.append(claim)
        else:
            # A claim naming a volume that the PV controller has not finished binding is
            # "immediate" too: it waits for the controller, not for a node.
            state.rejection = UNBOUND_IMMEDIATE
            return state
    for claim in state.delayed:
        name = claim.class_name
        if name not in state.candidates:
            # Only the PVs that may match on some node: unclaimed, or pre-bound to one of the
            # pod's claims. A PV bound to another claim matches nowhere, and clusters hold
            # thousands of them, which every node would otherwise walk. By name, so that
            # among equal sizes the same PV wins every time (kube's order is its cache's).
            state.candidates[name] = sorted(
                (
                    v
                    for v in volumes.matchable_volumes(name, (c.key for c in state.delayed))
                    if v.claim_ref is None or any(_bound_to(v, c) for c in state.delayed)
                ),
                key=lambda v: v.name,
            )
    return state


def _delays_binding(claim: ClaimView, volumes: Volumes) -> bool:
    """kube's IsDelayBindingMode: a claim without a class, or whose class is unknown, binds
    immediately."""
    name = claim.class_name
    if not name:
        return False
    storage_class = volumes.storage_class(name)
    return storage_class is not None and storage_class.binding_mode == WAIT_FOR_FIRST_CONSUMER


# --- per node ---------------------------------------------------------------------------------


Provision = tuple[ClaimView, StorageCapacityView | None]
"""A claim to provision, with the CSIStorageCapacity found big enough for it on the node (None
when its driver's capacity is not checked)."""


@dataclass
class _Plan:
    """What the pod needs on one node (kube's PodVolumes): PVs to bind claims to, and claims
    to provision."""

    reasons: tuple[str, ...] = FITS
    bindings: list[tuple[VolumeView, ClaimView]] = field(default_factory=list)
    provisions: list[Provision] = field(default_factory=list)


def _matching_volume(
    claim: ClaimView, volumes: Sequence[VolumeView], labels: Mapping[str, str], taken: set[str]
) -> VolumeView | None:
    """kube's FindMatchingVolume for a delayed claim on a node: a PV pre-bound to the claim
    (if the node reaches it), else the smallest available PV that fits the claim."""
    smallest: VolumeView | None = None
    for volume in volumes:
        if volume.name in taken:
            continue
        if volume.claim_ref is not None and not _bound_to(volume, claim):
            continue
        if volume.capacity < claim.requested_storage or volume.volume_mode != claim.volume_mode:
            continue
        if volume.attributes_class != claim.attributes_class:
            continue
        if _deleting(volume.raw):
            continue
        reaches = _reaches(volume, labels)
        if _bound_to(volume, claim):
            # Pre-bound: this PV or none, whatever else would fit.
            return volume if reaches else None
        if volume.phase != _AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(volume.labels):
            continue
        if volume.class_name != claim.class_name or not reaches:
            continue
        if not claim.access_modes <= volume.access_modes:
            continue
        if smallest is None or volume.capacity < smallest.capacity:
            smallest = volume
    return smallest


def _provisions(
    claims: Sequence[ClaimView], volumes: Volumes, labels: Mapping[str, str]
) -> tuple[str, list[Provision]]:
    """kube's checkVolumeProvisions: the claims as this node would have them provisioned, or
    the reason of the first claim that cannot be (a delayed claim's class was found by
    PreFilter; were it gone since, kube errs, and no node fits here)."""
    found: list[Provision] = []
    for claim in claims:
        storage_class = volumes.storage_class(claim.class_name)
        if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
            return BIND_CONFLICT, []
        if not _topology_admits(storage_class.allowed_topologies, labels):
            return BIND_CONFLICT, []
        enough, capacity = _capacity_for(claim, storage_class, volumes, labels)
        if not enough:
            return NOT_ENOUGH_SPACE, []
        found.append((claim, capacity))
    return "", found


def _capacity_for(
    claim: ClaimView,
    storage_class: StorageClassView,
    volumes: Volumes,
    labels: Mapping[str, str],
) -> tuple[bool, StorageCapacityView | None]:
    """kube's hasEnoughCapacity: whether the node may have the claim's volume provisioned, and
    the first CSIStorageCapacity (by namespace and name: kube takes the first its cache lists)
    of the class that reaches the node and has room for it. Checked only for a claim that
    asks for storage, of a CSI driver whose CSIDriver sets ``storageCapacity``."""
    size = claim.storage_request
    driver = volumes.csi_driver(storage_class.provisioner)
    if size is None or driver is None or not driver.storage_capacity:
        return True, None
    for capacity in volumes.storage_capacities(storage_class.name):
        limit, topology = capacity.volume_limit, capacity.node_topology
        if (
            limit is not None
            and limit >= size
            and topology is not None
            and topology.matches(labels)
        ):
            return True, capacity
    return False, None


def _plan(state: _PodClaims, node: str, labels: Mapping[str, str]) -> _Plan:
    """kube's FindPodVolumes."""
    node_conflict = bind_conflict = not_enough = missing = False
    plan = _Plan()
    for claim in state.bound:
        volume = state.volumes.volume(claim.volume_name)
        if volume is None:
            missing = True
            break
        if not _reaches(volume, labels):
            node_conflict = True
            break
    to_match: list[ClaimView] = []
    to_provision: list[ClaimView] = []
    for claim in state.delayed:
        if SELECTED_NODE not in claim.annotations:
            to_match.append(claim)
        elif claim.annotations[SELECTED_NODE] == node:
            to_provision.append(claim)
        else:
            # Given to another node's provisioner already: nothing else is looked at.
            bind_conflict = True
            to_match.clear()
            to_provision.clear()
            break
    taken: set[str] = set()
    for claim in sorted(to_match, key=lambda c: c.requested_storage):
        volume = _matching_volume(claim, state.candidates.get(claim.class_name, ()), labels, taken)
        if volume is None:
            to_provision.append(claim)
            bind_conflict = True
        else:
            taken.add(volume.name)
            plan.bindings.append((volume, claim))
    if to_provision:
        # Provisioning answers for the claims no PV matched, as kube lets it.
        failure, plan.provisions = _provisions(to_provision, state.volumes, labels)
        bind_conflict, not_enough = failure == BIND_CONFLICT, failure == NOT_ENOUGH_SPACE
    plan.reasons = tuple(
        reason
        for reason, failed in (
            (NODE_CONFLICT, node_conflict),
            (BIND_CONFLICT, bind_conflict),
            (NOT_ENOUGH_SPACE, not_enough),
            (PV_NOT_EXIST, missing),
        )
        if failed
    )
    return plan


def _labels(snapshot: Snapshot, node: str) -> Mapping[str, str]:
    info = snapshot.get(node)
    return info.node.labels if info is not None else {}


def _claim_ref(claim: ClaimView) -> dict[str, Any]:
    """The reference to the claim that a PV bound to it holds (kube's GetReference)."""
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
        "resourceVersion": claim.resource_version,
    }


def _bound_copy(volume: VolumeView, claim: ClaimView) -> VolumeView | None:
    """The PV bound to the claim (kube's GetBindVolumeToClaim); None when it is already."""
    raw = copy.deepcopy(dict(volume.raw))
    ref = volume.claim_ref or {}
    dirty = False
    if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != (
        claim.name,
        claim.namespace,
        claim.uid,
    ):
        raw.setdefault("spec", {})["claimRef"] = _claim_ref(claim)
        dirty = True
    if not _bound_to(volume, claim) and BOUND_BY_CONTROLLER not in volume.annotations:
        raw.setdefault("metadata", {}).setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return VolumeView(raw) if dirty else None


def _annotated_copy(claim: ClaimView, node: str) -> ClaimView:
    raw = copy.deepcopy(dict(claim.raw))
    raw.setdefault("metadata", {}).setdefault("annotations", {})[SELECTED_NODE] = node
    return ClaimView(raw)


class _VolumeBinding(Filter[_PodClaims], Reserve[_PodClaims | None], PreBind[_PodClaims | None]):
    """Filter, Reserve and PreBind share the state of the cycle (:class:`_PodClaims`)."""

    name = NAME

    # Every filter rejection is UnschedulableAndUnresolvable in kube-scheduler: volumes
    # and their node affinity do not change with the pods on the node.
    resolvable_reasons = frozenset()

    # kube's EventsToRegister (with queueing hints, node taints do not wake it).
    wakes_on = (
        EventKind.PVC_CHANGED
        | EventKind.PV_CHANGED
        | EventKind.STORAGE_CLASS_CHANGED
        | EventKind.CSI_NODE_CHANGED
        | EventKind.CSI_DRIVER_CHANGED
        | EventKind.CSI_STORAGE_CAPACITY_CHANGED
        | EventKind.NODE_ADDED
        | EventKind.NODE_LABELS
    )

    def __init__(
        self,
        bind_timeout: float,
        poll_interval: float = POLL_INTERVAL_SECONDS,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
    ) -> None:
        self.bind_timeout = bind_timeout
        self._interval = poll_interval
        self._sleep = sleep
        self._clock = clock

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints. A claim wakes only the pods of its namespace that use it; a pod with
        ephemeral volumes is always woken: their claims' names hold the pod's name, which a
        hint may not read. A CSIDriver's addition wakes no pod, its update only the pods with
        an inline CSI volume of the driver when it stops asking for capacity checks
        (``storageCapacity`` true, then not). A CSIStorageCapacity's addition wakes every pod,
        its update only when its volume limit (``maximumVolumeSize``, else ``capacity``) grew.
        A bad object (:class:`~policy_scheduler.model.objects.ObjectError`) wakes the pod, as
        kube's hints do on an error. A StorageClass's addition wakes every pod, its update only
        when its allowedTopologies changed; a CSINode's addition too, its update only when its
        migrated-plugins annotation changed."""
        before, after = event.old_storage, event.storage
        try:
            if event.kind & EventKind.CSI_DRIVER_CHANGED:
                return _capacity_checks_dropped(pod, event)
            if event.kind & EventKind.CSI_STORAGE_CAPACITY_CHANGED:
                return _capacity_grew(event)
        except ObjectError:
            return True
        if isinstance(before, StorageClassView) and isinstance(after, StorageClassView):
            return before.allowed_topologies != after.allowed_topologies
        if isinstance(before, CSINodeView) and isinstance(after, CSINodeView):
            migrated = (v.annotations.get(MIGRATED_PLUGINS, "") for v in (before, after))
            return len(set(migrated)) > 1
        claim = event.storage
        if not event.kind & EventKind.PVC_CHANGED or not isinstance(claim, ClaimView):
            return True
        if claim.namespace != pod.namespace:
            return False
        if any(v.get("ephemeral") is not None for v in pod.volumes):
            return True
        return any(name == claim.name for name, _ in _claim_refs(pod))

    def pre_filter(self, cycle: Cycle) -> _PodClaims | Skip:
        pod = cycle.pod
        if not _claim_refs(pod):
            return SKIP
        state = _read_claims(pod, cycle.snapshot.volumes, cycle.snapshot)
        if not state.rejection and not state.delayed:
            volumes = [state.volumes.volume(c.volume_name) for c in state.bound]
            if all(v is not None and v.node_affinity is None for v in volumes):
                # Every claim bound to a volume any node reaches: every node passes, and
                # Reserve and PreBind have nothing to do (kube: allBound).
                return SKIP
        return state

    def pre_filter_result(self, state: _PodClaims) -> PreFilterResult:
        return PreFilterResult(rejection=state.rejection) if state.rejection else ANY_NODE

    def filter(self, state: _PodClaims, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return _plan(state, node.node.name, node.node.labels).reasons

    def reserve(self, state: _PodClaims | None, pod: PodView, node: str) -> str | None:
        """Match again on ``node`` against the catalog as it is now, and assume the matches."""
        if state is None or state.rejection:
            return None
        now = _read_claims(pod, state.volumes, state.snapshot)
        if now.rejection:
            return now.rejection
        if not now.delayed:
            # Bound meanwhile (kube's arePodVolumesBound): nothing to assume or write.
            return None
        plan = _plan(now, node, _labels(state.snapshot, node))
        if plan.reasons:
            return ", ".join(plan.reasons)
        reservation = _Reservation(node)
        for volume, claim in plan.bindings:
            bound = _bound_copy(volume, claim)
            if bound is not None:
                state.volumes.assume(bound)
            reservation.bindings.append((bound or volume, claim, bound is not None))
        for claim, _ in plan.provisions:
            annotated = _annotated_copy(claim, node)
            state.volumes.assume(annotated)
            reservation.provisions.append(annotated)
        state.reserved = reservation
        return None

    def unreserve(self, state: _PodClaims | None, pod: PodView, node: str) -> None:
        if state is None or state.reserved is None:
            return
        self._restore(state.volumes, state.reserved.bindings, state.reserved.provisions)
        state.reserved = None

    @staticmethod
    def _restore(
        volumes: Volumes,
        bindings: Sequence[tuple[VolumeView, ClaimView, bool]],
        provisions: Sequence[ClaimView],
    ) -> None:
        for volume, _, assumed in bindings:
            if assumed:
                volumes.restore(PV, volume.key)
        for claim in provisions:
            volumes.restore(PVC, claim.key)

    def pre_flight(self, state: _PodClaims | None, pod: PodView, node: str) -> bool:
        """kube's PreBindPreFlight: work to do unless every claim of the pod was bound."""
        return state is not None and bool(state.delayed)

    async def pre_bind(
        self, state: _PodClaims | None, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        """Write the reservation, then wait for the PV controller (or the provisioner) to bind
        every claim (kube's BindPodVolumes)."""
        reservation = None if state is None else state.reserved
        if state is None or reservation is None:
            return None
        written: dict[str, int] = {}
        bindings, provisions = reservation.bindings, reservation.provisions
        for i, (volume, claim, assumed) in enumerate(bindings):
            if not assumed:
                continue
            metadata = _mapping(volume.raw.get("metadata"))
            patch = {
                "metadata": {"annotations": dict(_mapping(metadata.get("annotations")))},
                "spec": {"claimRef": _claim_ref(claim)},
            }
            try:
                answer = await objects.patch(
                    ObjectRef("v1", "persistentvolumes", volume.name), patch
                )
            except Exception as error:  # an API error fails the bind, as kube's
                self._restore(state.volumes, bindings[i:], provisions)
                return f"{_PRE_BIND_FAILED}{error}"
            written[volume.key] = _version(answer)
        for i, claim in enumerate(provisions):
            patch = {"metadata": {"annotations": {SELECTED_NODE: node}}}
            ref = ObjectRef("v1", "persistentvolumeclaims", claim.name, claim.namespace)
            try:
                answer = await objects.patch(ref, patch)
            except Exception as error:
                self._restore(state.volumes, (), provisions[i:])
                return f"{_PRE_BIND_FAILED}{error}"
            written[claim.key] = _version(answer)
        deadline = self._clock() + self.bind_timeout
        while True:
            remaining = deadline - self._clock()
            if remaining < self._interval:
                await self._sleep(max(remaining, 0.0))
                return f"{_PRE_BIND_FAILED}{_TIMEOUT}"
            await self._sleep(self._interval)
            done, failure = self._check(state, reservation, written)
            if failure:
                return f"{_PRE_BIND_FAILED}binding volumes: {failure}"
            if done:
                return None

    @staticmethod
    def _check(
        state: _PodClaims, reservation: _Reservation, written: Mapping[str, int]
    ) -> tuple[bool, str]:
        """kube's checkBindings: (whether every claim is bound, or why it never will be)."""
        volumes, node = state.volumes, reservation.node
        labels = _labels(state.snapshot, node)
        for volume, claim, _ in reservation.bindings:
            now = volumes.volume(volume.name)
            if now is None:
                return (
                    False,
                    f'failed to check binding: could not find v1.PersistentVolume "{volume.name}"',
                )
            now_claim = volumes.claim(claim.namespace, claim.name)
            if now_claim is None:
                return False, (
                    "failed to check binding: could not find "
                    f'v1.PersistentVolumeClaim "{claim.key}"'
                )
            if written.get(volume.key, -1) > _version(now.raw):
                return False, ""  # the informer has not brought our write yet
            if not _reaches(now, labels):
                return False, _affinity_error(now.name, node)
            if now.claim_ref is None or not now.claim_ref.get("uid"):
                return False, f'ClaimRef got reset for pv "{now.name}"'
            if not _fully_bound(now_claim):
                return False, ""
        for claim in reservation.provisions:
            now_claim = volumes.claim(claim.namespace, claim.name)
            if now_claim is None:
                return False, (
                    "failed to check provisioning pvc: could not find "
                    f'v1.PersistentVolumeClaim "{claim.key}"'
                )
            if written.get(claim.key, -1) > _version(now_claim.raw):
                return False, ""
            if not now_claim.annotations:
                return False, f'selectedNode annotation reset for PVC "{claim.name}"'
            if now_claim.annotations.get(SELECTED_NODE) != node:
                return False, f'provisioning failed for PVC "{claim.name}"'
            if now_claim.volume_name:
                provisioned = volumes.volume(now_claim.volume_name)
                if provisioned is None:
                    return False, ""
                if not _reaches(provisioned, labels):
                    return False, _affinity_error(provisioned.name, node)
            if not _fully_bound(now_claim):
                return False, ""
        return True, ""


def _capacity_checks_dropped(pod: PodView, event: ClusterEvent) -> bool:
    """kube's isSchedulableAfterCSIDriverChange (it registers CSIDriver updates only)."""
    before, after = event.old_storage, event.storage
    if not isinstance(before, CSIDriverView) or not isinstance(after, CSIDriverView):
        return False
    if not before.storage_capacity or after.storage_capacity:
        return False
    return any(_mapping(v.get("csi")).get("driver") == after.name for v in pod.volumes)


def _capacity_grew(event: ClusterEvent) -> bool:
    """kube's isSchedulableAfterCSIStorageCapacityChange."""
    before, after = event.old_storage, event.storage
    if not isinstance(before, StorageCapacityView) or not isinstance(after, StorageCapacityView):
        return True
    grown, was = after.volume_limit, before.volume_limit
    return grown is not None and (was is None or grown > was)


DEFAULT_SHAPE: Shape = ((0, MAX_NODE_SCORE), (MAX_UTILIZATION, 0))
"""kube's default VolumeBindingArgs shape with StorageCapacityScoring on: utilization 0 scores
10 (100 scaled), utilization 100 scores 0."""


def _class_storage(plan: _Plan) -> dict[str, tuple[int, int]]:
    """kube's classResourceMap of the node's plan: (requested, capacity) per storage class, of
    the matched PVs when there are any, else of the claims to provision whose capacity was
    checked (the class's capacity is the CSIStorageCapacity's, not a sum: two claims of one
    class share it)."""
    classes: dict[str, tuple[int, int]] = {}
    if plan.bindings:
        for volume, claim in plan.bindings:
            requested, capacity = classes.get(volume.storage_class, (0, 0))
            classes[volume.storage_class] = (
                requested + claim.requested_storage,
                capacity + volume.capacity,
            )
        return classes
    for claim, found in plan.provisions:
        if found is not None:
            requested, _ = classes.get(claim.storage_class, (0, 0))
            classes[claim.storage_class] = (
                requested + claim.requested_storage,
                found.capacity or 0,
            )
    return classes


class _VolumeBindingScorer(Scorer[_PodClaims], Reads):
    """The priority: see the module's docstring."""

    name = NAME
    # What its filter wakes on: a policy may score with it alone.
    reads = frozenset({PVC, PV, STORAGE_CLASS, CSI_NODE, CSI_DRIVER, CSI_STORAGE_CAPACITY})

    def __init__(self, shape: Shape) -> None:
        self._curve = broken_linear(shape)

    def pre_score(self, cycle: Cycle, nodes: NodeBlock) -> _PodClaims | Skip:
        pod = cycle.pod
        if not _claim_refs(pod):
            return SKIP
        state = _read_claims(pod, cycle.snapshot.volumes, cycle.snapshot)
        # Bound claims need neither PVs nor provisioning: no class to score on any node.
        return state if state.delayed and not state.rejection else SKIP

    def score(self, state: _PodClaims, pod: PodView, node: NodeInfo) -> int:
        classes = _class_storage(_plan(state, node.name, node.node.labels))
        if not classes:
            return 0
        utilization = np.array(
            [
                MAX_UTILIZATION
                if capacity == 0 or requested > capacity
                else requested * MAX_UTILIZATION // capacity
                for requested, capacity in classes.values()
            ],
            np.int64,
        )
        total, count = int(self._curve(utilization).sum()), len(classes)
        # Go's math.Round(total / count), half away from zero, in integers.
        return (2 * total + count) // (2 * count)


def new_scorer(args: Args, path: str) -> _VolumeBindingScorer:
    """kube's VolumeBindingArgs ``shape``: ``[{utilization: 0..100, score: 0..10}]``, with
    utilization increasing (default :data:`DEFAULT_SHAPE`)."""
    errors = unknown_fields(args, ("shape",), path)
    shape = DEFAULT_SHAPE
    if args.get("shape") is not None:
        shape = parse_shape(args["shape"], f"{path}.shape", errors)
    if errors:
        raise ArgsError(errors)
    return _VolumeBindingScorer(shape)


def _affinity_error(volume: str, node: str) -> str:
    return (
        f'pv "{volume}" node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms'
    )


def new_filter(args: Args, path: str) -> _VolumeBinding:
    """kube's VolumeBindingArgs: ``bindTimeoutSeconds`` (default 600, not negative); ``shape``
    is the priority's (:func:`new_scorer`): a predicate's args do not score."""
    errors = unknown_fields(args, ("bindTimeoutSeconds", "shape"), path)
    timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
    if not isinstance(timeout, int) or isinstance(timeout, bool):
        errors.append(FieldError(f"{path}.bindTimeoutSeconds", "must be an integer"))
    elif timeout < 0:
        errors.append(
            FieldError(
                f"{path}.bindTimeoutSeconds",
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    if "shape" in args:
        errors.append(
            FieldError(
                f"{path}.shape",
                "the VolumeBinding priority's arg (spec.priorities), not the predicate's",
            )
        )
    if errors:
        raise ArgsError(errors)
    return _VolumeBinding(float(timeout))
