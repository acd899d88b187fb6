"""The fence and the renew deadline, against a local HTTP server that records what reaches it.

A leader whose Lease's renew deadline has passed by its own clock sends no write: not a bind,
not an event, not a status, not even a renewal. The clock here is a fake one that the server
moves while it holds a request, as a process frozen with that request in flight would find it
moved when it resumes; a renewal answered after the deadline does not count."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from test_kube_client import kubeconfig

from policy_scheduler.cli import _election, build_parser
from policy_scheduler.kube import transport
from policy_scheduler.kube.client import ApiError, Kube, NotLeading, pod_path
from policy_scheduler.kube.credentials import load
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.timings import LeaseTimings

LEASES = "/apis/coordination.k8s.io/v1/namespaces/sched/leases"
LEASE = f"{LEASES}/policy-scheduler"
BIND = pod_path("ns", "web-0", "binding")
TIMINGS = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=0.01)

Hook = Callable[[], Awaitable[None]]


class FakeClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Server:
    """An API server that keeps one Lease and answers every other request with ``{}``.

    It records each request as ``(method, path)``; ``hooks[(method, n)]`` runs before the
    ``n``-th request of that method on the Lease is answered (counting from 1)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.hooks: dict[tuple[str, int], Hook] = {}
        self.lease: dict[str, Any] | None = None
        self.stopping = asyncio.Event()
        self._counts: dict[str, int] = {}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        if request.path.startswith(LEASES):
            count = self._counts[request.method] = self._counts.get(request.method, 0) + 1
            hook = self.hooks.get((request.method, count))
            if hook is not None:
                await hook()
            return await self._lease(request)
        if request.query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"type": "ADDED"}\n{"type": "DELETED"}\n')
            return response
        return web.json_response({})

    async def _lease(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            if self.lease is None:
                return web.json_response({"message": "not found"}, status=404)
            return web.json_response(self.lease)
        self.lease = await request.json()
        return web.json_response(self.lease)

    def sent(self, method: str, path: str) -> int:
        return self.requests.count((method, path))

    async def hang(self) -> None:
        """Never answer (until the server stops)."""
        await self.stopping.wait()


@asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[tuple[Server, Kube]]:
    """The server, and a client of it."""
    server = Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kube = Kube(load(kubeconfig(tmp_path, f"http://127.0.0.1:{port}")), concurrency=4)
    try:
        yield server, kube
    finally:
        server.stopping.set()
        await kube.close()
        await runner.cleanup()


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(scenario, timeout=20))


def elected(kube: Kube, clock: Callable[[], float], timings: LeaseTimings) -> LeaderElection:
    """An election whose Lease fences ``kube``, as ``policy-scheduler run`` wires them."""
    election = LeaderElection(kube, "sched", timings=timings, clock=clock)
    kube.fence(lambda: election.leading, election.lease)
    return election


@pytest.mark.parametrize(
    ("method", "leading", "fenced", "sent"),
    [
        pytest.param("POST", True, True, True, id="a bind while leading"),
        pytest.param("POST", False, True, False, id="a bind after the deadline"),
        pytest.param("PUT", False, True, False, id="a replace after the deadline"),
        pytest.param("PATCH", False, True, False, id="a status patch after the deadline"),
        pytest.param("DELETE", False, True, False, id="a delete after the deadline"),
        pytest.param("GET", False, True, True, id="a read is never fenced"),
        pytest.param("PUT", False, False, True, id="the Lease's own write"),
    ],
)
def test_the_fence_holds_back_writes_once_the_replica_does_not_lead(
    tmp_path: Path, method: str, leading: bool, fenced: bool, sent: bool
) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            kube.fence(lambda: leading, "sched/policy-scheduler")
            request = kube.request(method, BIND, None if method == "GET" else {}, fenced=fenced)
            if sent:
                assert await request == {}
            else:
                with pytest.raises(NotLeading) as refused:
                    await request
                assert isinstance(refused.value, ApiError)
                assert refused.value.status == 0
                assert refused.value.message == (
                    f"{method} {BIND}: not sent: the renew deadline of Lease "
                    "sched/policy-scheduler has passed by this replica's clock, so it may no "
                    "longer lead"
                )
            assert server.sent(method, BIND) == int(sent)

    run(scenario())


def test_the_fence_is_asked_once_the_connection_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fence closing while the connection opened (the replica frozen in the TCP or TLS
    handshake) still holds the request back: it is asked after the opening, once, right before
    the first byte would be written."""
    opened: list[bool] = []
    connection_made = transport._Connection.connection_made

    def record(connection: transport._Connection, socket: asyncio.BaseTransport) -> None:
        opened.append(True)
        connection_made(connection, socket)

    monkeypatch.setattr(transport._Connection, "connection_made", record)

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            asked: list[bool] = []

            def leading() -> bool:
                asked.append(bool(opened))
                return not opened

            kube.fence(leading, "sched/policy-scheduler")
            with pytest.raises(NotLeading):
                await kube.request("POST", BIND, {"kind": "Binding"})
            assert asked == [True], "the fence was not asked once, after the opening"
            assert server.requests == []

    run(scenario())


def test_without_a_fence_every_write_is_sent(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            await kube.request("POST", BIND, {})
            assert server.sent("POST", BIND) == 1

    run(scenario())


def test_a_watch_is_never_fenced(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as (_, kube):
            kube.fence(lambda: False, "sched/policy-scheduler")
            seen = [event["type"] async for event in kube.stream("/api/v1/pods?watch=1", 5)]
            assert seen == ["ADDED", "DELETED"]

    run(scenario())


@pytest.mark.parametrize(
    ("since_taken", "leading"),
    [
        pytest.param(0.0, True, id="just taken"),
        pytest.param(9.9, True, id="before the deadline"),
        pytest.param(10.0, False, id="at the deadline"),
        pytest.param(60.0, False, id="resumed long after it (SIGSTOP)"),
    ],
)
def test_a_replica_leads_and_writes_until_its_renew_deadline_by_its_own_clock(
    tmp_path: Path, since_taken: float, leading: bool
) -> None:
    """No renewal runs in between: what the clock says is enough, so the first write after a
    freeze is held back before any renewal gets to run."""

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            clock = FakeClock()
            election = elected(kube, clock, TIMINGS)
            assert not election.leading
            await election.acquire()
            clock.now += since_taken
            assert election.leading is leading
            if leading:
                await kube.request("POST", BIND, {})
            else:
                with pytest.raises(NotLeading):
                    await kube.request("POST", BIND, {})
            assert server.sent("POST", BIND) == int(leading)

    run(scenario())


def test_a_renewal_answered_after_the_deadline_does_not_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer comes, a success, but the clock has passed the deadline meanwhile (the replica
    was frozen with the renewal in flight): the Lease is lost, nothing more is written."""

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            clock = FakeClock()
            election = elected(kube, clock, TIMINGS)
            await election.acquire()

            async def frozen() -> None:
                clock.now += TIMINGS.renew_deadline

            server.hooks[("PUT", 1)] = frozen
            await election.hold()
            assert not election.leading
            assert server.sent("PUT", LEASE) == 1
            with pytest.raises(NotLeading):
                await kube.request("POST", BIND, {})

    caplog.set_level(logging.ERROR, logger="policy_scheduler.kube.leader")
    run(scenario())
    assert [r.getMessage() for r in caplog.records] == [
        "lost Lease sched/policy-scheduler: not renewed within the renew deadline (10 s) by "
        "this replica's clock"
    ]


def test_a_renewal_frozen_between_its_read_and_its_write_is_not_sent(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            clock = FakeClock()
            election = elected(kube, clock, TIMINGS)
            await election.acquire()  # GET 1 (no Lease yet), then POST

            async def frozen() -> None:
                clock.now += TIMINGS.renew_deadline

            server.hooks[("GET", 2)] = frozen
            await election.hold()
            assert server.sent("GET", LEASE) == 2
            assert server.sent("PUT", LEASE) == 0

    run(scenario())


@pytest.mark.parametrize(
    ("answered_after", "then", "leading"),
    [
        pytest.param(4.0, 5.9, True, id="before the deadline from the start"),
        pytest.param(4.0, 6.0, False, id="at the deadline from the start"),
    ],
)
def test_a_renewal_counts_from_when_it_started(
    tmp_path: Path, answered_after: float, then: float, leading: bool
) -> None:
    """The API server may have stored the renewal as soon as it was sent: a successor's wait
    starts from there, so this replica's deadline does too, however late the answer."""

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            clock = FakeClock()
            election = elected(kube, clock, TIMINGS)
            await election.acquire()
            started = clock.now
            renewing_again = asyncio.Event()

            async def slow() -> None:
                clock.now += answered_after

            async def park() -> None:
                renewing_again.set()
                await server.hang()

            server.hooks[("PUT", 1)] = slow
            server.hooks[("GET", 3)] = park  # the next renewal: the first one has been counted
            holding = asyncio.get_running_loop().create_task(election.hold())
            await renewing_again.wait()
            holding.cancel()
            clock.now = started + answered_after + then
            assert election.leading is leading

    run(scenario())


def test_a_renewal_without_an_answer_is_given_up_at_the_deadline(tmp_path: Path) -> None:
    """An API server frozen with the renewal in flight: the renewal is abandoned when the renew
    deadline passes, not when the request times out or the answer comes."""
    timings = LeaseTimings(lease_duration=3.0, renew_deadline=0.5, retry_period=0.05)

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            loop = asyncio.get_running_loop()
            election = elected(kube, loop.time, timings)
            await election.acquire()
            server.hooks[("PUT", 1)] = server.hang
            taken = loop.time()
            await election.hold()
            assert not election.leading
            # Well before the client's own 30 s request timeout.
            assert loop.time() - taken < 5

    run(scenario())


def test_run_fences_its_client_with_its_election(tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", "--leader-elect-resource-namespace", "sched"])

    async def scenario() -> None:
        async with serving(tmp_path) as (server, kube):
            election = _election(args, kube)
            assert election is not None
            with pytest.raises(NotLeading):
                await kube.request("POST", BIND, {})
            await election.acquire()
            await kube.request("POST", BIND, {})
            assert server.sent("POST", BIND) == 1

    run(scenario())
