"""A pod's default selector as kube-scheduler's helper.DefaultSelector derives it (v1.34), and
what is kept of Services, controllers and Namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model import namespaces, workloads
from policy_scheduler.model.namespaces import Namespaces
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.workloads import Workloads

Objects = list[tuple[str, dict[str, Any]]]
LABELS = {"app": "web", "tier": "front", "track": "stable"}


def obj(kind: str, name: str, selector: Any, namespace: str = "ns") -> tuple[str, dict[str, Any]]:
    spec = {} if selector is None else {"selector": selector}
    return kind, {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod(owner: tuple[str, str, str] | None = None, labels: dict[str, str] = LABELS) -> PodView:
    """A pod of namespace ns; ``owner`` is its controller's (apiVersion, kind, name)."""
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns", "labels": labels}
    if owner is not None:
        api_version, kind, name = owner
        metadata["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": True}
        ]
    return PodView({"metadata": metadata})


RS = ("apps/v1", "ReplicaSet", "rs")
WEB = obj("Service", "web", {"app": "web"})
FRONT = obj("Service", "front", {"tier": "front"})
# (labels, whether the selector matches them), to tell selectors apart.
PROBES = [
    ({"app": "web"}, "app"),
    ({"tier": "front"}, "tier"),
    ({"app": "web", "tier": "front"}, "app+tier"),
    ({"app": "web", "tier": "front", "track": "stable"}, "all"),
    ({"app": "web", "tier": "front", "track": "canary"}, "canary"),
    ({"app": "db"}, "db"),
]


def selects(objects: Objects, incoming: PodView) -> set[str] | None:
    """Which probes the pod's default selector selects; None when it has none."""
    kept = Workloads()
    for kind, raw in objects:
        kept.set(kind, raw)
    selector = kept.default_selector(incoming)
    return (
        None if selector is None else {name for labels, name in PROBES if selector.matches(labels)}
    )


EVERYTHING_WEB = {"app", "app+tier", "all", "canary"}


@pytest.mark.parametrize(
    ("objects", "incoming", "expected"),
    [
        pytest.param([], pod(), None, id="nothing selects the pod"),
        pytest.param([WEB], pod(), EVERYTHING_WEB, id="a Service"),
        pytest.param([WEB, FRONT], pod(), {"app+tier", "all", "canary"}, id="two Services merge"),
        pytest.param(
            [obj("Service", "db", {"app": "db"})], pod(), None, id="a Service not selecting it"
        ),
        pytest.param([obj("Service", "all", None)], pod(), None, id="a Service without selector"),
        pytest.param(
            [obj("Service", "web", {"app": "web"}, namespace="other")],
            pod(),
            None,
            id="a Service of another namespace",
        ),
        pytest.param(
            [obj("ReplicaSet", "rs", {"matchLabels": {"tier": "front"}})],
            pod(RS),
            {"tier", "app+tier", "all", "canary"},
            id="the ReplicaSet's selector",
        ),
        pytest.param(
            [
                WEB,
                obj(
                    "ReplicaSet",
                    "rs",
                    {
                        "matchExpressions": [
                            {"key": "track", "operator": "NotIn", "values": ["canary"]}
                        ]
                    },
                ),
            ],
            pod(RS),
            {"app", "app+tier", "all"},
            id="a Service and the ReplicaSet's requirements",
        ),
        pytest.param(
            [obj("StatefulSet", "rs", {"matchLabels": {"tier": "front"}})],
            pod(("apps/v1", "StatefulSet", "rs")),
            {"tier", "app+tier", "all", "canary"},
            id="the StatefulSet's selector",
        ),
        pytest.param(
            [obj("ReplicationController", "rc", {"tier": "back"}), WEB],
            pod(("v1", "ReplicationController", "rc")),
            set(),
            id="a ReplicationController's selector merges with the Services'",
        ),
        pytest.param(
            [obj("ReplicaSet", "rs", {"matchLabels": {"tier": "front"}})],
            pod(("extensions/v1beta1", "ReplicaSet", "rs")),
            None,
            id="an owner of another apiVersion is not followed",
        ),
        pytest.param(
            [obj("ReplicaSet", "other", {"matchLabels": {"tier": "front"}})],
            pod(RS),
            None,
            id="a ReplicaSet not known",
        ),
        pytest.param(
            [obj("ReplicaSet", "rs", {})],
            pod(RS),
            None,
            id="a ReplicaSet selecting everything adds nothing",
        ),
        pytest.param(
            [obj("ReplicaSet", "rs", {"matchLabels": {"bad key!": "x"}}), WEB],
            pod(RS),
            EVERYTHING_WEB,
            id="an invalid selector adds nothing",
        ),
        pytest.param(
            [obj("Service", "bad", {"bad key!": "web"})], pod(), None, id="an invalid Service"
        ),
    ],
)
def test_default_selector(objects: Objects, incoming: PodView, expected: set[str] | None) -> None:
    assert selects(objects, incoming) == expected


def test_changes_and_deletions() -> None:
    kept = Workloads()
    kind, raw = WEB
    kept.set(kind, raw)
    kept.set(*obj("Service", "web", {"app": "db"}))
    assert kept.default_selector(pod()) is None
    kept.set(kind, raw)
    kept.set(*obj("Service", "web", None))  # its selector removed: it selects nothing now
    assert kept.default_selector(pod()) is None
    kept.set(kind, raw)
    kept.delete(kind, raw)
    assert kept.default_selector(pod()) is None
    kept.set(*obj("ReplicaSet", "rs", {"matchLabels": {"app": "web"}}))
    kept.delete(*obj("ReplicaSet", "rs", None))
    assert kept.default_selector(pod(RS)) is None


METADATA: dict[str, Any] = {
    "name": "n",
    "uid": "u",
    "resourceVersion": "7",
    "labels": {"app": "web"},
    "annotations": {"big": "x" * 1000},
}


def test_slim_keeps_only_what_is_read() -> None:
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {**METADATA, "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {}}},
        "status": {"replicas": 3},
    }
    assert workloads.slim(replica_set) == {
        "metadata": {"name": "n", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    namespace = {"metadata": METADATA, "spec": {"finalizers": ["kubernetes"]}}
    assert namespaces.slim(namespace) == {
        "metadata": {"name": "n", "uid": "u", "resourceVersion": "7", "labels": {"app": "web"}}
    }


def test_namespace_labels() -> None:
    kept = Namespaces()
    kept.set({"metadata": {"name": "ns", "labels": {"team": "x"}}})
    kept.set({"metadata": {"name": "bare"}})
    assert kept.labels("ns") == {"team": "x"}
    assert kept.labels("bare") == {}
    # Not known: the label the API server gives every namespace.
    assert kept.labels("new") == {"kubernetes.io/metadata.name": "new"}
    kept.delete({"metadata": {"name": "ns"}})
    assert kept.labels("ns") == {"kubernetes.io/metadata.name": "ns"}
