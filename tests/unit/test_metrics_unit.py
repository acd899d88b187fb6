"""Metrics: kube-scheduler's buckets, the ``--metrics`` URL, what a registry exposes, the server,
and the status writer's counts."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import Mapping
from typing import Any, cast

import pytest
from prometheus_client.parser import text_string_to_metric_families

from policy_scheduler.cli import build_parser
from policy_scheduler.kube.client import ApiError, Kube
from policy_scheduler.kube.ports import KubeStatusStore
from policy_scheduler.metrics import LATENCY_BUCKETS, Metrics, exponential_buckets
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling.ports import SchedulerState
from policy_scheduler.scheduling.status import StatusWriter
from policy_scheduler.serving import Endpoint, Servers, metrics_route

Samples = Mapping[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def collected(metrics: Metrics) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
    }


def value(found: Samples, metric: str, /, **labels: str) -> float | None:
    return found.get((metric, frozenset(labels.items())))


def test_latency_buckets_are_kube_schedulers_1ms_doubling_15_times() -> None:
    assert len(LATENCY_BUCKETS) == 15
    assert LATENCY_BUCKETS[0] == 0.001
    assert LATENCY_BUCKETS[-1] == pytest.approx(16.384)
    assert exponential_buckets(1, 2, 5) == (1, 2, 4, 8, 16)


@pytest.mark.parametrize(("start", "factor", "count"), [(0, 2, 3), (1, 1, 3), (1, 2, 0)])
def test_exponential_buckets_refuse_what_does_not_grow(
    start: float, factor: float, count: int
) -> None:
    with pytest.raises(ValueError, match="exponential buckets"):
        exponential_buckets(start, factor, count)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://0.0.0.0:8081/metrics", Endpoint("0.0.0.0", 8081, "/metrics")),
        ("http://:9000", Endpoint("localhost", 9000, "/metrics")),
        ("http://example.test/custom", Endpoint("example.test", 8081, "/custom")),
        ("http://example.test", Endpoint("example.test", 8081, "/metrics")),
        ("http://[::1]:8081/metrics", Endpoint("::1", 8081, "/metrics")),
    ],
)
def test_an_endpoint_takes_kopfs_host_and_its_own_port_and_path(
    url: str, expected: Endpoint
) -> None:
    """Never port 80, which the image's non-root user may not bind."""
    assert Endpoint.parse(url, 8081, "/metrics") == expected
    assert Endpoint.parse(str(expected), 8081, "/metrics") == expected


@pytest.mark.parametrize(
    "url", ["https://0.0.0.0:8081/metrics", "0.0.0.0:8081", "http://h:99999/", "http://h/m?x=1"]
)
def test_an_endpoint_is_a_plain_http_url(url: str) -> None:
    with pytest.raises(ValueError, match=r"URL|port"):
        Endpoint.parse(url, 8081, "/metrics")


def test_run_takes_a_metrics_url_and_refuses_others(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "--metrics", "http://0.0.0.0:8081/metrics"])
    assert args.metrics == Endpoint("0.0.0.0", 8081, "/metrics")
    assert parser.parse_args(["run"]).metrics is None  # off unless asked: no port is taken
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["run", "--metrics", ":8081"])
    assert exit_.value.code == 2
    assert "--metrics: ':8081' is not an http://HOST:PORT/PATH URL" in capsys.readouterr().err


def test_attempts_count_and_time_by_result_and_profile() -> None:
    metrics = Metrics()
    metrics.attempt("scheduled", "spread", 0.003)
    metrics.attempt("scheduled", "spread", 20.0)
    metrics.attempt("unschedulable", "zone", 0.0005)
    found = collected(metrics)
    attempts = "scheduler_schedule_attempts_total"
    assert value(found, attempts, result="scheduled", profile="spread") == 2
    assert value(found, attempts, result="unschedulable", profile="zone") == 1
    duration = "scheduler_scheduling_attempt_duration_seconds"
    spread = {"result": "scheduled", "profile": "spread"}
    assert value(found, f"{duration}_bucket", le="0.002", **spread) == 0
    assert value(found, f"{duration}_bucket", le="0.004", **spread) == 1
    assert value(found, f"{duration}_bucket", le="16.384", **spread) == 1
    assert value(found, f"{duration}_bucket", le="+Inf", **spread) == 2
    assert value(found, f"{duration}_sum", **spread) == pytest.approx(20.003)


def test_registries_are_separate() -> None:
    one, other = Metrics(), Metrics()
    one.status_write("success")
    assert value(collected(one), "policy_scheduler_status_writes_total", result="success") == 1
    assert value(collected(other), "policy_scheduler_status_writes_total", result="success") is None


def test_state_is_read_when_collected() -> None:
    metrics = Metrics()
    state = SchedulerState(
        pending_pods={"active": 2, "unschedulable": 1, "in-flight": 4},
        binds_in_flight=3,
        nodes=5,
        pods=40,
        policies_valid={"good": True, "bad": False},
    )
    reads: list[SchedulerState] = []

    def read() -> SchedulerState:
        reads.append(state)
        return state

    metrics.read_state(read)
    assert reads == []  # nothing is read until a scrape
    found = collected(metrics)
    assert len(reads) == 1  # one read per scrape, whatever the number of series
    assert value(found, "scheduler_pending_pods", queue="active") == 2
    assert value(found, "scheduler_pending_pods", queue="backoff") == 0  # empty, still reported
    assert value(found, "scheduler_pending_pods", queue="unschedulable") == 1
    assert value(found, "scheduler_pending_pods", queue="in-flight") is None  # not pending
    # v1.37's queues of pod-group members, reported empty as kube-scheduler reports them while
    # no pod group waits (it has them from the start, whatever the feature gates).
    assert value(found, "scheduler_pending_pods", queue="incomplete") == 0
    assert value(found, "scheduler_pending_pods", queue="pending") == 0
    assert value(found, "policy_scheduler_binds_in_flight") == 3
    assert value(found, "scheduler_cache_size", type="nodes") == 5
    assert value(found, "scheduler_cache_size", type="pods") == 40
    assert value(found, "policy_scheduler_policy_valid", policy="good") == 1
    assert value(found, "policy_scheduler_policy_valid", policy="bad") == 0


def test_leadership_is_read_when_collected() -> None:
    metrics = Metrics()
    assert value(collected(metrics), "leader_election_master_status", name="ps") is None
    leading = False
    metrics.read_lease("ps", lambda: leading)
    assert value(collected(metrics), "leader_election_master_status", name="ps") == 0
    leading = True
    assert value(collected(metrics), "leader_election_master_status", name="ps") == 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def fetch(url: str, accept: str = "") -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_the_server_serves_the_registry_on_its_path_and_stops() -> None:
    metrics = Metrics()
    metrics.decision_recorded("spread", "Enforce", "scheduled")
    endpoint = Endpoint("127.0.0.1", free_port(), "/metrics")

    async def scenario() -> None:
        server = Servers({endpoint: metrics_route(metrics.registry)})
        await server.start()
        loop = asyncio.get_running_loop()
        try:
            content_type, text = await loop.run_in_executor(None, fetch, str(endpoint))
            assert content_type.startswith("text/plain")
            recorded = "policy_scheduler_decisions_recorded_total"
            labels = {"policy": "spread", "mode": "Enforce", "result": "scheduled"}
            assert value(samples(text), recorded, **labels) == 1
            openmetrics = "application/openmetrics-text; version=1.0.0"
            content_type, text = await loop.run_in_executor(None, fetch, str(endpoint), openmetrics)
            assert content_type.startswith("application/openmetrics-text")
            assert text.endswith("# EOF\n")
            with pytest.raises(urllib.error.HTTPError, match="404"):
                await loop.run_in_executor(None, fetch, str(endpoint).replace("/metrics", "/x"))
        finally:
            await server.stop()
        with pytest.raises(OSError):
            await loop.run_in_executor(None, fetch, str(endpoint))

    asyncio.run(scenario())


def test_the_server_reports_an_address_in_use_at_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoint = Endpoint("127.0.0.1", taken.getsockname()[1], "/metrics")

        async def scenario() -> None:
            with pytest.raises(OSError):
                await Servers({endpoint: metrics_route(Metrics().registry)}).start()

        asyncio.run(scenario())


class _StatusApi:
    """Answers status PATCHes with the given HTTP statuses in turn (None: success)."""

    def __init__(self, answers: list[int | None]) -> None:
        self._answers = answers

    async def request(self, method: str, url_path: str, *args: Any) -> dict[str, Any]:
        assert (method, url_path.rpartition("/")[2]) == ("PATCH", "status")
        answer = self._answers.pop(0)
        if answer is not None:
            raise ApiError(answer, "test")
        return {}


def test_the_status_writer_counts_writes_by_result_and_decisions_by_mode() -> None:
    metrics = Metrics()
    store = KubeStatusStore(cast(Kube, _StatusApi([None, 500, 404])))
    writer = StatusWriter(store, lambda: {}, metrics=metrics)
    for name in ("ok", "failing", "deleted"):
        writer.adopt(name, "", {}, history=5)
    bound = Decision("ns/a", "n1", 50, (), {}, total_nodes=1, feasible_nodes=1)
    unschedulable = Decision("ns/b", None, None, (), {"Insufficient cpu": 1}, 1, 0)
    writer.record("ok", bound, dry_run=False)
    writer.record("ok", unschedulable, dry_run=False)
    writer.record("failing", bound, dry_run=True)
    writer.record("unknown", bound, dry_run=False)  # a policy not adopted records nothing
    asyncio.run(writer.flush())
    found = collected(metrics)
    writes = "policy_scheduler_status_writes_total"
    assert value(found, writes, result="success") == 1
    assert value(found, writes, result="error") == 1
    assert value(found, writes, result="not_found") == 1
    recorded = "policy_scheduler_decisions_recorded_total"
    assert value(found, recorded, policy="ok", mode="Enforce", result="scheduled") == 1
    assert value(found, recorded, policy="ok", mode="Enforce", result="unschedulable") == 1
    assert value(found, recorded, policy="failing", mode="DryRun", result="scheduled") == 1
    assert value(found, recorded, policy="unknown", mode="Enforce", result="scheduled") is None
