"""What the allocator found on a node, kept across pods: the pods made from one template ask
for the same devices, and on a node whose devices nothing changed the search would find the
same again.

An :class:`Outcome` is the allocations found (or :class:`Unallocatable`) for claims of one
specification on one node, with everything the search read that may change between pods: the
node's labels, the ResourceSlices the node's pools were gathered from (by identity: a changed
slice is a new object), the stamp of each of those pools' devices in use
(:attr:`AllocatedState.stamps`, renewed by every allocation there, in flight, written or
released), the DeviceClasses and the DeviceTaintRules (by identity: the cluster state makes them
again after any change of their kind). The allocator answers from it only while every one of
these is what it was; so the answer is the search's, except for two things the search does not
repeat: share IDs (an outcome with a shared device is never kept, its IDs must be new) and the
count of search steps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policy_scheduler.model.dra.pools import PoolID

if TYPE_CHECKING:
    from policy_scheduler.model.dra.allocator import Unallocatable
    from policy_scheduler.model.dra.state import AllocatedState  # noqa: F401 (the docstrings')

MAX_OUTCOMES = 65536
"""The most outcomes kept; past it every one is forgotten (they are found again)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One node's answer for one claims specification, and what it was found on."""

    labels: tuple[str, ...]
    """The claims' ``namespace/name``, as the answer's reason names them."""
    node_labels: Mapping[str, str]
    slices: tuple[Mapping[str, Any], ...]
    """The slices of the node and those not bound to a node, as the search gathered pools."""
    mates: tuple[tuple[PoolID, tuple[Mapping[str, Any], ...]], ...]
    """The pools whose other slices were looked at, with those slices."""
    stamps: tuple[tuple[PoolID, int], ...]
    """The node's pools, with the stamp of their devices in use."""
    classes: Mapping[str, Mapping[str, Any]]
    taint_rules: Sequence[Mapping[str, Any]]
    found: list[dict[str, Any]] | Unallocatable
    """The allocations (shared with the callers given them, who change only copies), or the
    Unallocatable."""


class Outcomes:
    """Outcomes by node name and claims specification, kept across allocators (the caller,
    the cluster state, keeps one for the scheduler's life). The allocators that share it read
    copies of one :class:`AllocatedState` kept up to date by ``add`` and ``discard``: a state
    given its devices otherwise has no stamps to tell its pools apart."""

    def __init__(self, limit: int = MAX_OUTCOMES) -> None:
        self._kept: dict[tuple[str, str], Outcome] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, node_name: str, specification: str) -> Outcome | None:
        return self._kept.get((node_name, specification))

    def put(self, node_name: str, specification: str, outcome: Outcome) -> None:
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[node_name, specification] = outcome


def same(kept: Sequence[object], now: Sequence[object]) -> bool:
    """Whether two sequences hold the same objects, in order."""
    return len(kept) == len(now) and all(a is b for a, b in zip(kept, now, strict=True))


def copied(value: Any) -> Any:
    """A copy of an allocation's plain data (dicts and lists copied, the rest shared)."""
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copied(item) for item in value]
    return value


def relabeled(reason: str, before: Sequence[str], after: Sequence[str]) -> str:
    """A reason found for claims labelled ``before`` told of the claims labelled ``after``
    (the same specifications): "claim <label>" followed by "," or ":" names a claim there."""
    names = dict(zip(before, after, strict=True))
    if all(old == new for old, new in names.items()):
        return reason
    pattern = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.sub(rf"\bclaim ({pattern})(?=[,:])", lambda m: f"claim {names[m.group(1)]}", reason)
