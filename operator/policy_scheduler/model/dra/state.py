"""What is in use before an allocation starts: kube's ``schedulerapi.AllocatedState``.

Devices allocated to claims (and to this scheduler's in-flight allocations) are either taken
whole, or, for devices that allow multiple allocations, shared: each share has its own ID and
may consume part of the device's capacity. Devices allocated with admin access are not counted:
admin access may use a device that is in use. Each pool's changes are stamped, so that what was
found on a node can be known unchanged (:mod:`~policy_scheduler.model.dra.outcomes`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from policy_scheduler.model.dra.quantities import amount


class DeviceID(NamedTuple):
    """A device by its driver, pool and name, as allocation results name it. A named tuple
    rather than a frozen dataclass: the search hashes device IDs at every step, and a tuple's
    hash is computed in C (a dataclass's costs 0.6 us, its construction 1.3 us)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


_STAMPS = itertools.count(1)
"""One sequence for every state: a pool's stamp is never given twice, even across states."""


@dataclass
class AllocatedState:
    """What is in use: kube's ``schedulerapi.AllocatedState``."""

    devices: set[DeviceID] = field(default_factory=set)
    """Allocated whole: no other claim may have them (admin access aside)."""
    shared: set[tuple[DeviceID, str]] = field(default_factory=set)
    """(device, shareID) of the shares of devices that allow multiple allocations."""
    consumed: dict[DeviceID, dict[str, Fraction]] = field(default_factory=dict)
    """Capacity consumed on each shared device, summed over its shares."""
    stamps: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)
    """(driver, pool) -> a stamp renewed at every change of what is in use in the pool (0:
    never changed): equal stamps, the same devices in use there."""

    @classmethod
    def of(cls, allocations: Iterable[Mapping[str, Any]]) -> AllocatedState:
        """From ``status.allocation``s (claims allocated, and this scheduler's in-flight ones);
        results with adminAccess are not counted, as kube's are not."""
        state = cls()
        for allocation in allocations:
            state.add(allocation)
        return state

    def add(self, allocation: Mapping[str, Any]) -> None:
        """Count the devices of one more ``status.allocation``."""
        for device, share, consumed in _counted(allocation):
            self.stamps[device.driver, device.pool] = next(_STAMPS)
            if share is None:
                self.devices.add(device)
                continue
            self.shared.add((device, share))
            if consumed is not None:
                total = self.consumed.setdefault(device, {})
                for name, value in consumed.items():
                    total[name] = total.get(name, Fraction(0)) + value

    def discard(self, allocation: Mapping[str, Any]) -> None:
        """Stop counting the devices of an allocation counted before (a claim deallocated or
        deleted); a device's consumed capacity goes when nothing of it is left."""
        for device, share, consumed in _counted(allocation):
            self.stamps[device.driver, device.pool] = next(_STAMPS)
            if share is None:
                self.devices.discard(device)
                continue
            self.shared.discard((device, share))
            total = self.consumed.get(device)
            if consumed is None or total is None:
                continue
            for name, value in consumed.items():
                total[name] = total.get(name, Fraction(0)) - value
            if not any(total.values()):
                del self.consumed[device]

    def copy(self) -> AllocatedState:
        """A copy to add a cycle's in-flight allocations to."""
        return AllocatedState(
            set(self.devices),
            set(self.shared),
            {device: dict(consumed) for device, consumed in self.consumed.items()},
            dict(self.stamps),
        )

    def in_use(self) -> set[DeviceID]:
        """Every device with an allocation of any kind (kube's ``IsDeviceAllocated``): whole,
        shared, or with capacity consumed."""
        return self.devices | {device for device, _ in self.shared} | self.consumed.keys()

    def shared_devices(self) -> set[DeviceID]:
        """The devices with at least one share or consumed capacity."""
        return {device for device, _ in self.shared} | self.consumed.keys()


def _counted(
    allocation: Mapping[str, Any],
) -> Iterator[tuple[DeviceID, str | None, dict[str, Fraction] | None]]:
    """(device, shareID, consumed capacity) of each result that counts (not admin access)."""
    results = (allocation.get("devices") or {}).get("results") or ()
    for index, result in enumerate(results):
        if result.get("adminAccess"):
            continue
        device = DeviceID(result["driver"], result["pool"], result["device"])
        raw = result.get("consumedCapacity")
        consumed = None
        if raw is not None:
            consumed = {
                name: amount(value, f"results[{index}].consumedCapacity[{name}]").value
                for name, value in raw.items()
            }
        yield device, result.get("shareID"), consumed
