"""The loop's part in what plugins write besides PreBind's, and in their error statuses: a
post-filter's writes (DynamicResources deallocating a claim) and an Unreserve's (DynamicResources
taking a pod out of its claims' reservedFor) go out in the background through the ObjectWriter
port, none in DryRun; a plugin's :class:`StatusError` ends the pod's attempt with its own words,
as kube-scheduler's Error status does.

The plugins are the test's own, so that what is written says what the loop does."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from test_loop import Run, node, pod, policy

from policy_scheduler.framework.interface import (
    Filter,
    NodeStatuses,
    ObjectRef,
    ObjectWriter,
    PostFilter,
    PostFilterResult,
    PreBind,
    Reserve,
    StatusError,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import CompiledPolicy, compile_policy
from policy_scheduler.scheduling import policies
from policy_scheduler.scheduling.queue import Where

CLAIM = ObjectRef("resource.k8s.io/v1", "resourceclaims", "c", "ns", "status")


class Refuses(Filter[None], PostFilter[None]):
    """Rejects every node; its post-filter asks for one write."""

    name = "Refuses"

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return ("refused",)

    def post_filter(self, state: None, cycle: Cycle, statuses: NodeStatuses) -> PostFilterResult:
        patch = {"status": {"allocation": None}}
        return PostFilterResult("deallocated", writes=((CLAIM, patch),))


class Broken(Filter[None]):
    """A filter with an Error status."""

    name = "Broken"

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        raise StatusError('running "Broken" filter plugin: selector does not compile')


class FailsBind(Reserve[None], PreBind[None]):
    """Reserves, then fails PreBind; its Unreserve undoes a write."""

    name = "FailsBind"

    def reserve(self, state: None, pod: PodView, node: str) -> str | None:
        return None

    def unreserve(self, state: None, pod: PodView, node: str) -> None:
        pass

    async def unreserve_writes(
        self, state: None, pod: PodView, node: str, objects: ObjectWriter
    ) -> None:
        await objects.patch(CLAIM, {"status": {"reservedFor": []}})

    def pre_flight(self, state: None, pod: PodView, node: str) -> bool:
        return False

    async def pre_bind(
        self, state: None, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        return 'running PreBind plugin "FailsBind": no'


def run_with(monkeypatch: pytest.MonkeyPatch, *, mode: str = "Enforce", **points: Any) -> Run:
    """One pod ``a`` on one node, decided by the policy with the test's plugins added."""

    def with_plugins(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        filters = points.pop("filters", ())
        compiled.pipeline.filters = [*compiled.pipeline.filters, *filters]
        extensions = dataclasses.replace(compiled.extensions, **points)
        return dataclasses.replace(compiled, extensions=extensions)

    monkeypatch.setattr(policies, "compile_policy", with_plugins)
    run = Run()

    async def scenario() -> None:
        run.scheduler.node_changed(node("n1"))
        run.scheduler.policy_changed(policy(mode))
        run.scheduler.pod_changed(pod("a"))
        await run.scheduler.run_until_idle()
        await run.scheduler.drain()

    asyncio.run(scenario())
    return run


def patches(run: Run) -> list[tuple[ObjectRef, Mapping[str, Any]]]:
    return run.memory.patches


def test_a_post_filters_writes_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    refuses = Refuses()
    run = run_with(monkeypatch, filters=[refuses], post_filter=(refuses,))
    assert patches(run) == [(CLAIM, {"status": {"allocation": None}})]
    assert run.memory.conditions == [("ns/a", "0/1 nodes are available: 1 refused. deallocated")]


def test_a_post_filters_writes_are_not_made_in_dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    refuses = Refuses()
    run = run_with(monkeypatch, mode="DryRun", filters=[refuses], post_filter=(refuses,))
    assert patches(run) == []


def test_unreserve_writes_follow_a_failed_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    fails = FailsBind()
    run = run_with(monkeypatch, reserve=(fails,), pre_bind=(fails,))
    assert patches(run) == [(CLAIM, {"status": {"reservedFor": []}})]
    assert run.memory.errors == [("ns/a", 'running PreBind plugin "FailsBind": no')]


def test_an_error_status_is_told_in_the_plugins_words(monkeypatch: pytest.MonkeyPatch) -> None:
    run = run_with(monkeypatch, filters=[Broken()])
    assert run.memory.errors == [
        ("ns/a", 'running "Broken" filter plugin: selector does not compile')
    ]
    assert run.where("a") is Where.BACKOFF
