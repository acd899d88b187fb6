"""The cache counts every assigned pod once, on the right node, assumed or confirmed."""

from __future__ import annotations

from typing import Any

from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.cache import SchedulerCache


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "10"}}}


def pod(name: str, node_name: str = "", cpu: str = "1", phase: str = "Pending") -> PodView:
    return PodView(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {
                "nodeName": node_name,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            },
            "status": {"phase": phase},
        }
    )


def requested_cpu(cache: SchedulerCache, node_name: str) -> int:
    info = cache.snapshot.get(node_name)
    assert info is not None
    return info.requested.get("cpu", 0)


def test_assume_counts_at_once_and_the_watch_confirms() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.assume(pod("a"), "n1")
    assert requested_cpu(cache, "n1") == 1000
    assert cache.is_assumed("a")
    cache.set_pod(pod("a", "n1"))
    assert requested_cpu(cache, "n1") == 1000
    assert not cache.is_assumed("a")


def test_forget_undoes_only_assumptions() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.assume(pod("a"), "n1")
    cache.forget("a")
    assert requested_cpu(cache, "n1") == 0
    cache.set_pod(pod("b", "n1"))
    cache.forget("b")
    assert requested_cpu(cache, "n1") == 1000


def test_bound_elsewhere_moves_the_pod() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.set_node(node("n2"))
    cache.assume(pod("a"), "n1")
    cache.set_pod(pod("a", "n2"))
    assert (requested_cpu(cache, "n1"), requested_cpu(cache, "n2")) == (0, 1000)
    assert cache.node_of("a") == "n2"


def test_pods_before_their_node_are_counted_when_it_arrives() -> None:
    cache = SchedulerCache()
    cache.set_pod(pod("a", "n1"))
    assert cache.pod_count == 1
    cache.set_node(node("n1"))
    assert requested_cpu(cache, "n1") == 1000
    assert cache.node_of("a") == "n1"


def test_node_update_keeps_its_pods_and_delete_sets_them_aside() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.set_pod(pod("a", "n1"))
    cache.set_node(node("n1", cpu="8"))
    assert requested_cpu(cache, "n1") == 1000
    cache.delete_node("n1")
    assert cache.snapshot.get("n1") is None
    assert cache.pod_count == 1
    cache.set_node(node("n1"))
    assert requested_cpu(cache, "n1") == 1000


def test_finished_and_deleted_pods_free_their_node() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.set_pod(pod("a", "n1"))
    cache.set_pod(pod("b", "n1"))
    cache.set_pod(pod("a", "n1", phase="Succeeded"))
    cache.delete_pod("b")
    assert requested_cpu(cache, "n1") == 0
    assert cache.pod_count == 0


def test_touched_tells_the_nodes_whose_pods_changed_or_that_came_or_went_once() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1"))
    cache.set_node(node("n2"))
    cache.set_pod(pod("a", "n1", phase="Running"))
    assert cache.touched() == {"n1", "n2"}
    assert cache.touched() == set()
    cache.set_node(node("n1", cpu="8"))
    assert cache.touched() == set(), "a node changed, not its pods"
    cache.assume(pod("b"), "n2")
    cache.delete_pod("a")
    assert cache.touched() == {"n1", "n2"}
    cache.delete_node("n2")
    assert cache.touched() == {"n2"}
