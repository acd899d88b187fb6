"""A claim's constraints across the devices allocated for it, checked as each device is added.

``matchAttribute``: every device of the named requests (all requests when none are named) has
the attribute, with one value of one type. ``distinctAttribute``: each has it, with a value no
other has. An attribute name is fully qualified (``domain/id``); a device may store the
attributes of its own driver's domain unqualified. Both are monotonic: once a device breaks a
constraint, adding more devices cannot mend it, so the search backtracks at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.model.dra.devices import SCALAR_TYPES, AttributeValue, Device


@dataclass(slots=True)
class Constraint:
    """One entry of ``spec.devices.constraints``; ``add`` and ``remove`` pair up as the search
    tries and abandons devices."""

    attribute: str
    requests: frozenset[str]
    distinct: bool
    values: list[AttributeValue] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "distinctAttribute" if self.distinct else "matchAttribute"

    def applies(self, request: str, parent: str) -> bool:
        """Whether a device for ``request`` (a subrequest of ``parent`` when that is set) is
        bound by the constraint: it names no requests, or this one, or the parent."""
        if not self.requests:
            return True
        if not parent:
            return request in self.requests
        return parent in self.requests or f"{parent}/{request}" in self.requests

    def add(self, request: str, parent: str, device: Device) -> bool:
        """Whether the device may join; if so, it is counted."""
        if not self.applies(request, parent):
            return True
        value = device.attribute(self.attribute)
        if value is None:
            return False
        if self.values:
            # Only scalar values compare; a list value (an alpha feature) joins an empty set.
            if value[0] not in SCALAR_TYPES:
                return False
            if value in self.values if self.distinct else value != self.values[0]:
                return False
        self.values.append(value)
        return True

    def remove(self, request: str, parent: str) -> None:
        if self.applies(request, parent):
            self.values.pop()


def constraints_of(raw: Iterable[Mapping[str, Any]]) -> list[Constraint] | int:
    """The claim's constraints, or the index of the first of an unknown kind."""
    result = []
    for index, entry in enumerate(raw):
        names = frozenset(str(r) for r in entry.get("requests") or ())
        if entry.get("matchAttribute") is not None:
            result.append(Constraint(str(entry["matchAttribute"]), names, distinct=False))
        elif entry.get("distinctAttribute") is not None:
            result.append(Constraint(str(entry["distinctAttribute"]), names, distinct=True))
        else:
            return index
    return result
