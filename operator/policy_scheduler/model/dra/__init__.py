"""Dynamic resource allocation: kube-scheduler's structured-parameters device allocator.

Inputs and outputs are raw ``resource.k8s.io/v1`` objects (dicts as the API serves them):
:class:`Allocator` takes the DeviceClasses, ResourceSlices and what is in use
(:class:`AllocatedState`), and returns for a node the ``status.allocation`` of each of a pod's
claims, or :class:`Unallocatable` with the reason. The modules: ``devices`` (slices and devices
parsed), ``pools`` (the pools that serve a node), ``allocator`` (the search and its results),
``constraints``, ``capacity`` (consumable capacity), ``quantities``, ``outcomes`` (what was
found on a node, kept across pods while nothing it depends on changes) and ``choice`` (beyond
kube, off by default: which of a node's devices are tried first).
"""

from policy_scheduler.model.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    Selectors,
    Unallocatable,
)
from policy_scheduler.model.dra.choice import DeviceChoice
from policy_scheduler.model.dra.devices import SliceCache
from policy_scheduler.model.dra.outcomes import Outcomes
from policy_scheduler.model.dra.state import AllocatedState, DeviceID

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DeviceChoice",
    "DeviceID",
    "Outcomes",
    "Selectors",
    "SliceCache",
    "Unallocatable",
]
