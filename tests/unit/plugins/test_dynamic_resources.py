"""DynamicResources: a pod's ResourceClaims must exist, be allocated and reserved for it, and
allow the node, in kube-scheduler's words where kube has them; its score is v1.37's."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from plugin_harness import Around, Change, filter_nodes, make_node, raw_and_normalized, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    SKIP,
    NodeStatuses,
    ObjectRef,
    PostFilter,
    PostFilterResult,
    PreBind,
    PreFilterResult,
    Reserve,
    StatusError,
    WhatIf,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.volumes import (
    DEVICE_CLASS,
    DEVICE_TAINT_RULE,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    Volumes,
    slim,
)
from policy_scheduler.plugins import dynamic_resources
from policy_scheduler.plugins.dynamic_resources import RESERVED_FOR_MAX_SIZE

NS = "ns"
POD_UID = "pod-uid"
NOT_AVAILABLE = ("resourceclaim not available on the node",)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
STAMP = "2026-01-02T03:04:05Z"
# The plugin new_filter makes, with the time stopped at NOW.
PLUGIN = dynamic_resources._DynamicResourcesFilter(now=lambda: NOW)


def pod(*claims: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]] = ()) -> PodView:
    """A pod in NS with these ``spec.resourceClaims`` and ``status.resourceClaimStatuses``."""
    return PodView(
        {
            "metadata": {"name": "p", "namespace": NS, "uid": POD_UID},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": list(claims)},
            "status": {"resourceClaimStatuses": list(statuses)},
        }
    )


def uses(claim: str, entry: str = "gpu") -> Mapping[str, Any]:
    return {"name": entry, "resourceClaimName": claim}


def from_template(entry: str = "gpu") -> Mapping[str, Any]:
    return {"name": entry, "resourceClaimTemplateName": "gpu-template"}


def on_node(*names: str) -> Mapping[str, Any]:
    """An allocation's node selector: the nodes of these names (as node-local drivers write),
    a term each (a field requirement takes one value)."""
    fields = [{"key": "metadata.name", "operator": "In", "values": [name]} for name in names]
    return {"nodeSelectorTerms": [{"matchFields": [field]} for field in fields]}


def with_label(key: str, value: str) -> Mapping[str, Any]:
    expression = {"key": key, "operator": "In", "values": [value]}
    return {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}


ANYWHERE: Mapping[str, Any] = {}


def exactly(name: str = "gpu", class_name: str = "gpu-class") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": class_name}}


def first_available(name: str, *classes: str) -> dict[str, Any]:
    subrequests = [{"name": f"s{i}", "deviceClassName": c} for i, c in enumerate(classes)]
    return {"name": name, "firstAvailable": subrequests}


def claim(
    name: str = "gpu-claim",
    *,
    allocated: Mapping[str, Any] | None = ANYWHERE,
    reserved_for: Sequence[str] = (POD_UID,),
    deleting: bool = False,
    namespace: str = NS,
    requests: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A ResourceClaim; ``allocated`` is its allocation's node selector (ANYWHERE: none, None:
    not allocated), ``reserved_for`` the uids of its consumers."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": "1",
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {}
    if allocated is not None:
        status["allocation"] = {"devices": {"results": []}}
        if allocated:
            status["allocation"]["nodeSelector"] = allocated
    if reserved_for:
        status["reservedFor"] = [
            {"resource": "pods", "name": f"pod-{uid}", "uid": uid} for uid in reserved_for
        ]
    # As the informer keeps it.
    spec = {"devices": {"requests": list(requests)}}
    return slim(RESOURCE_CLAIM, {"metadata": metadata, "spec": spec, "status": status})


def device_class(name: str = "gpu-class") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": {"selectors": []}}


@dataclass(frozen=True)
class WithClaims(Around):
    """A snapshot that also holds these ResourceClaims and DeviceClasses (one, by default)."""

    claims: Sequence[Mapping[str, Any]] = ()
    classes: Sequence[Mapping[str, Any]] = (device_class(),)

    def volumes(self) -> Volumes:
        volumes = Volumes()
        for raw in self.claims:
            volumes.set(RESOURCE_CLAIM, raw)
        for raw in self.classes:
            volumes.set(DEVICE_CLASS, raw)
        return volumes

    def snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        around = super().snapshot(nodes)
        return Snapshot(nodes, around.workloads, around.namespaces, self.volumes())


NODES = [make_node("a", {"zone": "z1"}), make_node("b", {"zone": "z2"})]


def verdicts(the_pod: PodView, *claims: Mapping[str, Any]) -> list[tuple[str, ...]]:
    return filter_nodes(PLUGIN, the_pod, NODES, around=WithClaims(claims=claims))


def pre_filter(the_pod: PodView, *claims: Mapping[str, Any]) -> object:
    """What the pre-filter says of the whole cluster (SKIP when it skips the pod)."""
    cycle = Cycle(the_pod, WithClaims(claims=claims).snapshot(NODES))
    state = PLUGIN.pre_filter(cycle)
    return SKIP if state is SKIP else PLUGIN.pre_filter_result(state)


def rejected(reason: str) -> PreFilterResult:
    return PreFilterResult(rejection=reason)


UNALLOCATED = claim(allocated=None, reserved_for=(), requests=[exactly()])
FULL = [f"other-{i}" for i in range(RESERVED_FOR_MAX_SIZE)]


@pytest.mark.parametrize(
    ("the_pod", "claims", "result"),
    [
        pytest.param(pod(), [], SKIP, id="no claims: skipped"),
        pytest.param(pod(uses("gpu-claim")), [claim()], ANY_NODE, id="allocated and reserved"),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(allocated=on_node("a"))],
            ANY_NODE,
            id="allocated for some nodes: left to Filter",
        ),
        pytest.param(
            pod(from_template(), statuses=[{"name": "gpu", "resourceClaimName": "gpu-claim"}]),
            [claim()],
            ANY_NODE,
            id="template's claim made",
        ),
        pytest.param(
            pod(from_template()),
            [],
            rejected('pod "ns/p": ResourceClaim not created yet'),
            id="template's claim not made yet",
        ),
        pytest.param(
            pod(from_template(), statuses=[{"name": "gpu"}]),
            [],
            ANY_NODE,
            id="template's claim not needed (status without a name): passed over",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [],
            rejected('could not find ResourceClaim "ns/gpu-claim"'),
            id="claim not found",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(namespace="elsewhere")],
            rejected('could not find ResourceClaim "ns/gpu-claim"'),
            id="claim in another namespace: not found",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(deleting=True)],
            rejected('resourceclaim "gpu-claim" is being deleted'),
            id="claim being deleted",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [UNALLOCATED],
            ANY_NODE,
            id="claim not allocated: allocated by Filter",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(allocated=None, requests=[exactly("gpu", "tpu-class")])],
            rejected("request gpu: device class tpu-class does not exist"),
            id="claim not allocated, of a class that does not exist",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(allocated=None, requests=[first_available("gpu", "gpu-class", "tpu-class")])],
            rejected("request gpu/s1: device class tpu-class does not exist"),
            id="a subrequest of a class that does not exist",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(allocated=None, requests=[{"name": "gpu"}])],
            rejected("resource claim ns/gpu-claim, request gpu: unknown request type"),
            id="a request neither exactly nor firstAvailable",
        ),
        pytest.param(
            pod(uses("gpu-claim"), uses("other", "b")),
            [claim(allocated=None, requests=[exactly("gpu", "tpu-class")]), claim("other")],
            rejected("request gpu: device class tpu-class does not exist"),
            id="an allocated claim beside it changes nothing",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(reserved_for=())],
            ANY_NODE,
            id="allocated, reserved for nobody: reserved in PreBind",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(reserved_for=["other"])],
            ANY_NODE,
            id="allocated, shared with another pod only: reserved in PreBind too",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(reserved_for=FULL)],
            rejected("resourceclaim in use"),
            id="allocated, reservedFor full of other pods",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(reserved_for=[*FULL[1:], POD_UID])],
            ANY_NODE,
            id="allocated, reservedFor full and this pod among them",
        ),
        pytest.param(
            pod(uses("missing", "a"), uses("gpu-claim", "b")),
            [claim(deleting=True)],
            rejected('could not find ResourceClaim "ns/missing"'),
            id="first problem in the pod's order",
        ),
        pytest.param(
            pod(uses("gpu-claim", "a"), uses("deleted", "b")),
            [
                claim(allocated=None, requests=[exactly("gpu", "tpu-class")]),
                claim("deleted", deleting=True),
            ],
            rejected('resourceclaim "deleted" is being deleted'),
            id="every claim is looked up before allocations are read",
        ),
    ],
)
def test_pre_filter(the_pod: PodView, claims: Sequence[Mapping[str, Any]], result: object) -> None:
    assert pre_filter(the_pod, *claims) == result


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        pytest.param([claim()], [FITS, FITS], id="allocated for any node"),
        pytest.param(
            [claim(allocated=on_node("a"))], [FITS, NOT_AVAILABLE], id="allocated on node a"
        ),
        pytest.param(
            [claim(allocated=on_node("a", "b"))], [FITS, FITS], id="allocated on nodes a and b"
        ),
        pytest.param(
            [claim(allocated=with_label("zone", "z2"))],
            [NOT_AVAILABLE, FITS],
            id="allocated in a zone",
        ),
        pytest.param(
            [claim(allocated=on_node("c"))],
            [NOT_AVAILABLE, NOT_AVAILABLE],
            id="allocated on a node not in the cluster",
        ),
        pytest.param(
            [claim(allocated=on_node("a")), claim("other", allocated=on_node("b"))],
            [NOT_AVAILABLE, NOT_AVAILABLE],
            id="two claims on different nodes",
        ),
        pytest.param(
            [
                claim(allocated=on_node("a", "b")),
                claim("other", allocated=with_label("zone", "z1")),
            ],
            [FITS, NOT_AVAILABLE],
            id="every claim's selector must match",
        ),
    ],
)
def test_filter(claims: Sequence[Mapping[str, Any]], expected: list[tuple[str, ...]]) -> None:
    the_pod = pod(*(uses(c["metadata"]["name"], f"entry-{i}") for i, c in enumerate(claims)))
    assert verdicts(the_pod, *claims) == expected


def test_rejected_pod_fails_no_node_on_its_own() -> None:
    # The pipeline asks no node once the pre-filter rejects; were it to, Filter adds nothing.
    missing = claim(allocated=None, requests=[exactly("gpu", "tpu-class")])
    assert verdicts(pod(uses("gpu-claim")), missing) == [FITS, FITS]


def test_a_request_naming_no_class_is_an_error_status() -> None:
    nameless = claim(allocated=None, requests=[exactly("gpu", "")])
    with pytest.raises(StatusError) as error:
        pre_filter(pod(uses("gpu-claim")), nameless)
    assert str(error.value) == (
        'running PreFilter plugin "DynamicResources": request gpu: unsupported request type'
    )


def test_pods_without_claims_are_skipped() -> None:
    assert verdicts(pod(), claim(allocated=on_node("c"))) == [FITS, FITS]


def test_deleting_is_kept_by_the_informer() -> None:
    assert claim(deleting=True)["metadata"]["deletionTimestamp"]


def claim_event(raw: Mapping[str, Any]) -> ClusterEvent:
    return ClusterEvent(
        EventKind.RESOURCE_CLAIM_CHANGED, storage=Volumes().set(RESOURCE_CLAIM, raw)
    )


@pytest.mark.parametrize(
    ("the_pod", "event", "woken"),
    [
        pytest.param(pod(uses("gpu-claim")), claim_event(claim()), True, id="its claim changed"),
        pytest.param(
            pod(uses("gpu-claim")), claim_event(claim("other")), False, id="another claim"
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            claim_event(claim(namespace="elsewhere")),
            False,
            id="same name, another namespace",
        ),
        pytest.param(
            pod(from_template()),
            claim_event(claim("p-gpu-abcde")),
            True,
            id="waiting for a template's claim: any claim of its namespace",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            ClusterEvent(EventKind.RESOURCE_CLAIM_CHANGED),
            True,
            id="claim event without the claim",
        ),
        pytest.param(
            pod(uses("gpu-claim")), ClusterEvent(EventKind.NODE_ADDED), True, id="node added"
        ),
    ],
)
def test_queueing_hint(the_pod: PodView, event: ClusterEvent, woken: bool) -> None:
    assert PLUGIN.queueing_hint(the_pod, event) is woken


@pytest.mark.parametrize(
    ("kind", "woken"),
    [
        pytest.param(EventKind.NODE_ADDED, True, id="node added"),
        pytest.param(EventKind.NODE_LABELS, True, id="node labels changed"),
        pytest.param(EventKind.POD_DELETED, True, id="pod deleted"),
        pytest.param(EventKind.RESOURCE_SLICE_CHANGED, True, id="slice added or changed"),
        pytest.param(EventKind.DEVICE_CLASS_CHANGED, True, id="class added or changed"),
        pytest.param(EventKind.NODE_TAINTS, False, id="node taints changed"),
        pytest.param(EventKind.NODE_ALLOCATABLE, False, id="node allocatable changed"),
        pytest.param(EventKind.POD_ADDED, False, id="pod added"),
        pytest.param(EventKind.PVC_CHANGED, False, id="PVC changed"),
    ],
)
def test_wakes_on(kind: EventKind, woken: bool) -> None:
    assert wakes(PLUGIN, pod(uses("gpu-claim")), Change(kind, NODES[0])) is woken


def test_takes_no_args() -> None:
    with pytest.raises(
        ArgsError, match=r"spec.predicates\[0\].args: DynamicResources takes no args"
    ):
        dynamic_resources.new_filter({"x": 1}, "spec.predicates[0].args")


SCORER = dynamic_resources.new_scorer({}, "spec.priorities[0].args")


@pytest.mark.parametrize(
    ("the_pod", "claims"),
    [
        pytest.param(pod(), [], id="a pod without claims"),
        pytest.param(pod(uses("gpu-claim")), [claim()], id="a claim allocated for any node"),
        pytest.param(
            pod(uses("gpu-claim"), uses("nic-claim", "nic")),
            [claim(allocated=on_node("a", "b")), claim("nic-claim")],
            id="claims allocated before the cycle, one of them on the nodes' devices",
        ),
    ],
)
def test_score_is_0_where_kube_allocated_nothing_in_the_cycle(
    the_pod: PodView, claims: Sequence[Mapping[str, Any]]
) -> None:
    raw, normalized = raw_and_normalized(SCORER, the_pod, NODES, around=WithClaims(claims=claims))
    assert raw == normalized == [0, 0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"x": 1},
            r"spec.priorities\[0\].args.x: unknown field; expected one of \['capacities', "
            r"'numaAttribute', 'numaPlacement', 'placement', 'preferSmallest'\]",
            id="unknown field",
        ),
        pytest.param(
            {"preferSmallest": "yes"},
            r"args.preferSmallest: must be a boolean, got 'yes'",
            id="preferSmallest not a boolean",
        ),
        pytest.param(
            {"preferSmallest": True, "capacities": "memory"},
            r"args.capacities: must be a list of capacity names, got 'memory'",
            id="capacities not a list",
        ),
        pytest.param(
            {"preferSmallest": True, "capacities": ["gpu.example.com/memory", "memory"]},
            r"args.capacities\[1\]: must be a capacity's qualified name \(domain/name\), "
            r"got 'memory'",
            id="a capacity not qualified",
        ),
        pytest.param(
            {"capacities": ["gpu.example.com/memory"]},
            r"args.capacities: only with preferSmallest: true",
            id="capacities without preferSmallest",
        ),
        pytest.param(
            {"numaAttribute": "numa"},
            r"args.numaAttribute: must be a device attribute's qualified name \(domain/name\), "
            r"got 'numa'",
            id="numaAttribute not qualified",
        ),
        pytest.param(
            {"numaAttribute": "gpu.example.com/numa", "numaPlacement": "Fewest"},
            r"args.numaPlacement: must be one of \['Pack', 'Spread'\], got 'Fewest'",
            id="unknown numaPlacement",
        ),
        pytest.param(
            {"numaPlacement": "Pack"},
            r"args.numaPlacement: only with numaAttribute",
            id="numaPlacement without numaAttribute",
        ),
        pytest.param(
            {"placement": "Fewest"},
            r"spec.priorities\[0\].args.placement: must be one of \['Pack', 'Spread'\], "
            r"got 'Fewest'",
            id="unknown placement",
        ),
    ],
)
def test_the_scorers_args_are_checked(args: Mapping[str, Any], message: str) -> None:
    with pytest.raises(ArgsError, match=message):
        dynamic_resources.new_scorer(args, "spec.priorities[0].args")


class RefusedError(Exception):
    """An API error with its HTTP status, as the kube layer raises it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class FakeApi:
    """The API server over the claims of a Volumes catalog: a merge patch that gives another
    resourceVersion than the object's is refused with a 409; one that passes bumps it. The
    catalog (the informers) is not told: the cycle goes on from what it assumed."""

    def __init__(self, volumes: Volumes, fail: Exception | None = None) -> None:
        self.objects = {
            key: copy.deepcopy(dict(view.raw))
            for key, view in volumes._objects[RESOURCE_CLAIM].items()
        }
        self.patches: list[tuple[ObjectRef, Mapping[str, Any]]] = []
        self.events: list[tuple[str, str, str, str]] = []
        self.fail = fail

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        self.events.append((pod.key, type_, reason, message))

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.fail is not None:
            raise self.fail
        self.patches.append((ref, copy.deepcopy(dict(patch))))
        raw = self.objects.setdefault(
            f"{ref.namespace}/{ref.name}", {"metadata": {"resourceVersion": "1"}}
        )
        version = patch.get("metadata", {}).get("resourceVersion")
        if version is not None and version != raw["metadata"]["resourceVersion"]:
            raise RefusedError(409, "the object has been modified")
        merge(raw, patch)
        raw["metadata"]["resourceVersion"] = str(int(raw["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(raw)

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        return copy.deepcopy(self.objects[f"{ref.namespace}/{ref.name}"])

    async def create(self, ref: ObjectRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """Named from its generateName, as the API server does (the count as the suffix)."""
        if self.fail is not None:
            raise self.fail
        self.patches.append((ref, copy.deepcopy(dict(body))))
        raw = copy.deepcopy(dict(body))
        name = f"{raw['metadata']['generateName']}{len(self.objects)}"
        raw["metadata"].update(name=name, uid=f"uid-{name}", resourceVersion="1")
        raw.setdefault("status", {})
        self.objects[f"{ref.namespace}/{name}"] = raw
        return copy.deepcopy(raw)

    async def delete(self, ref: ObjectRef) -> None:
        self.patches.append((ref, {}))
        self.objects.pop(f"{ref.namespace}/{ref.name}", None)

    def changed(self, key: str, **status: Any) -> None:
        """Someone else wrote the claim: another version, with this status."""
        raw = self.objects[key]
        raw["status"].update(status)
        raw["metadata"]["resourceVersion"] = str(int(raw["metadata"]["resourceVersion"]) + 1)


def merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


@dataclass
class Bound:
    """One pod's cycle through Reserve and PreBind on node a, by the plugin's own steps."""

    pod: PodView
    volumes: Volumes
    state: dynamic_resources.ClaimState

    @classmethod
    def start(cls, the_pod: PodView, claims: Sequence[Mapping[str, Any]]) -> Bound:
        volumes = WithClaims(claims=claims).volumes()
        state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(NODES, volumes=volumes)))
        assert isinstance(state, dynamic_resources.ClaimState)
        return cls(the_pod, volumes, state)

    def chose(self, *allocations: Mapping[str, Any]) -> None:
        """What Filter would have kept for node a (the allocator's answer is its own tests')."""
        self.state.allocations["a"] = [dict(a) for a in allocations]

    def reserve(self) -> str | None:
        assert isinstance(PLUGIN, Reserve)
        return PLUGIN.reserve(self.state, self.pod, "a")

    def pre_bind(self, api: FakeApi) -> str | None:
        assert isinstance(PLUGIN, PreBind)
        return asyncio.run(PLUGIN.pre_bind(self.state, self.pod, "a", api))

    def unreserve(self, api: FakeApi) -> None:
        assert isinstance(PLUGIN, Reserve)
        PLUGIN.unreserve(self.state, self.pod, "a")
        asyncio.run(PLUGIN.unreserve_writes(self.state, self.pod, "a", api))


GPU_0: Mapping[str, Any] = {
    "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "a", "device": "gpu-0"}]},
    "nodeSelector": on_node("a"),
}


def consumer(uid: str) -> dict[str, str]:
    return {"resource": "pods", "name": f"pod-{uid}", "uid": uid}


THE_POD = {"resource": "pods", "name": "p", "uid": POD_UID}
STATUS = ObjectRef("resource.k8s.io/v1", "resourceclaims", "gpu-claim", NS, "status")
CLAIM = ObjectRef("resource.k8s.io/v1", "resourceclaims", "gpu-claim", NS)


def test_pre_bind_reserves_each_claim_not_reserved_for_the_pod() -> None:
    mine = claim("mine")  # reserved for the pod already: not written
    shared = claim("shared", reserved_for=["other"])
    cycle = Bound.start(pod(uses("mine", "a"), uses("shared", "b")), [mine, shared])
    api = FakeApi(cycle.volumes)
    assert cycle.pre_bind(api) is None
    [(ref, patch)] = api.patches
    assert ref == ObjectRef("resource.k8s.io/v1", "resourceclaims", "shared", NS, "status")
    assert patch == {
        # The version makes a reservation written meanwhile a conflict, not a loss.
        "metadata": {"resourceVersion": "1"},
        "status": {
            "reservedFor": [consumer("other"), THE_POD],
            # An allocation without its time gets it, as kube's PreBind gives it.
            "allocation": {"devices": {"results": []}, "allocationTimestamp": STAMP},
        },
    }


def test_reserve_puts_the_allocation_in_flight_and_another_pod_waits_for_it() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [UNALLOCATED])
    cycle.chose(GPU_0)
    assert cycle.reserve() is None
    found = cycle.volumes.resource_claim(NS, "gpu-claim")
    assert found is not None and cycle.volumes.in_flight(found) == GPU_0
    assert {d.device for d in cycle.volumes.allocated().devices} == {"gpu-0"}
    other = PodView({**pod(uses("gpu-claim")).raw, "metadata": {"name": "q", "namespace": NS}})
    state = PLUGIN.pre_filter(Cycle(other, Snapshot(NODES, volumes=cycle.volumes)))
    assert state is not SKIP and PLUGIN.pre_filter_result(state) == rejected(
        "resource claim ns/gpu-claim is in the process of being allocated"
    )
    cycle.unreserve(FakeApi(cycle.volumes))
    assert cycle.volumes.in_flight(found) is None and not cycle.volumes.allocated().devices


def test_reserve_without_the_nodes_allocation_is_an_error() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [UNALLOCATED])
    assert cycle.reserve() == (
        'running Reserve plugin "DynamicResources": claim allocation not found for node'
    )


def test_pre_bind_writes_the_finalizer_then_the_allocation_and_reservation() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [UNALLOCATED])
    cycle.chose(GPU_0)
    cycle.reserve()
    api = FakeApi(cycle.volumes)
    assert cycle.pre_bind(api) is None
    assert api.patches == [
        (
            CLAIM,
            {
                "metadata": {
                    "resourceVersion": "1",
                    "finalizers": ["resource.kubernetes.io/delete-protection"],
                }
            },
        ),
        (
            STATUS,
            {
                "metadata": {"resourceVersion": "2"},
                "status": {
                    "reservedFor": [THE_POD],
                    "allocation": {**GPU_0, "allocationTimestamp": STAMP},
                },
            },
        ),
    ]
    # The claim as written is assumed, and its allocation no longer in flight.
    found = cycle.volumes.resource_claim(NS, "gpu-claim")
    assert found is not None and found.allocation == {**GPU_0, "allocationTimestamp": STAMP}
    assert POD_UID in found.reserved_for
    assert found.resource_version == "3" and cycle.volumes.in_flight(found) is None
    assert {d.device for d in cycle.volumes.allocated().devices} == {"gpu-0"}


def test_a_conflict_reads_the_claim_again_and_writes_again() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [claim(reserved_for=["other"])])
    api = FakeApi(cycle.volumes)
    api.changed("ns/gpu-claim", reservedFor=[consumer("other"), consumer("third")])
    assert cycle.pre_bind(api) is None
    assert [p["metadata"]["resourceVersion"] for _, p in api.patches] == ["1", "2"]
    assert api.objects["ns/gpu-claim"]["status"]["reservedFor"] == [
        consumer("other"),
        consumer("third"),
        THE_POD,
    ]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        pytest.param(
            {"allocation": GPU_0},
            "claim ns/gpu-claim got allocated elsewhere in the meantime",
            id="allocated elsewhere",
        ),
    ],
)
def test_a_claim_changed_meanwhile_fails_the_bind_in_kubes_words(
    status: Mapping[str, Any], message: str
) -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [UNALLOCATED])
    cycle.chose(GPU_0)
    cycle.reserve()
    api = FakeApi(cycle.volumes)
    api.changed("ns/gpu-claim", **status)
    assert cycle.pre_bind(api) == f'running PreBind plugin "DynamicResources": {message}'


def test_a_refused_reservation_fails_the_bind_in_kubes_words() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [claim(reserved_for=())])
    refusal = cycle.pre_bind(FakeApi(cycle.volumes, RefusedError(403, "forbidden")))
    assert refusal == (
        'running PreBind plugin "DynamicResources": '
        "add reservation to claim ns/gpu-claim: 403: forbidden"
    )


def test_unreserve_takes_the_pod_out_of_the_claims_it_reserved() -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), [claim(reserved_for=["other"])])
    api = FakeApi(cycle.volumes)
    assert cycle.pre_bind(api) is None
    cycle.unreserve(api)
    assert api.patches[-1] == (
        STATUS,
        {"metadata": {"resourceVersion": "2"}, "status": {"reservedFor": [consumer("other")]}},
    )
    assert api.objects["ns/gpu-claim"]["status"]["reservedFor"] == [consumer("other")]


@pytest.mark.parametrize(
    ("claims", "allocations", "score"),
    [
        pytest.param([UNALLOCATED], [GPU_0], 0, id="no firstAvailable request"),
        pytest.param(
            [claim(allocated=None, requests=[first_available("gpu", "gpu-class", "gpu-class")])],
            [{"devices": {"results": [{"request": "gpu/s0"}]}}],
            8,
            id="the first subrequest: 8",
        ),
        pytest.param(
            [claim(allocated=None, requests=[first_available("gpu", "gpu-class", "gpu-class")])],
            [{"devices": {"results": [{"request": "gpu/s1"}, {"request": "gpu/s1"}]}}],
            7,
            id="the second subrequest, twice: 7, once per request",
        ),
    ],
)
def test_the_subrequest_score(
    claims: Sequence[Mapping[str, Any]], allocations: Sequence[Mapping[str, Any]], score: int
) -> None:
    cycle = Bound.start(pod(uses("gpu-claim")), claims)
    assert dynamic_resources.subrequest_score(cycle.state, allocations) == score


def statuses(pre_filtered: frozenset[str] | None = None) -> NodeStatuses:
    def what_if(cycle: Cycle) -> WhatIf:
        raise AssertionError("DynamicResources' post-filter asks no what-if")

    return NodeStatuses({}, len(NODES), frozenset(), what_if, pre_filtered=pre_filtered)


@pytest.mark.parametrize(
    ("the_pod", "claims", "told", "result"),
    [
        pytest.param(
            pod(),
            [],
            statuses(),
            PostFilterResult(),
            id="a pod without claims: no words (v1.37)",
        ),
        pytest.param(
            pod(uses("gpu-claim")),
            [claim(allocated=None, reserved_for=())],
            statuses(),
            PostFilterResult(),
            id="a pod with claims: none is deallocated here, and no words (v1.37)",
        ),
        pytest.param(
            pod(),
            [],
            statuses(frozenset({"NodeResourcesFit", "VolumeBinding"})),
            PostFilterResult("not found", final=True),
            id="an earlier pre-filter rejected the pod: kube's state is missing, an error",
        ),
        pytest.param(
            pod(),
            [],
            statuses(frozenset({"VolumeBinding", dynamic_resources.NAME})),
            PostFilterResult(),
            id="a later pre-filter rejected the pod",
        ),
    ],
)
def test_post_filter(
    the_pod: PodView,
    claims: Sequence[Mapping[str, Any]],
    told: NodeStatuses,
    result: PostFilterResult,
) -> None:
    """kube-scheduler's DynamicResources PostFilter words, which start the preemption sentence."""
    cycle = Cycle(the_pod, WithClaims(claims=claims).snapshot(NODES))
    state = PLUGIN.pre_filter(cycle)
    assert isinstance(PLUGIN, PostFilter)
    assert PLUGIN.post_filter(None if state is SKIP else state, cycle, told) == result


@pytest.mark.parametrize(
    ("reserved_for", "result"),
    [
        pytest.param(
            (),
            PostFilterResult(
                "deallocation of ResourceClaim completed",
                writes=(
                    (
                        STATUS,
                        {
                            "metadata": {"resourceVersion": "1"},
                            "status": {"reservedFor": None, "allocation": None, "devices": None},
                        },
                    ),
                ),
            ),
            id="reserved for no pod: deallocated",
        ),
        pytest.param(
            (POD_UID,),
            PostFilterResult(
                "deallocation of ResourceClaim completed",
                writes=(
                    (
                        STATUS,
                        {
                            "metadata": {"resourceVersion": "1"},
                            "status": {"reservedFor": None, "allocation": None, "devices": None},
                        },
                    ),
                ),
            ),
            id="reserved for this pod alone: deallocated",
        ),
        pytest.param(("other",), PostFilterResult(), id="reserved for another pod: kept"),
    ],
)
def test_post_filter_deallocates_a_claim_no_node_can_use(
    reserved_for: Sequence[str], result: PostFilterResult
) -> None:
    """kube v1.37: a claim allocated on devices of nodes that did not fit is given back, so
    that the next try allocates it again."""
    the_pod, claims = (
        pod(uses("gpu-claim")),
        [claim(allocated=on_node("c"), reserved_for=reserved_for)],
    )
    cycle = Cycle(the_pod, WithClaims(claims=claims).snapshot(NODES))
    state = PLUGIN.pre_filter(cycle)
    assert isinstance(state, dynamic_resources.ClaimState)
    for node in NODES:
        assert PLUGIN.filter(state, the_pod, node) == NOT_AVAILABLE
    assert isinstance(PLUGIN, PostFilter)
    assert PLUGIN.post_filter(state, cycle, statuses()) == result


def test_a_claim_deallocated_elsewhere_wakes_any_pod() -> None:
    before = Volumes().set(RESOURCE_CLAIM, claim("other", reserved_for=()))
    after = Volumes().set(RESOURCE_CLAIM, claim("other", allocated=None, reserved_for=()))
    event = ClusterEvent(EventKind.RESOURCE_CLAIM_CHANGED, storage=after, old_storage=before)
    assert PLUGIN.queueing_hint(pod(uses("gpu-claim")), event)
    unchanged = ClusterEvent(EventKind.RESOURCE_CLAIM_CHANGED, storage=after, old_storage=after)
    assert not PLUGIN.queueing_hint(pod(uses("gpu-claim")), unchanged)


@pytest.mark.parametrize(
    ("gone", "woken"),
    [
        pytest.param(claim("other", reserved_for=()), True, id="allocated: its devices are free"),
        pytest.param(claim("other", allocated=None), False, id="not allocated: nothing freed"),
    ],
)
def test_a_deleted_claim_wakes_pods_when_it_was_allocated(
    gone: Mapping[str, Any], woken: bool
) -> None:
    event = ClusterEvent(
        EventKind.RESOURCE_CLAIM_CHANGED, old_storage=Volumes().set(RESOURCE_CLAIM, gone)
    )
    assert PLUGIN.queueing_hint(pod(uses("gpu-claim")), event) is woken


# --- allocation, with kube's allocator (model.dra; devices without selectors) ----------------


def resource_slice(node: str, *devices: str) -> dict[str, Any]:
    """The node's pool of GPUs, in one slice."""
    spec = {
        "driver": "gpu.example.com",
        "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
        "nodeName": node,
        "devices": [{"name": d} for d in devices],
    }
    return {"metadata": {"name": f"{node}-gpus", "uid": f"uid-{node}-gpus"}, "spec": spec}


def gpus(count: int, name: str = "gpu") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu-class", "count": count}}


def result(node: str, device: str, request: str = "gpu") -> dict[str, str]:
    return {"request": request, "driver": "gpu.example.com", "pool": node, "device": device}


@dataclass(frozen=True)
class WithDevices(WithClaims):
    """Claims and classes, and GPUs: one on a, two on b, none on c."""

    slices: Sequence[Mapping[str, Any]] = (
        resource_slice("a", "gpu-0"),
        resource_slice("b", "gpu-0", "gpu-1"),
    )

    def volumes(self) -> Volumes:
        volumes = super().volumes()
        for raw in self.slices:
            volumes.set(RESOURCE_SLICE, raw)
        return volumes


THREE = [*NODES, make_node("c")]


def filtered(
    the_pod: PodView, claims: Sequence[Mapping[str, Any]]
) -> tuple[dynamic_resources.ClaimState, list[tuple[str, ...]]]:
    volumes = WithDevices(claims=claims).volumes()
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(THREE, volumes=volumes)))
    assert isinstance(state, dynamic_resources.ClaimState)
    return state, [tuple(PLUGIN.filter(state, the_pod, node)) for node in THREE]


NO_DEVICE = ("cannot allocate all claims",)


@pytest.mark.parametrize(
    ("claims", "expected", "devices"),
    [
        pytest.param(
            [claim(allocated=None, requests=[gpus(1)])],
            [FITS, FITS, NO_DEVICE],
            {"a": [[result("a", "gpu-0")]], "b": [[result("b", "gpu-0")]]},
            id="one GPU: the first of each node's",
        ),
        pytest.param(
            [claim(allocated=None, requests=[gpus(2)])],
            [NO_DEVICE, FITS, NO_DEVICE],
            {"b": [[result("b", "gpu-0"), result("b", "gpu-1")]]},
            id="two GPUs: only b has them",
        ),
        pytest.param(
            [
                claim(allocated=None, requests=[gpus(1)]),
                claim("second", allocated=None, requests=[gpus(1)]),
            ],
            [NO_DEVICE, FITS, NO_DEVICE],
            {"b": [[result("b", "gpu-0")], [result("b", "gpu-1")]]},
            id="two claims of a GPU each: all or nothing",
        ),
        pytest.param(
            [
                claim(allocated=None, requests=[gpus(1)]),
                claim(
                    "held",
                    allocated=on_node("b"),
                    reserved_for=["other"],
                ),
            ],
            [NOT_AVAILABLE, FITS, NO_DEVICE],
            {"b": [[result("b", "gpu-0")]]},
            id="beside a claim allocated on b: allocated there only",
        ),
    ],
)
def test_filter_allocates_every_claim_on_the_node(
    claims: Sequence[Mapping[str, Any]],
    expected: list[tuple[str, ...]],
    devices: Mapping[str, list[list[Mapping[str, Any]]]],
) -> None:
    names = [c["metadata"]["name"] for c in claims]
    the_pod = pod(*(uses(name, f"entry-{i}") for i, name in enumerate(names)))
    state, verdicts_ = filtered(the_pod, claims)
    assert verdicts_ == expected
    kept = {
        node: [a["devices"]["results"] for a in allocations]
        for node, allocations in state.allocations.items()
    }
    assert kept == devices
    for node, allocations in state.allocations.items():
        assert all(a["nodeSelector"] == on_node(node) for a in allocations)
    assert "c" in dynamic_resources._DynamicResourcesFilter().details(state)


def test_devices_in_use_or_in_flight_are_not_given_again() -> None:
    held = claim("held", reserved_for=["other"])
    held["status"]["allocation"] = {"devices": {"results": [result("b", "gpu-0")]}}
    the_pod = pod(uses("gpu-claim"))
    state, _ = filtered(the_pod, [claim(allocated=None, requests=[gpus(1)]), held])
    assert state.allocations["b"][0]["devices"]["results"] == [result("b", "gpu-1")]
    # Reserved on a, in flight: the next pod's claim finds a's only GPU taken.
    assert isinstance(PLUGIN, Reserve)
    volumes = state.volumes
    assert volumes is not None and PLUGIN.reserve(state, the_pod, "a") is None
    other = claim("other-claim", allocated=None, requests=[gpus(1)])
    volumes.set(RESOURCE_CLAIM, other)
    other_pod = PodView(
        {**pod(uses("other-claim")).raw, "metadata": {"name": "q", "namespace": NS}}
    )
    next_state = PLUGIN.pre_filter(Cycle(other_pod, Snapshot(THREE, volumes=volumes)))
    assert isinstance(next_state, dynamic_resources.ClaimState)
    assert [tuple(PLUGIN.filter(next_state, other_pod, n)) for n in THREE] == [
        NO_DEVICE,
        FITS,
        NO_DEVICE,
    ]
    assert next_state.unallocatable["a"].startswith('claim ns/other-claim, request "gpu"')


def test_the_devices_chosen_are_told_per_claim() -> None:
    state, _ = filtered(pod(uses("gpu-claim")), [claim(allocated=None, requests=[gpus(2)])])
    explains = dynamic_resources._DynamicResourcesFilter()
    assert explains.chosen(state, "b") == {
        "gpu-claim": ("gpu: gpu.example.com/b/gpu-0", "gpu: gpu.example.com/b/gpu-1")
    }
    assert explains.chosen(state, "a") == {}


def test_the_score_prefers_the_earlier_subrequest() -> None:
    """kube v1.37: two GPUs (subrequest 0, 8 points) on b, one (subrequest 1, 7) on a."""
    prioritized = first_available("gpu", "gpu-class", "gpu-class")
    prioritized["firstAvailable"][0]["count"] = 2
    claims = [claim(allocated=None, requests=[prioritized])]
    raw, normalized = raw_and_normalized(
        SCORER, pod(uses("gpu-claim")), NODES, around=WithDevices(claims=claims)
    )
    assert raw == [7, 8]
    assert normalized == [87, 100]


def test_a_class_selector_picks_the_devices() -> None:
    """The class's CEL selector, evaluated by model.cel: only b's second GPU is an a100."""
    a100 = device_class()
    a100["spec"]["selectors"] = [
        {"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}
    ]
    on_a, on_b = resource_slice("a", "gpu-0"), resource_slice("b", "gpu-0", "gpu-1")
    for device, model in zip(
        [*on_a["spec"]["devices"], *on_b["spec"]["devices"]], ["t4", "t4", "a100"], strict=True
    ):
        device["attributes"] = {"model": {"string": model}}
    around = WithDevices(
        claims=[claim(allocated=None, requests=[gpus(1)])], classes=[a100], slices=[on_a, on_b]
    )
    the_pod = pod(uses("gpu-claim"))
    volumes = around.volumes()
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(THREE, volumes=volumes)))
    assert isinstance(state, dynamic_resources.ClaimState)
    assert [tuple(PLUGIN.filter(state, the_pod, n)) for n in THREE] == [
        NO_DEVICE,
        FITS,
        NO_DEVICE,
    ]
    assert state.allocations["b"][0]["devices"]["results"] == [result("b", "gpu-1")]
    assert "model == 'a100'" in state.unallocatable["a"]


def test_a_selector_that_does_not_compile_is_an_error_status() -> None:
    broken = device_class()
    broken["spec"]["selectors"] = [{"cel": {"expression": "device.driver =="}}]
    around = WithDevices(claims=[claim(allocated=None, requests=[gpus(1)])], classes=[broken])
    the_pod = pod(uses("gpu-claim"))
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(THREE, volumes=around.volumes())))
    assert isinstance(state, dynamic_resources.ClaimState)
    with pytest.raises(StatusError) as error:
        PLUGIN.filter(state, the_pod, THREE[0])
    assert str(error.value).startswith('running "DynamicResources" filter plugin: ')


# --- binding conditions (on in v1.37) ---------------------------------------------------------

WAITING: Mapping[str, Any] = {
    "devices": {
        "results": [
            {
                **GPU_0["devices"]["results"][0],
                "bindingConditions": ["Attached"],
                "bindingFailureConditions": ["AttachFailed"],
            }
        ]
    },
    "nodeSelector": on_node("a"),
}


def device_status(*conditions: tuple[str, str]) -> dict[str, Any]:
    """The status of gpu-0 on a, with these (type, status) conditions."""
    return {
        "driver": "d",
        "pool": "a",
        "device": "gpu-0",
        "conditions": [
            {"type": kind, "status": status, "reason": "Driver", "message": f"{kind} says so"}
            for kind, status in conditions
        ],
    }


class Driver:
    """The driver at work while PreBind waits: at each of PreBind's sleeps, the informer
    brings the claim with the next of ``statuses`` (none left: nothing changes); the clock
    moves by each sleep."""

    def __init__(self, cycle: Bound, *statuses: Sequence[Mapping[str, Any]]) -> None:
        self.cycle, self.statuses, self.at, self.slept = cycle, list(statuses), 0.0, 0

    async def sleep(self, seconds: float) -> None:
        self.at += seconds
        self.slept += 1
        if self.statuses:
            found = self.cycle.volumes.resource_claim(NS, "gpu-claim")
            assert found is not None
            raw = copy.deepcopy(dict(found.raw))
            raw["status"]["devices"] = list(self.statuses.pop(0))
            raw["metadata"]["resourceVersion"] = str(int(raw["metadata"]["resourceVersion"]) + 1)
            self.cycle.volumes.set(RESOURCE_CLAIM, raw)

    def pre_bind(self) -> str | None:
        plugin = dynamic_resources._DynamicResourcesFilter(
            binding_timeout=60, sleep=self.sleep, clock=lambda: self.at, now=lambda: NOW
        )
        self.api = FakeApi(self.cycle.volumes)
        return asyncio.run(plugin.pre_bind(self.cycle.state, self.cycle.pod, "a", self.api))


def waiting_cycle() -> Bound:
    cycle = Bound.start(pod(uses("gpu-claim")), [UNALLOCATED])
    cycle.chose(WAITING)
    assert cycle.reserve() is None
    return cycle


@pytest.mark.parametrize(
    ("statuses", "outcome", "slept"),
    [
        pytest.param(
            [[device_status(("Attached", "False"))], [device_status(("Attached", "True"))]],
            None,
            2,
            id="bound once the device's binding condition is true",
        ),
        pytest.param(
            [[device_status(("AttachFailed", "True"))]],
            'running PreBind plugin "DynamicResources": device binding failed: '
            'claim=gpu-claim, reason=Driver, message="AttachFailed says so"',
            1,
            id="a binding failure condition fails the bind in kube's words",
        ),
        pytest.param(
            [],
            'running PreBind plugin "DynamicResources": device binding timeout: '
            "context deadline exceeded",
            12,
            id="no condition within the binding timeout",
        ),
    ],
)
def test_pre_bind_waits_for_the_devices_binding_conditions(
    statuses: list[Sequence[Mapping[str, Any]]], outcome: str | None, slept: int
) -> None:
    driver = Driver(waiting_cycle(), *statuses)
    assert driver.pre_bind() == outcome
    assert driver.slept == slept
    # kube's event before it waits.
    assert driver.api.events == [
        (
            f"{NS}/{driver.cycle.pod.name}",
            "Normal",
            "BindingConditionsPending",
            "waiting for binding conditions for device on node a",
        )
    ]


@pytest.mark.parametrize(
    ("status", "allocated_at", "expected"),
    [
        pytest.param([], NOW, [FITS, FITS], id="waiting, within the timeout"),
        pytest.param(
            [],
            NOW - timedelta(seconds=601),
            [NOT_AVAILABLE, NOT_AVAILABLE],
            id="waiting past the binding timeout: on no node",
        ),
        pytest.param(
            [device_status(("AttachFailed", "True"))],
            NOW,
            [NOT_AVAILABLE, NOT_AVAILABLE],
            id="its binding failed: on no node",
        ),
        pytest.param(
            [device_status(("Attached", "True"))],
            NOW - timedelta(seconds=601),
            [FITS, FITS],
            id="bound: the timeout no longer matters",
        ),
    ],
)
def test_an_allocated_claim_whose_binding_failed_fits_no_node(
    status: Sequence[Mapping[str, Any]], allocated_at: datetime, expected: list[tuple[str, ...]]
) -> None:
    """kube's Filter: such a claim is unavailable (and PostFilter may deallocate it)."""
    allocation = {
        **WAITING,
        "allocationTimestamp": allocated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    del allocation["nodeSelector"]
    waiting = claim()
    waiting["status"]["allocation"] = allocation
    waiting["status"]["devices"] = list(status)
    assert verdicts(pod(uses("gpu-claim")), waiting) == expected


def test_a_device_taint_rule_keeps_its_devices_from_pods() -> None:
    """kube v1.37 (DRADeviceTaintRules, GA): a rule's NoSchedule taint on b's gpu-0 counts as
    the device's own; the pod does not tolerate it."""
    rule = {
        "metadata": {"name": "maintenance", "uid": "uid-maintenance"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "pool": "b", "device": "gpu-0"},
            "taint": {"key": "maintenance", "effect": "NoSchedule"},
        },
    }
    the_pod = pod(uses("gpu-claim"))
    volumes = WithDevices(claims=[claim(allocated=None, requests=[gpus(2)])]).volumes()
    volumes.set(DEVICE_TAINT_RULE, rule)
    state = PLUGIN.pre_filter(Cycle(the_pod, Snapshot(THREE, volumes=volumes)))
    assert isinstance(state, dynamic_resources.ClaimState)
    assert [tuple(PLUGIN.filter(state, the_pod, n)) for n in THREE] == [NO_DEVICE] * 3


def test_a_claim_allocated_before_the_cycle_adds_its_subrequest_to_every_node() -> None:
    """kube's computeScore reads the allocated claims' results too, on the nodes where it
    allocated the others: b 8 + 7, a 7 + 7."""
    prioritized = first_available("gpu", "gpu-class", "gpu-class")
    prioritized["firstAvailable"][0]["count"] = 2
    earlier = claim("earlier", requests=[first_available("gpu", "gpu-class", "gpu-class")])
    elsewhere = {"request": "gpu/s1", "driver": "other.example.com", "pool": "p", "device": "d"}
    earlier["status"]["allocation"]["devices"]["results"] = [elsewhere]
    claims = [claim(allocated=None, requests=[prioritized]), earlier]
    raw, normalized = raw_and_normalized(
        SCORER,
        pod(uses("gpu-claim"), uses("earlier", "other")),
        NODES,
        around=WithDevices(claims=claims),
    )
    assert raw == [14, 15]
    assert normalized == [93, 100]


@pytest.mark.parametrize(
    ("placement", "raw"),
    [
        pytest.param("Pack", [100, 50], id="Pack: a's only GPU, all of a in use"),
        pytest.param("Spread", [0, 50], id="Spread: half of b left"),
    ],
)
def test_a_placement_scores_the_share_of_the_nodes_devices_in_use(
    placement: str, raw: list[int]
) -> None:
    """Beyond kube-scheduler: one GPU of a (1 GPU) or b (2 GPUs)."""
    scorer = dynamic_resources.new_scorer({"placement": placement}, "spec.priorities[0].args")
    claims = [claim(allocated=None, requests=[gpus(1)])]
    scores, normalized = raw_and_normalized(
        scorer, pod(uses("gpu-claim")), NODES, around=WithDevices(claims=claims)
    )
    assert scores == normalized == raw


def test_a_placement_counts_the_devices_in_use_before() -> None:
    held = claim("held", reserved_for=["other"])
    held["status"]["allocation"] = {"devices": {"results": [result("b", "gpu-0")]}}
    scorer = dynamic_resources.new_scorer({"placement": "Pack"}, "spec.priorities[0].args")
    claims = [claim(allocated=None, requests=[gpus(1)]), held]
    scores, _ = raw_and_normalized(
        scorer, pod(uses("gpu-claim")), NODES, around=WithDevices(claims=claims)
    )
    assert scores == [100, 100]


def test_the_priority_scores_what_the_filter_allocated_in_the_cycle() -> None:
    """As kube's Score reads Filter's nodeAllocations: no second allocation."""
    prioritized = first_available("gpu", "gpu-class", "gpu-class")
    prioritized["firstAvailable"][0]["count"] = 2
    the_pod = pod(uses("gpu-claim"))
    snapshot = Snapshot(
        NODES, volumes=WithDevices(claims=[claim(allocated=None, requests=[prioritized])]).volumes()
    )
    cycle = Cycle(the_pod, snapshot)
    state = PLUGIN.pre_filter(cycle)
    assert isinstance(state, dynamic_resources.ClaimState)
    assert [PLUGIN.filter(state, the_pod, node) for node in NODES] == [FITS, FITS]
    assert SCORER.pre_score(cycle, snapshot.table.block(np.arange(2))) is state
    # a's one GPU is subrequest s1 (7), b's two are s0 (8): the filter's allocations.
    assert [SCORER.score(state, the_pod, node) for node in NODES] == [7, 8]
    # Were the filter's allocation on a the first subrequest, that is what is scored.
    state.allocations["a"] = [{"devices": {"results": [{"request": "gpu/s0"}]}}]
    assert SCORER.score(state, the_pod, NODES[0]) == 8


def sized(node: str, *sizes: tuple[str, str, int]) -> dict[str, Any]:
    """The node's pool of GPUs (name, memory, NUMA node), in one slice."""
    raw = resource_slice(node)
    raw["spec"]["devices"] = [
        {
            "name": name,
            "capacity": {"memory": {"value": memory}},
            "attributes": {"numa": {"int": numa}},
        }
        for name, memory, numa in sizes
    ]
    return raw


CHOICE_SLICES = (
    sized("a", ("big", "80Gi", 0), ("small", "20Gi", 1)),
    sized("b", ("gpu-0", "40Gi", 0), ("gpu-1", "40Gi", 0), ("gpu-2", "40Gi", 1)),
)


@pytest.mark.parametrize(
    ("args", "devices", "told"),
    [
        pytest.param(
            {},
            {"a": "big", "b": "gpu-1"},
            "gpu: gpu.example.com/a/big",
            id="no choice: kube's first device, what the filter found",
        ),
        pytest.param(
            {"placement": "Pack"},
            {"a": "big", "b": "gpu-1"},
            "gpu: gpu.example.com/a/big",
            id="a placement alone: kube's device",
        ),
        pytest.param(
            {"preferSmallest": True},
            {"a": "small", "b": "gpu-1"},
            "gpu: gpu.example.com/a/small (smallest first: gpu.example.com/memory=20Gi)",
            id="preferSmallest: the smallest device that fits",
        ),
        pytest.param(
            {"numaAttribute": "gpu.example.com/numa", "numaPlacement": "Spread"},
            {"a": "big", "b": "gpu-2"},
            "gpu: gpu.example.com/a/big (NUMA Spread: gpu.example.com/numa=0)",
            id="numaPlacement Spread: b's NUMA node 1, 0 being in use",
        ),
        pytest.param(
            {"numaAttribute": "gpu.example.com/numa"},
            {"a": "big", "b": "gpu-1"},
            "gpu: gpu.example.com/a/big (NUMA Pack: gpu.example.com/numa=0)",
            id="numaAttribute alone packs: b's NUMA node 0, in use",
        ),
    ],
)
def test_the_device_choice_is_what_reserve_takes_and_explain_tells(
    args: Mapping[str, Any], devices: Mapping[str, str], told: str
) -> None:
    """Beyond kube-scheduler: the scorer's args choose among the devices that fit; b's gpu-0
    (NUMA node 0) is in use."""
    held = claim("held", reserved_for=["other"])
    held["status"]["allocation"] = {"devices": {"results": [result("b", "gpu-0")]}}
    the_pod = pod(uses("gpu-claim"))
    claims = [claim(allocated=None, requests=[gpus(1)]), held]
    snapshot = Snapshot(NODES, volumes=WithDevices(claims=claims, slices=CHOICE_SLICES).volumes())
    cycle = Cycle(the_pod, snapshot)
    state = PLUGIN.pre_filter(cycle)
    assert isinstance(state, dynamic_resources.ClaimState)
    assert [PLUGIN.filter(state, the_pod, node) for node in NODES] == [FITS, FITS]
    scorer = dynamic_resources.new_scorer(args, "spec.priorities[0].args")
    scored = scorer.pre_score(cycle, snapshot.table.block(np.arange(2)))
    assert isinstance(scored, dynamic_resources.ClaimState)
    for node in NODES:
        scorer.score(scored, the_pod, node)
    chosen = {
        node: allocations[0]["devices"]["results"][0]["device"]
        for node, allocations in state.allocations.items()
    }
    assert chosen == devices
    assert PLUGIN.reserve(state, the_pod, "a") is None
    assert (
        state.reserved[claims[0]["metadata"]["uid"]]["devices"]["results"][0]["device"]
        == (devices["a"])
    )
    assert dynamic_resources._DynamicResourcesFilter().chosen(state, "a") == {"gpu-claim": (told,)}
