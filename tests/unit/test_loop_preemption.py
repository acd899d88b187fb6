"""The loop acting on a preemption (issue 14), through its in-memory ports: a stand-in
PostFilter returns a :class:`~policy_scheduler.framework.interface.Preemption`, and the loop evicts,
nominates, records and tells as kube-scheduler's ``prepareCandidate`` and nominating do (Enforce),
or only records and tells (DryRun). Which pods DefaultPreemption picks is its own tests' affair.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from test_loop import Raw, Run, delete_pod, feed, later, node, pod, policy, settle

from policy_scheduler.framework.interface import PostFilter, PostFilterResult, Preemption
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model import disruption
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import CompiledPolicy, compile_policy
from policy_scheduler.runtime.framework import ExtensionPoints
from policy_scheduler.scheduling import policies
from policy_scheduler.scheduling.ports import PreemptedBy
from policy_scheduler.scheduling.queue import Where
from policy_scheduler.scheduling.status import VICTIMS_LIMIT
from policy_scheduler.simulate import InMemory

LOW_A = pod("low-a", on="n1")
LOW_B = pod("low-b", on="n1")
HIGH = pod("high", "2", priority=10)
WHY = "node n1: the fewest victims of the lowest priority"
CONDITION = "test: preempting to accommodate a higher priority pod"


class Preempting(PostFilter[None]):
    """Makes room for ``high`` on n1 by evicting ``victims``, ``times`` times; for any other
    pod, or once spent, it finds nothing."""

    name = "Preempting"

    def __init__(self, victims: list[Raw], times: int = 1) -> None:
        self.victims = tuple(PodView(raw) for raw in victims)
        self.times = times

    def post_filter(self, state: None, cycle: Cycle, statuses: Any) -> PostFilterResult:
        if cycle.pod.name != "high" or not self.times:
            return PostFilterResult("preemption: no victims.")
        self.times -= 1
        return PostFilterResult("", Preemption("n1", self.victims, 1, WHY))


@pytest.fixture
def run() -> Iterator[Run]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield Run()
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def with_post_filter(monkeypatch: pytest.MonkeyPatch, *plugins: PostFilter[Any]) -> None:
    """Every policy compiled from now on runs ``plugins`` as its post-filters."""

    def compiled(obj: Any) -> CompiledPolicy:
        return dataclasses.replace(compile_policy(obj), extensions=ExtensionPoints.of(plugins))

    monkeypatch.setattr(policies, "compile_policy", compiled)  # as the table compiles


def test_enforce_evicts_the_victims_and_nominates_the_pod(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B]))
    # Pods of another scheduler nominated by it: theirs to clear, whatever their priority.
    other = pod("other", scheduler="default-scheduler", priority=5, nominated="n1")
    keeps = pod("keeps", scheduler="default-scheduler", priority=20, nominated="n2")
    feed(node("n1"), node("n2", "1"), policy(), LOW_A, LOW_B, other, keeps, HIGH)(run)
    settle()(run)

    assert run.memory.preemptions == [
        ("ns/low-a", "ns/high", "n1", CONDITION),
        ("ns/low-b", "ns/high", "n1", CONDITION),
    ]
    assert run.memory.nominations == [("ns/high", "n1")]
    assert run.memory.binds == []
    # Until the watch shows its victims terminating or gone.
    assert run.where("high") is Where.GATED
    assert run.reasons("high") == ["FailedScheduling", "Preempting"]
    told = run.memory.events[-1][3]
    assert "ns/low-a, ns/low-b" in told
    assert "(1 against a PodDisruptionBudget)" in told
    assert WHY in told
    (decision,) = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert decision["node"] is None
    assert decision["preemption"] == {
        "node": "n1",
        "victims": ["ns/low-a", "ns/low-b"],
        "victimCount": 2,
        "pdbViolations": 1,
        "why": WHY,
    }
    assert "dryRun" not in decision


def test_the_nominated_pod_holds_the_room_and_binds_once_the_victims_are_gone(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B]))
    feed(node("n1"), policy(), LOW_A, LOW_B, HIGH)(run)
    settle()(run)
    assert run.where("high") is Where.GATED

    # One victim gone: high waits for the other, and the CPU freed is its, not a newcomer's
    # of lower priority, though the newcomer would fit there.
    delete_pod(LOW_A)(run)
    feed(pod("late", priority=1))(run)
    later(20)(run)  # past high's backoff
    settle()(run)
    assert run.memory.binds == []
    assert run.where("late") is Where.UNSCHEDULABLE
    assert run.where("high") is Where.GATED
    assert run.reasons("high") == ["FailedScheduling", "Preempting"]

    delete_pod(LOW_B)(run)
    later(20)(run)
    settle()(run)
    assert run.memory.binds == [("ns/high", "n1")]
    assert run.reasons("high")[-1] == "Scheduled"


def test_a_preemption_takes_the_nomination_of_own_pods_of_lower_priority_and_retries_them(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_post_filter(monkeypatch, Preempting([LOW_A]))
    # Ours, nominated to n1 by an earlier preemption, parked: its nodeSelector fits no node.
    mine = pod("mine", priority=1, nominated="n1", selector={"only": "n2"})
    feed(node("n1"), policy(), LOW_A, LOW_B, mine)(run)
    settle()(run)
    assert run.where("mine") is Where.UNSCHEDULABLE
    entry = run.scheduler.queue.get("mine")
    assert entry is not None and entry.attempts == 1

    feed(HIGH)(run)
    settle()(run)
    assert ("ns/mine", "") in run.memory.nominations
    # Moved, as kube-scheduler's update of the pod moves it, and with nothing else to decide
    # tried again at once (kube-scheduler's SchedulerPopFromBackoffQ).
    assert entry.attempts == 2
    assert run.where("mine") is Where.UNSCHEDULABLE


def test_dry_run_records_whom_it_would_evict_and_evicts_nothing(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B]))
    other = pod("other", scheduler="default-scheduler", priority=5, nominated="n1")
    feed(node("n1"), policy("DryRun"), LOW_A, LOW_B, other, HIGH)(run)
    settle()(run)

    assert run.memory.preemptions == []
    assert run.memory.nominations == []
    assert run.memory.binds == []
    assert run.reasons("high") == ["FailedScheduling", "DryRunPreempted"]
    told = run.memory.events[-1][3]
    assert told.startswith("SchedulingPolicy test (DryRun) would evict ns/low-a, ns/low-b (1 ")
    assert told.endswith("; nothing was evicted")
    (decision,) = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert decision["dryRun"] is True
    assert decision["preemption"]["victims"] == ["ns/low-a", "ns/low-b"]

    # The victims stay, and nothing holds n1 for high: a pod of lower priority (above other's)
    # still fits there once a victim goes.
    delete_pod(LOW_A)(run)
    feed(pod("late", priority=6))(run)
    later(20)(run)
    settle()(run)
    assert run.reasons("late") == ["DryRunScheduled"]


def test_a_preemption_of_many_victims_is_bounded_in_the_status(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    many = [pod(f"v{i}", "0", on="n1") for i in range(40)]
    with_post_filter(monkeypatch, Preempting(many))
    feed(node("n1", "1"), policy(), *many, HIGH)(run)
    settle()(run)
    (decision,) = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert len(decision["preemption"]["victims"]) == VICTIMS_LIMIT
    assert decision["preemption"]["victimCount"] == 40
    assert "and 30 more" in run.memory.events[-1][3]
    assert len(run.memory.preemptions) == 40


PDB: Raw = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "pdb1", "resourceVersion": "1"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 0},
}


def test_the_disruption_budgets_feed_the_snapshot(run: Run) -> None:
    run.scheduler.changed(disruption.KIND, PDB)
    budgets = run.scheduler.cache.snapshot.disruption_budgets
    assert [budget.name for budget in budgets.in_namespace("ns")] == ["web"]
    run.scheduler.deleted(disruption.KIND, PDB)
    assert len(budgets) == 0


def test_default_preemption_through_the_loop(run: Run) -> None:
    """The policy's own DefaultPreemption (spec.postFilters) end to end in memory: high evicts
    the one pod of lower priority it needs gone, is nominated, and is bound once that pod's
    deletion arrives; the pod of higher priority than high stays."""
    preempting = policy()
    preempting["spec"]["postFilters"] = [{"name": "DefaultPreemption"}]
    low = pod("low", on="n1", priority=1)
    keep = pod("keep", on="n1", priority=100)
    feed(node("n1"), preempting, low, keep, pod("high", "1", priority=10))(run)
    settle()(run)
    assert [victim for victim, *_ in run.memory.preemptions] == ["ns/low"]
    assert run.memory.nominations == [("ns/high", "n1")]
    assert run.reasons("high") == ["FailedScheduling", "Preempting"]
    (decision,) = run.scheduler.status.body("test", 0)["status"]["decisions"]
    assert decision["preemption"]["victims"] == ["ns/low"]

    delete_pod(low)(run)
    later(20)(run)
    settle()(run)
    assert run.memory.binds == [("ns/high", "n1")]


def test_a_dry_run_preemption_is_told_once_while_it_stays_the_same(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B], times=3))
    feed(node("n1"), policy("DryRun"), LOW_A, LOW_B, HIGH)(run)
    settle()(run)
    # Tried again (the queue's timeout), the same preemption found: nothing new to tell.
    later(400)(run)
    settle()(run)
    entry = run.scheduler.queue.get("high")
    assert entry is not None and entry.attempts == 2
    assert run.reasons("high") == ["FailedScheduling", "DryRunPreempted"]
    assert len(run.scheduler.status.body("test", 0)["status"]["decisions"]) == 1


def decide_ready(run: Run) -> None:
    """Decide every pod ready now, without waiting for evictions under way (settle does)."""

    async def cycles() -> None:
        while run.scheduler.schedule_next():
            await asyncio.sleep(0)

    asyncio.get_event_loop().run_until_complete(cycles())


def terminating(raw: Raw) -> Raw:
    """The pod as the watch shows it once its deletion is under way."""
    return {**raw, "metadata": {**raw["metadata"], "deletionTimestamp": "2026-01-01T00:00:09Z"}}


class SlowEvictions(InMemory):
    """Evictions that take until ``done`` is set, as API calls under way do."""

    def __init__(self) -> None:
        super().__init__()
        self.done = asyncio.Event()

    async def preempt(
        self, victim: PodView, preemptor: PodView, by: PreemptedBy, condition_message: str
    ) -> bool:
        evicted = await super().preempt(victim, preemptor, by, condition_message)
        await self.done.wait()
        return evicted


# A preemptor moved back (by any victim's deletion) before the watch shows its victims
# terminating would choose them again, and delete each twice.
def test_a_preemptor_waits_for_its_evictions_before_it_is_decided_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        slow = SlowEvictions()
        run = Run(memory=slow)
        with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B], times=2))
        feed(node("n1"), policy(), LOW_A, LOW_B, HIGH, pod("elsewhere", on="n1"))(run)
        decide_ready(run)
        # A deletion moves high back while its evictions are under way.
        delete_pod(pod("elsewhere", on="n1"))(run)
        later(20)(run)
        decide_ready(run)
        assert len(slow.preemptions) == 2, "the same victims evicted again"
        assert run.reasons("high") == ["FailedScheduling", "Preempting"]
        assert run.where("high") is Where.GATED
        slow.done.set()
        settle()(run)
        assert run.where("high") is Where.GATED
        # The evictions are over and the watch shows the victims terminating: high waits
        # parked, as kube-scheduler's preemptor (its DefaultPreemption PreEnqueue lets it
        # through, no event moves it), until a deletion may have made room.
        feed(terminating(LOW_A), terminating(LOW_B))(run)
        later(20)(run)
        settle()(run)
        entry = run.scheduler.queue.get("high")
        assert entry is not None and (entry.where, entry.attempts) == (Where.UNSCHEDULABLE, 1)
        delete_pod(LOW_A)(run)
        settle()(run)
        assert entry.attempts == 2
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def test_a_preemptor_whose_victims_left_before_its_evictions_ended_is_decided_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The victims' deletions came while it was held: none is left to move it, so it is
    decided again once its evictions are over."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        slow = SlowEvictions()
        run = Run(memory=slow)
        with_post_filter(monkeypatch, Preempting([LOW_A, LOW_B]))
        feed(node("n1"), policy(), LOW_A, LOW_B, HIGH)(run)
        decide_ready(run)
        delete_pod(LOW_A)(run)
        delete_pod(LOW_B)(run)
        assert run.where("high") is Where.GATED
        slow.done.set()
        settle()(run)  # the evictions end
        later(20)(run)
        settle()(run)
        assert run.memory.binds == [("ns/high", "n1")]
    finally:
        loop.close()
        asyncio.set_event_loop(None)


class Saying(PostFilter[None]):
    """Says ``result`` of every pod."""

    def __init__(self, name: str, result: PostFilterResult) -> None:
        self.name = name
        self.result = result

    def post_filter(self, state: None, cycle: Cycle, statuses: Any) -> PostFilterResult:
        return self.result


@pytest.mark.parametrize(
    ("results", "ends"),
    [
        pytest.param(
            [PostFilterResult("none here"), PostFilterResult("preemption: x.")],
            " none here, preemption: x.",
            id="the post-filters' words joined, as kube joins their reasons",
        ),
        pytest.param(
            [PostFilterResult("not found", final=True), PostFilterResult("preemption: x.")],
            " not found",
            id="a final one's words alone, and no post-filter after it",
        ),
        pytest.param(
            [
                PostFilterResult("none here"),
                PostFilterResult("preemption: found n1", Preemption("n1", (PodView(LOW_A),), 0)),
            ],
            "cpu. preemption: found n1",
            id="room made: the words of the one that made it alone (v1.37)",
        ),
    ],
)
def test_what_the_post_filters_say_ends_the_message(
    run: Run, monkeypatch: pytest.MonkeyPatch, results: list[PostFilterResult], ends: str
) -> None:
    with_post_filter(monkeypatch, *(Saying(f"p{i}", r) for i, r in enumerate(results)))
    feed(node("n1", "1"), policy(), HIGH)(run)
    settle()(run)
    (message,) = [m for key, m in run.memory.conditions if key == "ns/high"]
    assert message.endswith(ends) and message.count(ends) == 1


@pytest.mark.parametrize(
    ("results", "cleared"),
    [
        pytest.param([], True, id="no post-filter: the nomination is cleared"),
        pytest.param(
            [PostFilterResult("preemption: 0/1 nodes are available.", clears_nomination=True)],
            True,
            id="preemption cannot help: cleared",
        ),
        pytest.param(
            [PostFilterResult("preemption: victims still terminating.")],
            False,
            id="preemption not tried now (victims terminating): kept",
        ),
    ],
)
def test_a_pod_that_fits_nowhere_keeps_its_nomination_only_while_preemption_may_help(
    run: Run, monkeypatch: pytest.MonkeyPatch, results: list[PostFilterResult], cleared: bool
) -> None:
    """kube-scheduler's schedulingAlgorithm: the nominating info of a failed attempt clears the
    pod's nominatedNodeName unless a post-filter left it (nil PostFilterResult)."""
    with_post_filter(monkeypatch, *(Saying(f"p{i}", r) for i, r in enumerate(results)))
    feed(node("n1", "1"), policy(), pod("high", "2", priority=10, nominated="n1"))(run)
    settle()(run)
    assert run.memory.nominations == ([("ns/high", "")] if cleared else [])
    # A pod nominated no more holds no room against others.
    holding = run.scheduler._holding_room(PodView(pod("b"))).by_node
    assert [p.name for p in holding.get("n1", ())] == ([] if cleared else ["high"])
