"""The resource pools a node can allocate from, gathered as kube's ``GatherPools`` does.

A pool is the set of slices one driver publishes under one pool name; only the slices of its
highest generation count. A pool is *incomplete* while fewer slices of that generation exist
than each slice says the pool has (``resourceSliceCount``: the driver is updating it), and
*invalid* when two of its devices share a name or its counters do not add up. Neither is
allocated from; a request for all devices fails on either. Pools come sorted by driver and pool
name, those whose devices have binding conditions last, so that the first-fit search prefers
devices that need no binding step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from policy_scheduler.model.dra.devices import Slice, duplicate_device_name
from policy_scheduler.model.dra.quantities import Amount

PoolID = tuple[str, str]


@dataclass(slots=True)
class Pool:
    """A pool as one node sees it."""

    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[Slice] = field(default_factory=list)
    """The slices with devices that serve the node, by name."""
    other_slices: list[Slice] = field(default_factory=list)
    """The pool's other slices with devices: their allocated devices consume counters too."""
    counter_sets: Mapping[str, Mapping[str, Amount]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """As kube writes a pool ID in messages: ``driver/pool``."""
        return f"{self.id[0]}/{self.id[1]}"

    @property
    def usable(self) -> bool:
        return not (self.incomplete or self.invalid)

    @property
    def has_binding_conditions(self) -> bool:
        return any(device.binding_conditions for s in self.slices for device in s.devices)


def serves(slice_: Slice, node_name: str, labels: Mapping[str, str]) -> bool | None:
    """Whether the slice has devices for the node; None for a slice that names no nodes in any
    way known (a future kind), which is skipped."""
    if slice_.node.given:
        return slice_.node.matches(node_name, labels)
    if slice_.per_device:
        return any(
            device.node is not None and device.node.matches(node_name, labels)
            for device in slice_.devices
        )
    return None


def gather_pools(
    candidates: Sequence[Slice],
    node_name: str,
    labels: Mapping[str, str],
    pool_slices: Callable[[PoolID], Sequence[Slice]],
) -> list[Pool]:
    """The pools of ``candidates`` (the slices of the node and those not bound to one node)
    that serve the node. ``pool_slices`` gives all slices of a pool, for the pools whose
    slices for this node are fewer than the pool has: the others may serve other nodes."""
    by_pool: dict[PoolID, list[Slice]] = {}
    for slice_ in candidates:
        # Compatibility groups are an alpha feature, off by default: such slices are ignored,
        # which leaves their pool incomplete.
        if slice_.uses_compatibility_groups or not serves(slice_, node_name, labels):
            continue
        known = by_pool.get(slice_.pool_id)
        if known is None or slice_.generation > known[0].generation:
            by_pool[slice_.pool_id] = [slice_]
        elif slice_.generation == known[0].generation:
            known.append(slice_)

    pools: list[Pool] = []
    for pool_id, slices in by_pool.items():
        expected = slices[0].slice_count
        generation = slices[0].generation
        if len(slices) == expected:
            if len(slices) == 1:
                # The usual pool: one slice of one node, whose pool is the same for every
                # node it serves.
                if slices[0].alone is None:
                    slices[0].alone = _build(pool_id, slices, ())
                pools.append(slices[0].alone)
            else:
                pools.append(_build(pool_id, slices, ()))
            continue
        every: list[Slice] = []
        obsolete = False
        for slice_ in pool_slices(pool_id):
            if slice_.generation > generation:
                # A newer generation exists, with no slice for this node: the driver is
                # replacing the pool, so its old devices are ignored.
                obsolete = True
                break
            if slice_.generation == generation and not slice_.uses_compatibility_groups:
                every.append(slice_)
        if obsolete:
            continue
        if len(every) != expected:
            pools.append(Pool(pool_id, incomplete=True))
            continue
        pools.append(_build(pool_id, slices, every))
    pools.sort(key=lambda pool: (pool.has_binding_conditions, pool.id))
    return pools


def _build(pool_id: PoolID, slices: list[Slice], every: Sequence[Slice]) -> Pool:
    slices = sorted(slices, key=lambda s: s.name)
    with_devices = [s for s in slices if not s.has_counter_sets]
    with_counters = [s for s in slices if s.has_counter_sets]
    others: list[Slice] = []
    if len(slices) < len(every):
        names = {s.name for s in slices}
        for slice_ in every:
            if slice_.name not in names:
                (with_counters if slice_.has_counter_sets else others).append(slice_)

    duplicate = duplicate_device_name(with_devices)
    if duplicate is not None:
        return Pool(pool_id, invalid=True, invalid_reason=f"duplicate device name {duplicate}")
    counter_sets: dict[str, Mapping[str, Amount]] = {}
    for slice_ in with_counters:
        for name in slice_.counter_set_names:
            if name in counter_sets:
                reason = f"duplicate counter set name {name}"
                return Pool(pool_id, invalid=True, invalid_reason=reason)
            counter_sets[name] = slice_.counter_sets[name]
    for slice_ in (*with_devices, *others):
        reason = _unknown_counter(slice_, counter_sets)
        if reason:
            return Pool(pool_id, invalid=True, invalid_reason=reason)
    return Pool(pool_id, slices=with_devices, other_slices=others, counter_sets=counter_sets)


def _unknown_counter(slice_: Slice, counter_sets: Mapping[str, Mapping[str, Amount]]) -> str:
    for device in slice_.devices:
        for consumption in device.consumes:
            counters = counter_sets.get(consumption.counter_set)
            if counters is None:
                return f"counter set {consumption.counter_set} not found"
            for name in consumption.counters:
                if name not in counters:
                    return f"counter {name} not found in counter set {consumption.counter_set}"
    return ""
