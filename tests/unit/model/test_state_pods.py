"""A pod added to the live state, taken out, put back, or confirmed by the watch leaves every
index, NodeInfo and table column exactly as a state built afresh from the same pods: a pod whose
new view counts alike only takes the old view's place; any other change is counted again."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import pytest

from policy_scheduler.model.nodeinfo import (
    _COUNTED,
    ClusterState,
    NodeInfo,
    PodGroup,
    counts_alike,
)
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.quantity import CPU, MEMORY
from policy_scheduler.scheduling.cache import SchedulerCache

GPU = "example.com/gpu"
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        ]
    }
}


def node(name: str, zone: str = "a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"zone": zone}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "20"},
            "images": [{"names": ["web:1"], "sizeBytes": 100}],
        },
    }


def raw_pod(
    name: str,
    node_name: str = "",
    *,
    app: str = "web",
    cpu: str = "1",
    port: int = 0,
    claim: str = "",
    affinity: bool = False,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "c",
        "image": "web:1",
        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
    }
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    if affinity:
        spec["affinity"] = ANTI
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "labels": {"app": app},
            "resourceVersion": "1",
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def bound(raw: dict[str, Any], node_name: str, **changes: Any) -> PodView:
    """The watch's view of ``raw`` bound to ``node_name``: nodeName, status and resourceVersion
    set, then ``changes`` applied (dotted paths)."""
    made = copy.deepcopy(raw)
    made["spec"]["nodeName"] = node_name
    made["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    made["metadata"]["resourceVersion"] = "2"
    for path, value in changes.items():
        *parents, last = path.split(".")
        functools.reduce(lambda d, k: d.setdefault(k, {}), parents, made)[last] = value
    return PodView(made)


def everything(state: ClusterState) -> dict[str, Any]:
    """All the state holds, comparable between two states (nodes by name; each node's pods in
    order; a group's pod by what it stands for)."""

    def by_position(group: PodGroup) -> list[tuple[int, int]]:
        positions, counts = state.node_counts(group).arrays()
        return sorted(zip(positions.tolist(), counts.tolist(), strict=True))

    def groups(index: dict[Any, Any], key_of: Callable[[PodView], Any]) -> dict[Any, Any]:
        return {
            key: {
                "nodes": {info.name: n for info, n in group.nodes.items()},
                "stands for its key": key_of(group.pod) == key,
                "by position": by_position(group),
            }
            for key, group in index.items()
        }

    block = state.table.all()
    resources = (CPU, MEMORY, GPU, "pods")
    return {
        "nodes": [
            {
                "name": info.name,
                "pods": list(info.pods),
                "requested": {name: n for name, n in info.requested.items() if n},
                "nonzero": info.nonzero_requested,
                "ports": sorted(info.used_ports, key=repr),
                "label_groups": {key: n for key, (_, n) in info.label_groups.items()},
                "label groups' pods": all(
                    pod.label_group == key for key, (pod, _) in info.label_groups.items()
                ),
                "preempted": info.preempted,
                "table": {
                    "position": state.table.position(info),
                    "requested": {name: int(block.requested(name)[i]) for name in resources},
                    "nonzero": {
                        name: int(block.nonzero_requested(name)[i]) for name in (CPU, MEMORY)
                    },
                    "pods": int(block.pod_count()[i]),
                    "ports": int(block.used_port_count()[i]),
                },
            }
            for i, info in enumerate(state)
        ],
        "label_groups": groups(state.label_groups, lambda pod: pod.label_group),
        "affinity_groups": groups(state.affinity_groups, lambda pod: pod.affinity_group),
        "claim_users": state.claim_users,
        "images": {image: {i.name: s for i, s in h.items()} for image, h in state.images.items()},
        "label_values": state.label_values,
    }


def afresh(state: ClusterState) -> ClusterState:
    """The same nodes with the same pods, in the same order, counted from scratch."""
    return ClusterState([NodeInfo(info.node, info.pods.values()) for info in state])


def live(cache: SchedulerCache) -> ClusterState:
    state = cache.snapshot
    assert isinstance(state, ClusterState)
    return state


def cluster(*others: dict[str, Any]) -> SchedulerCache:
    """Two nodes, with bound pods of their own (sharing groups with the pods under test), their
    group counts asked for, as plugins ask for them; then ``others`` bound."""
    cache = SchedulerCache()
    cache.set_node(node("n1", "a"))
    cache.set_node(node("n2", "b"))
    cache.set_pod(PodView(raw_pod("web-1", "n1", port=8080, claim="shared", affinity=True)))
    cache.set_pod(PodView(raw_pod("db-1", "n2", app="db")))
    for raw in others:
        cache.set_pod(PodView(raw))
    everything(live(cache))
    return cache


# A container status after an in-place resize: the kubelet allocated 3 cpus and runs with them.
RESIZED = {"name": "c", "allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "3"}}}

# Confirmations: a pod assumed on n1, then the watch's bound view of it. Each case: the pod as
# pending, the bound view, whether it counts alike (its view only replaced), and where it ends.
CONFIRMED: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], PodView], bool, str]] = {
    "unchanged, its groups shared": (raw_pod("w"), lambda r: bound(r, "n1"), True, "n1"),
    "unchanged, alone in its groups": (
        raw_pod("solo", app="solo", port=9000, claim="mine", affinity=True),
        lambda r: bound(r, "n1"),
        True,
        "n1",
    ),
    "annotations and owner changed": (
        raw_pod("w"),
        lambda r: bound(r, "n1", **{"metadata.annotations": {"a": "b"}}),
        True,
        "n1",
    ),
    "labels changed": (
        raw_pod("w", port=9000, affinity=True),
        lambda r: bound(r, "n1", **{"metadata.labels": {"app": "api"}}),
        False,
        "n1",
    ),
    "requests changed": (
        raw_pod("w"),
        lambda r: bound(
            r, "n1", **{"spec.containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}
        ),
        False,
        "n1",
    ),
    "a host port added": (
        raw_pod("w"),
        lambda r: bound(
            r, "n1", **{"spec.containers": [{"name": "c", "ports": [{"hostPort": 81}]}]}
        ),
        False,
        "n1",
    ),
    "a claim added": (
        raw_pod("w"),
        lambda r: bound(
            r,
            "n1",
            **{"spec.volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "shared"}}]},
        ),
        False,
        "n1",
    ),
    "pod anti-affinity removed": (
        raw_pod("w", affinity=True),
        lambda r: bound(r, "n1", **{"spec.affinity": {}}),
        False,
        "n1",
    ),
    "being deleted": (
        raw_pod("w", port=9000),
        lambda r: bound(r, "n1", **{"metadata.deletionTimestamp": "2026-01-01T00:01:00Z"}),
        False,
        "n1",
    ),
    "bound elsewhere than assumed": (raw_pod("w"), lambda r: bound(r, "n2"), True, "n2"),
    "running, resized in place": (
        raw_pod("w"),
        lambda r: bound(r, "n1", **{"status.containerStatuses": [RESIZED]}),
        False,
        "n1",
    ),
}


@pytest.mark.parametrize("case", CONFIRMED.values(), ids=CONFIRMED.keys())
def test_a_confirmed_pod_leaves_the_state_as_counted_afresh(
    case: tuple[dict[str, Any], Callable[[dict[str, Any]], PodView], bool, str],
) -> None:
    raw, confirm, alike, where = case
    cache = cluster(raw_pod("web-2", "n1"))
    assumed = PodView(raw)
    cache.assume(assumed, "n1")
    view = confirm(raw)
    assert counts_alike(assumed, view) is alike
    assert cache.set_pod(view) is assumed
    state = live(cache)
    assert cache.node_of(view.uid) == where
    info = state.nodes[where]
    # The watch's view is what the state holds now, last on its node as a new pod would be.
    assert list(info.pods.values())[-1] is view
    # No group keeps the assumed view to match against.
    assert all(
        group.pod is not assumed
        for group in (*state.label_groups.values(), *state.affinity_groups.values())
    )
    assert all(pod is not assumed for pod, _ in info.label_groups.values())
    assert everything(state) == everything(afresh(state))


DELETING = {"metadata.deletionTimestamp": "2026-01-01T00:01:00Z"}


def disruption(reason: str) -> dict[str, Any]:
    """The status of a victim whose DisruptionTarget condition gives ``reason``."""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": reason}
    return {"status.conditions": [{"type": "Ready", "status": "True"}, condition]}


BY_PREEMPTION = disruption("PreemptionByScheduler")

# A bound pod's views as the watch brings them, and after each, the pods its node holds as
# terminating by preemption (with their priority).
VICTIMS: dict[str, tuple[list[dict[str, Any]], list[dict[str, int]]]] = {
    "the condition, then the deletion": (
        [BY_PREEMPTION, {**BY_PREEMPTION, **DELETING}],
        [{}, {"v": 0}],
    ),
    "the deletion, then the condition": ([DELETING, {**DELETING, **BY_PREEMPTION}], [{}, {"v": 0}]),
    "deleted for another reason": ([{**DELETING, **disruption("DeletionByTaintManager")}], [{}]),
    "of a priority": ([{**DELETING, **BY_PREEMPTION, "spec.priority": 7}], [{"v": 7}]),
}


@pytest.mark.parametrize("case", VICTIMS.values(), ids=VICTIMS.keys())
def test_a_node_holds_its_pods_terminating_by_preemption(
    case: tuple[list[dict[str, Any]], list[dict[str, int]]],
) -> None:
    cache = cluster()
    raw = raw_pod("v")
    cache.set_pod(bound(raw, "n1"))
    state = live(cache)
    for changes, preempted in zip(*case, strict=True):
        cache.set_pod(bound(raw, "n1", **changes))
        assert state.nodes["n1"].preempted == preempted
        assert everything(state) == everything(afresh(state))
    cache.delete_pod("v")
    assert state.nodes["n1"].preempted == {}


def test_a_view_that_takes_the_place_of_another_keeps_what_was_parsed() -> None:
    cache = cluster()
    raw = raw_pod("w", port=9000, claim="mine", affinity=True)
    assumed = PodView(raw)
    cache.assume(assumed, "n1")
    view = bound(raw, "n1")
    cache.set_pod(view)
    # Nothing of _COUNTED is parsed again when the pod is taken out (deleted, or by a what-if).
    assert all(vars(view)[name] is vars(assumed)[name] for name in _COUNTED)
    # A status update later takes its place again.
    again = bound(raw, "n1", **{"status.phase": "Running", "status.podIP": "10.0.0.9"})
    cache.set_pod(again)
    assert cache.pod("w") is again
    assert everything(live(cache)) == everything(afresh(live(cache)))


def test_counted_properties_are_cached_properties_of_pod_view() -> None:
    # counts_alike and the carrying of parsed values rely on it.
    for name in _COUNTED:
        assert isinstance(vars(PodView)[name], functools.cached_property), name


# Views of one pod that counts_alike must tell apart, or may take as alike. For those it takes
# as alike, every counted property must be equal indeed (fresh views, nothing carried).
BASE = raw_pod("p", "n1", port=80, claim="c", affinity=True)
VARIANTS: dict[str, tuple[dict[str, Any], bool]] = {
    "the same": (BASE, True),
    "pending, no nodeName": (raw_pod("p", port=80, claim="c", affinity=True), True),
    "on another node": (raw_pod("p", "n2", port=80, claim="c", affinity=True), True),
    "status, readiness and claim statuses": (
        {
            **BASE,
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "c", "ready": True, "restartCount": 2}],
                "resourceClaimStatuses": [{"name": "x", "resourceClaimName": "p-x"}],
            },
        },
        True,
    ),
    "a resize under way (requests from the status)": (
        {
            **BASE,
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "c",
                        "allocatedResources": {"cpu": "4"},
                        "resources": {"requests": {"cpu": "4"}},
                    }
                ],
            },
        },
        False,
    ),
    "a resize found infeasible": (
        {
            **BASE,
            "status": {
                "conditions": [
                    {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
                ]
            },
        },
        False,
    ),
    "resourceVersion, annotations, owners": (
        {
            **BASE,
            "metadata": {
                **BASE["metadata"],
                "resourceVersion": "9",
                "annotations": {"k": "v"},
                "ownerReferences": [{"kind": "ReplicaSet", "name": "r", "controller": True}],
            },
        },
        True,
    ),
    "labels": (raw_pod("p", "n1", app="api", port=80, claim="c", affinity=True), False),
    "requests": (raw_pod("p", "n1", cpu="2", port=80, claim="c", affinity=True), False),
    "host ports": (raw_pod("p", "n1", port=81, claim="c", affinity=True), False),
    "claims": (raw_pod("p", "n1", port=80, claim="d", affinity=True), False),
    "affinity": (raw_pod("p", "n1", port=80, claim="c"), False),
    "deletion": (
        {**BASE, "metadata": {**BASE["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}},
        False,
    ),
    "name (an ephemeral volume's claim is named after it)": (
        {**BASE, "metadata": {**BASE["metadata"], "name": "q"}},
        False,
    ),
    "namespace": ({**BASE, "metadata": {**BASE["metadata"], "namespace": "other"}}, False),
}


@pytest.mark.parametrize("raw, alike", VARIANTS.values(), ids=VARIANTS.keys())
def test_counts_alike_only_when_every_counted_property_is_equal(
    raw: dict[str, Any], alike: bool
) -> None:
    counted, pod = PodView(BASE), PodView(raw)
    assert counts_alike(counted, pod) is alike
    if alike:
        assert all(getattr(counted, name) == getattr(pod, name) for name in _COUNTED)


POD_SHAPES: dict[str, dict[str, Any]] = {
    "plain": raw_pod("x", "n1"),
    "host port": raw_pod("x", "n1", port=8080),  # the same port as web-1
    "claim shared with another pod": raw_pod("x", "n1", claim="shared"),
    "pod anti-affinity": raw_pod("x", "n1", affinity=True),
    "alone in its groups": raw_pod("x", "n1", app="solo", port=9000, claim="own", affinity=True),
    "another resource": raw_pod("x", "n1")
    | {"spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]}},
}


@pytest.mark.parametrize("raw", POD_SHAPES.values(), ids=POD_SHAPES.keys())
def test_add_then_remove_restores_the_state(raw: dict[str, Any]) -> None:
    cache = cluster(raw_pod("web-2", "n1"), raw_pod("web-3", "n2", port=8080))
    state = live(cache)
    info = state.nodes["n1"]
    before = everything(state)
    pod = PodView(raw)
    state.add_pod(info, pod)
    assert everything(state) == everything(afresh(state))
    assert state.remove_pod(info, pod.uid) is pod
    assert everything(state) == before
    # Taken out and put back (as a what-if does): the pod is last on its node, all else equal.
    first = next(iter(info.pods.values()))
    state.remove_pod(info, first.uid)
    state.add_pod(info, first)
    assert list(info.pods)[-1] == first.uid
    assert everything(state) == everything(afresh(state))


def test_the_same_view_added_again_changes_nothing_but_its_place() -> None:
    cache = cluster(raw_pod("web-2", "n1", port=8080))
    state = live(cache)
    info = state.nodes["n1"]
    first = next(iter(info.pods.values()))
    state.add_pod(info, first)
    assert list(info.pods)[-1] == first.uid
    assert everything(state) == everything(afresh(state))


def test_pods_changed_on_nodes_that_move_or_go_before_the_table_is_read() -> None:
    cache = cluster()
    cache.set_node(node("n3", "c"))
    state = live(cache)
    # n2's and n3's pods change, nothing reads the table, then n1 goes (both move up) and n2
    # goes too: the table is written where n3 is when it is read.
    cache.set_pod(PodView(raw_pod("x", "n3", port=80)))
    cache.set_pod(PodView(raw_pod("y", "n2")))
    cache.delete_node("n1")
    cache.delete_node("n2")
    assert everything(state) == everything(afresh(state))


def test_a_resize_told_by_the_status_alone_is_counted_on_the_node() -> None:
    # 1 cpu for web-1, 1 for w; then the kubelet runs w with 3.
    cache = cluster()
    raw = raw_pod("w")
    cache.set_pod(bound(raw, "n1"))
    state = live(cache)
    assert state.nodes["n1"].requested[CPU] == 2000
    cache.set_pod(bound(raw, "n1", **{"status.containerStatuses": [RESIZED]}))
    assert state.nodes["n1"].requested[CPU] == 4000
    assert everything(state) == everything(afresh(state))
    # Readiness and restarts change nothing it requests: the view only takes the old one's place.
    ready = {**RESIZED, "ready": True, "restartCount": 1}
    before = state.nodes["n1"].pods["w"]
    again = bound(raw, "n1", **{"status.containerStatuses": [ready]})
    assert counts_alike(before, again)
    cache.set_pod(again)
    assert state.nodes["n1"].requested[CPU] == 4000


GPU_POD = raw_pod("g", "n1") | {
    "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]}
}

# Pods set aside on n1 (which holds web-1, web-2, solo and db-2 in that order), and what the
# block does meanwhile: put some of them back, or add pods of its own (taken out again or not).
SET_ASIDE: dict[str, tuple[list[str], list[str], list[dict[str, Any]], bool]] = {
    "all of the node's pods": (["web-1", "web-2", "solo", "db-2"], [], [], False),
    "one of a group of two": (["web-2"], [], [], False),
    "the middle ones, one put back": (["web-2", "solo"], ["solo"], [], False),
    "every one, each put back": (
        ["web-1", "web-2", "solo", "db-2"],
        ["db-2", "web-1", "solo", "web-2"],
        [],
        False,
    ),
    "a pod of another resource added and taken out": (["web-1"], [], [GPU_POD], True),
    "a pod added and left there": (["db-2"], ["db-2"], [raw_pod("x", "n1", port=9000)], False),
    "none": ([], [], [], False),
}


@pytest.mark.parametrize("case", SET_ASIDE.values(), ids=SET_ASIDE.keys())
def test_pods_set_aside_come_back_as_they_were(
    case: tuple[list[str], list[str], list[dict[str, Any]], bool],
) -> None:
    aside, put_back, added, taken_out = case
    cache = cluster(
        raw_pod("web-2", "n1"),
        raw_pod("solo", "n1", app="solo", port=9000, claim="own", affinity=True),
        raw_pod("db-2", "n1", app="db", claim="shared"),
    )
    state = live(cache)
    info = state.nodes["n1"]
    before = everything(state)
    order = list(info.pods)
    with state.set_aside(info, set(aside)) as out:
        assert [pod.uid for pod in out] == [uid for uid in order if uid in aside]
        assert [uid for uid in info.pods] == [uid for uid in order if uid not in aside]
        assert everything(state) == everything(afresh(state))
        for uid in put_back:
            state.add_pod(info, next(pod for pod in out if pod.uid == uid))
        for raw in added:
            state.add_pod(info, PodView(raw))
        assert everything(state) == everything(afresh(state))
        if taken_out:
            for raw in added:
                state.remove_pod(info, raw["metadata"]["uid"])
    assert list(info.pods) == order
    assert everything(state) == before
