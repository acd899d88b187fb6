"""Lease-based leader election (coordination.k8s.io/v1), as kube-scheduler does it.

Every replica keeps its cache warm from the watches; only the holder of the Lease decides, binds
and writes policy status. The holder renews the Lease every ``retry_period``. Another replica
takes the Lease over once it has seen the same holder and renew time, unchanged, for
``lease_duration`` by its *own* clock, so clock skew between machines does not matter (client-go's
observed-time rule). On a clean stop the holder releases the Lease, so a successor need not wait
for it to expire.

The holder leads only while its last successful take or renewal of the Lease started less than
``renew_deadline`` ago by its own monotonic clock (:attr:`LeaderElection.leading`). Counted from
the attempt's start, the earliest moment the API server can have stored it, the deadline falls
at least ``lease_duration - renew_deadline`` before a successor may take over, whatever the
answer's delay. The client's fence (:meth:`~policy_scheduler.kube.client.Kube.fence`) sends no
write once ``leading`` is false, so a leader frozen past its deadline (SIGSTOP, a stalled VM)
writes nothing when it resumes, before any renewal could run. Each attempt to take or renew the
Lease is held to the renew deadline (a renewal, to what is left of it), as client-go holds it: a
renewal not answered in time does not count, whenever its answer comes (an API server frozen and
resumed). A replica whose deadline has passed has lost the Lease for good: :meth:`LeaderElection.
hold` returns, and the command line exits at once, as kube-scheduler does.
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
        self.answered = False
        """Whether the last attempt to take or renew the Lease was answered (taken, or held by
        another): a replica whose attempts fail (no namespace, no permission) could not lead."""
        # By ``clock``: when the last successful take or renewal started; None before the Lease
        # is taken and once it is released.
        self._renewed: float | None = None

    @property
    def lease(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def leading(self) -> bool:
        """Whether this replica holds the Lease by its own clock: its last take or renewal
        started less than the renew deadline ago."""
        return self._left() > 0

    def _left(self) -> float:
        """Seconds until the renew deadline passes by this replica's clock; not positive once it
        has, or while the Lease is not held."""
        if self._renewed is None:
            return 0.0
        return self._renewed + self._timings.renew_deadline - self._clock()

    async def acquire(self) -> None:
        """Return once this process holds the Lease."""
        self._renewed = None
        while True:
            started = self._clock()
            if await self._try_acquire_or_renew(self._timings.renew_deadline):
                break
            await asyncio.sleep(self._timings.retry_period)
        self._renewed = started
        logger.info("leading: holding Lease %s as %s", self.lease, self.identity)

    async def hold(self) -> None:
        """Renew the Lease every retry period while this replica leads; return once it does not
        (the renew deadline has passed by its own clock): the Lease is lost for good. A renewal
        counts only if it is answered before the deadline, which also bounds how long it may
        take."""
        while (left := self._left()) > 0:
            await asyncio.sleep(min(self._timings.retry_period, left))
            started = self._clock()
            left = self._left()
            # ``leading`` once more after the answer: resumed from a freeze with the renewal in
            # flight, the process may handle its answer before the overdue timeout fires.
            if left > 0 and await self._try_acquire_or_renew(left) and self.leading:
                self._renewed = started
        logger.error(
            "lost Lease %s: not renewed within the renew deadline (%g s) by this replica's clock",
            self.lease,
            self._timings.renew_deadline,
        )

    async def release(self) -> None:
        """Give the Lease up (on a clean stop), so a standby takes over at once."""
        if not self.leading:
            return
        self._renewed = None
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
        await self._kube.request("PUT", self._path(self.name), lease, fenced=self._renewing)

    @property
    def _renewing(self) -> bool:
        """Whether a write of the Lease renews it: those are fenced like every other write, so
        that one sent after the deadline (a freeze between the read and the write) does not renew
        a Lease this replica has given up, keeping a successor waiting for nobody. Taking the
        Lease, which a replica does when it does not lead, and releasing it are not."""
        return self._renewed is not None

    def _path(self, *name: str) -> str:
        return path(
            "apis", "coordination.k8s.io", "v1", "namespaces", self.namespace, "leases", *name
        )

    async def _try_acquire_or_renew(self, within: float) -> bool:
        """One attempt to take or renew the Lease, given up after ``within`` seconds."""
        try:
            async with asyncio.timeout(within):
                taken = await self._attempt()
        except TimeoutError:
            self._report(ApiError(0, f"no answer within {within:.3g} s"))
            return False
        except ApiError as error:
            # 409: a rival wrote the Lease between our read and our write; not a problem.
            if error.status != 409:
                self._report(error)
            return False
        self._reported = None
        self.answered = True
        return taken

    def _report(self, error: ApiError) -> None:
        """Log a problem when it first appears; its repeats, one per retry period until it is
        fixed, go to debug, so that the line that says what is wrong is not buried."""
        self.answered = False
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
                fenced=self._renewing,
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
