"""The scheduling queue orders, backs off and parks pods as kube-scheduler's does."""

from __future__ import annotations

import pytest

from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.queue import QueuedPod, SchedulingQueue, Where, backoff_duration


def pod(
    name: str, priority: int = 0, created: str = "2026-01-01T00:00:00Z", cpu: str = "0"
) -> PodView:
    return PodView(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": name,
                "creationTimestamp": created,
            },
            "spec": {
                "priority": priority,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            },
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


def test_a_change_right_after_failing_still_serves_the_backoff_while_others_are_active() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.unschedulable("a", "no", 0)
    queue.move(0.5)
    entry = queue.get("a")
    assert entry is not None
    assert entry.where is Where.BACKOFF
    queue.add(pod("b"), 0.5)
    first = queue.pop(0.5)
    assert first is not None and first.pod.name == "b"
    assert entry.where is Where.BACKOFF
    assert queue.next_wakeup(0.5) == 1.0


def test_with_nothing_active_a_moved_pod_is_decided_before_its_backoff_ends() -> None:
    # kube-scheduler v1.34's SchedulerPopFromBackoffQ: the pod whose backoff ends first.
    queue = SchedulingQueue()
    for name in ("a", "b"):
        queue.add(pod(name), 0)
    popped(queue, 0)
    queue.unschedulable("b", "no", 0)
    queue.unschedulable("a", "no", 0.2)
    queue.move(0.5)
    assert popped(queue, 0.5) == ["b", "a"]


def test_a_pod_whose_bind_failed_serves_its_backoff_even_with_nothing_active() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"), 0)
    popped(queue, 0)
    queue.retry_later("a", 0)
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


def parked(queue: SchedulingQueue, *pods: PodView, rejected_by: str = "F") -> None:
    for p in pods:
        queue.add(p, 0)
    popped(queue, 0)
    for p in pods:
        queue.unschedulable(p.uid, "no", 0, frozenset({rejected_by}))


def test_move_asks_once_per_group_of_alike_pods() -> None:
    queue = SchedulingQueue()
    parked(queue, *(pod(f"same{i}", cpu="1") for i in range(3)), pod("larger", cpu="2"))
    parked(queue, pod("other-filter", cpu="1"), rejected_by="G")
    asked: list[str] = []

    def helps(entry: QueuedPod) -> bool:
        asked.append(entry.pod.name)
        return entry.pod.requests["cpu"] == 1000 and entry.rejected_by == {"F"}

    assert queue.move(60, helps) == 3
    assert sorted(asked) == ["larger", "other-filter", "same0"]
    assert popped(queue, 60) == ["same0", "same1", "same2"]
    assert queue.counts()["unschedulable"] == 2


def test_a_status_only_update_keeps_a_parked_pods_place_and_timeout() -> None:
    queue = SchedulingQueue()
    parked(queue, pod("a"))
    queue.add(pod("a", cpu="2"), 30, moves=False)  # its group changes, not its place
    assert queue.next_wakeup(30) == 300
    assert queue.move(60, lambda entry: entry.pod.requests["cpu"] == 2000) == 1
    assert popped(queue, 60) == ["a"]


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


def waiting(queue: SchedulingQueue, *pods: tuple[PodView, str]) -> None:
    """Park each pod waiting for its victims on its node ("" for none)."""
    for p, _ in pods:
        queue.add(p, 0)
    popped(queue, 0)
    for p, node in pods:
        queue.unschedulable(p.uid, "no", 0, frozenset({"F"}), waits_on=node)


def test_the_groups_waiting_for_victims_are_kept_by_node_and_their_changes_told() -> None:
    queue = SchedulingQueue()
    waiting(queue, (pod("a"), "n1"), (pod("b", priority=1), "n1"), (pod("c"), "n2"))
    parked(queue, pod("plain"))
    on_n1 = queue.waiting_on("n1")
    assert [head.pod.name for key in on_n1 if (head := queue.head(key))] == ["a", "b"]
    assert queue.waiting_on("n3") == [] and queue.waiting_on("") == []
    assert len(queue.waiting_changes()) == 3, "the three waiting groups formed"
    assert queue.waiting_changes() == [], "told once"
    queue.delete("a")
    assert queue.waiting_changes() == [on_n1[0]]
    assert queue.head(on_n1[0]) is None
    assert [head.pod.name for key in queue.waiting_on("n1") if (head := queue.head(key))] == ["b"]


ASKED = {
    "all": (None, ["a", "plain", "c"]),
    "none of those waiting": ([], ["plain"]),
    "one of them, in its place": (["c"], ["plain", "c"]),
    "a group gone is skipped": (["gone", "a"], ["a", "plain"]),
}


@pytest.mark.parametrize("names, asked", ASKED.values(), ids=ASKED)
def test_move_asks_the_waiting_groups_named_and_every_other_in_their_order(
    names: list[str] | None, asked: list[str]
) -> None:
    queue = SchedulingQueue()
    waiting(queue, (pod("a"), "n1"))
    parked(queue, pod("plain"))
    waiting(queue, (pod("c"), "n2"))
    keys = {
        head.pod.name: key
        for key in queue.waiting_on("n1") + queue.waiting_on("n2")
        if (head := queue.head(key))
    }
    keys["gone"] = ("gone",)
    seen: list[str] = []

    def helps(entry: QueuedPod) -> bool:
        seen.append(entry.pod.name)
        return True

    chosen = None if names is None else [keys[name] for name in names]
    assert queue.move(60, helps, chosen) == len(asked)
    assert seen == asked
