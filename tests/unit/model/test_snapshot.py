"""The snapshot's cluster-wide indexes stay what a snapshot built afresh would hold, whatever
order nodes and pods come and go in (through the cache, as the operator changes them)."""

from __future__ import annotations

from typing import Any

from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.scheduling.cache import SchedulerCache

ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        ]
    }
}


def node(name: str, zone: str, images: list[tuple[str, int]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"zone": zone}},
        "status": {
            "allocatable": {"cpu": "4", "pods": "10"},
            "images": [{"names": [image], "sizeBytes": size} for image, size in images],
        },
    }


def pod(name: str, node_name: str, app: str, affinity: bool = False) -> PodView:
    spec: dict[str, Any] = {"nodeName": node_name, "containers": [{"name": "c"}]}
    if affinity:
        spec["affinity"] = ANTI
    return PodView(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {"app": app}},
            "spec": spec,
        }
    )


def indexes(snapshot: Snapshot) -> dict[str, Any]:
    def groups(index: dict[Any, Any]) -> dict[Any, dict[str, int]]:
        return {key: {i.name: n for i, n in g.nodes.items()} for key, g in index.items()}

    return {
        "label_groups": groups(snapshot.label_groups),
        "affinity_groups": groups(snapshot.affinity_groups),
        "images": {
            image: {i.name: s for i, s in h.items()} for image, h in snapshot.images.items()
        },
        "label_values": snapshot.label_values,
    }


def test_indexes_follow_every_change() -> None:
    cache = SchedulerCache()
    cache.set_pod(pod("early", "n3", "web"))  # before its node
    cache.set_node(node("n1", "a", [("web:1", 100)]))
    cache.set_node(node("n2", "b", [("web:1", 100), ("db:2", 300)]))
    cache.set_node(node("n3", "a", []))
    cache.assume(pod("w1", "", "web", affinity=True), "n1")
    cache.set_pod(pod("w2", "n2", "web", affinity=True))
    cache.set_pod(pod("d1", "n2", "db"))
    cache.set_pod(pod("w1", "n2", "web", affinity=True))  # bound elsewhere than assumed
    cache.delete_pod("d1")
    cache.set_node(node("n1", "c", [("db:2", 300)]))  # relabelled, other images
    cache.delete_node("n2")
    cache.set_node(node("n2", "b", [("web:1", 100)]))  # back, with its pods
    cache.forget("w1")  # confirmed: stays

    seen = indexes(cache.snapshot)
    assert seen["label_values"] == {"zone": {"a": 1, "b": 1, "c": 1}}
    assert seen["images"] == {"web:1": {"n2": 100}, "db:2": {"n1": 300}}
    # One label group (ns, app=web): w1 and w2 on n2, early on n3.
    assert list(seen["label_groups"].values()) == [{"n3": 1, "n2": 2}]
    assert list(seen["affinity_groups"].values()) == [{"n2": 2}]
    assert seen == indexes(Snapshot(list(cache.snapshot)))


def test_pods_added_to_the_live_state_keep_its_indexes_right() -> None:
    view = NodeView(node("n", "a", []))
    info = NodeInfo(view)
    state = ClusterState([info])
    state.add_pod(info, pod("p", "n", "web", affinity=True))
    assert indexes(state) == indexes(Snapshot([NodeInfo(view, [pod("p", "n", "web", True)])]))
    assert state.remove_pod(info, "p") is not None
    assert indexes(state) == indexes(Snapshot([NodeInfo(view)]))


def test_image_size_is_the_first_nodes_in_snapshot_order() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1", "a", [("web:1", 100)]))
    cache.set_node(node("n2", "a", [("web:1", 200)]))
    cache.set_node(node("n1", "a", [("web:1", 100)]))  # an update keeps n1 first
    assert cache.snapshot.image_size("web:1") == 100
    cache.delete_node("n1")
    assert cache.snapshot.image_size("web:1") == 200
    assert cache.snapshot.image_size("absent:1") == 0
