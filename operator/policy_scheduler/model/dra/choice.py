"""Beyond kube-scheduler: the order in which the allocator tries a node's devices for a request.

kube's allocator takes the first solution its depth-first search finds, trying devices in the
order their pools, slices and lists give them. A :class:`DeviceChoice` only reorders a
request's candidate devices on the node before the search tries them; every combination is
still tried, so a node fits exactly when it does for kube, and only which devices win changes:

- ``smallest``: devices with the least capacity first, compared capacity by capacity in the
  order of :attr:`DeviceChoice.capacities`; without those, the capacities the request asks for
  (``capacity.requests``) and those its class's and its own CEL selectors read
  (``device.capacity["domain"].name``), in that order; a request that names none compares all
  of a device's capacities, by qualified name. A device without a compared capacity counts as
  having none of it. Large devices stay free for large requests.
- ``numa_attribute`` with ``numa_spread`` False (Pack): the devices of the NUMA domain (the
  device attribute's value) most in use first, counting the devices allocated before and those
  the pod has taken so far, so that a pod's devices, and successive pods' devices, fill the
  fewest domains; of domains in use alike, the one with the smallest free device first (with
  ``smallest``), then in the order the domains' first devices are listed. With
  ``numa_spread`` (Spread): each domain's first free device (its smallest, with ``smallest``),
  the least-used domains first, then each one's second, and so on. Devices without the
  attribute come last.

Devices equal under every key keep kube's order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from policy_scheduler.model.dra.devices import AttributeValue, Capacity, Device

Candidate = TypeVar("Candidate")


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """Which of a node's devices the allocator tries first (see the module's docstring); the
    default chooses as kube does."""

    smallest: bool = False
    capacities: tuple[str, ...] = ()
    """The capacities compared for ``smallest``, by qualified name (``domain/name``), in order;
    empty: those the request looks at."""
    numa_attribute: str = ""
    """The device attribute naming a device's NUMA domain (qualified); empty: no NUMA order."""
    numa_spread: bool = False

    @property
    def active(self) -> bool:
        return self.smallest or bool(self.numa_attribute)

    def compared(
        self,
        requested: Iterable[str],
        selectors: Iterable[Mapping[str, Any]],
        capacities_read: Callable[[str], Sequence[str]],
    ) -> tuple[str, ...]:
        """The capacities ``smallest`` compares for a request with capacity requests
        ``requested`` and CEL ``selectors`` (its class's and its own), which read the
        capacities ``capacities_read`` says; empty: all of each device's."""
        if self.capacities:
            return self.capacities
        names = list(requested)
        for selector in selectors:
            names += capacities_read(str((selector.get("cel") or {}).get("expression", "")))
        return tuple(dict.fromkeys(names))

    def order(
        self,
        candidates: Sequence[Candidate],
        device_of: Callable[[Candidate], Device],
        compared: Sequence[str],
        in_use: Collection[object],
    ) -> list[Candidate]:
        """``candidates`` in the order to try them; ``in_use`` holds the IDs of the devices
        taken (before the pod, and by the pod so far), for the NUMA order."""
        size = [self._size(device_of(c), compared) if self.smallest else () for c in candidates]
        keys: list[tuple[Any, ...]]
        if not self.numa_attribute:
            keys = [(s, i) for i, s in enumerate(size)]
        else:
            domains = [device_of(c).attribute(self.numa_attribute) for c in candidates]
            use: dict[AttributeValue, int] = {}
            first: dict[AttributeValue, int] = {}
            least: dict[AttributeValue, tuple[Fraction, ...]] = {}
            for i, (candidate, domain) in enumerate(zip(candidates, domains, strict=True)):
                if domain is None:
                    continue
                first.setdefault(domain, i)
                taken = device_of(candidate).id in in_use
                use[domain] = use.get(domain, 0) + taken
                if not taken and (domain not in least or size[i] < least[domain]):
                    least[domain] = size[i]
            # The position of each free device within its domain, smallest first (Spread's
            # rounds); the devices taken are passed over by the search anyway.
            within: dict[AttributeValue, int] = {}
            rank: dict[int, int] = {}
            for i in sorted(range(len(candidates)), key=lambda i: (size[i], i)):
                domain = domains[i]
                if domain is not None and device_of(candidates[i]).id not in in_use:
                    rank[i] = within.get(domain, 0)
                    within[domain] = within.get(domain, 0) + 1
            keys = []
            for i, domain in enumerate(domains):
                if domain is None:
                    keys.append((1, 0, (), size[i], i))
                    continue
                busy = use[domain] if self.numa_spread else -use[domain]
                domain_key = (busy, least.get(domain, ()), first[domain])
                keys.append(
                    (0, rank.get(i, len(candidates)), domain_key, size[i], i)
                    if self.numa_spread
                    else (0, 0, domain_key, size[i], i)
                )
        return [candidates[i] for i in sorted(range(len(candidates)), key=keys.__getitem__)]

    def _size(self, device: Device, compared: Sequence[str]) -> tuple[Fraction, ...]:
        names = compared or sorted(qualified(device, name) for name in device.capacity)
        return tuple(_value(capacity_of(device, name)) for name in names)

    def describe(self, device: Device, compared: Sequence[str]) -> str:
        """Why the device was among the first tried, as ``explain`` shows it: the capacities
        compared and its NUMA domain."""
        parts = []
        if self.smallest:
            names = compared or sorted(qualified(device, name) for name in device.capacity)
            sizes = ", ".join(f"{name}={_text(capacity_of(device, name))}" for name in names)
            parts.append(f"smallest first: {sizes or 'no capacity'}")
        if self.numa_attribute:
            domain = device.attribute(self.numa_attribute)
            where = "none" if domain is None else str(domain[1])
            mode = "Spread" if self.numa_spread else "Pack"
            parts.append(f"NUMA {mode}: {self.numa_attribute}={where}")
        return "; ".join(parts)


def qualified(device: Device, name: str) -> str:
    """A capacity name of the device, qualified with its driver's domain when it has none."""
    return name if "/" in name else f"{device.id.driver}/{name}"


def capacity_of(device: Device, name: str) -> Capacity | None:
    """The device's capacity named qualified or not; one of the driver's own domain may be
    stored unqualified, as attributes are."""
    found = device.capacity.get(name)
    if found is not None:
        return found
    domain, slash, ident = name.partition("/")
    if slash:
        return device.capacity.get(ident) if domain == device.id.driver else None
    return device.capacity.get(f"{device.id.driver}/{name}")


def _value(capacity: Capacity | None) -> Fraction:
    return Fraction(0) if capacity is None else capacity.value.value


def _text(capacity: Capacity | None) -> str:
    return "none" if capacity is None else str(capacity.value)
