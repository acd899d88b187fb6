"""Which kinds are watched (issue 28): nodes, pods and policies always; every other kind only
while a served policy has a plugin that reads it or wakes on its events, as kube-scheduler starts
informers for what its enabled plugins register. Through the loop's ports (the
:class:`~policy_scheduler.scheduling.ports.Watches` port told which kinds, the watches confirmed
as the operator's informers confirm them), and through the operator's replica, whose watches
start and stop as the loop says."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from test_kube_ports import Script
from test_loop import Raw, Run, node, pod, policy
from test_loop_storage import Attached

from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.scheduler import KubeScheduler
from policy_scheduler.model import disruption, namespaces, volumes, workloads
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.scheduling import kinds

BUDGETS = "poddisruptionbudgets"


@dataclass
class Told:
    """The :class:`~policy_scheduler.scheduling.ports.Watches` port: what the loop told it, in
    order."""

    told: list[frozenset[str]] = field(default_factory=list)

    def need(self, kinds: frozenset[str]) -> None:
        self.told.append(kinds)


@dataclass
class Watched(Run):
    """The loop with a :class:`Told` port, every watch started and not yet listed, as the
    operator's replica starts it."""

    port: Told = field(default_factory=Told)

    def __post_init__(self) -> None:
        self.watches = self.port
        super().__post_init__()
        for kind in kinds.KINDS:
            self.scheduler.watch_confirmed(kind.watch, False)

    def listed(self, *names: str) -> None:
        for name in names:
            self.scheduler.watch_confirmed(name, True)

    def decide(self) -> list[tuple[str, str]]:
        asyncio.run(self.scheduler.run_until_idle())
        return self.memory.binds


def with_post_filter(raw: Raw, name: str, generation: int) -> Raw:
    """``raw`` at ``generation`` with the post-filter ``name``."""
    edited = copy.deepcopy(raw)
    edited["metadata"]["generation"] = generation
    edited["spec"]["postFilters"] = [{"name": name}]
    return edited


def spreading(raw: Raw, generation: int) -> Raw:
    """``raw`` at ``generation`` with PodTopologySpread (its default constraints) scoring."""
    edited = copy.deepcopy(raw)
    edited["metadata"]["generation"] = generation
    edited["spec"]["priorities"].append({"name": "PodTopologySpread", "weight": 1})
    return edited


def started() -> Watched:
    """A policy that reads no optional kind, a node and a pod; nodes and pods listed."""
    run = Watched()
    run.scheduler.node_changed(node("n1"))
    run.scheduler.policy_changed(policy())
    run.scheduler.pod_changed(pod("a"))
    run.listed("nodes", "pods")
    return run


def test_until_the_policies_are_listed_every_watch_counts() -> None:
    run = started()
    assert run.decide() == []
    assert run.port.told == []
    run.listed("policies")
    # The policy's plugins read nodes and pods only: no other kind is watched, none holds it.
    assert run.port.told == [frozenset()]
    assert run.decide() == [("ns/a", "n1")]


def test_a_kind_a_policy_comes_to_read_holds_the_decisions_until_its_watch_has_listed() -> None:
    run = started()
    run.listed("policies")
    run.scheduler.policy_changed(with_post_filter(policy(), "DefaultPreemption", 2))
    assert run.port.told[-1] == frozenset({disruption.KIND})
    run.scheduler.pod_changed(pod("b"))
    assert run.decide() == []
    run.listed(BUDGETS)
    assert run.decide() == [("ns/a", "n1"), ("ns/b", "n1")]


def test_a_kind_no_policy_reads_any_more_holds_nothing() -> None:
    run = started()
    run.listed("policies")
    run.scheduler.policy_changed(spreading(policy(), 2))
    assert run.port.told[-1] == frozenset(workloads.KINDS)
    assert run.decide() == []
    run.scheduler.policy_changed(policy(generation=3))
    assert run.port.told[-1] == frozenset()
    assert run.decide() == [("ns/a", "n1")]


def test_a_deleted_policy_stops_the_watches_it_needed() -> None:
    run = started()
    run.listed("policies", BUDGETS)
    run.scheduler.policy_changed(with_post_filter(policy(), "DefaultPreemption", 2))
    run.listed(BUDGETS)
    run.scheduler.policy_deleted(policy())
    assert run.port.told[-1] == frozenset()


def test_without_the_port_every_kind_is_at_hand() -> None:
    """``simulate`` and the loop's other tests feed every kind: nothing is held or told."""
    run = Run()
    run.scheduler.node_changed(node("n1"))
    run.scheduler.policy_changed(with_post_filter(policy(), "DefaultPreemption", 1))
    run.scheduler.pod_changed(pod("a"))
    run.scheduler.watch_confirmed("policies", True)
    asyncio.run(run.scheduler.run_until_idle())
    assert run.memory.binds == [("ns/a", "n1")]


def plugins(*predicates: str, priorities: tuple[str, ...] = (), post: str = "") -> Raw:
    spec: dict[str, Any] = {
        "predicates": [{"name": name} for name in predicates],
        "priorities": [{"name": name, "weight": 1} for name in priorities],
    }
    if post:
        spec["postFilters"] = [{"name": post}]
    return {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "p"},
        "spec": spec,
    }


def needed(raw: Raw) -> frozenset[str]:
    return kinds.needed([compile_policy(raw)])


def test_the_kinds_a_policy_needs_are_those_its_plugins_read_or_wake_on() -> None:
    assert needed(plugins("NodeResourcesFit", priorities=("LeastAllocated",))) == frozenset()
    assert needed(plugins("InterPodAffinity")) == {namespaces.KIND}
    assert needed(plugins(priorities=("InterPodAffinity",))) == {namespaces.KIND}
    assert needed(plugins(priorities=("PodTopologySpread",))) == set(workloads.KINDS)
    assert needed(plugins("NodeResourcesFit", post="DefaultPreemption")) == {disruption.KIND}
    # The volume plugins' events name the storage kinds; NodeVolumeLimits reads more.
    assert needed(plugins("VolumeZone")) == {volumes.PVC, volumes.PV, volumes.STORAGE_CLASS}
    assert needed(plugins("NodeVolumeLimits")) == {
        volumes.PVC,
        volumes.PV,
        volumes.STORAGE_CLASS,
        volumes.CSI_NODE,
        volumes.CSI_DRIVER,
        volumes.VOLUME_ATTACHMENT,
    }
    assert needed(plugins("DynamicResources")) == {
        volumes.RESOURCE_CLAIM,
        volumes.RESOURCE_SLICE,
        volumes.DEVICE_CLASS,
        volumes.DEVICE_TAINT_RULE,
    }


def test_a_filter_that_wakes_on_a_deletion_needs_its_kind() -> None:
    compiled = compile_policy(plugins("NodeResourcesFit"))
    compiled.pipeline.filters = [*compiled.pipeline.filters, Attached()]
    assert kinds.needed([compiled]) == {volumes.VOLUME_ATTACHMENT}


class Idle(Script):
    """An API server whose listings never answer: the watches started stay listing."""

    async def pages(
        self, collection: str, params: Mapping[str, str | int]
    ) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()
        yield {}


def test_the_replica_runs_the_watches_the_loop_needs() -> None:
    replica = KubeScheduler(cast(Kube, Idle({})))
    always = {"nodes", "pods", "policies"}

    async def scenario() -> None:
        watching = asyncio.create_task(replica.watch())
        await asyncio.sleep(0)
        # Until the loop has said, every watch runs and counts.
        every = {kind.watch for kind in kinds.KINDS}
        assert set(replica._tasks) == set(replica.watch_state()) == every
        replica.need(frozenset({disruption.KIND}))
        assert set(replica._tasks) == always | {BUDGETS}
        assert set(replica.watch_state()) == always | {BUDGETS}
        budgets = replica._tasks[BUDGETS]
        replica.need(frozenset())
        await asyncio.sleep(0)
        assert budgets.cancelled()
        assert set(replica._tasks) == always
        assert set(replica.watch_state()) == always
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)

    asyncio.run(scenario())


BUDGET = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "b1", "resourceVersion": "1"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 0},
}


PREEMPTING = with_post_filter(policy(), "DefaultPreemption", 1)


class OneBudget(Idle):
    """An API server that lists a policy with DefaultPreemption and one PodDisruptionBudget,
    and nothing of any other kind; its watches stay open and quiet."""

    async def pages(
        self, collection: str, params: Mapping[str, str | int]
    ) -> AsyncIterator[dict[str, Any]]:
        items = {"poddisruptionbudgets": [BUDGET], "schedulingpolicies": [PREEMPTING]}
        yield {
            "metadata": {"resourceVersion": "1"},
            "items": items.get(collection.rsplit("/", maxsplit=1)[-1]),
        }

    async def stream(self, url_path: str, read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()
        yield {}


async def turns() -> None:
    """Let the watches' tasks run until they wait on the API server."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_a_watch_stopped_leaves_nothing_of_its_kind_in_the_cache() -> None:
    replica = KubeScheduler(cast(Kube, OneBudget({})))
    scheduler = replica.scheduler
    budgets = scheduler.cache.snapshot.disruption_budgets

    async def scenario() -> None:
        watching = asyncio.create_task(replica.watch())
        await turns()
        assert [budget.name for budget in budgets.in_namespace("ns")] == ["web"]
        assert not scheduler._unconfirmed
        scheduler.policy_deleted(PREEMPTING)
        assert len(budgets) == 0
        assert BUDGETS not in replica._tasks
        scheduler.policy_changed(PREEMPTING)
        assert BUDGETS in scheduler._unconfirmed
        await turns()
        assert [budget.name for budget in budgets.in_namespace("ns")] == ["web"]
        assert not scheduler._unconfirmed
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)

    asyncio.run(scenario())
