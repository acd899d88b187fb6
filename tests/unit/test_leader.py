"""Leader election without a server: what is logged when the Lease cannot be taken, and how often.

The case that matters is a fresh cluster where the Lease's namespace does not exist: the operator
must say once what is missing and how to fix it, then retry quietly until it is fixed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, cast

import pytest

from policy_scheduler.kube.client import ApiError, Kube
from policy_scheduler.kube.leader import LeaderElection, lease_problem
from policy_scheduler.kube.timings import LeaseTimings

MISSING = ApiError(404, 'namespaces "sched" not found')


def test_a_missing_namespace_is_an_error_that_says_how_to_fix_it() -> None:
    level, line = lease_problem(MISSING, "sched", "policy-scheduler", 2.0)
    assert level == logging.ERROR
    assert line.startswith('Lease sched/policy-scheduler: namespaces "sched" not found: ')
    assert "nothing is scheduled" in line
    assert "kubectl create namespace sched" in line
    assert "--leader-elect-resource-namespace" in line
    assert "--leader-elect=false" in line
    assert line.endswith("retrying every 2 s")


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ApiError(404, 'namespaces "other" not found'), id="another namespace"),
        pytest.param(ApiError(404, 'leases.coordination.k8s.io "x" not found'), id="lease gone"),
        pytest.param(ApiError(403, "leases is forbidden"), id="forbidden"),
        pytest.param(ApiError(0, "PUT /apis/...: connection refused"), id="unreachable"),
    ],
)
def test_other_failures_are_warnings_with_the_servers_message(error: ApiError) -> None:
    assert lease_problem(error, "sched", "policy-scheduler", 2.0) == (
        logging.WARNING,
        f"Lease sched/policy-scheduler: {error.message}",
    )


class NamespaceAppears:
    """The Lease API of a cluster whose namespace ``sched`` is created after ``missing`` tries to
    create the Lease in it."""

    def __init__(self, missing: int) -> None:
        self.missing = missing
        self.lease: dict[str, Any] | None = None

    async def request(
        self,
        method: str,
        url_path: str,
        body: Mapping[str, Any] | None = None,
        *,
        fenced: bool = True,
    ) -> dict[str, Any]:
        if method == "GET":
            if self.lease is None:
                raise ApiError(404, 'leases.coordination.k8s.io "policy-scheduler" not found')
            return self.lease
        assert method == "POST" and body is not None
        if self.missing:
            self.missing -= 1
            raise MISSING
        self.lease = dict(body)
        return self.lease


def test_a_missing_namespace_is_told_once_and_the_lease_taken_once_it_exists(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = NamespaceAppears(missing=5)
    election = LeaderElection(
        cast(Kube, api), "sched", timings=LeaseTimings(60, 30, retry_period=0.001)
    )
    caplog.set_level(logging.DEBUG, logger="policy_scheduler.kube.leader")

    asyncio.run(asyncio.wait_for(election.acquire(), timeout=10))

    assert election.leading
    told = [r for r in caplog.records if "not found" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.ERROR] + [logging.DEBUG] * 4
    assert "kubectl create namespace sched" in told[0].getMessage()


def test_the_problem_is_told_again_when_it_comes_back_after_a_success(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = NamespaceAppears(missing=1)
    election = LeaderElection(cast(Kube, api), "sched", timings=LeaseTimings(60, 30, 0.001))

    async def scenario() -> None:
        await election.acquire()
        # The namespace deleted and created again: its Lease is gone with it.
        api.lease, api.missing = None, 1
        await election.acquire()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))

    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
