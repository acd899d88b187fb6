"""The allocator's outcomes kept across pods (model.dra.Outcomes): a pod whose claims have the
specification of an earlier pod's is answered from what was found on the node while nothing the
search read changed, and searched again after any change of it: an allocation on the node's pool
(in flight, written, released or deallocated), a slice, a class, a taint rule or the node's
labels. Each case allocates a first claim on the node, changes the cluster state, then allocates
a second claim of the same spec with a new allocator on the same outcomes, and compares with an
allocator that keeps none (kube's answer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.model import volumes
from policy_scheduler.model.dra import Allocator, Outcomes, Unallocatable
from policy_scheduler.model.dra.outcomes import relabeled
from policy_scheduler.model.volumes import ResourceClaimView, Volumes

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
NODE = "n1"
LABELS = {"kubernetes.io/hostname": NODE, "zone": "a"}


def gpu_slice(
    node: str = NODE,
    *devices: str,
    version: str = "1",
    selector: Obj | None = None,
    pool: str = "",
    generation: int = 1,
) -> Obj:
    """The node's slice, of its own pool unless ``pool`` names one of two slices."""
    spec: Obj = {
        "driver": DRIVER,
        "pool": {
            "name": pool or node,
            "generation": generation,
            "resourceSliceCount": 2 if pool else 1,
        },
        "devices": [{"name": d} for d in devices or ("gpu-0", "gpu-1")],
    }
    if selector is None:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = selector
    name = f"{pool or node}-{node}-gpus"
    return {"metadata": {"name": name, "uid": name, "resourceVersion": version}, "spec": spec}


def zone(value: str) -> Obj:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": [value]}]}
    return {"nodeSelectorTerms": [term]}


def gpu_class(**spec: Any) -> Obj:
    return {"metadata": {"name": "gpu", "uid": "gpu", "resourceVersion": "1"}, "spec": spec}


def claim(name: str, *devices: tuple[str, str]) -> Obj:
    """A claim of one GPU; allocated to ``devices`` ((pool, device)) when given."""
    raw: Obj = {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": "1"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {},
    }
    if devices:
        raw["status"]["allocation"] = allocation(*devices)
    return raw


def allocation(*devices: tuple[str, str]) -> Obj:
    results = [
        {"request": "g", "driver": DRIVER, "pool": pool, "device": device}
        for pool, device in devices
    ]
    return {"devices": {"results": results}}


def taint_rule(device: str) -> Obj:
    return {
        "metadata": {"name": f"taint-{device}", "uid": device, "resourceVersion": "1"},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": NODE, "device": device},
            "taint": {"key": "broken", "effect": "NoSchedule"},
        },
    }


def in_flight(state: Volumes, name: str, *devices: tuple[str, str]) -> None:
    view = state.set(volumes.RESOURCE_CLAIM, claim(name))
    assert isinstance(view, ResourceClaimView)
    state.allocate(view, allocation(*devices))


def released(state: Volumes, name: str) -> None:
    view = state.resource_claim("ns", name)
    assert view is not None and state.release(view)


Step = Callable[[Volumes], object]


@dataclass
class Case:
    change: Step
    searched: bool
    """Whether the second claim is searched for again (False: answered from the outcome)."""
    before: list[Step] = field(default_factory=list)
    """Steps before the first claim is allocated."""
    labels: dict[str, str] = field(default_factory=lambda: dict(LABELS))
    """The node's labels for the second claim."""


CASES = {
    "nothing changed: answered from the outcome": Case(lambda s: None, searched=False),
    "an allocation in flight on another node's pool: answered from the outcome": Case(
        lambda s: in_flight(s, "other", ("n2", "gpu-0")), searched=False
    ),
    "an allocation in flight on the pool": Case(
        lambda s: in_flight(s, "other", (NODE, "gpu-0")), searched=True
    ),
    "an allocation in flight released": Case(
        lambda s: released(s, "other"),
        searched=True,
        before=[lambda s: in_flight(s, "other", (NODE, "gpu-0"))],
    ),
    "an allocated claim written": Case(
        lambda s: s.set(volumes.RESOURCE_CLAIM, claim("other", (NODE, "gpu-0"))), searched=True
    ),
    "an allocated claim deallocated": Case(
        lambda s: s.set(volumes.RESOURCE_CLAIM, claim("other")),
        searched=True,
        before=[lambda s: s.set(volumes.RESOURCE_CLAIM, claim("other", (NODE, "gpu-0")))],
    ),
    "an allocated claim deleted": Case(
        lambda s: s.delete(volumes.RESOURCE_CLAIM, claim("other")),
        searched=True,
        before=[lambda s: s.set(volumes.RESOURCE_CLAIM, claim("other", (NODE, "gpu-0")))],
    ),
    "the node's slice changed": Case(
        lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice(NODE, "gpu-7", version="2")),
        searched=True,
    ),
    "the node's slice deleted": Case(
        lambda s: s.delete(volumes.RESOURCE_SLICE, gpu_slice()), searched=True
    ),
    "another node's slice changed: answered from the outcome": Case(
        lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice("n2", "gpu-7", version="2")),
        searched=False,
    ),
    "the other slice of a pool of two replaced by a newer generation": Case(
        lambda s: s.set(
            volumes.RESOURCE_SLICE,
            gpu_slice("n2", pool="a-pool", generation=2, version="2"),
        ),
        searched=True,
        before=[
            lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice(NODE, pool="a-pool")),
            lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice("n2", pool="a-pool")),
        ],
    ),
    "a slice for every node of the zone added (its pool comes first)": Case(
        lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice("a-zone", "gpu-z", selector=zone("a"))),
        searched=True,
    ),
    "the class changed": Case(
        lambda s: s.set(
            volumes.DEVICE_CLASS,
            gpu_class(config=[{"opaque": {"driver": DRIVER, "parameters": {"mode": "x"}}}]),
        ),
        searched=True,
    ),
    "a taint rule on the device added": Case(
        lambda s: s.set(volumes.DEVICE_TAINT_RULE, taint_rule("gpu-0")), searched=True
    ),
    "a taint rule deleted": Case(
        lambda s: s.delete(volumes.DEVICE_TAINT_RULE, taint_rule("gpu-0")),
        searched=True,
        before=[lambda s: s.set(volumes.DEVICE_TAINT_RULE, taint_rule("gpu-0"))],
    ),
    "the node's labels changed": Case(
        lambda s: None,
        searched=True,
        before=[
            lambda s: s.delete(volumes.RESOURCE_SLICE, gpu_slice()),
            lambda s: s.set(volumes.RESOURCE_SLICE, gpu_slice("zone-a", selector=zone("a"))),
        ],
        labels={"kubernetes.io/hostname": NODE, "zone": "b"},
    ),
    "no device left: the reason names the second claim": Case(
        lambda s: None,
        searched=False,
        before=[lambda s: in_flight(s, "other", (NODE, "gpu-0"), (NODE, "gpu-1"))],
    ),
}


def allocator(state: Volumes, outcomes: Outcomes | None) -> Allocator:
    """As the plugin's PreFilter builds one, from the cluster state."""
    return Allocator(
        state.allocated(),
        state.device_classes(),
        state.resource_slices(),
        state.selectors,
        slice_cache=state.slice_cache,
        taint_rules=state.device_taint_rules(),
        outcomes=outcomes,
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_an_outcome_answers_until_what_it_read_changes(case: Case) -> None:
    state = Volumes()
    state.set(volumes.DEVICE_CLASS, gpu_class())
    state.set(volumes.RESOURCE_SLICE, gpu_slice())
    state.set(volumes.RESOURCE_SLICE, gpu_slice("n2"))
    for step in case.before:
        step(state)
    outcomes = Outcomes()
    first = allocator(state, outcomes).allocate(NODE, LABELS, [claim("first")])
    case.change(state)
    second = allocator(state, outcomes)
    found = second.allocate(NODE, case.labels, [claim("second")])
    kube = allocator(state, None).allocate(NODE, case.labels, [claim("second")])
    assert found == kube
    assert (second.allocate_one_calls > 0) is case.searched
    if case.searched:
        # Each change makes a difference: a stale outcome would have been told.
        assert found != first
    if isinstance(found, Unallocatable):
        assert "ns/second" in found.reason and "ns/first" not in found.reason


def test_an_outcome_with_a_shared_device_is_not_kept() -> None:
    """A device allocated more than once gets a new share ID each time: never answered from
    an outcome."""
    state = Volumes()
    state.set(volumes.DEVICE_CLASS, gpu_class())
    shared = gpu_slice()
    for device in shared["spec"]["devices"]:
        device["allowMultipleAllocations"] = True
    state.set(volumes.RESOURCE_SLICE, shared)
    outcomes = Outcomes()
    first = allocator(state, outcomes).allocate(NODE, LABELS, [claim("first")])
    second = allocator(state, outcomes).allocate(NODE, LABELS, [claim("second")])
    assert len(outcomes) == 0
    assert isinstance(first, list) and isinstance(second, list)
    [one], [two] = first[0]["devices"]["results"], second[0]["devices"]["results"]
    assert one["device"] == two["device"] and one["shareID"] != two["shareID"]


@pytest.mark.parametrize(
    ("reason", "before", "after", "told"),
    [
        pytest.param(
            'claim ns/a, request "g": no device is free',
            ["ns/a"],
            ["ns/b"],
            'claim ns/b, request "g": no device is free',
            id="a request's claim",
        ),
        pytest.param(
            "claim ns/a: not enough devices left by the claims before it; claim ns/ab: x",
            ["ns/a", "ns/ab"],
            ["ns/ab", "ns/a"],
            "claim ns/ab: not enough devices left by the claims before it; claim ns/a: x",
            id="claims swapped, one's name a prefix of the other's",
        ),
        pytest.param(
            'claim ns/a, request "g": no device matches (device.name == "claim ns/a")',
            ["ns/a"],
            ["ns/b"],
            'claim ns/b, request "g": no device matches (device.name == "claim ns/a")',
            id="a selector's text left alone",
        ),
    ],
)
def test_a_kept_reason_names_the_claims_asked_about(
    reason: str, before: list[str], after: list[str], told: str
) -> None:
    assert relabeled(reason, before, after) == told
