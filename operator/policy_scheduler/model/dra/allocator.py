"""kube-scheduler's structured-parameters device allocator, for one pod's claims on one node.

:class:`Allocator` is built once per scheduling cycle from what is in use, the DeviceClasses and
all ResourceSlices; :meth:`Allocator.allocate` then runs for each node: it gathers the pools
that serve the node and searches for devices for every request of every claim of the pod at
once, all or nothing, as v1.37's allocator (its ``incubating`` variant, with the features the
release enables by default: prioritized lists, admin access, device taints, partitionable
devices, consumable capacity, binding conditions).

The search is kube's: depth first, claims, requests and devices in order (pools by driver and
name, slices by name, devices as listed), each request's devices taken in list order only (a
set of devices is tried once, not in every order), backtracking when a later device cannot be
found; the first complete solution wins. A request with ``firstAvailable`` subrequests takes
the first subrequest that leads to a solution. Beyond kube, and off unless asked for, a
:class:`~policy_scheduler.model.dra.choice.DeviceChoice` reorders the devices a request tries
(smallest first, NUMA domains packed or spread): the same nodes fit, other devices may win.
Each device is checked in kube's order: in use, selectors (the class's, then the request's),
capacity, counters, taints, constraints.

Messages of fatal errors (:class:`AllocationError`) are kube's; when no allocation exists on
the node, :class:`Unallocatable` says which claim and request failed and why, in plain words.
"""

from __future__ import annotations

import functools
import json
import sys
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from policy_scheduler.model.cel import CelError
from policy_scheduler.model.dra.capacity import CapacityError, consumption, fits
from policy_scheduler.model.dra.choice import DeviceChoice
from policy_scheduler.model.dra.constraints import Constraint, constraints_of
from policy_scheduler.model.dra.devices import Device, Slice, SliceCache, SliceError, Taint
from policy_scheduler.model.dra.outcomes import Outcome, Outcomes, relabeled, same
from policy_scheduler.model.dra.pools import Pool, PoolID, gather_pools
from policy_scheduler.model.dra.quantities import Amount, amount
from policy_scheduler.model.dra.state import AllocatedState, DeviceID

MAX_DEVICES_PER_CLAIM = 32
"""``resourceapi.AllocationResultsMaxSize``: the devices one claim's allocation may hold."""

CANNOT_ALLOCATE = "cannot allocate all claims"
INVALID_POOLS = "invalid resource pools were encountered"
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_FRAMES_IN_USE = 1000  # a margin for the frames of the loop, the plugin and the diagnosis


class Selectors(Protocol):
    """Device selectors (``policy_scheduler.model.cel.DeviceSelectors``); ``matches`` raises
    CelError for an expression that fails."""

    def matches(
        self, expression: str, driver: str, device: Mapping[str, Any], key: Hashable
    ) -> bool: ...

    def capacities_read(self, expression: str) -> tuple[str, ...]: ...


class AllocationError(Exception):
    """kube's fatal allocator error (a CEL error, an invalid pool for an All request, a class
    missing): the pod is not schedulable on any node for it; ``message`` is kube's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Unallocatable:
    """No allocation on this node. ``reason`` says which claim/request failed and why, for
    explain; ``message`` is what kube-scheduler's plugin reports for the node."""

    reason: str
    message: str = CANNOT_ALLOCATE


class AllocationTimeout(AllocationError):  # noqa: N818 (an AllocationError, named for its cause)
    """The search ran past its time (kube's DRASchedulerFilterTimeout): an error for the pod,
    which is tried again after a backoff."""


class _MaxSizeExceededError(Exception):
    """A claim would need more than MAX_DEVICES_PER_CLAIM devices on this path: the search
    backtracks further than for a plain failure (kube's errAllocationResultMaxSizeExceeded)."""


@dataclass(slots=True)
class _Request:
    """A request, or one subrequest of a ``firstAvailable`` list."""

    name: str
    parent: str  # the request holding this subrequest; "" for a plain request
    raw: Mapping[str, Any]
    class_name: str
    class_: Mapping[str, Any]
    all_mode: bool
    count: int
    admin: bool
    capacity: Mapping[str, Amount]
    all_devices: list[tuple[Device, Slice, Pool]] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(slots=True)
class _Result:
    request: _Request
    device: Device
    slice: Slice
    share_id: str | None
    consumed: dict[str, Amount] | None


@dataclass(slots=True)
class _Claim:
    raw: Mapping[str, Any]
    label: str  # as klog.KObj prints it: namespace/name
    requests: list[list[_Request]]  # per request: itself, or its subrequests
    constraints: list[Constraint]


def _label(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def _tolerates(tolerations: Iterable[Mapping[str, Any]], key: str, value: str, effect: str) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != effect:
            continue
        if toleration.get("key") and toleration["key"] != key:
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists" or (operator == "Equal" and toleration.get("value", "") == value):
            return True
    return False


def tainted(taints: Iterable[Taint], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a NoSchedule or NoExecute taint is not tolerated (other effects, None among
    them, do not keep a device from being allocated)."""
    return any(
        taint.effect in _BLOCKING_EFFECTS
        and not _tolerates(tolerations, taint.key, taint.value, taint.effect)
        for taint in taints
    )


@dataclass(frozen=True, slots=True)
class _TaintRule:
    """A DeviceTaintRule: its taint on the devices its selector names (each of driver, pool
    and device name, when set, must be the device's)."""

    driver: str | None
    pool: str | None
    device: str | None
    taint: Taint

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> _TaintRule | None:
        spec = raw.get("spec") or {}
        selector = spec.get("deviceSelector")
        if selector is None:
            return None  # selects no device
        taint = spec.get("taint") or {}
        return cls(
            selector.get("driver"),
            selector.get("pool"),
            selector.get("device"),
            Taint(
                str(taint.get("key", "")), str(taint.get("value", "")), str(taint.get("effect", ""))
            ),
        )

    def applies(self, device: DeviceID) -> bool:
        return (
            (self.driver is None or self.driver == device.driver)
            and (self.pool is None or self.pool == device.pool)
            and (self.device is None or self.device == device.device)
        )


class Allocator:
    """Allocates the devices of one pod's claims, node by node, on one view of the cluster."""

    def __init__(
        self,
        allocated: AllocatedState,
        classes: Mapping[str, Mapping[str, Any]],
        slices: Sequence[Mapping[str, Any]],
        selectors: Selectors,
        *,
        new_share_id: Callable[[], str] | None = None,
        slice_cache: SliceCache | None = None,
        taint_rules: Sequence[Mapping[str, Any]] = (),
        outcomes: Outcomes | None = None,
    ) -> None:
        """``new_share_id`` names the
        shares of devices allocated more than once (random UUIDs, as kube's, by default).
        ``slice_cache`` keeps the slices parsed across allocators (the caller retains the
        current slices in it). ``taint_rules`` are the DeviceTaintRules: their taints count
        as the devices' own (kube's slice tracker adds them to the slices it hands over).
        ``outcomes`` keeps what was found on each node across allocators, and answers when
        nothing the search reads changed (:mod:`~policy_scheduler.model.dra.outcomes`): the
        caller passes the same ``classes`` and ``taint_rules`` objects until one changes."""
        self.allocated = allocated
        self.classes = classes
        self.selectors = selectors
        self.new_share_id = new_share_id or (lambda: str(uuid.uuid4()))
        self.allocate_one_calls = 0
        """How often the search stepped (kube's NumAllocateOneInvocations), for tests."""
        self._raw = slices
        self._cache = slice_cache if slice_cache is not None else SliceCache()
        self._on_node, self._anywhere = self._cache.by_node(slices)
        self._by_pool: dict[PoolID, list[int]] | None = None
        self._whole = allocated.devices
        self._shared = allocated.shared_devices()
        self._available_counters: dict[PoolID, dict[str, dict[str, Fraction]]] = {}
        self._rules = [rule for rule in map(_TaintRule.of, taint_rules) if rule is not None]
        self._taint_rules = taint_rules
        self._taints: dict[int, tuple[Device, tuple[Taint, ...]]] = {}
        self._outcomes = outcomes
        self._specifications: dict[tuple[int, ...], tuple[Sequence[Mapping[str, Any]], str]] = {}

    @functools.cached_property
    def in_use(self) -> set[DeviceID]:
        """Every device with an allocation of any kind, known once per allocator (a device
        choice reads it; the search asks device by device)."""
        return self.allocated.in_use()

    def taints(self, device: Device) -> tuple[Taint, ...]:
        """The device's taints and those of the taint rules that select it."""
        if not self._rules:
            return device.taints
        known = self._taints.get(id(device))
        if known is not None and known[0] is device:
            return known[1]
        taints = device.taints + tuple(
            rule.taint for rule in self._rules if rule.applies(device.id)
        )
        self._taints[id(device)] = (device, taints)
        return taints

    # --- slices and pools ---------------------------------------------------------------

    def _model(self, index: int) -> Slice:
        try:
            return self._cache.model(self._raw[index])
        except (SliceError, ValueError) as error:
            raise AllocationError(f"gather pool information: {error}") from None

    def _pool_indexes(self, pool_id: PoolID) -> list[int]:
        if self._by_pool is None:
            self._by_pool = {}
            for index, raw in enumerate(self._raw):
                spec = raw.get("spec") or {}
                key = (str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", "")))
                self._by_pool.setdefault(key, []).append(index)
        return self._by_pool.get(pool_id, [])

    def _candidates(self, node_name: str) -> tuple[int, ...]:
        """The slices of the node and those not bound to one node, by index."""
        return (*self._on_node.get(node_name, ()), *self._anywhere)

    def pools(
        self,
        node_name: str,
        node_labels: Mapping[str, str],
        consulted: list[PoolID] | None = None,
    ) -> list[Pool]:
        """The pools that serve the node (kube's ``GatherPools``); ``consulted`` receives the
        pools whose other slices had to be looked at."""

        def pool_slices(pool_id: PoolID) -> list[Slice]:
            if consulted is not None:
                consulted.append(pool_id)
            return [self._model(index) for index in self._pool_indexes(pool_id)]

        candidates = [self._model(index) for index in self._candidates(node_name)]
        return gather_pools(candidates, node_name, node_labels, pool_slices)

    def _counters_left(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        """The pool's counters less what its allocated devices consume; computed once per pool
        (from the first node that needs it, as kube's)."""
        left = self._available_counters.get(pool.id)
        if left is not None:
            return left
        left = {
            name: {counter: value.value for counter, value in counters.items()}
            for name, counters in pool.counter_sets.items()
        }
        for slice_ in (*pool.slices, *pool.other_slices):
            for device in slice_.devices:
                if device.id not in self._whole and device.id not in self._shared:
                    continue
                for use in device.consumes:
                    counters = left.get(use.counter_set, {})
                    for counter, value in use.counters.items():
                        if counter in counters:
                            counters[counter] -= value.value
        self._available_counters[pool.id] = left
        return left

    # --- allocation -------------------------------------------------------------------------

    def allocate(
        self,
        node_name: str,
        node_labels: Mapping[str, str],
        claims: Sequence[Mapping[str, Any]],
        *,
        expired: Callable[[], bool] | None = None,
        choice: DeviceChoice | None = None,
        notes: list[list[str]] | None = None,
    ) -> list[dict[str, Any]] | Unallocatable:
        """kube's Allocate for one node: one ``status.allocation`` per claim (in ``claims``'
        order: devices.results, devices.config, nodeSelector), or why not. Raises
        AllocationError for kube's fatal errors, and AllocationTimeout once ``expired`` (asked
        at every step of the search: kube's filter timeout) says time is up.

        ``choice`` (off by default: kube's first solution) reorders the devices tried, beyond
        kube (:mod:`~policy_scheduler.model.dra.choice`); ``notes`` then receives, per claim
        and per device result, why the device came first. Without a choice, an outcome kept
        (``outcomes``) answers when nothing it was found on changed: with ``outcomes``, the
        allocations returned are shared with later answers, and the caller copies them
        before changing them (:func:`~policy_scheduler.model.dra.outcomes.copied`)."""
        chosen = choice is not None and choice.active
        specification = ""
        if self._outcomes is not None and not chosen:
            specification = self._specification(claims)
            kept = self._outcomes.get(node_name, specification)
            if kept is not None and self._unchanged(kept, node_name, node_labels):
                return self._answer(kept, claims)
        consulted: list[PoolID] = []
        search = _Search(self, node_name, node_labels, claims, consulted)
        search.expired = expired
        if chosen:
            search.choice = choice
        found = search.run()
        if notes is not None and search.choice is not None and not isinstance(found, Unallocatable):
            notes[:] = [
                [search.choice.describe(r.device, search.compared(r.request)) for r in results]
                for results in search.results
            ]
        if specification and not any(r.share_id for rs in search.results for r in rs):
            assert self._outcomes is not None
            self._outcomes.put(node_name, specification, self._outcome(search, consulted, found))
        return found

    def _specification(self, claims: Sequence[Mapping[str, Any]]) -> str:
        """The claims' specs as one string, the same for claims made from one template; known
        once per allocator for the same claim objects."""
        ids = tuple(map(id, claims))
        known = self._specifications.get(ids)
        if known is not None and same(known[0], claims):
            return known[1]
        text = json.dumps([c.get("spec") for c in claims], sort_keys=True, default=str)
        self._specifications[ids] = (list(claims), text)
        return text

    def _outcome(
        self,
        search: _Search,
        consulted: Sequence[PoolID],
        found: list[dict[str, Any]] | Unallocatable,
    ) -> Outcome:
        stamps = self.allocated.stamps
        return Outcome(
            labels=tuple(claim.label for claim in search.claims),
            node_labels=dict(search.node_labels),
            slices=tuple(self._raw[i] for i in self._candidates(search.node_name)),
            mates=tuple(
                (pool_id, tuple(self._raw[i] for i in self._pool_indexes(pool_id)))
                for pool_id in consulted
            ),
            stamps=tuple((pool.id, stamps.get(pool.id, 0)) for pool in search.pools),
            classes=self.classes,
            taint_rules=self._taint_rules,
            found=found,
        )

    def _unchanged(self, kept: Outcome, node_name: str, node_labels: Mapping[str, str]) -> bool:
        """Whether everything ``kept`` was found on is as it was."""
        stamps = self.allocated.stamps
        return (
            kept.classes is self.classes
            and kept.taint_rules is self._taint_rules
            and all(stamps.get(pool_id, 0) == stamp for pool_id, stamp in kept.stamps)
            and same(kept.slices, [self._raw[i] for i in self._candidates(node_name)])
            and all(
                same(raws, [self._raw[i] for i in self._pool_indexes(pool_id)])
                for pool_id, raws in kept.mates
            )
            and kept.node_labels == node_labels
        )

    def _answer(
        self, kept: Outcome, claims: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]] | Unallocatable:
        """A kept outcome as the search would give it for ``claims``: its allocations, or its
        reason naming these claims."""
        if isinstance(kept.found, Unallocatable):
            labels = [_label(claim) for claim in claims]
            reason = relabeled(kept.found.reason, kept.labels, labels)
            return Unallocatable(reason, kept.found.message)
        return kept.found


class _Search:
    """One ``allocate`` call: the state of the depth-first search for one node."""

    def __init__(
        self,
        allocator: Allocator,
        node_name: str,
        node_labels: Mapping[str, str],
        claims: Sequence[Mapping[str, Any]],
        consulted: list[PoolID] | None = None,
    ) -> None:
        self.a = allocator
        self.node_name = node_name
        self.node_labels = node_labels
        self.pools = allocator.pools(node_name, node_labels, consulted)
        self.expired: Callable[[], bool] | None = None
        self.claims: list[_Claim] = []
        self.results: list[list[_Result]] = []
        self.selected: dict[tuple[int, int], int] = {}
        self.matched: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.counters_used: dict[PoolID, dict[str, dict[str, Fraction]]] = {}
        self.choice: DeviceChoice | None = None
        self._flat: list[tuple[Device, Slice, Pool]] | None = None
        self.orders: dict[tuple[int, int, int], list[tuple[Device, Slice, Pool]]] = {}
        for index, raw in enumerate(claims):
            self._add_claim(index, raw)

    # --- requests ---------------------------------------------------------------------------

    def _add_claim(self, index: int, raw: Mapping[str, Any]) -> None:
        label = _label(raw)
        devices = (raw.get("spec") or {}).get("devices") or {}
        claim = _Claim(raw, label, [], [])
        self.claims.append(claim)
        self.results.append([])
        least = 0
        for request_index, request in enumerate(devices.get("requests") or ()):
            name = str(request.get("name", ""))
            subrequests = request.get("firstAvailable") or ()
            if subrequests:
                options = [
                    self._request(index, request_index, sub_index, sub, parent=name, claim=claim)
                    for sub_index, sub in enumerate(subrequests)
                ]
            else:
                exactly = request.get("exactly") or {}
                options = [
                    self._request(
                        index, request_index, 0, exactly, parent="", claim=claim, name=name
                    )
                ]
            claim.requests.append(options)
            fewest = min(option.count for option in options)
            if fewest > MAX_DEVICES_PER_CLAIM - least:
                raise AllocationError(
                    f"claim {label}, request {name}: adding {fewest} devices exceeds the claim "
                    f"limit of {MAX_DEVICES_PER_CLAIM}, with {least} already accounted for"
                )
            least += fewest
        constraints = constraints_of(devices.get("constraints") or ())
        if isinstance(constraints, int):
            raise AllocationError(
                f"claim {label}, constraint #{constraints}: empty constraint "
                "(unsupported constraint type?)"
            )
        claim.constraints = constraints

    def _request(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        raw: Mapping[str, Any],
        *,
        parent: str,
        claim: _Claim,
        name: str | None = None,
    ) -> _Request:
        """A request (``exactly``) or subrequest, checked as kube's validateDeviceRequest."""
        name = str(raw.get("name", "")) if name is None else name
        where = f"claim {claim.label}, request {name}"
        if raw.get("derivedAttributes"):
            raise AllocationError(
                f"{where}: cannot handle request with derived attributes, the feature is disabled"
            )
        for i, selector in enumerate(raw.get("selectors") or ()):
            if not (selector.get("cel") or {}).get("expression"):
                raise AllocationError(
                    f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        class_name = str(raw.get("deviceClassName") or "")
        if not class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        class_ = self.a.classes.get(class_name)
        if class_ is None:
            raise AllocationError(
                f"{where}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        requests = ((raw.get("capacity") or {}).get("requests")) or {}
        try:
            capacity = {
                str(key): amount(value, f"capacity.requests[{key}]")
                for key, value in requests.items()
            }
        except ValueError as error:
            raise AllocationError(f"{where}: {error}") from None
        mode = raw.get("allocationMode") or "ExactCount"
        request = _Request(
            name=name,
            parent=parent,
            raw=raw,
            class_name=class_name,
            class_=class_,
            all_mode=mode == "All",
            count=int(raw.get("count") or 1),
            admin=bool(raw.get("adminAccess")) and not parent,
            capacity=capacity,
        )
        if mode == "ExactCount":
            return request
        if mode != "All":
            raise AllocationError(f"{where}: unsupported count mode {mode}")
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.name} is "
                    "currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.name} is "
                    "currently invalid"
                )
            for slice_ in pool.slices:
                for device in slice_.devices:
                    key = (claim_index, request_index, sub_index)
                    if not self._selectable(key, request, claim, slice_, device):
                        continue
                    try:
                        # Only the device's own capacity: what others use is checked when the
                        # device is taken, so that a device in use fails the request.
                        static = fits(capacity, device.capacity, None, None)
                    except CapacityError as error:
                        raise AllocationError(
                            f"{where}: checking capacity for device {device.name}: {error}"
                        ) from None
                    if static:
                        request.all_devices.append((device, slice_, pool))
        request.count = len(request.all_devices)
        return request

    def _selectable(
        self,
        key: tuple[int, int, int],
        request: _Request,
        claim: _Claim,
        slice_: Slice,
        device: Device,
    ) -> bool:
        """Whether the device passes the class's and the request's selectors (and, in a slice
        with per-device node selection, serves the node); cached per device and request."""
        cache_key = (device.id, *key)
        known = self.matched.get(cache_key)
        if known is not None:
            return known
        class_selectors = (request.class_.get("spec") or {}).get("selectors") or ()
        result = (
            self._selectors_match(class_selectors, device, f"class {request.class_name}")
            and self._selectors_match(
                request.raw.get("selectors") or (), device, f"claim {claim.label}"
            )
            and (
                not slice_.per_device
                or (
                    device.node is not None
                    and device.node.matches(self.node_name, self.node_labels)
                )
            )
        )
        self.matched[cache_key] = result
        return result

    def _selectors_match(
        self, selectors: Iterable[Mapping[str, Any]], device: Device, owner: str
    ) -> bool:
        for index, selector in enumerate(selectors):
            expression = (selector.get("cel") or {}).get("expression", "")
            try:
                matched = self.a.selectors.matches(
                    expression, device.id.driver, device.raw, device.cel_key
                )
            except CelError as error:
                raise AllocationError(_cel_message(error, owner, index, device.id)) from None
            if not matched:
                return False
        return True

    # --- the search -------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]] | Unallocatable:
        if not self.solve():
            calls = self.a.allocate_one_calls
            reason = self._why()
            # The diagnosis searches again; kube's count is of the allocation's steps alone.
            self.a.allocate_one_calls = calls
            if any(pool.invalid for pool in self.pools):
                return Unallocatable(reason, INVALID_POOLS)
            return Unallocatable(reason)
        return [self._allocation(index) for index in range(len(self.claims))]

    def solve(self) -> bool:
        """Whether all claims can be allocated; the devices chosen are in ``results``."""
        # The search recurses once per device and per request: a pod with many claims of
        # many devices may need more frames than Python allows by default (Go's stack grows).
        frames = sum(MAX_DEVICES_PER_CLAIM + 2 * len(claim.requests) + 2 for claim in self.claims)
        limit = sys.getrecursionlimit()
        if limit < frames + _FRAMES_IN_USE:
            sys.setrecursionlimit(frames + _FRAMES_IN_USE)
        try:
            return self._one(0, 0, 0, 0)
        except _MaxSizeExceededError:
            raise AllocationError("allocation max size exceeded") from None

    def _one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        *,
        in_sub: bool = False,
        start: int = 0,
    ) -> bool:
        """kube's allocateOne: find device ``device_index`` of the (sub)request and everything
        after it; True once all claims are done."""
        self.a.allocate_one_calls += 1
        if self.expired is not None and self.expired():
            raise AllocationTimeout(f"node {self.node_name}: timed out trying to allocate devices")
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            try:
                return self._one(claim_index + 1, 0, 0, 0)
            except _MaxSizeExceededError:
                # Another choice for an earlier claim may let this one pick a subrequest with
                # fewer devices: not a reason to stop backtracking.
                return False
        options = claim.requests[request_index]
        if not in_sub and options[0].parent:
            every_too_large = True
            for option in range(len(options)):
                try:
                    done = self._one(claim_index, request_index, option, device_index, in_sub=True)
                except _MaxSizeExceededError:
                    continue
                every_too_large = False
                if done:
                    self.selected[(claim_index, request_index)] = option
                    return True
            if every_too_large:
                raise _MaxSizeExceededError
            return False

        request = options[sub_index]
        if request.all_mode and not request.all_devices:
            return False
        if device_index >= request.count:
            return self._one(claim_index, request_index + 1, 0, 0)
        room = MAX_DEVICES_PER_CLAIM - len(self.results[claim_index])
        if request.count - device_index > room:
            raise _MaxSizeExceededError

        if request.all_mode:
            device, slice_, pool = request.all_devices[device_index]
            undo = self._take(claim_index, request, device, slice_, pool, must=True)
            if undo is None:
                return False
            try:
                done = self._one(
                    claim_index, request_index, sub_index, device_index + 1, in_sub=in_sub
                )
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        key = (claim_index, request_index, sub_index)
        if device_index == 0:
            # The order is set as the request's first device is sought, and kept for its
            # others: each set of devices is still tried once.
            self.orders[key] = self._order(request)
        candidates = self.orders[key]
        for position in range(start, len(candidates)):
            device, slice_, pool = candidates[position]
            if request.admin:
                if claim_index in self.allocating.get(device.id, ()):
                    continue
            elif self._in_use(device.id):
                continue
            if not self._selectable(key, request, claim, slice_, device):
                continue
            if not self._capacity_fits(claim, request, device, "checking"):
                continue
            undo = self._take(claim_index, request, device, slice_, pool, must=False)
            if undo is None:
                continue
            try:
                done = self._one(
                    claim_index,
                    request_index,
                    sub_index,
                    device_index + 1,
                    in_sub=in_sub,
                    start=position + 1,
                )
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def _devices(self) -> list[tuple[Device, Slice, Pool]]:
        """The devices of the node's usable pools, in kube's order."""
        if self._flat is None:
            self._flat = [
                (device, slice_, pool)
                for pool in self.pools
                if pool.usable
                for slice_ in pool.slices
                for device in slice_.devices
            ]
        return self._flat

    def _order(self, request: _Request) -> list[tuple[Device, Slice, Pool]]:
        """The devices in the order the request tries them: kube's, or the choice's given
        the devices taken so far."""
        devices = self._devices()
        if self.choice is None:
            return devices
        taken = self.a.in_use | {device for device, holders in self.allocating.items() if holders}
        taken |= self.allocating_capacity.keys()
        return self.choice.order(devices, _device_of, self.compared(request), taken)

    def compared(self, request: _Request) -> tuple[str, ...]:
        """The capacities the choice compares for the request."""
        assert self.choice is not None
        selectors = [
            *((request.class_.get("spec") or {}).get("selectors") or ()),
            *(request.raw.get("selectors") or ()),
        ]
        return self.choice.compared(request.capacity, selectors, self.a.selectors.capacities_read)

    def _in_use(self, device: DeviceID) -> bool:
        return device in self.a._whole or bool(self.allocating.get(device))

    def _capacity_fits(self, claim: _Claim, request: _Request, device: Device, verb: str) -> bool:
        static = (
            not request.capacity
            and device.id not in self.allocating_capacity
            and device.id not in self.a.allocated.consumed
        )
        if static and device.fits_unrequested is not None:
            return device.fits_unrequested
        try:
            fit = fits(
                request.capacity,
                device.capacity,
                self.a.allocated.consumed.get(device.id),
                self.allocating_capacity.get(device.id),
            )
        except CapacityError as error:
            raise AllocationError(
                f"claim {claim.label}, request {request.name}: {verb} capacity for device "
                f"{device.id}: {error}"
            ) from None
        if static:
            device.fits_unrequested = fit
        return fit

    def _take(
        self,
        claim_index: int,
        request: _Request,
        device: Device,
        slice_: Slice,
        pool: Pool,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        """kube's allocateDevice: take the device for the request if nothing forbids it, and
        return what gives it back; None if it cannot be taken. ``must`` (a request for all
        devices) turns a broken constraint into kube's error."""
        claim = self.claims[claim_index]
        multiple = device.allow_multiple
        if not multiple and request.admin and claim_index in self.allocating.get(device.id, ()):
            return None
        if not request.admin and self._in_use(device.id):
            return None
        counters = (
            bool(device.consumes)
            # A device already shared has its counters counted once, by its first share.
            and not (multiple and self._shared(device.id))
        )
        if counters and not self._reserve_counters(device, pool):
            return None
        undo: list[Callable[[], None]] = []
        if counters:
            undo.append(lambda: self._release_counters(device, pool))

        def rollback() -> None:
            for step in reversed(undo):
                step()

        if tainted(self.a.taints(device), request.raw.get("tolerations") or ()):
            rollback()
            return None
        for constraint in claim.constraints:
            if not constraint.add(request.name, request.parent, device):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim.label}, request {request.name}: cannot add device "
                        f"{device.id} because a claim constraint would not be satisfied"
                    )
                return None
            undo.append(_remover(constraint, request))
        if not multiple:
            holders = self.allocating.setdefault(device.id, set())
            holders.add(claim_index)
            undo.append(lambda: holders.discard(claim_index))
        if not self._capacity_fits(claim, request, device, "rechecking"):
            rollback()
            return None
        share_id = None
        consumed = None
        if multiple:
            try:
                consumed = consumption(request.capacity, device.capacity) or {}
            except CapacityError as error:
                rollback()
                raise AllocationError(
                    f"claim {claim.label}, request {request.name}: computing consumed capacity "
                    f"for device {device.id}: {error}"
                ) from None
            share_id = self.a.new_share_id()
            undo.append(self._add_capacity(device.id, consumed))
        results = self.results[claim_index]
        results.append(_Result(request, device, slice_, share_id, consumed or None))
        undo.append(lambda: _drop_last(results))
        return rollback

    def _shared(self, device: DeviceID) -> bool:
        return device in self.a._shared or device in self.allocating_capacity

    def _add_capacity(self, device: DeviceID, consumed: Mapping[str, Amount]) -> Callable[[], None]:
        existed = device in self.allocating_capacity
        total = self.allocating_capacity.setdefault(device, {})
        for name, value in consumed.items():
            total[name] = total.get(name, Fraction(0)) + value.value

        def remove() -> None:
            entry = self.allocating_capacity.get(device)
            if entry is None:
                return
            for name, value in consumed.items():
                if name in entry:
                    entry[name] -= value.value
            if not any(entry.values()):
                del self.allocating_capacity[device]
                if existed:
                    # An earlier share still holds the device: keep it marked as shared.
                    self.allocating_capacity[device] = {}

        return remove

    def _reserve_counters(self, device: Device, pool: Pool) -> bool:
        left = self.a._counters_left(pool)
        used = self.counters_used.setdefault(pool.id, {})
        for use in device.consumes:
            counters = used.setdefault(use.counter_set, {})
            for name, value in use.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + value.value
        for set_name, available in left.items():
            taken = used.get(set_name, {})
            for name, left_over in available.items():
                if left_over < taken.get(name, 0):
                    self._release_counters(device, pool)
                    return False
        return True

    def _release_counters(self, device: Device, pool: Pool) -> None:
        used = self.counters_used[pool.id]
        for use in device.consumes:
            counters = used[use.counter_set]
            for name, value in use.counters.items():
                counters[name] -= value.value

    # --- results ----------------------------------------------------------------------------

    def _allocation(self, claim_index: int) -> dict[str, Any]:
        results = []
        for result in self.results[claim_index]:
            entry: dict[str, Any] = {
                "request": result.request.full_name,
                "driver": result.device.id.driver,
                "pool": result.device.id.pool,
                "device": result.device.name,
            }
            if result.request.admin:
                entry["adminAccess"] = True
            tolerations = result.request.raw.get("tolerations")
            if tolerations:
                entry["tolerations"] = list(tolerations)
            if result.device.binding_conditions:
                entry["bindingConditions"] = list(result.device.binding_conditions)
            if result.device.binding_failure_conditions:
                entry["bindingFailureConditions"] = list(result.device.binding_failure_conditions)
            if result.share_id is not None:
                entry["shareID"] = result.share_id
            if result.consumed:
                entry["consumedCapacity"] = {k: str(v) for k, v in result.consumed.items()}
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        config = self._config(claim_index)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        selector = self._node_selector(claim_index)
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _chosen(self, claim_index: int) -> list[_Request]:
        """The request, or the subrequest chosen, of each of the claim's requests."""
        return [
            options[self.selected.get((claim_index, request_index), 0)]
            for request_index, options in enumerate(self.claims[claim_index].requests)
        ]

    def _config(self, claim_index: int) -> list[dict[str, Any]]:
        """The classes' configurations (once per class, for every request of the class), then
        the claim's for the requests or chosen subrequests allocated; a configuration for
        every request names none."""
        chosen = self._chosen(claim_index)
        config: list[dict[str, Any]] = []
        by_class: dict[str, list[dict[str, Any]]] = {}
        for request in chosen:
            known = by_class.get(request.class_name)
            if known is not None:
                for entry in known:
                    entry["requests"].append(request.full_name)
                continue
            entries = [
                {"source": "FromClass", "requests": [request.full_name], **dict(raw)}
                for raw in (request.class_.get("spec") or {}).get("config") or ()
            ]
            by_class[request.class_name] = entries
            config += entries
        names = [{request.parent or request.name, request.full_name} for request in chosen]
        claim = self.claims[claim_index].raw
        for raw in ((claim.get("spec") or {}).get("devices") or {}).get("config") or ():
            wanted = raw.get("requests") or ()
            if not wanted or any(name in wanted for request in names for name in request):
                entry = {"source": "FromClaim", **dict(raw)}
                entry.pop("requests", None)
                if wanted:
                    entry["requests"] = list(wanted)
                config.append(entry)
        for entry in config:
            wanted = entry.get("requests")
            if wanted and all(any(name in wanted for name in request) for request in names):
                del entry["requests"]
        return config

    def _node_selector(self, claim_index: int) -> dict[str, Any] | None:
        """Where the claim's devices are available (kube's createNodeSelector): this node
        alone if any device is local to a node or binds to it; else the requirements of the
        devices' node selectors, merged into one term; None if available everywhere."""
        fields: list[Mapping[str, Any]] = []
        expressions: list[Mapping[str, Any]] = []
        claim = self.claims[claim_index]
        for result in self.results[claim_index]:
            device, slice_ = result.device, result.slice
            where = device.node if slice_.per_device else slice_.node
            if (where is not None and where.node_name) or device.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [self.node_name],
                                }
                            ]
                        }
                    ]
                }
            raw = where.raw_selector if where is not None else None
            if raw is None:
                continue
            terms = raw.get("nodeSelectorTerms") or ()
            if len(terms) > 1:
                name = (claim.raw.get("metadata") or {}).get("name", "")
                raise AllocationError(
                    f"create NodeSelector for claim {name}: unsupported ResourceSlice.NodeSelector"
                    f" with {len(terms)} terms"
                )
            if terms:
                _merge(terms[0].get("matchFields") or (), fields)
                _merge(terms[0].get("matchExpressions") or (), expressions)
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]} if term else None

    # --- why not ----------------------------------------------------------------------------

    def _why(self) -> str:
        """Which claim and request fail, and why: the first (sub)request that the devices of the
        node cannot serve even alone, counted check by check; else the first claim that
        cannot be allocated with those before it (its constraints, or too few devices)."""
        notes = "".join(
            f"; pool {pool.name} is being updated (incomplete)"
            if pool.incomplete
            else f"; pool {pool.name} is invalid: {pool.invalid_reason}"
            for pool in self.pools
            if not pool.usable
        )
        for claim_index, claim in enumerate(self.claims):
            for request_index, options in enumerate(claim.requests):
                reasons = [
                    self._shortfall((claim_index, request_index, sub_index), option)
                    for sub_index, option in enumerate(options)
                ]
                if all(reasons):
                    name = options[0].parent or options[0].name
                    if len(options) == 1:
                        text = reasons[0]
                    else:
                        text = "no alternative fits: " + "; ".join(
                            f'"{option.name}" {reason}'
                            for option, reason in zip(options, reasons, strict=True)
                        )
                    return f'claim {claim.label}, request "{name}": {text}{notes}'
        raws = [claim.raw for claim in self.claims]
        for claim_index, claim in enumerate(self.claims):
            try:
                if self._solvable(raws[: claim_index + 1]):
                    continue
                alone = self._solvable([claim.raw])
            except AllocationTimeout:
                return f"claim {claim.label}: no allocation found in time to say why{notes}"
            except AllocationError as error:
                return f"claim {claim.label}: {error.message}{notes}"
            if not alone and claim.constraints:
                unmet = ", ".join(f'{c.kind} "{c.attribute}"' for c in claim.constraints)
                return (
                    f"claim {claim.label}: constraint {unmet} unmet by the devices that fit{notes}"
                )
            if not alone:
                return (
                    f"claim {claim.label}: its requests together need more devices than fit{notes}"
                )
            return f"claim {claim.label}: not enough devices left by the claims before it{notes}"
        return f"no allocation{notes}"

    def _solvable(self, claims: Sequence[Mapping[str, Any]]) -> bool:
        search = _Search(self.a, self.node_name, self.node_labels, claims)
        search.expired = self.expired
        return search.solve()

    def _shortfall(self, key: tuple[int, int, int], request: _Request) -> str:
        """Why the node's devices cannot serve the (sub)request alone, or "" if they can:
        devices are counted through each check in turn, and the first check that leaves
        fewer than needed is named. A selector that fails on a device the search did not
        reach is a reason here, not kube's fatal error."""
        try:
            return self._count_through(key, request)
        except AllocationError as error:
            return f"a selector cannot be evaluated: {error.message}"

    def _count_through(self, key: tuple[int, int, int], request: _Request) -> str:
        claim = self.claims[key[0]]
        every = bool(request.all_devices)
        if every:
            candidates = list(request.all_devices)
            needed = len(candidates)
        else:
            # A request for all devices when none matches needs one to be allocated.
            needed = 1 if request.all_mode else request.count
            candidates = [
                (d, s, p) for p in self.pools if p.usable for s in p.slices for d in s.devices
            ]
        class_name = request.class_name
        of_class = _expressions((request.class_.get("spec") or {}).get("selectors"))
        of_request = _expressions(request.raw.get("selectors"))
        free = ("is free", "are free", lambda d, s, p: request.admin or d.id not in self.a._whole)
        # In kube's order: whether a device is in use is known before its selectors are
        # evaluated, and a node whose devices are all taken costs no CEL.
        checks: list[tuple[str, str, Callable[[Device, Slice, Pool], bool]]] = [free]
        if not every:
            checks = [
                ("is on this node", "are on this node", lambda d, s, p: True),
                free,
                (
                    f'matches the selectors of class "{class_name}"{of_class}',
                    f'match the selectors of class "{class_name}"{of_class}',
                    lambda d, s, p: self._class_matches(request, d),
                ),
                (
                    f"matches the request's selectors{of_request}",
                    f"match the request's selectors{of_request}",
                    lambda d, s, p: self._selectable(key, request, claim, s, d),
                ),
            ]
        checks += [
            (
                "is free of taints not tolerated",
                "are free of taints not tolerated",
                lambda d, s, p: not tainted(self.a.taints(d), request.raw.get("tolerations") or ()),
            ),
            (
                "has the capacity asked for",
                "have the capacity asked for",
                lambda d, s, p: self._capacity_fits(claim, request, d, "checking"),
            ),
        ]
        for singular, plural, check in checks:
            candidates = [(d, s, p) for d, s, p in candidates if check(d, s, p)]
            if len(candidates) < needed:
                return _count(needed, len(candidates), singular, plural, every)
        fitting = self._fit_counters(candidates)
        if fitting < needed:
            return _count(
                needed,
                fitting,
                "fits in its shared counters",
                "fit in their shared counters",
                every,
            )
        return ""

    def _class_matches(self, request: _Request, device: Device) -> bool:
        selectors = (request.class_.get("spec") or {}).get("selectors") or ()
        return self._selectors_match(selectors, device, f"class {request.class_name}")

    def _fit_counters(self, candidates: Sequence[tuple[Device, Slice, Pool]]) -> int:
        """How many of the devices fit in their pools' shared counters together, taken in
        order (those that consume none always fit)."""
        left: dict[PoolID, dict[str, dict[str, Fraction]]] = {}
        fitting = 0
        for device, _, pool in candidates:
            if not device.consumes:
                fitting += 1
                continue
            counters = left.get(pool.id)
            if counters is None:
                available = self.a._counters_left(pool)
                counters = left[pool.id] = {k: dict(v) for k, v in available.items()}
            trial = {k: dict(v) for k, v in counters.items()}
            for use in device.consumes:
                for name, value in use.counters.items():
                    trial.setdefault(use.counter_set, {})[name] = (
                        trial.get(use.counter_set, {}).get(name, Fraction(0)) - value.value
                    )
            if all(v >= 0 for values in trial.values() for v in values.values()):
                left[pool.id] = trial
                fitting += 1
        return fitting


def _expressions(selectors: Iterable[Mapping[str, Any]] | None) -> str:
    """The CEL expressions of selectors, as a reason quotes them (all must match)."""
    expressions = [str((s.get("cel") or {}).get("expression", "")) for s in selectors or ()]
    return f" ({' && '.join(expressions)})" if expressions else ""


def _count(needed: int, found: int, singular: str, plural: str, every: bool) -> str:
    if found == 0:
        return f"no device {singular}"
    if every:
        return f"asks for all {needed} devices, {found} {plural}"
    return f"needs {needed} devices, {found} {plural}"


def _device_of(candidate: tuple[Device, Slice, Pool]) -> Device:
    return candidate[0]


def _drop_last(results: list[_Result]) -> None:
    results.pop()


def _remover(constraint: Constraint, request: _Request) -> Callable[[], None]:
    return lambda: constraint.remove(request.name, request.parent)


def _merge(requirements: Iterable[Mapping[str, Any]], into: list[Mapping[str, Any]]) -> None:
    """Add the requirements not already in ``into`` (same key, operator and set of values)."""
    for requirement in requirements:
        values = set(requirement.get("values") or ())
        if not any(
            known.get("key") == requirement.get("key")
            and known.get("operator") == requirement.get("operator")
            and set(known.get("values") or ()) == values
            for known in into
        ):
            into.append(requirement)


NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)
"""What kube's EnhanceRuntimeError adds to a runtime error on a missing key."""


def _cel_message(error: CelError, owner: str, index: int, device: DeviceID) -> str:
    """kube's words for a selector that failed: a compile error names the selector, a runtime
    error the device too, and a missing key's how to guard it."""
    if error.phase == "compile":
        return f"{owner}: selector #{index}: CEL compile error: {error.message}"
    hint = NO_SUCH_KEY_HINT if "no such key:" in error.message else ""
    return (
        f"{owner}: selector #{index} on device {device}: CEL runtime error: {error.message}{hint}"
    )
