"""ResourceSlices and their devices as the allocator reads them, parsed once per slice.

A slice as the API serves it (``resource.k8s.io/v1``) becomes a :class:`Slice`: its pool, which
nodes it serves (``nodeName``, ``nodeSelector``, ``allNodes``, or per device with
``perDeviceNodeSelection``), its shared counters and its :class:`Device` s, each with typed
attributes, capacities (with their request policy), the counters it consumes, taints, binding
conditions and whether it may be allocated more than once. The raw device stays beside the
model: CEL selectors read it as the API serves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.model.dra.quantities import Amount, amount
from policy_scheduler.model.dra.state import DeviceID
from policy_scheduler.model.selectors import NodeSelector, SelectorError

# An attribute's typed value: equal only when of the same type and value (kube's matchAttribute).
AttributeValue = tuple[str, object]
SCALAR_TYPES = ("string", "int", "bool", "version")


class SliceError(ValueError):
    """A slice the allocator cannot read; kube's text where kube has one."""


@dataclass(frozen=True, slots=True)
class NodeSelection:
    """Which nodes a slice, or a device of a per-device slice, serves."""

    node_name: str
    all_nodes: bool
    selector: NodeSelector | None
    raw_selector: Mapping[str, Any] | None

    @classmethod
    def of(cls, raw: Mapping[str, Any], where: str) -> NodeSelection:
        raw_selector = raw.get("nodeSelector")
        selector = None
        if raw_selector is not None:
            try:
                selector = NodeSelector.parse(raw_selector, f"{where}.nodeSelector")
            except SelectorError as error:
                raise SliceError(
                    f"failed to perform node selection for {where}: "
                    f"failed to parse node selector: {error.message}"
                ) from None
        return cls(raw.get("nodeName") or "", bool(raw.get("allNodes")), selector, raw_selector)

    @property
    def given(self) -> bool:
        """Whether any of the three is set (a slice without is of some future kind)."""
        return bool(self.node_name) or self.all_nodes or self.selector is not None

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """kube's ``NodeMatches``: the name if set, else all nodes, else the selector."""
        if self.node_name:
            return node_name == self.node_name
        if self.all_nodes:
            return True
        return self.selector is not None and self.selector.matches(node_name, labels)


@dataclass(frozen=True, slots=True)
class Capacity:
    """A device's capacity and how requests for it are rounded (``requestPolicy``)."""

    value: Amount
    default: Amount | None
    valid_values: tuple[Amount, ...]
    valid_range: tuple[Amount | None, Amount | None, Amount | None] | None  # min, max, step
    has_policy: bool


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, Amount]


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(slots=True)
class Device:
    """One device of a slice, with everything the allocator checks parsed."""

    id: DeviceID
    raw: Mapping[str, Any]
    cel_key: tuple[str, str, str]
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, Capacity]
    consumes: tuple[CounterConsumption, ...]
    node: NodeSelection | None
    taints: tuple[Taint, ...]
    binding_conditions: tuple[str, ...]
    binding_failure_conditions: tuple[str, ...]
    binds_to_node: bool
    allow_multiple: bool
    fits_unrequested: bool | None = None
    """Whether a request that names none of its capacities fits it when nothing of it is in
    use (computed by the allocator on first use)."""

    @property
    def name(self) -> str:
        return self.id.device

    def attribute(self, qualified: str) -> AttributeValue | None:
        """The attribute named fully qualified (``domain/id``); an attribute of the device's
        own driver domain may be stored unqualified (kube's ``lookupAttribute``)."""
        found = self.attributes.get(qualified)
        if found is not None:
            return found
        domain, slash, ident = qualified.partition("/")
        if not slash or domain != self.id.driver:
            return None
        return self.attributes.get(ident)


@dataclass(slots=True)
class Slice:
    """A ResourceSlice: its pool, which nodes it serves, its counters and devices."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node: NodeSelection
    per_device: bool
    counter_sets: Mapping[str, Mapping[str, Amount]]
    counter_set_names: tuple[str, ...]
    devices: tuple[Device, ...]
    uses_compatibility_groups: bool
    alone: Any = None
    """The pool this slice makes alone when it is all of its pool (built on first use)."""

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Slice:
        """The model of a slice; raises SliceError for content the API server would refuse."""
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        name = str(meta.get("name", ""))
        where = f"slice {name}"
        pool = spec.get("pool") or {}
        driver = str(spec.get("driver", ""))
        pool_name = str(pool.get("name", ""))
        # What CEL results are cached by: the slice's uid and resourceVersion name its content;
        # an object without them (a file, a test) is named by its place and generation.
        key = (
            (str(meta["uid"]), str(meta.get("resourceVersion", "")))
            if meta.get("uid")
            else (f"{driver}/{pool_name}/{name}", str(pool.get("generation", "")))
        )
        counter_sets: dict[str, Mapping[str, Amount]] = {}
        names = []
        for index, counter_set in enumerate(spec.get("sharedCounters") or ()):
            set_name = str(counter_set.get("name", ""))
            names.append(set_name)
            counter_sets.setdefault(
                set_name,
                _counters(counter_set.get("counters"), f"{where}.sharedCounters[{index}]"),
            )
        devices = tuple(
            _device(device, driver, pool_name, key, f"{where}.devices[{index}]")
            for index, device in enumerate(spec.get("devices") or ())
        )
        return cls(
            name=name,
            driver=driver,
            pool=pool_name,
            generation=int(pool.get("generation") or 0),
            slice_count=int(pool.get("resourceSliceCount") or 0),
            node=NodeSelection.of(spec, where),
            per_device=bool(spec.get("perDeviceNodeSelection")),
            counter_sets=counter_sets,
            counter_set_names=tuple(names),
            devices=devices,
            uses_compatibility_groups=any(
                consumption.get("compatibilityGroups")
                for device in spec.get("devices") or ()
                for consumption in device.get("consumesCounters") or ()
            ),
        )

    @property
    def pool_id(self) -> tuple[str, str]:
        return (self.driver, self.pool)

    @property
    def has_counter_sets(self) -> bool:
        return bool(self.counter_set_names)


SliceIndex = tuple[dict[str, list[int]], list[int]]
"""The indexes of each node's slices, and of the slices not bound to one node."""


class SliceCache:
    """Slice models kept across allocators: a slice is parsed once until it changes (the
    informer hands a changed slice on as a new object). Keyed by the raw object itself."""

    def __init__(self) -> None:
        self._models: dict[int, tuple[Mapping[str, Any], Slice]] = {}
        self._by_node: tuple[Sequence[Mapping[str, Any]], SliceIndex] | None = None

    def by_node(self, slices: Sequence[Mapping[str, Any]]) -> SliceIndex:
        """The indexes in ``slices`` of each node's slices (``nodeName``), and of the others;
        made again only for another sequence than the last one (the caller hands the same
        sequence until a slice changes)."""
        if self._by_node is not None and self._by_node[0] is slices:
            return self._by_node[1]
        on_node: dict[str, list[int]] = {}
        anywhere: list[int] = []
        for index, raw in enumerate(slices):
            node_name = (raw.get("spec") or {}).get("nodeName")
            if node_name:
                on_node.setdefault(node_name, []).append(index)
            else:
                anywhere.append(index)
        self._by_node = (slices, (on_node, anywhere))
        return on_node, anywhere

    def model(self, raw: Mapping[str, Any]) -> Slice:
        """The slice's model; raises SliceError or ValueError for one that cannot be read."""
        known = self._models.get(id(raw))
        if known is not None and known[0] is raw:
            return known[1]
        model = Slice.of(raw)
        self._models[id(raw)] = (raw, model)
        return model

    def retain(self, slices: Sequence[Mapping[str, Any]]) -> None:
        """Forget the models of slices not in ``slices`` (deleted or changed)."""
        current = {id(raw) for raw in slices}
        for key in [key for key in self._models if key not in current]:
            del self._models[key]


def _counters(raw: object, where: str) -> dict[str, Amount]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(name): amount((counter or {}).get("value"), f"{where}.counters[{name}]")
        for name, counter in raw.items()
    }


def _attribute(raw: Mapping[str, Any]) -> AttributeValue | None:
    for kind in SCALAR_TYPES:
        if kind in raw:
            return (kind, raw[kind])
    # List-typed attributes (an alpha feature, off by default) never match a constraint.
    for kind, value in raw.items():
        return (kind, tuple(value) if isinstance(value, list) else value)
    return None


def _optional(raw: Mapping[str, Any], key: str, where: str) -> Amount | None:
    value = raw.get(key)
    return None if value is None else amount(value, f"{where}.{key}")


def _capacity(raw: Mapping[str, Any], where: str) -> Capacity:
    policy = raw.get("requestPolicy")
    value = amount(raw.get("value"), f"{where}.value")
    if policy is None:
        return Capacity(value, None, (), None, False)
    where = f"{where}.requestPolicy"
    valid_range = policy.get("validRange")
    bounds = None
    if valid_range is not None:
        path = f"{where}.validRange"
        bounds = (
            _optional(valid_range, "min", path),
            _optional(valid_range, "max", path),
            _optional(valid_range, "step", path),
        )
    return Capacity(
        value=value,
        default=_optional(policy, "default", where),
        valid_values=tuple(
            amount(v, f"{where}.validValues[{i}]")
            for i, v in enumerate(policy.get("validValues") or ())
        ),
        valid_range=bounds,
        has_policy=True,
    )


def _device(
    raw: Mapping[str, Any], driver: str, pool: str, key: tuple[str, str], where: str
) -> Device:
    name = str(raw.get("name", ""))
    attributes = {}
    for attribute_name, value in (raw.get("attributes") or {}).items():
        typed = _attribute(value or {})
        if typed is not None:
            attributes[str(attribute_name)] = typed
    node = None
    if any(raw.get(field) is not None for field in ("nodeName", "nodeSelector", "allNodes")):
        node = NodeSelection.of(raw, where)
    return Device(
        id=DeviceID(driver, pool, name),
        raw=raw,
        cel_key=(key[0], key[1], name),
        attributes=attributes,
        capacity={
            str(capacity_name): _capacity(capacity or {}, f"{where}.capacity[{capacity_name}]")
            for capacity_name, capacity in (raw.get("capacity") or {}).items()
        },
        consumes=tuple(
            CounterConsumption(
                str(consumption.get("counterSet", "")),
                _counters(consumption.get("counters"), f"{where}.consumesCounters[{index}]"),
            )
            for index, consumption in enumerate(raw.get("consumesCounters") or ())
        ),
        node=node,
        taints=tuple(
            Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
            for t in raw.get("taints") or ()
        ),
        binding_conditions=tuple(raw.get("bindingConditions") or ()),
        binding_failure_conditions=tuple(raw.get("bindingFailureConditions") or ()),
        binds_to_node=bool(raw.get("bindsToNode")),
        allow_multiple=bool(raw.get("allowMultipleAllocations")),
    )


def duplicate_device_name(slices: Sequence[Slice]) -> str | None:
    """The first device name repeated across ``slices``, if any."""
    seen: set[str] = set()
    for slice_ in slices:
        for device in slice_.devices:
            if device.name in seen:
                return device.name
            seen.add(device.name)
    return None
