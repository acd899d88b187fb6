"""The SchedulingPolicy status writer: counts, heartbeat, conditions and the newest decisions.

Decisions are buffered in memory and each policy's status is written at most once per interval
(about a second) with one merge PATCH, never once per pod, plus a heartbeat every few seconds
while nothing changes, so a stale ``heartbeatTime`` tells users the scheduler is down. The kept
decisions are bounded by the policy's ``spec.history``, so the status stays small whatever the
traffic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.kube.client import GROUP, MERGE_PATCH, PLURAL, VERSION, ApiError, Kube, path
from policy_scheduler.kube.events import now_rfc3339
from policy_scheduler.metrics import SCHEDULED, UNSCHEDULABLE, Metrics
from policy_scheduler.pipeline import Decision
from policy_scheduler.policy.compiler import Mode

logger = logging.getLogger(__name__)

WRITE_INTERVAL = 1.0
HEARTBEAT_INTERVAL = 10.0


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str = ""


def decision_record(decision: Decision, when: str, dry_run: bool) -> dict[str, Any]:
    """A decision as it appears in ``status.decisions``: :meth:`Decision.to_dict` (which is also
    what ``simulate -o json`` prints), with the time and whether the policy was in DryRun."""
    record: dict[str, Any] = {"time": when, **decision.to_dict()}
    if dry_run:
        record["dryRun"] = True
    return record


@dataclass
class _PolicyStatus:
    history: int = 20
    generation: int = 0
    scheduler_name: str = ""
    scheduled: int = 0
    last_decision: dict[str, Any] | None = None
    decisions: deque[dict[str, Any]] = field(default_factory=deque)
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirty: bool = True
    written_at: float = float("-inf")


class StatusWriter:
    """Keeps each policy's status in memory and writes it out, coalesced."""

    def __init__(
        self,
        kube: Kube,
        unschedulable_counts: Callable[[], Mapping[str, int]],
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics | None = None,
    ) -> None:
        self._kube = kube
        self._unschedulable_counts = unschedulable_counts
        self._clock = clock
        self._metrics = metrics if metrics is not None else Metrics()
        self._policies: dict[str, _PolicyStatus] = {}
        self._written_unschedulable: dict[str, int] = {}

    def adopt(self, name: str, status: Mapping[str, Any], history: int) -> None:
        """Start from what the object's status says (counts survive a restart)."""
        if name in self._policies:
            self.set_history(name, history)
            return
        decisions = [d for d in status.get("decisions") or () if isinstance(d, Mapping)]
        scheduled = status.get("scheduled")
        self._policies[name] = _PolicyStatus(
            history=history,
            scheduled=scheduled if isinstance(scheduled, int) else 0,
            last_decision=status.get("lastDecision"),
            decisions=deque((dict(d) for d in decisions[:history]), maxlen=history),
            conditions={
                c["type"]: dict(c)
                for c in status.get("conditions") or ()
                if isinstance(c, Mapping) and "type" in c
            },
        )

    def set_history(self, name: str, history: int) -> None:
        entry = self._policies[name]
        if entry.history != history:
            entry.history = history
            entry.decisions = deque(list(entry.decisions)[:history], maxlen=history)
            entry.dirty = True

    def forget(self, name: str) -> None:
        self._policies.pop(name, None)

    def set_conditions(
        self, name: str, generation: int, scheduler_name: str, conditions: Iterable[Condition]
    ) -> None:
        """Conditions as of ``generation``; a transition time changes only with the status."""
        entry = self._policies[name]
        if (entry.generation, entry.scheduler_name) != (generation, scheduler_name):
            entry.generation = generation
            entry.scheduler_name = scheduler_name
            entry.dirty = True
        for condition in conditions:
            status = "True" if condition.status else "False"
            old = entry.conditions.get(condition.type)
            if old and (old.get("status"), old.get("reason"), old.get("message")) == (
                status,
                condition.reason,
                condition.message,
            ):
                continue
            stamp = now_rfc3339()
            if old is not None and old.get("status") == status:
                stamp = old.get("lastTransitionTime", stamp)
            entry.conditions[condition.type] = {
                "type": condition.type,
                "status": status,
                "reason": condition.reason,
                "message": condition.message,
                "observedGeneration": generation,
                "lastTransitionTime": stamp,
            }
            entry.dirty = True

    def record(self, name: str, decision: Decision, dry_run: bool) -> None:
        entry = self._policies.get(name)
        if entry is None:
            return
        record = decision_record(decision, now_rfc3339(), dry_run)
        if decision.node is not None:
            if not dry_run:
                entry.scheduled += 1
            entry.last_decision = {k: record[k] for k in ("pod", "node", "time")}
            if dry_run:
                entry.last_decision["dryRun"] = True
        if entry.history:
            entry.decisions.appendleft(record)
        entry.dirty = True
        self._metrics.decision_recorded(
            name,
            Mode.DRY_RUN if dry_run else Mode.ENFORCE,
            UNSCHEDULABLE if decision.node is None else SCHEDULED,
        )

    def body(self, name: str, unschedulable: int) -> dict[str, Any]:
        entry = self._policies[name]
        status: dict[str, Any] = {
            "observedGeneration": entry.generation,
            "schedulerName": entry.scheduler_name,
            "conditions": list(entry.conditions.values()),
            "heartbeatTime": now_rfc3339(),
            "scheduled": entry.scheduled,
            "unschedulable": unschedulable,
            "decisions": list(entry.decisions),
        }
        if entry.last_decision is not None:
            status["lastDecision"] = entry.last_decision
        return {"status": status}

    async def flush(self) -> None:
        """Write every policy whose status changed, or whose heartbeat is due."""
        now = self._clock()
        counts = self._unschedulable_counts()
        for name, entry in list(self._policies.items()):
            unschedulable = counts.get(name, 0)
            changed = entry.dirty or self._written_unschedulable.get(name) != unschedulable
            if not changed and now - entry.written_at < HEARTBEAT_INTERVAL:
                continue
            entry.dirty = False
            entry.written_at = now
            self._written_unschedulable[name] = unschedulable
            try:
                await self._kube.request(
                    "PATCH",
                    path("apis", GROUP, VERSION, PLURAL, name, "status"),
                    self.body(name, unschedulable),
                    MERGE_PATCH,
                )
            except ApiError as error:
                if error.status == 404:
                    self._metrics.status_write("not_found")
                    self.forget(name)
                    continue
                self._metrics.status_write("error")
                entry.dirty = True
                logger.warning("could not write the status of %s: %s", name, error.message)
            else:
                self._metrics.status_write("success")

    async def run(self) -> None:
        while True:
            await self.flush()
            await asyncio.sleep(WRITE_INTERVAL)
