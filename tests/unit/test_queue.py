"""The scheduling queue orders, backs off and parks pods as kube-scheduler's does."""

from __future__ import annotations

import pytest

from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.queue import SchedulingQueue, Where, backoff_duration


def pod(name: str, priority: int = 0, created: str = "2026-01-01T00:00:00Z") -> PodView:
    return PodView(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": name,
                "creationTimestamp": created,
            },
            "spec": {"priority": priority},
        }
    )


def popped(queue: SchedulingQueue, now: float = 0.0) -> list[str]:
    names = []
    while (entry := queue.pop(now)) is not None:
        names.append(entry.pod.name)
    return names


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [
        pytest.param(1, 1.0, id="first failure"),
        pytest.param(2, 2.0, id="second doubles"),
        pytest.param(4, 8.0, id="fourth"),
        pytest.param(5, 10.0, id="capped at ten seconds"),
        pytest.param(30, 10.0, id="many attempts stay capped"),
    ],
)
def test_backoff_duration(attempts: int, seconds: float) -> None:
    assert backoff_duration(attempts) == seconds


def test_active_order_is_priority_then_age_then_name() -> None:
    queue = SchedulingQueue()
    queue.add(pod("old", created="2026-01-01T00:00:00Z"), 0)
    queue.add(pod("young", created="2026-01-02T00:00:00Z"), 0)
    queue.add(pod("urgent", priority=100, created="2026-01-03T00:00:00Z"), 0)
    queue.add(pod("also-old", created="2026-01-01T00:00:00Z"), 0)
    assert popped(queue) == ["urgent", "also-old", "old", "young"]


def test_failed_bind_backs_off_then_returns() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    assert popped(queue, 0) == ["a"]
    queue.retry_later("a", 0)
    assert popped(queue, 0.9) == []
    assert queue.next_wakeup(0.9) == 1.0
    assert popped(queue, 1.0) == ["a"]
    queue.retry_later("a", 1.0)
    assert popped(queue, 2.9) == []
    assert popped(queue, 3.0) == ["a"]


def test_unschedulable_waits_for_a_cluster_change() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.unschedulable("a", "0/1 nodes are available: 1 Insufficient cpu.", 0)
    assert popped(queue, 60) == []
    queue.move(60)
    assert popped(queue, 60) == ["a"]


def test_a_change_right_after_failing_still_serves_the_backoff() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.unschedulable("a", "no", 0)
    queue.move(0.5)
    entry = queue.get("a")
    assert entry is not None
    assert entry.where is Where.BACKOFF
    assert popped(queue, 0.5) == []
    assert popped(queue, 1.0) == ["a"]


def test_unschedulable_is_retried_after_five_minutes() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.unschedulable("a", "no", 10)
    assert queue.next_wakeup(10) == 310
    assert popped(queue, 309) == []
    assert popped(queue, 310) == ["a"]


def test_an_update_to_a_parked_pod_moves_it() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.unschedulable("a", "no", 0)
    queue.add(pod("a", priority=5), 30)
    assert popped(queue, 30) == ["a"]


def test_deleted_pods_never_come_out() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    queue.add(pod("b"), 0)
    queue.delete("a")
    assert popped(queue) == ["b"]
    queue.unschedulable("b", "no", 0)
    queue.delete("b")
    queue.move(100)
    assert popped(queue, 1000) == []
    assert len(queue) == 0


def test_counts() -> None:
    queue = SchedulingQueue()
    for name in "abc":
        queue.add(pod(name), 0)
    queue.pop(0)
    queue.unschedulable("a", "no", 0)
    queue.pop(0)
    assert queue.counts() == {
        "active": 1,
        "backoff": 0,
        "unschedulable": 1,
        "gated": 0,
        "in-flight": 1,
    }
