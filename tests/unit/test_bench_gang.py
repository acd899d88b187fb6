"""The scheduling benchmark's gang phases (bench/bench_scheduling.py): the time a group takes,
from its last member created to its last member bound (``group_latencies``), and the groups it
creates (``gang_workload``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
from bench_scheduling import gang_workload, group_latencies
from harness.workload import PHASE_LABEL

GROUPS = {"a": ["a-0", "a-1", "a-2"], "b": ["b-0", "b-1"]}

# (created, bound, expected ms per group, in the order of GROUPS): seconds by this process's clock.
LATENCY_CASES: dict[str, tuple[Mapping[str, float], Mapping[str, float], Sequence[float]]] = {
    "from the last member created to the last bound": (
        {"a-0": 1.0, "a-1": 2.0, "a-2": 1.5, "b-0": 3.0, "b-1": 3.25},
        {"a-0": 2.5, "a-1": 2.5, "a-2": 4.0, "b-0": 3.5, "b-1": 3.5},
        [2000.0, 250.0],
    ),
    "a member bound before the last was created counts from the last created": (
        {"a-0": 1.0, "a-1": 1.0, "a-2": 5.0, "b-0": 1.0, "b-1": 1.0},
        {"a-0": 2.0, "a-1": 2.0, "a-2": 5.5, "b-0": 2.0, "b-1": 2.0},
        [500.0, 1000.0],
    ),
    "a group with a member not bound has no latency": (
        {"a-0": 1.0, "a-1": 1.0, "a-2": 1.0, "b-0": 1.0, "b-1": 1.0},
        {"a-0": 2.0, "a-1": 2.0, "b-0": 1.5, "b-1": 1.75},
        [750.0],
    ),
    "a group with a member never created has no latency": (
        {"a-0": 1.0, "a-1": 1.0, "a-2": 1.0, "b-0": 1.0},
        {"a-0": 2.0, "a-1": 2.0, "a-2": 2.0, "b-0": 2.0, "b-1": 2.0},
        [1000.0],
    ),
    "nothing bound": ({"a-0": 1.0}, {}, []),
}


@pytest.mark.parametrize(
    ("created", "bound", "expected"), LATENCY_CASES.values(), ids=LATENCY_CASES.keys()
)
def test_group_latencies(
    created: Mapping[str, float], bound: Mapping[str, float], expected: Sequence[float]
) -> None:
    assert group_latencies(GROUPS, created, bound) == pytest.approx(expected)


# (size, pods asked for, groups expected)
WORKLOAD_CASES = {
    "whole groups of 8": (8, 24, 3),
    "pods short of a group are left out": (64, 200, 3),
    "fewer pods than one group make none": (64, 63, 0),
}


@pytest.mark.parametrize(
    ("size", "count", "groups"), WORKLOAD_CASES.values(), ids=WORKLOAD_CASES.keys()
)
def test_gang_workload(size: int, count: int, groups: int) -> None:
    made = gang_workload(size, count, "some-scheduler")
    assert len(made) == groups
    names = [name for members in made.values() for name, _ in members]
    assert len(set(names)) == groups * size
    for group, members in made.items():
        assert len(members) == size
        for name, body in members:
            spec = json.loads(body)
            assert spec["metadata"]["name"] == name
            assert spec["metadata"]["labels"][PHASE_LABEL] == f"gang-{size}"
            assert spec["spec"]["schedulingGroup"] == {"podGroupName": group}
            assert spec["spec"]["schedulerName"] == "some-scheduler"
