"""A replica's health (kube/scheduler.py): the loop's death raised from ``serve`` rather than
hidden behind a Lease still renewed, liveness from the loop's heartbeat, readiness from the
watches and the election. Through the scripted client of test_kube_ports.py."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from test_kube_ports import Script

from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.scheduler import STALE_LOOP, KubeScheduler, Unhealthy


class Election:
    """What ``serve`` asks of a LeaderElection: taken at once, held until ``lose`` is set."""

    lease = "policy-scheduler/policy-scheduler"

    def __init__(self, answered: bool = True) -> None:
        self.answered = answered
        self.leading = False
        self.lose = asyncio.Event()

    async def acquire(self) -> None:
        self.leading = True

    async def hold(self) -> None:
        await self.lose.wait()
        self.leading = False


def replica() -> KubeScheduler:
    return KubeScheduler(cast(Kube, Script({"GET": [{"items": []}]})))


async def broken_loop() -> None:
    await asyncio.sleep(0.01)
    raise RuntimeError("a bug outside any plugin")


@pytest.mark.parametrize("with_election", [False, True], ids=["alone", "holding a Lease"])
def test_a_loop_that_dies_is_raised_from_serve_not_hidden(with_election: bool) -> None:
    """Issue 26: the loop's task ended while the Lease kept being renewed."""
    scheduling = replica()
    scheduling.scheduler.run = broken_loop  # type: ignore[method-assign]
    election = Election() if with_election else None
    lost: list[bool] = []

    async def scenario() -> None:
        await scheduling.serve(
            cast(LeaderElection | None, election), on_lost=lambda: lost.append(True)
        )

    with pytest.raises(RuntimeError, match="a bug outside any plugin"):
        asyncio.run(scenario())
    assert lost == []


def test_a_lost_lease_is_told_and_the_loop_stopped() -> None:
    scheduling = replica()
    election = Election()
    lost: list[bool] = []

    async def scenario() -> None:
        serving = asyncio.create_task(
            scheduling.serve(cast(LeaderElection, election), on_lost=lambda: lost.append(True))
        )
        await asyncio.sleep(0.05)
        assert scheduling.liveness()["leading"] is True
        election.lose.set()
        await serving

    asyncio.run(scenario())
    assert lost == [True]
    assert scheduling.liveness() == {"leading": False}


def test_a_leader_whose_loop_stopped_turning_is_not_alive() -> None:
    scheduling = replica()
    scheduling._working = True
    clock = scheduling.scheduler.clock
    scheduling.scheduler.heartbeat = clock.monotonic() - 1
    assert scheduling.liveness()["loopSeconds"] < STALE_LOOP
    scheduling.scheduler.heartbeat = clock.monotonic() - STALE_LOOP - 1
    with pytest.raises(Unhealthy, match="has not gone round"):
        scheduling.liveness()


def test_ready_once_every_watch_is_current_and_it_can_take_part_in_the_election() -> None:
    scheduling = replica()
    ready, report = scheduling.readiness()
    assert not ready
    assert report["reasons"][0].startswith(
        "watches not current: csidrivers, csinodes, csistoragecapacities, deviceclasses, "
        "devicetaintrules, namespaces, nodes"
    )
    for informer in scheduling._informers.values():
        informer.synced.set()
    assert scheduling.readiness() == (True, {"ready": True, "leading": False})
    scheduling._election = cast(LeaderElection, Election(answered=False))
    ready, report = scheduling.readiness()
    assert not ready
    assert report["reasons"] == [
        "cannot take part in the election for Lease policy-scheduler/policy-scheduler"
    ]
