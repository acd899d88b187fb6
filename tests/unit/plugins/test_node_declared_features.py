"""NodeDeclaredFeatures keeps a pod that needs a node feature off nodes that do not declare it,
as kube-scheduler v1.37's: what the pod needs is inferred from its spec (component-helpers'
nodedeclaredfeatures), what the node has is its ``status.declaredFeatures``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import Change, filter_nodes, make_node, make_pod, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import FITS, SKIP
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import NodeView, PodView, slim_pod
from policy_scheduler.plugins import node_declared_features
from policy_scheduler.plugins.registry import FILTERS
from policy_scheduler.scheduling.eventhandlers import node_event

MISSING = ("node(s) didn't match Pod's required features",)
RESTART_ALL = "RestartAllContainersOnContainerExits"
HOST_NETWORK_USERNS = "UserNamespacesHostNetworkSupport"
BIND_MOUNTS = "VolumeBindMountOptions"

RESTART_ALL_RULE = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [42]},
}
RESTART_RULE = {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
BIND_MOUNT = {"name": "data", "mountPath": "/data", "bindMountOptions": ["nosuid"]}
PLAIN_MOUNT = {"name": "data", "mountPath": "/data"}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "app", **fields}


# What each pod spec needs, as component-helpers' InferForScheduling of each registered feature.
NEEDS: dict[str, tuple[dict[str, Any], frozenset[str]]] = {
    "a plain pod needs nothing": ({"containers": [container()]}, frozenset()),
    "a container's rule restarting all containers": (
        {"containers": [container(restartPolicyRules=[RESTART_ALL_RULE])]},
        frozenset({RESTART_ALL}),
    ),
    "an init container's rule restarting all containers": (
        {
            "initContainers": [container(restartPolicyRules=[RESTART_RULE, RESTART_ALL_RULE])],
            "containers": [container()],
        },
        frozenset({RESTART_ALL}),
    ),
    "a rule restarting only its container needs nothing": (
        {"containers": [container(restartPolicyRules=[RESTART_RULE])]},
        frozenset(),
    ),
    "host network in a user namespace": (
        {"hostNetwork": True, "hostUsers": False, "containers": [container()]},
        frozenset({HOST_NETWORK_USERNS}),
    ),
    "host network with hostUsers unset needs nothing": (
        {"hostNetwork": True, "containers": [container()]},
        frozenset(),
    ),
    "a user namespace without host network needs nothing": (
        {"hostUsers": False, "containers": [container()]},
        frozenset(),
    ),
    "a container's mount with bindMountOptions": (
        {"containers": [container(volumeMounts=[PLAIN_MOUNT, BIND_MOUNT])]},
        frozenset({BIND_MOUNTS}),
    ),
    "an init container's mount with bindMountOptions": (
        {"initContainers": [container(volumeMounts=[BIND_MOUNT])], "containers": [container()]},
        frozenset({BIND_MOUNTS}),
    ),
    "an ephemeral container's mount with bindMountOptions": (
        {
            "containers": [container()],
            "ephemeralContainers": [container(name="debug", volumeMounts=[BIND_MOUNT])],
        },
        frozenset({BIND_MOUNTS}),
    ),
    "empty bindMountOptions need nothing": (
        {"containers": [container(volumeMounts=[{**PLAIN_MOUNT, "bindMountOptions": []}])]},
        frozenset(),
    ),
    "all three": (
        {
            "hostNetwork": True,
            "hostUsers": False,
            "containers": [
                container(restartPolicyRules=[RESTART_ALL_RULE], volumeMounts=[BIND_MOUNT])
            ],
        },
        frozenset({RESTART_ALL, HOST_NETWORK_USERNS, BIND_MOUNTS}),
    ),
}


@pytest.mark.parametrize(("spec", "needs"), NEEDS.values(), ids=NEEDS.keys())
def test_what_a_pod_needs(spec: dict[str, Any], needs: frozenset[str]) -> None:
    raw = {"metadata": {"name": "p"}, "spec": spec}
    assert PodView(raw).required_node_features == needs
    # What the informers keep of the pod says as much.
    assert PodView(slim_pod(raw)).required_node_features == needs


def declaring(name: str, *features: str) -> Any:
    return make_node(name, status={"declaredFeatures": list(features)})


@pytest.mark.parametrize(
    ("spec", "declared", "reasons"),
    [
        pytest.param(NEEDS["a plain pod needs nothing"][0], [], FITS, id="nothing needed"),
        pytest.param(
            NEEDS["host network in a user namespace"][0],
            [HOST_NETWORK_USERNS],
            FITS,
            id="the one feature needed is declared",
        ),
        pytest.param(
            NEEDS["host network in a user namespace"][0],
            [],
            MISSING,
            id="a node declaring nothing",
        ),
        pytest.param(
            NEEDS["host network in a user namespace"][0],
            [RESTART_ALL, BIND_MOUNTS],
            MISSING,
            id="a node declaring other features",
        ),
        pytest.param(
            NEEDS["all three"][0],
            [RESTART_ALL, HOST_NETWORK_USERNS, BIND_MOUNTS, "SomeFutureFeature"],
            FITS,
            id="every feature needed and one unknown declared",
        ),
        pytest.param(
            NEEDS["all three"][0],
            [RESTART_ALL, BIND_MOUNTS],
            MISSING,
            id="one of three missing",
        ),
        pytest.param(
            NEEDS["host network in a user namespace"][0],
            [HOST_NETWORK_USERNS.lower()],
            MISSING,
            id="names are case sensitive",
        ),
    ],
)
def test_filter(spec: dict[str, Any], declared: list[str], reasons: Sequence[str]) -> None:
    plugin = node_declared_features.new_filter({}, "args")
    assert filter_nodes(plugin, make_pod(**spec), [declaring("n", *declared)]) == [reasons]


def test_a_pod_that_needs_nothing_skips_the_plugin() -> None:
    plugin = node_declared_features.new_filter({}, "args")
    pod = make_pod(containers=[container()])
    assert plugin.pre_filter(Cycle(pod, Snapshot([]))) is SKIP


def test_no_eviction_helps() -> None:
    plugin = FILTERS["NodeDeclaredFeatures"]({}, "args")
    assert plugin.unresolvable_reasons == frozenset(MISSING)


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match=r"^args: NodeDeclaredFeatures takes no args"):
        node_declared_features.new_filter({"x": 1}, "args")


def node_view(*features: str, labels: dict[str, str] | None = None) -> NodeView:
    status = {"declaredFeatures": list(features)}
    return NodeView({"metadata": {"name": "n", "labels": labels or {}}, "status": status})


# kube-scheduler's events: Node Add | UpdateNodeDeclaredFeature, the update asked only when the
# declared features differ.
EVENTS: dict[str, tuple[NodeView | None, NodeView, EventKind]] = {
    "a node added": (None, node_view(), EventKind.NODE_ADDED),
    "a feature declared": (node_view(), node_view(BIND_MOUNTS), EventKind.NODE_DECLARED_FEATURES),
    "a feature no longer declared": (
        node_view(BIND_MOUNTS, RESTART_ALL),
        node_view(BIND_MOUNTS),
        EventKind.NODE_DECLARED_FEATURES,
    ),
    "the same features in another order": (
        node_view(BIND_MOUNTS, RESTART_ALL),
        node_view(RESTART_ALL, BIND_MOUNTS),
        EventKind(0),
    ),
    "a label change": (node_view(), node_view(labels={"a": "b"}), EventKind.NODE_LABELS),
}


@pytest.mark.parametrize(("before", "after", "kind"), EVENTS.values(), ids=EVENTS.keys())
def test_a_node_update_is_told_as_a_change_of_declared_features(
    before: NodeView | None, after: NodeView, kind: EventKind
) -> None:
    assert node_event(before, after) == kind


HINTS: dict[str, tuple[Change, bool]] = {
    "a node added helps": (Change(EventKind.NODE_ADDED, declaring("n")), True),
    "a node declaring a new feature helps": (
        Change(EventKind.NODE_DECLARED_FEATURES, declaring("n", BIND_MOUNTS), declaring("n")),
        True,
    ),
    "a declared feature changed with the labels helps": (
        Change(
            EventKind.NODE_DECLARED_FEATURES | EventKind.NODE_LABELS,
            declaring("n", BIND_MOUNTS),
            declaring("n"),
        ),
        True,
    ),
    "a label change alone is not asked about": (
        Change(EventKind.NODE_LABELS, declaring("n"), declaring("n")),
        False,
    ),
    "an allocatable change is not asked about": (
        Change(EventKind.NODE_ALLOCATABLE, declaring("n"), declaring("n")),
        False,
    ),
    "a pod deleted is not asked about": (Change(EventKind.POD_DELETED, declaring("n")), False),
}


@pytest.mark.parametrize(("change", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(change: Change, helps: bool) -> None:
    plugin = node_declared_features.new_filter({}, "args")
    pod = make_pod(**NEEDS["a container's mount with bindMountOptions"][0])
    assert wakes(plugin, pod, change) is helps
