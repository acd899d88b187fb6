"""kube's own allocator table (``dra_upstream_cases``) run against ``model.dra.Allocator``.

Each case builds an allocator from what the scheduler knows (the devices in use, the classes, all
ResourceSlices) and allocates the case's claims on its node; the outcome must be kube's: the same
``status.allocation`` per claim in the same order, kube's error text, or no allocation, and where
kube's case counts them, as many steps of the search (``Allocator.allocate_one_calls``). As kube's
test does, a result's shareID (random per allocation) stands as FIXED_SHARE_ID, and the inputs
must come back unmodified. Absent, null and empty fields are the same to the API's clients and are
compared as such.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from dra_upstream_cases import CASES, FIXED_SHARE_ID, Case

from policy_scheduler.model.cel import DeviceSelectors
from policy_scheduler.model.dra import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceID,
    Unallocatable,
)
from policy_scheduler.model.quantity import parse_quantity

INVALID_POOLS = "invalid resource pools were encountered"
"""The one error kube's allocator returns that the scheduler takes as this node unschedulable
(ErrFailedAllocationOnNode) rather than as fatal for the pod."""


def _without_empty(value: Any) -> Any:
    if isinstance(value, Mapping):
        pruned = {key: _without_empty(each) for key, each in value.items()}
        return {key: each for key, each in pruned.items() if each not in (None, [], {})}
    if isinstance(value, list):
        return [_without_empty(each) for each in value]
    return value


def _with_fixed_share_ids(allocations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(allocations)
    for allocation in out:
        for result in allocation.get("devices", {}).get("results", []):
            if result.get("shareID"):
                result["shareID"] = FIXED_SHARE_ID
    return out


def _slices(case: Case) -> list[dict[str, Any]]:
    """The case's slices as the API serves them: each with its own uid and a resourceVersion
    (the device selectors' cache key), which kube's table leaves out."""
    out = copy.deepcopy(case.slices or [])
    for i, each in enumerate(out):
        each["metadata"] |= {"uid": f"slice-uid-{i}", "resourceVersion": "1"}
    return out


def _allocated(case: Case) -> AllocatedState:
    return AllocatedState(
        devices={DeviceID(*key) for key in case.allocated},
        shared={(DeviceID(*key), share_id) for key, share_id in case.shared},
        consumed={
            DeviceID(*key): {name: parse_quantity(value) for name, value in capacity.items()}
            for key, capacity in case.consumed.items()
        },
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_kube_allocator_case(case: Case) -> None:
    classes = {each["metadata"]["name"]: each for each in copy.deepcopy(case.classes)}
    slices = _slices(case)
    claims = copy.deepcopy(case.claims)
    inputs = copy.deepcopy((classes, slices, claims))
    allocator = Allocator(_allocated(case), classes, slices, DeviceSelectors())

    fatal = [each for each in case.error if each != INVALID_POOLS]
    if fatal:
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(case.node.name, case.node.labels, claims)
        for text in fatal:
            assert text in raised.value.message
    else:
        outcome = allocator.allocate(case.node.name, case.node.labels, claims)
        if case.error:
            assert isinstance(outcome, Unallocatable)
            assert outcome.message == INVALID_POOLS
        elif claims and not case.expect:
            assert isinstance(outcome, Unallocatable)
        else:
            assert not isinstance(outcome, Unallocatable), outcome.reason
            got = _without_empty(_with_fixed_share_ids(outcome))
            assert got == _without_empty(case.expect or [])
    if case.allocate_one_calls is not None:
        assert allocator.allocate_one_calls == case.allocate_one_calls
    assert (classes, slices, claims) == inputs
