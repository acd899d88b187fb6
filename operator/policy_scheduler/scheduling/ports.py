"""The scheduling loop's ports: everything it asks of the world outside, as narrow protocols.

The loop never talks to an API server itself. :mod:`policy_scheduler.kube` implements these ports
over the API (``pods/binding``, core/v1 Events, the pod's status, the policy's status
subresource, the deletion of a pod a preemption evicts); :mod:`policy_scheduler.simulate` and
the loop's unit tests implement them in memory. The ports that write are fire-and-forget where
kube-scheduler's are (events, the PodScheduled condition and a pod's nomination, a preemption's
evictions: the implementation writes in the background and only logs a failure), and awaited
where the loop needs the answer (a bind, a status write).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Protocol

from policy_scheduler.framework.interface import NORMAL, WARNING, ObjectRef, ObjectWriter
from policy_scheduler.model.objects import PodView, rfc3339

__all__ = [
    "NORMAL",
    "WARNING",
    "BindResult",
    "Binder",
    "Clock",
    "EventRecorder",
    "Evictor",
    "MetricsSink",
    "NoMetrics",
    "ObjectRef",
    "ObjectWriter",
    "Outcome",
    "PodConditions",
    "PreemptedBy",
    "SchedulerState",
    "StatusStore",
    "SystemClock",
    "Watches",
    "WriteResult",
    "rfc3339",
]


class Outcome(Enum):
    """How a bind ended."""

    BOUND = "bound"
    # 409, and the pod, read, is not on the node: assigned elsewhere, or still pending after
    # another failure (an etcd error before the commit, a gated pod). The loop retries unless
    # the watch shows the pod assigned.
    TAKEN = "taken"
    GONE = "gone"  # 404: the pod was deleted meanwhile
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BindResult:
    """How a bind ended, and the API server's message when it failed."""

    outcome: Outcome
    message: str = ""


class Binder(Protocol):
    """Binds a pod to a node (kube-scheduler's DefaultBinder)."""

    async def bind(self, pod: PodView, node: str) -> BindResult: ...


class EventRecorder(Protocol):
    """Tells users about a pod with an event, in the background."""

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None: ...

    async def drain(self) -> None:
        """Wait for what is being posted (on shutdown)."""
        ...


class PodConditions(Protocol):
    """Writes what a pending pod's status says of its scheduling: the ``PodScheduled``
    condition (what cluster autoscalers read) and ``nominatedNodeName`` (the node a preemption
    made room on, which other schedulers count against that node)."""

    def unschedulable(self, pod: PodView, message: str, nominated_node: str | None = None) -> None:
        """``PodScheduled=False, reason=Unschedulable`` with ``message``; unless
        ``nominated_node`` is None, in the same write, the pod's nomination to it ("": none), as
        kube-scheduler's ``updatePod``."""
        ...

    def scheduler_error(self, pod: PodView, message: str) -> None:
        """``PodScheduled=False, reason=SchedulerError`` with ``message``, and no nomination:
        the attempt ended in an error, not a verdict."""
        ...

    def nominate(self, pod: PodView, node: str) -> None:
        """Write the pod's ``nominatedNodeName`` alone ("": empty it): the node its binding
        cycle waits to bind it to, or none when a preemption of higher priority took the room
        it was nominated to (kube-scheduler's ``clearNominatedNodeName``)."""
        ...


@dataclass(frozen=True, slots=True)
class PreemptedBy:
    """Who preempts, as a victim's ``Preempted`` event names it (kube-scheduler's executor): a
    pod or a pod group (``kind``: ``pod``, ``podgroup``), by uid, on a node (``where``; a pod
    group's candidate is the whole cluster, which kube names ``cluster``)."""

    kind: str
    uid: str
    where: str

    @property
    def event(self) -> str:
        """The ``Preempted`` event's message."""
        return f"Preempted by {self.kind} {self.uid} on node {self.where}"


class Evictor(Protocol):
    """Evicts the victims of a preemption, one call per victim, as kube-scheduler's
    ``PreemptPod``: the victim's ``DisruptionTarget`` condition (``condition_message``), its
    graceful deletion, then a ``Preempted`` event on it naming who preempts (``by``; the
    ``preemptor`` pod is for the logs). Returns once the victim is deleted (True), or could not
    be (False, the failure logged): the loop holds the preemptor back until then, as
    kube-scheduler's asynchronous preemption does."""

    async def preempt(
        self, victim: PodView, preemptor: PodView, by: PreemptedBy, condition_message: str
    ) -> bool: ...


class Watches(Protocol):
    """Starts and stops the watches of the kinds that are watched only while a served policy
    reads them (:mod:`~policy_scheduler.scheduling.kinds`). A watch started is confirmed
    through :meth:`~policy_scheduler.scheduling.scheduler.Scheduler.watch_confirmed` once it
    has listed, as every watch is."""

    def need(self, kinds: frozenset[str]) -> None:
        """Watch these kinds (by name), of those not always watched, and no other."""
        ...


class WriteResult(Enum):
    """How a status write ended (the values label the status-write metric)."""

    WRITTEN = "success"
    NOT_FOUND = "not_found"  # the policy is gone, or is another object now
    FAILED = "error"


class StatusStore(Protocol):
    """Writes a SchedulingPolicy's whole status (``body`` is ``{"status": ...}``), if the object
    named ``name`` is still the one whose uid is ``uid`` (any, when ``uid`` is empty)."""

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult: ...


class Clock(Protocol):
    """Monotonic seconds, for the queue's timing and the metrics; the wall clock, for the times
    written into statuses and conditions."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...


class SystemClock:
    """The machine's clocks."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)


SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
WAITING_ON_PREEMPTION = "waiting_on_preemption"
ERROR = "error"
"""The results of a scheduling attempt, as kube-scheduler's metrics label them."""


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """What the scheduler holds when a scrape asks."""

    pending_pods: Mapping[str, int]  # queue name -> pods in it
    binds_in_flight: int
    nodes: int
    pods: int
    policies_valid: Mapping[str, bool]  # policy name -> compiles


class MetricsSink(Protocol):
    """What the loop counts and times (:class:`policy_scheduler.metrics.Metrics` exports it)."""

    def read_state(self, read: Callable[[], SchedulerState]) -> None: ...

    def attempt(self, result: str, profile: str, seconds: float) -> None: ...

    def algorithm(self, seconds: float) -> None: ...

    def pod_scheduled(self, attempts: int) -> None: ...

    def bind(self, result: str, seconds: float) -> None: ...

    def status_write(self, result: str) -> None: ...

    def decision_recorded(self, policy: str, mode: str, result: str) -> None: ...

    def group_attempt(self, result: str, profile: str, seconds: float, algorithm: float) -> None:
        """A gang's pass: its result, how long it took and how long its decisions took."""
        ...


class NoMetrics:
    """The sink of a run that exports no metrics (``simulate``): it keeps nothing."""

    def read_state(self, read: Callable[[], SchedulerState]) -> None:
        pass

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        pass

    def algorithm(self, seconds: float) -> None:
        pass

    def pod_scheduled(self, attempts: int) -> None:
        pass

    def bind(self, result: str, seconds: float) -> None:
        pass

    def status_write(self, result: str) -> None:
        pass

    def decision_recorded(self, policy: str, mode: str, result: str) -> None:
        pass

    def group_attempt(self, result: str, profile: str, seconds: float, algorithm: float) -> None:
        pass
