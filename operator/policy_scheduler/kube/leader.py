"""Lease-based leader election (coordination.k8s.io/v1), as kube-scheduler does it.

Every replica keeps its cache warm from the watches; only the holder of the Lease decides, binds
and writes policy status. The holder renews the Lease every ``retry_period``; a replica that could
not renew for ``renew_deadline`` stops leading. Another replica takes the Lease over once it has
seen the same holder and renew time, unchanged, for ``lease_duration`` by its *own* clock, so
clock skew between machines does not matter (client-go's observed-time rule). On a clean stop
the holder releases the Lease, so a successor need not wait for it to expire.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.kube.client import ApiError, Kube, path
from policy_scheduler.kube.timings import LeaseTimings

logger = logging.getLogger(__name__)

DEFAULT_TIMINGS = LeaseTimings()


def lease_problem(
    error: ApiError, namespace: str, name: str, retry_period: float
) -> tuple[int, str]:
    """The level and the line to log when taking or renewing the Lease failed with ``error``.

    A missing namespace is the one failure that never heals by itself, and the first thing a user
    meets who runs the operator on a fresh cluster: the API server's answer alone ("namespaces
    ... not found", all kube-scheduler logs) does not say that nothing will be scheduled, nor what
    to do, so the line says both."""
    line = f"Lease {namespace}/{name}: {error.message}"
    if error.status == 404 and error.message == f'namespaces "{namespace}" not found':
        return logging.ERROR, (
            f"{line}: this replica cannot lead, so nothing is scheduled; create the namespace "
            f"(kubectl create namespace {namespace}), choose one that exists "
            "(--leader-elect-resource-namespace), or run without leader election "
            f"(--leader-elect=false); retrying every {retry_period:g} s"
        )
    return logging.WARNING, line


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """Unique per process, readable per machine, as kube-scheduler's ``hostname_uuid``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElection:
    """One replica's part in the election for a Lease: acquire it, hold it by renewing within
    the renew deadline, release it on a clean stop."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        *,
        name: str = "policy-scheduler",
        identity: str | None = None,
        timings: LeaseTimings = DEFAULT_TIMINGS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self._timings = timings
        self._clock = clock
        self._observed: tuple[Any, Any] | None = None
        self._observed_at = 0.0
        self._reported: str | None = None
        self.leading = False

    async def acquire(self) -> None:
        """Return once this process holds the Lease."""
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self._timings.retry_period)
        self.leading = True
        logger.info("leading: holding Lease %s/%s as %s", self.namespace, self.name, self.identity)

    async def hold(self) -> None:
        """Renew the Lease until a renewal has not succeeded for the renew deadline."""
        renewed = self._clock()
        while self._clock() - renewed < self._timings.renew_deadline:
            await asyncio.sleep(self._timings.retry_period)
            if await self._try_acquire_or_renew():
                renewed = self._clock()
        self.leading = False
        logger.error(
            "lost Lease %s/%s: not renewed for %.0f s",
            self.namespace,
            self.name,
            self._timings.renew_deadline,
        )

    async def release(self) -> None:
        """Give the Lease up (on a clean stop), so a standby takes over at once."""
        if not self.leading:
            return
        self.leading = False
        try:
            lease = await self._read()
            if lease is None or lease["spec"].get("holderIdentity") != self.identity:
                return
            lease["spec"].update(holderIdentity="", leaseDurationSeconds=1)
            await self._write(lease)
        except ApiError as error:
            logger.warning("could not release the Lease: %s", error.message)

    async def _read(self) -> dict[str, Any] | None:
        try:
            lease = await self._kube.request("GET", self._path(self.name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        lease.setdefault("spec", {})
        return lease

    async def _write(self, lease: dict[str, Any]) -> None:
        await self._kube.request("PUT", self._path(self.name), lease)

    def _path(self, *name: str) -> str:
        return path(
            "apis", "coordination.k8s.io", "v1", "namespaces", self.namespace, "leases", *name
        )

    async def _try_acquire_or_renew(self) -> bool:
        try:
            taken = await self._attempt()
        except ApiError as error:
            # 409: a rival wrote the Lease between our read and our write; not a problem.
            if error.status != 409:
                self._report(error)
            return False
        self._reported = None
        return taken

    def _report(self, error: ApiError) -> None:
        """Log a problem when it first appears; its repeats, one per retry period until it is
        fixed, go to debug, so that the line that says what is wrong is not buried."""
        level, line = lease_problem(error, self.namespace, self.name, self._timings.retry_period)
        logger.log(logging.DEBUG if line == self._reported else level, line)
        self._reported = line

    async def _attempt(self) -> bool:
        """Take or renew the Lease if it is free or ours; False while another holds it."""
        now = _micro_time()
        duration = int(self._timings.lease_duration)
        lease = await self._read()
        if lease is None:
            await self._kube.request(
                "POST",
                self._path(),
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {
                        "holderIdentity": self.identity,
                        "leaseDurationSeconds": duration,
                        "acquireTime": now,
                        "renewTime": now,
                        "leaseTransitions": 0,
                    },
                },
            )
            return True
        spec = lease["spec"]
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()
        held_by_other = holder and holder != self.identity
        expires = self._observed_at + float(spec.get("leaseDurationSeconds") or duration)
        if held_by_other and self._clock() < expires:
            return False
        if holder != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=duration, renewTime=now)
        # The read's resourceVersion makes this a compare-and-swap: a rival's write wins, ours
        # gets 409, and we look again next round.
        await self._write(lease)
        self._observed = (self.identity, now)
        self._observed_at = self._clock()
        return True
