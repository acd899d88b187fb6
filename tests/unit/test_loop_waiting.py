"""A preemptor parked while its victims terminate, and the deletions of assigned pods
(:mod:`policy_scheduler.scheduling.waiting`), through the loop's in-memory ports with the
policy's own DefaultPreemption.

``high`` (2 CPUs, priority 10) has evicted ``low-a`` and ``low-b`` on n1, which the watch shows
terminating by preemption, and waits, nominated to n1. n2 is full of pods ``high`` may not
evict. Each case deletes assigned pods and says whether ``high`` is tried again: a deletion that
leaves it no room where the pod was, while a victim of its still terminates, does not move it;
every other does, as kube-scheduler's NodeResourcesFit hint would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from test_loop import Raw, Run, Step, changed, delete_pod, feed, later, node, pod, policy, settle

from policy_scheduler.scheduling.queue import Where

LOW_A = pod("low-a", on="n1", priority=1)
LOW_B = pod("low-b", on="n1", priority=1)
HIGH = pod("high", "2", priority=10)
KEEP_1 = pod("keep-1", on="n2", priority=100)
KEEP_2 = pod("keep-2", on="n2", priority=100)


def preempting_policy() -> Raw:
    raw = policy()
    raw["spec"]["predicates"].append({"name": "InterPodAffinity"})
    raw["spec"]["postFilters"] = [{"name": "DefaultPreemption"}]
    return raw


def terminating_by_preemption(raw: Raw) -> Raw:
    """The victim as the watch shows it once a scheduler's preemption deleted it."""
    status = {
        **raw["status"],
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    }
    return changed({**raw, "status": status}, metadata__deletionTimestamp="2026-01-01T00:00:09Z")


def waiting(run: Run, high: Raw, *others: Raw) -> None:
    """``high`` preempts ``low-a`` and ``low-b`` on n1, beside n2 and ``others``, and waits."""
    feed(node("n1"), node("n2"), preempting_policy(), LOW_A, LOW_B, KEEP_1, KEEP_2, *others)(run)
    feed(high)(run)
    settle()(run)
    assert [victim for victim, *_ in run.memory.preemptions] == ["ns/low-a", "ns/low-b"]
    # The watch shows the victims terminating and high's nomination.
    feed(
        terminating_by_preemption(LOW_A),
        terminating_by_preemption(LOW_B),
        changed(high, status__nominatedNodeName="n1"),
    )(run)
    later(20)(run)
    settle()(run)
    entry = run.scheduler.queue.get("high")
    assert entry is not None
    assert (entry.where, entry.attempts, entry.waits_on) == (Where.UNSCHEDULABLE, 1, "n1")


@pytest.fixture
def loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def run(loop: None) -> Run:
    run = Run()
    waiting(run, HIGH)
    return run


@dataclass(frozen=True)
class Case:
    name: str
    deleted: tuple[Raw, ...]
    tried_again: bool
    bound_on: str | None = None
    # Pods fed before the deletions (a pod nominated to n2, another scheduler's).
    before: tuple[Raw, ...] = field(default=())


CASES = [
    Case("one victim gone, the other still terminating", (LOW_A,), tried_again=False),
    Case(
        "both victims gone: it may have room, and may preempt again",
        (LOW_A, LOW_B),
        tried_again=True,
        bound_on="n1",
    ),
    Case("a pod gone from a node still too full for it", (KEEP_1,), tried_again=False),
    Case(
        "a node emptied that fits it",
        (KEEP_1, KEEP_2),
        tried_again=True,
        bound_on="n2",
    ),
    Case(
        "a node emptied whose room a pod of its priority nominated there holds",
        (KEEP_1, KEEP_2),
        tried_again=False,
        before=(pod("other", "2", scheduler="other", priority=10, nominated="n2"),),
    ),
    Case(
        "a node emptied that a pod of lower priority nominated there does not hold",
        (KEEP_1, KEEP_2),
        tried_again=True,
        bound_on="n2",
        before=(pod("other", "2", scheduler="other", priority=5, nominated="n2"),),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_deletion_moves_a_waiting_preemptor_only_if_it_may_help(run: Run, case: Case) -> None:
    feed(*case.before)(run)
    for raw in case.deleted:
        delete_pod(raw)(run)
    later(20)(run)
    settle()(run)
    entry = run.scheduler.queue.get("high")
    attempts = 2 if entry is None else entry.attempts
    assert attempts == (2 if case.tried_again else 1)
    assert run.memory.binds == ([("ns/high", case.bound_on)] if case.bound_on else [])


def test_its_view_nominated_elsewhere_it_is_moved_as_any_pod(run: Run) -> None:
    """The watch shows a nomination other than the node it waits on (another scheduler's
    doing): what it waits for is no longer known, and the deletion moves it."""
    feed(changed(HIGH, status__nominatedNodeName="n2"))(run)
    delete_pod(LOW_A)(run)
    settle()(run)
    entry = run.scheduler.queue.get("high")
    assert entry is not None and entry.attempts == 2


def test_refused_preemption_for_its_terminating_victims_it_still_waits(run: Run) -> None:
    """Tried again by the queue's timeout, it is refused preemption (its victims still
    terminate) and waits on n1 as before: one victim's deletion does not move it."""
    later(400)(run)
    settle()(run)
    entry = run.scheduler.queue.get("high")
    assert entry is not None and entry.attempts == 2
    assert "not eligible due to a terminating pod on the nominated node" in entry.last_failure
    assert entry.waits_on == "n1"
    delete_pod(LOW_A)(run)
    settle()(run)
    assert entry.attempts == 2


def test_rejected_by_a_filter_that_counts_pods_across_nodes_it_is_moved(loop: None) -> None:
    """The pod of its zone that high's anti-affinity kept it from goes: n4, in that zone, now
    fits high, though the node the pod left (n3) is still too full for it."""
    high = changed(HIGH)
    high["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}
            ]
        }
    }
    x = pod("x", on="n3", priority=100, labels={"app": "x"})
    run = Run()
    waiting(
        run,
        high,
        node("n3", labels={"zone": "c"}),
        node("n4", labels={"zone": "c"}),
        x,
        pod("keep-3", on="n3", priority=100),
    )
    entry = run.scheduler.queue.get("high")
    assert entry is not None and "InterPodAffinity" in entry.rejected_by
    delete_pod(x)(run)
    later(20)(run)
    settle()(run)
    assert run.memory.binds == [("ns/high", "n4")]


def delete_node(name: str) -> Step:
    return lambda run: run.scheduler.node_deleted(node(name))


@dataclass(frozen=True)
class Before:
    """What the watch shows first; then a pod goes from n2, still too full for ``high``. A
    deletion asks again only about the preemptors whose answer may have changed since the
    last one asked them: whatever changed before it, ``high`` is tried again exactly when a
    try could end otherwise than its last."""

    name: str
    steps: tuple[Step, ...]
    tried_again: bool


BEFORE = [
    Before("nothing", (), tried_again=False),
    Before("one victim gone", (delete_pod(LOW_A),), tried_again=False),
    Before(
        "a victim's view changed, still terminating",
        (feed(changed(terminating_by_preemption(LOW_A), metadata__labels={"new": "label"})),),
        tried_again=False,
    ),
    Before("a pod bound on its node", (feed(pod("new", on="n1", priority=1)),), tried_again=False),
    Before(
        "its node's labels changed", (feed(node("n1", labels={"new": "label"})),), tried_again=False
    ),
    Before("its node deleted", (delete_node("n1"),), tried_again=True),
    Before(
        "its node deleted, its victims then",
        (delete_node("n1"), delete_pod(LOW_A), delete_pod(LOW_B)),
        tried_again=True,
    ),
    Before(
        "its view nominated elsewhere",
        (feed(changed(HIGH, status__nominatedNodeName="n2")),),
        tried_again=True,
    ),
    Before(
        "a pod of its priority waiting on n2 too",
        (feed(pod("other", "2", scheduler="other", priority=10, nominated="n2")),),
        tried_again=False,
    ),
]


@pytest.mark.parametrize("case", BEFORE, ids=[case.name for case in BEFORE])
def test_a_deletion_elsewhere_moves_it_only_if_what_it_waits_for_changed(
    loop: None, case: Before
) -> None:
    run = Run()
    # n3 keeps too little room for high whatever goes: a deletion there asks about high first,
    # so that the one after the steps is not the first to.
    spare = pod("spare", on="n3", priority=100)
    waiting(run, HIGH, node("n3", "3"), pod("big", "2", on="n3", priority=100), spare)
    delete_pod(spare)(run)
    assert run.where("high") == Where.UNSCHEDULABLE
    for step in case.steps:
        step(run)
    assert run.where("high") == Where.UNSCHEDULABLE, "moved before the deletion"
    delete_pod(KEEP_1)(run)
    assert (run.where("high") != Where.UNSCHEDULABLE) == case.tried_again
