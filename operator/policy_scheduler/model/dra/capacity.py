"""Consumable capacity: how much of a device's capacity a request consumes, and whether it fits.

A request names the capacities it needs (``capacity.requests``); a device's ``requestPolicy``
rounds a request up (to ``validRange.min`` plus a multiple of ``step``, or to the next of
``validValues``), fills an unnamed capacity with its ``default`` (or all of it), and refuses a
value outside the policy. A device that allows multiple allocations is shared: what its shares
consume adds up, and the sum may not exceed its capacity. Step arithmetic is done in whole
units (values rounded up), as kube-scheduler v1.37 does by default: its
DRAFractionalCapacityRange, which computes in thousandths, is on only with
``--min-compatibility-version`` 1.37.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from policy_scheduler.model.dra.devices import Capacity
from policy_scheduler.model.dra.quantities import Amount

_INT64_MAX = 2**63 - 1
_NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


class CapacityError(ValueError):
    """A capacity request no device could be checked against (kube aborts the allocation)."""


def _round_up_range(
    requested: Amount, bounds: tuple[Amount | None, Amount | None, Amount | None]
) -> Amount:
    low, _, step = bounds
    assert low is not None  # checked by the caller
    if requested.value < low.value:
        return low
    if step is None:
        return requested
    if requested.value > _INT64_MAX:
        raise CapacityError(f"{_NOT_REPRESENTABLE}: request {requested} exceeds MaxInt64")
    wanted, unit, base = requested.whole(), step.whole(), low.whole()
    steps = -(-(wanted - base) // unit)
    if base >= 0 and steps > (_INT64_MAX - base) // unit:
        raise CapacityError(
            f"{_NOT_REPRESENTABLE}: rounding request {requested} up to the next step passes "
            "MaxInt64"
        )
    return Amount(Fraction(base + unit * steps), step.format)


def consumed(requested: Amount | None, capacity: Capacity) -> Amount:
    """What a request (None: the capacity not named by it) consumes of ``capacity``."""
    if requested is None:
        return capacity.default if capacity.default is not None else capacity.value
    if not capacity.has_policy:
        return requested
    if capacity.valid_range is not None and capacity.valid_range[0] is not None:
        return _round_up_range(requested, capacity.valid_range)
    for valid in capacity.valid_values:
        if requested.value <= valid.value:
            return valid
    return requested


def _violates_policy(value: Amount, capacity: Capacity) -> bool:
    if not capacity.has_policy:
        return False
    if capacity.default is not None and value.value == capacity.default.value:
        return False
    if capacity.valid_range is not None:
        low, high, step = capacity.valid_range
        if high is not None and value.value > high.value:
            return True
        if step is None:
            return False
        base = low.whole() if low is not None else 0
        return (value.whole() - base) % step.whole() != 0
    if capacity.valid_values:
        return all(value.value != valid.value for valid in capacity.valid_values)
    return False


def consumption(
    requests: Mapping[str, Amount], capacities: Mapping[str, Capacity]
) -> dict[str, Amount] | None:
    """What a request consumes of each of a device's capacities; None when it asks for a
    capacity the device does not have. Raises CapacityError (kube's text after the
    capacity's name) for a request that cannot be rounded or a negative result."""
    if any(name not in capacities for name in requests):
        return None
    result = {}
    for name, capacity in capacities.items():
        try:
            value = consumed(requests.get(name), capacity)
        except CapacityError as error:
            raise CapacityError(f'capacity "{name}": {error}') from None
        if value.value < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        result[name] = value
    return result


def fits(
    requests: Mapping[str, Amount],
    capacities: Mapping[str, Capacity],
    in_use: Mapping[str, Fraction] | None,
    allocating: Mapping[str, Fraction] | None,
) -> bool:
    """Whether the request's consumption is within the device's policy and, added to what is
    in use and what this allocation already takes of it, within each capacity
    (kube's ``CmpRequestOverCapacity``). Raises CapacityError as :func:`consumption`."""
    wanted = consumption(requests, capacities)
    if wanted is None:
        return False
    for name, capacity in capacities.items():
        value = wanted[name]
        if _violates_policy(value, capacity):
            return False
        total = value.value
        if in_use:
            total += in_use.get(name, 0)
        if allocating:
            total += allocating.get(name, 0)
        if total > capacity.value.value:
            return False
    return True
