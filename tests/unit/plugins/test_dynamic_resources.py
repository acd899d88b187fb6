"""DynamicResources: a pod's ResourceClaims must exist, be allocated and reserved for it, and
allow the node, in kube-scheduler's words where kube has them; its score is v1.37's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    WhatIf,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.volumes import RESOURCE_CLAIM, Volumes, slim
from policy_scheduler.plugins import dynamic_resources
from policy_scheduler.plugins.dynamic_resources import RESERVED_FOR_MAX_SIZE

NS = "ns"
POD_UID = "pod-uid"
NOT_AVAILABLE = ("resourceclaim not available on the node",)
PLUGIN = dynamic_resources.new_filter({}, "spec.predicates[0].args")


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


def claim(
    name: str = "gpu-claim",
    *,
    allocated: Mapping[str, Any] | None = ANYWHERE,
    reserved_for: Sequence[str] = (POD_UID,),
    deleting: bool = False,
    namespace: str = NS,
) -> dict[str, Any]:
    """A ResourceClaim; ``allocated`` is its allocation's node selector (ANYWHERE: none, None:
    not allocated), ``reserved_for`` the uids of its consumers."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
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
    return slim(RESOURCE_CLAIM, {"metadata": metadata, "spec": {"devices": {}}, "status": status})


@dataclass(frozen=True)
class WithClaims(Around):
    """A snapshot that also holds these ResourceClaims."""

    claims: Sequence[Mapping[str, Any]] = ()

    def volumes(self) -> Volumes:
        volumes = Volumes()
        for raw in self.claims:
            volumes.set(RESOURCE_CLAIM, raw)
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


NOT_ALLOCATED = (
    'resourceclaim "gpu-claim" is not allocated: policy-scheduler does not allocate devices yet; '
    "allocate it (or let kube-scheduler place this pod)"
)
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
            [claim(allocated=None, reserved_for=())],
            rejected(NOT_ALLOCATED),
            id="claim not allocated",
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
            [claim(allocated=None), claim("deleted", deleting=True)],
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
    assert verdicts(pod(uses("gpu-claim")), claim(allocated=None)) == [FITS, FITS]


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


def test_the_scorer_takes_no_args() -> None:
    with pytest.raises(
        ArgsError, match=r"spec.priorities\[0\].args: DynamicResources takes no args"
    ):
        dynamic_resources.new_scorer({"x": 1}, "spec.priorities[0].args")


class Writes:
    """An ObjectWriter that records the patches, or fails them with ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.patches: list[tuple[ObjectRef, Mapping[str, Any]]] = []
        self.error = error

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.error is not None:
            raise self.error
        self.patches.append((ref, patch))
        return patch

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        raise AssertionError(f"{ref} read: the plugin does not read a claim back")


def pre_bind(the_pod: PodView, claims: Sequence[Mapping[str, Any]], writes: Writes) -> str | None:
    cycle = Cycle(the_pod, WithClaims(claims=claims).snapshot(NODES))
    state = PLUGIN.pre_filter(cycle)
    assert isinstance(state, dynamic_resources.ClaimState)
    assert isinstance(PLUGIN, PreBind)
    return asyncio.run(PLUGIN.pre_bind(state, the_pod, "a", writes))


def consumer(uid: str) -> dict[str, str]:
    return {"resource": "pods", "name": f"pod-{uid}", "uid": uid}


def test_pre_bind_reserves_each_claim_not_reserved_for_the_pod() -> None:
    writes = Writes()
    the_pod = pod(uses("mine", "a"), uses("shared", "b"))
    mine = claim("mine")  # reserved for the pod already: not written
    shared = claim("shared", reserved_for=["other"])
    shared["metadata"]["resourceVersion"] = "7"
    assert pre_bind(the_pod, [mine, shared], writes) is None
    [(ref, patch)] = writes.patches
    assert ref == ObjectRef("resource.k8s.io/v1", "resourceclaims", "shared", NS, "status")
    assert patch == {
        # The version makes a reservation written meanwhile a conflict, not a loss.
        "metadata": {"resourceVersion": "7"},
        "status": {
            "reservedFor": [
                consumer("other"),
                {"resource": "pods", "name": the_pod.name, "uid": the_pod.uid},
            ]
        },
    }


def test_a_refused_reservation_fails_the_bind_in_kubes_words() -> None:
    writes = Writes(RuntimeError("409 Conflict"))
    refusal = pre_bind(pod(uses("gpu-claim")), [claim(reserved_for=())], writes)
    assert refusal == 'running PreBind plugin "DynamicResources": gpu-claim: 409 Conflict'


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
