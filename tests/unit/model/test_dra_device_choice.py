"""A DeviceChoice reorders the devices the allocator tries on a node (smallest first, NUMA domains
packed or spread), beyond kube-scheduler's first solution: which devices win changes, whether a
node fits does not, and without a choice the allocator is kube's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.model.cel import DeviceSelectors
from policy_scheduler.model.dra import AllocatedState, Allocator, DeviceChoice, Unallocatable

DRIVER = "gpu.example.com"
NUMA = f"{DRIVER}/numaNode"
NODE = "node-1"
Obj = dict[str, Any]


def gpu(name: str, memory: str = "", numa: int | None = None, cores: str = "") -> Obj:
    capacity: Obj = {}
    if memory:
        capacity["memory"] = {"value": memory}
    if cores:
        capacity[f"{DRIVER}/cores"] = {"value": cores}
    attributes: Obj = {} if numa is None else {"numaNode": {"int": numa}}
    return {"name": name, "capacity": capacity, "attributes": attributes}


def slice_(*devices: Obj) -> Obj:
    return {
        "metadata": {"name": "slice-1", "uid": "uid-slice-1", "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": NODE,
            "devices": list(devices),
        },
    }


def claim(*requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": devices}}


def request(name: str = "req", count: int = 1, selector: str = "", **capacity: str) -> Obj:
    exactly: Obj = {"deviceClassName": "gpu", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


def in_use(*names: str) -> AllocatedState:
    return AllocatedState.of(
        [
            {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": "pool-1", "device": name}
                        for name in names
                    ]
                }
            }
        ]
    )


SMALLEST = DeviceChoice(smallest=True)
PACK = DeviceChoice(numa_attribute=NUMA)
SPREAD = DeviceChoice(numa_attribute=NUMA, numa_spread=True)
SIZES = slice_(gpu("big", "80Gi"), gpu("small", "20Gi"), gpu("medium", "40Gi"))
NUMAS = slice_(
    gpu("n0-a", numa=0),
    gpu("n0-b", numa=0),
    gpu("n1-a", numa=1),
    gpu("n1-b", numa=1),
    gpu("n1-c", numa=1),
)


@dataclass
class Case:
    name: str
    slices: list[Obj]
    claims: list[Obj]
    choice: DeviceChoice | None
    want: list[str] | None  # the devices allocated, in result order; None: unallocatable
    allocated: AllocatedState = field(default_factory=lambda: AllocatedState.of([]))
    notes: list[str] = field(default_factory=list)


CASES = [
    Case("no choice: kube's first device", [SIZES], [claim(request())], None, ["big"]),
    Case(
        "inactive choice: kube's first device", [SIZES], [claim(request())], DeviceChoice(), ["big"]
    ),
    Case(
        "smallest by all capacities",
        [SIZES],
        [claim(request())],
        SMALLEST,
        ["small"],
        notes=[f"smallest first: {DRIVER}/memory=20Gi"],
    ),
    Case(
        "smallest that the selector admits",
        [SIZES],
        [
            claim(
                request(
                    selector=f'device.capacity["{DRIVER}"].memory.compareTo(quantity("30Gi")) >= 0'
                )
            )
        ],
        SMALLEST,
        ["medium"],
        notes=[f"smallest first: {DRIVER}/memory=40Gi"],
    ),
    Case(
        "smallest two, smallest first",
        [SIZES],
        [claim(request(count=2))],
        SMALLEST,
        ["small", "medium"],
    ),
    Case(
        "smallest compares the capacities the selector reads, not the others",
        [slice_(gpu("a", "20Gi", cores="8"), gpu("b", "40Gi", cores="4"))],
        [
            claim(
                request(
                    selector=f'device.capacity["{DRIVER}"]["cores"].compareTo(quantity("1")) > 0'
                )
            )
        ],
        SMALLEST,
        ["b"],
        notes=[f"smallest first: {DRIVER}/cores=4"],
    ),
    Case(
        "stated capacity order",
        [slice_(gpu("a", "20Gi", cores="8"), gpu("b", "40Gi", cores="4"))],
        [claim(request())],
        DeviceChoice(smallest=True, capacities=(f"{DRIVER}/cores",)),
        ["b"],
    ),
    Case(
        "all capacities by name: cores before memory",
        [slice_(gpu("a", "20Gi", cores="8"), gpu("b", "40Gi", cores="4"))],
        [claim(request())],
        SMALLEST,
        ["b"],
        notes=[f"smallest first: {DRIVER}/cores=4, {DRIVER}/memory=40Gi"],
    ),
    Case(
        "smallest skips devices in use",
        [SIZES],
        [claim(request())],
        SMALLEST,
        ["medium"],
        allocated=in_use("small"),
    ),
    Case(
        "a constraint still holds: the search backtracks past the smallest",
        [
            slice_(
                gpu("big0", "80Gi", numa=0),
                gpu("small1", "20Gi", numa=1),
                gpu("mid0", "40Gi", numa=0),
            )
        ],
        [claim(request(count=2), constraints=[{"matchAttribute": NUMA}])],
        SMALLEST,
        ["mid0", "big0"],
    ),
    Case(
        "no device fits either way",
        [SIZES],
        [claim(request(count=4))],
        SMALLEST,
        None,
    ),
    Case(
        "pack: the domain most in use",
        [NUMAS],
        [claim(request())],
        PACK,
        ["n1-b"],
        allocated=in_use("n1-a"),
        notes=[f"NUMA Pack: {NUMA}=1"],
    ),
    Case(
        "pack: one domain for the pod's devices",
        [NUMAS],
        [claim(request(count=2))],
        PACK,
        ["n0-a", "n0-b"],
    ),
    Case(
        "pack: domains in use alike in listed order, then the next when full",
        [NUMAS],
        [claim(request("one"), request("two"))],
        PACK,
        ["n0-b", "n1-b"],
        allocated=in_use("n0-a", "n1-a"),
    ),
    Case(
        "spread: the pod's devices over the domains",
        [NUMAS],
        [claim(request(count=2))],
        SPREAD,
        ["n0-a", "n1-a"],
    ),
    Case(
        "spread: a second request in another domain",
        [NUMAS],
        [claim(request("one"), request("two"))],
        SPREAD,
        ["n0-a", "n1-a"],
    ),
    Case(
        "spread: turns among the free devices, those in use not counted",
        [NUMAS],
        [claim(request(count=2))],
        SPREAD,
        ["n0-a", "n1-b"],
        allocated=in_use("n1-a"),
    ),
    Case(
        "spread: the domain least in use",
        [NUMAS],
        [claim(request())],
        SPREAD,
        ["n1-a"],
        allocated=in_use("n0-a"),
        notes=[f"NUMA Spread: {NUMA}=1"],
    ),
    Case(
        "devices without the attribute come last",
        [slice_(gpu("plain"), gpu("n3", numa=3))],
        [claim(request())],
        PACK,
        ["n3"],
    ),
    Case(
        "pack and smallest: of domains unused alike, the one with the smallest device",
        [slice_(gpu("n0-big", "80Gi", 0), gpu("n1-big", "80Gi", 1), gpu("n1-small", "40Gi", 1))],
        [claim(request(count=2))],
        DeviceChoice(smallest=True, numa_attribute=NUMA),
        ["n1-small", "n1-big"],
    ),
    Case(
        "smallest within the packed domain",
        [slice_(gpu("n0-big", "80Gi", 0), gpu("n1-big", "80Gi", 1), gpu("n1-small", "20Gi", 1))],
        [claim(request())],
        DeviceChoice(smallest=True, numa_attribute=NUMA),
        ["n1-small"],
        allocated=in_use("n1-big"),
        notes=[f"smallest first: {DRIVER}/memory=20Gi; NUMA Pack: {NUMA}=1"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_choice(case: Case) -> None:
    allocator = Allocator(
        case.allocated, {"gpu": {"metadata": {"name": "gpu"}}}, case.slices, DeviceSelectors()
    )
    notes: list[list[str]] = []
    found = allocator.allocate(NODE, {}, case.claims, choice=case.choice, notes=notes)
    if case.want is None:
        assert isinstance(found, Unallocatable)
        return
    assert not isinstance(found, Unallocatable), found
    devices = [r["device"] for a in found for r in a["devices"]["results"]]
    assert devices == case.want
    if case.notes:
        assert [note for claim_notes in notes for note in claim_notes] == case.notes
    if case.choice is None or not case.choice.active:
        assert notes == []


@pytest.mark.parametrize(
    ("name", "selectors", "requested", "want"),
    [
        ("none", [], [], ()),
        (
            "capacity requests first",
            [f'device.capacity["{DRIVER}"].cores > 1'],
            ["memory"],
            ("memory", f"{DRIVER}/cores"),
        ),
        ("index form", ['device.capacity["d.io"]["mem"] > 1'], [], ("d.io/mem",)),
        (
            "once each",
            [f'device.capacity["{DRIVER}"].x > 1 && device.capacity["{DRIVER}"].x < 9'],
            [],
            (f"{DRIVER}/x",),
        ),
        (
            "the text of a capacity in a string is none",
            ['device.attributes["d.io"].model == "capacity[\'d.io\'].mem"'],
            [],
            (),
        ),
        ("an expression that does not compile reads none", ["device.capacity[["], [], ()),
        (
            "in the order written, inside a macro too",
            ['[device.capacity["d.io"].z].exists(x, x > device.capacity["d.io"].b)'],
            [],
            ("d.io/z", "d.io/b"),
        ),
    ],
)
def test_compared_capacities(
    name: str, selectors: list[str], requested: list[str], want: tuple[str, ...]
) -> None:
    raw = [{"cel": {"expression": e}} for e in selectors]
    assert SMALLEST.compared(requested, raw, DeviceSelectors().capacities_read) == want
