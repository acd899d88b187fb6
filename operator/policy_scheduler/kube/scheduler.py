"""The scheduling loop wired to the API server: the informers feed it, the ports write through
the client, and leader election says when it may work.

The loop itself (:class:`~policy_scheduler.scheduling.scheduler.Scheduler`) imports no client; this
module gives it :mod:`~policy_scheduler.kube.ports` and :class:`~policy_scheduler.kube.events.
Recorder` as its ports, runs a list-and-watch into it for each kind it reads
(:data:`~policy_scheduler.scheduling.kinds.KINDS`: what of each object is kept, whether its API
may not be served, ...), policies too through an :class:`~policy_scheduler.kube.informer.
Informer`, so that a policy deleted while a watch was down is forgotten at the next listing, and
starts the loop and the status writer once this replica leads, with every policy's status read
afresh so that counts continue from what the previous leader wrote.

Nodes, pods and SchedulingPolicies are always watched; every other kind only while a served
policy has a plugin that reads it (kube-scheduler starts an informer for each kind its enabled
plugins register events for or read): the loop says which (:meth:`KubeScheduler.need`, its
:class:`~policy_scheduler.scheduling.ports.Watches` port) once the policies have been listed and
whenever they change (until then every watch runs, so that those needed list meanwhile), and
decides no pod until each watch it needs has listed. A kind whose API the cluster does not serve
(no resource.k8s.io/v1 before Kubernetes 1.34) has none of its objects: its watch counts as
listed and empty instead of holding every decision (:class:`~policy_scheduler.kube.informer.
Informer`'s ``optional``).

Its health, for the probes: :meth:`KubeScheduler.liveness` fails while it leads and its loop
has not gone round for :data:`STALE_LOOP` seconds; :meth:`KubeScheduler.readiness` holds while
every watch is current and the replica leads or could (its last attempt at the Lease was
answered). A loop task that ends is not a health problem but a death: :meth:`KubeScheduler.
serve` raises it, and the command line exits, as kube-scheduler does, for its supervisor to
restart it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from policy_scheduler.kube.client import ApiError, Kube
from policy_scheduler.kube.events import Recorder
from policy_scheduler.kube.informer import PAGE_SIZE, Informer, trimmed
from policy_scheduler.kube.kinds import collection
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.ports import KubeBinder, KubeEvictor, KubeObjects, KubeStatusStore
from policy_scheduler.metrics import Metrics, WatchState
from policy_scheduler.scheduling.kinds import KINDS, POLICIES
from policy_scheduler.scheduling.scheduler import Scheduler

logger = logging.getLogger(__name__)

TAKE_OVER_RETRY = 1.0
"""Seconds between tries to read the policies when this replica starts to lead."""
STALE_LOOP = 60.0
"""Seconds without a turn of the scheduling loop (it turns at least every few seconds) after
which a leading replica is not alive."""


class Unhealthy(Exception):  # noqa: N818 (a verdict, not a fault of the caller's)
    """The replica is not alive: its scheduling loop has stopped turning."""


WATCHES = len(KINDS)
"""The most watches a replica keeps open, each holding a connection: one per kind it reads."""

# Pages for the watches that keep little of each object (a ReplicaSet's selector, not its pod
# template). A page is decoded whole before ``keep`` drops the rest, and the memory its objects
# took stays the process's (what is kept is scattered over it): with 3,000 ReplicaSets and 300
# Services listed 500 at a time the operator's RSS grew by 25 MiB, 100 at a time by 9 MiB.
SLIM_PAGE_SIZE = 100


class KubeScheduler:
    """One replica of the operator's scheduler: :attr:`scheduler` (the loop and its state) with
    its watches, its ports over ``kube`` and its leadership."""

    def __init__(self, kube: Kube, seed: int | None = None) -> None:
        self.kube = kube
        self.metrics = Metrics()
        kube.refusals.sink = self.metrics.api_refused
        self._election: LeaderElection | None = None
        self._working = False
        recorder = Recorder(kube)
        self.scheduler = Scheduler(
            KubeBinder(kube),
            recorder,
            recorder,
            KubeStatusStore(kube),
            KubeObjects(kube, recorder),
            evictor=KubeEvictor(kube, recorder),
            seed=seed,
            metrics=self.metrics,
            watches=self,
        )
        scheduler = self.scheduler
        self._informers: dict[str, Informer] = {}
        self._always = {kind.watch for kind in KINDS if kind.always}
        # The kinds the served policies read, once the loop has said (None: not yet, every
        # watch counts until then).
        self._needed: frozenset[str] | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._running = False
        for kind in KINDS:
            # Nothing is decided before each has listed, or the loop has said it is not needed.
            scheduler.watch_confirmed(kind.watch, False)
            changed, deleted = scheduler.feed(kind)
            self._informers[kind.watch] = Informer(
                kube,
                collection(kind),
                changed,
                deleted,
                field_selector=kind.field_selector,
                on_synced=functools.partial(scheduler.watch_confirmed, kind.watch),
                keep=trimmed if kind.slim is None else kind.slim,
                page_size=SLIM_PAGE_SIZE if kind.keeps_little else PAGE_SIZE,
                optional=kind.optional,
            )
        self.metrics.read_watches(self.watch_state)

    def need(self, kinds: frozenset[str]) -> None:
        """Watch the kinds named, of those not always watched, and no other (the loop's
        :class:`~policy_scheduler.scheduling.ports.Watches`). A watch stopped hands what it had
        on as deleted, so that the cache keeps nothing of a kind no policy reads; started
        again, it lists afresh."""
        self._needed = frozenset(kind.watch for kind in KINDS if kind.name in kinds)
        if self._running:
            self._start_and_stop()

    def _watched(self, name: str) -> bool:
        """Whether the watch ``name`` runs and counts: always, or while it is needed. Until the
        loop has said which are (the policies are not listed yet), every one does, so that
        those needed list meanwhile, not after the policies."""
        return name in self._always or self._needed is None or name in self._needed

    def _start_and_stop(self) -> None:
        loop = asyncio.get_running_loop()
        for name, informer in self._informers.items():
            task = self._tasks.get(name)
            if self._watched(name) and task is None:
                self._tasks[name] = loop.create_task(
                    informer.run(), name=f"watch {informer.collection}"
                )
            elif not self._watched(name) and task is not None:
                task.cancel()
                del self._tasks[name]
                informer.forget()

    def watch_state(self) -> WatchState:
        """Each watch that counts (:meth:`_watched`): whether it is current, and seconds since it
        last was."""
        now = time.monotonic()
        return {
            name: (
                informer.synced.is_set(),
                None if informer.last_sync is None else now - informer.last_sync,
            )
            for name, informer in self._informers.items()
            if self._watched(name)
        }

    def liveness(self) -> dict[str, Any]:
        """What the liveness probe reports: whether the replica leads and how long ago its
        loop went round; :class:`Unhealthy` when it leads and the loop has stopped."""
        leading = self._working and (self._election is None or self._election.leading)
        report: dict[str, Any] = {"leading": leading}
        if leading:
            age = self.scheduler.clock.monotonic() - self.scheduler.heartbeat
            report["loopSeconds"] = round(age, 3)
            if age > STALE_LOOP:
                raise Unhealthy(
                    f"the scheduling loop has not gone round for {age:.0f} s "
                    f"(more than {STALE_LOOP:g} s)"
                )
        return report

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether the replica is ready (every watch current; leading, or its last attempt at
        the Lease answered), with what the probe shows: the watches not current, and why not
        ready."""
        unsynced = sorted(name for name, (current, _) in self.watch_state().items() if not current)
        reasons = [f"watches not current: {', '.join(unsynced)}"] if unsynced else []
        election = self._election
        if election is not None and not election.leading and not election.answered:
            reasons.append(f"cannot take part in the election for Lease {election.lease}")
        report: dict[str, Any] = {
            "ready": not reasons,
            "leading": self._working and (election is None or election.leading),
        }
        if reasons:
            report["reasons"] = reasons
        return not reasons, report

    async def watch(self) -> None:
        """Keep the cache, the queue and the policies current from the API server, leading or
        not (a standby that takes over starts deciding at once). No pod is decided until every
        watch needed has listed, nor after one breaks off until it has listed again
        (:meth:`Scheduler.watch_confirmed`), so none is decided on a partial picture."""
        self._running = True
        try:
            self._start_and_stop()
            await asyncio.Future()
        finally:
            self._running = False
            tasks = list(self._tasks.values())
            self._tasks.clear()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def serve(self, election: LeaderElection | None, on_lost: Callable[[], None]) -> None:
        """Decide and write status while this process leads (always, without an election).

        Until then the watches keep the cache and the queue current. On taking over, every
        policy is read afresh, so its status continues from what the previous leader wrote.
        Losing the Lease stops the work and calls ``on_lost``. The work ending while it leads
        is a death: its exception (else a :class:`RuntimeError`) is raised from here.
        """
        self._election = election
        if election is not None:
            await election.acquire()
        loop = asyncio.get_running_loop()
        work = loop.create_task(self._lead(), name="scheduling")
        held = loop.create_task(election.hold(), name="lease") if election is not None else None
        self._working = True
        try:
            await asyncio.wait([t for t in (work, held) if t], return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                on_lost()
                return
            work.result()
            raise RuntimeError("the scheduling loop ended")
        finally:
            self._working = False
            for task in (work, held):
                if task is not None:
                    task.cancel()
            await asyncio.gather(*(t for t in (work, held) if t), return_exceptions=True)

    async def _lead(self) -> None:
        while True:
            try:
                listing = await self.kube.request("GET", collection(POLICIES))
                break
            except ApiError as error:
                logger.warning("cannot read the SchedulingPolicies to take over: %s", error)
                await asyncio.sleep(TAKE_OVER_RETRY)
        self.scheduler.take_over(listing.get("items") or ())
        await asyncio.gather(self.scheduler.run(), self.scheduler.status.run())

    async def shutdown(self, election: LeaderElection | None) -> None:
        """Let running binds finish and report, write the last status, give up the Lease."""
        await self.scheduler.drain()
        if election is None or election.leading:
            await self.scheduler.status.flush()
        if election is not None:
            await election.release()
        await self.kube.close()
