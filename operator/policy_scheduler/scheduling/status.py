"""The SchedulingPolicy status writer: counts, heartbeat, conditions and the newest decisions.

Decisions are buffered in memory and each policy's status is written at most once per interval
(about a second) through the :class:`~.ports.StatusStore` port, never once per pod, plus a
heartbeat every few seconds while nothing changes, so a stale ``heartbeatTime`` tells users the
scheduler is down. The kept decisions are bounded by the policy's ``spec.history``, each kept
decision's message, reasons and preemption (its victims and why) are bounded, and the oldest
kept decisions are left out of a write that would exceed :data:`STATUS_BUDGET`, so the status
stays small whatever the traffic and the messages: an oversized status would be refused by the
API server, every write with it, and the heartbeat would go stale while the scheduler runs.

The counts continue from what is on the object: a new leader starts from the statuses it reads
when it takes over (:meth:`StatusWriter.adopt` with ``afresh``), not from what it saw as a
standby, so ``scheduled`` never goes backwards across a failover or a restart.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.framework.interface import Preemption
from policy_scheduler.policy.compiler import Mode
from policy_scheduler.runtime.decision import Decision, GroupDecision
from policy_scheduler.scheduling.policies import Condition
from policy_scheduler.scheduling.ports import (
    SCHEDULED,
    UNSCHEDULABLE,
    Clock,
    MetricsSink,
    NoMetrics,
    StatusStore,
    SystemClock,
    WriteResult,
    rfc3339,
)

WRITE_INTERVAL = 1.0
HEARTBEAT_INTERVAL = 10.0

MESSAGE_LIMIT = 1024
"""The API server refuses an event whose message is longer, in UTF-8 bytes (its
``NoteLengthLimit``); a kept decision's message is cut to the same length, the same way."""
REASONS_LIMIT = 16
"""How many reasons a kept decision counts: those that rejected the most nodes."""
STATUS_BUDGET = 256 * 1024
"""The most bytes a status patch may take. etcd refuses an object over 1.5 MiB, and the object
also holds the spec and the metadata; every write goes to every watcher of the policies, about
once a second. Usual decisions take about 1 KB each, and a failure with its bounded message and
reasons a few, so a full history of 100 fits unless the reasons themselves are long."""
VICTIMS_LIMIT = 16
"""How many victims a kept decision's preemption names; ``victimCount`` counts them all."""
GROUP_PODS_LIMIT = 64
"""How many members a kept gang decision lists; its counts count them all."""
_TRUNCATED = " ..."


def truncate(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """``message`` cut to ``limit`` UTF-8 bytes as kube-scheduler cuts a FailedScheduling event's
    (``truncateMessage`` in pkg/scheduler/schedule_one.go): its head, then " ...". Unlike Go's
    byte slice, this never splits a character, whose broken bytes JSON would not carry."""
    encoded = message.encode()
    if len(encoded) <= limit:
        return message
    return encoded[: limit - len(_TRUNCATED)].decode(errors="ignore") + _TRUNCATED


def _most_common(counts: Mapping[str, int]) -> dict[str, int]:
    """The :data:`REASONS_LIMIT` reasons that rejected the most nodes."""
    return dict(sorted(counts.items(), key=lambda item: -item[1])[:REASONS_LIMIT])


def bounded(record: Mapping[str, Any]) -> dict[str, Any]:
    """A ``status.decisions`` record with its message truncated and only its
    :data:`REASONS_LIMIT` most common reasons and detailed reasons (these cut as its message),
    so that one pod's long failure cannot push the other decisions out of the budget."""
    result = dict(record)
    message = result.get("message")
    if isinstance(message, str):
        result["message"] = truncate(message)
    reasons = result.get("reasons")
    if isinstance(reasons, Mapping) and len(reasons) > REASONS_LIMIT:
        result["reasons"] = _most_common(reasons)
    details = result.get("details")
    if isinstance(details, Mapping):
        # The allocator's reasons quote the selectors: each cut as a message is.
        result["details"] = {truncate(d): n for d, n in _most_common(details).items()}
    preemption = result.get("preemption")
    if isinstance(preemption, Mapping):
        preemption = dict(preemption)
        victims = preemption.get("victims")
        if isinstance(victims, list) and len(victims) > VICTIMS_LIMIT:
            preemption["victims"] = victims[:VICTIMS_LIMIT]
        why = preemption.get("why")
        if isinstance(why, str):
            preemption["why"] = truncate(why)
        result["preemption"] = preemption
    return result


def preemption_record(preemption: Preemption) -> dict[str, Any]:
    """A preemption as a decision's ``preemption`` holds it: the node, the victims (namespace/
    name, most important first) and their count, how many a PodDisruptionBudget protects, and
    why."""
    return {
        "node": preemption.node,
        "victims": [victim.key for victim in preemption.victims],
        "victimCount": len(preemption.victims),
        "pdbViolations": preemption.pdb_violations,
        "why": preemption.why,
    }


def decision_record(
    decision: Decision, when: str, dry_run: bool, preemption: Preemption | None = None
) -> dict[str, Any]:
    """A decision as it appears in ``status.decisions``: :meth:`Decision.to_dict` (which is also
    what ``simulate -o json`` prints), with the time, whether the policy was in DryRun (a DryRun
    preemption evicted nothing) and the preemption a post-filter found, :func:`bounded`."""
    record: dict[str, Any] = {"time": when, **decision.to_dict()}
    if preemption is not None:
        record["preemption"] = preemption_record(preemption)
    record = bounded(record)
    if dry_run:
        record["dryRun"] = True
    return record


@dataclass
class _PolicyStatus:
    uid: str = ""
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
        store: StatusStore,
        unschedulable_counts: Callable[[], Mapping[str, int]],
        clock: Clock | None = None,
        metrics: MetricsSink | None = None,
    ) -> None:
        self._store = store
        self._unschedulable_counts = unschedulable_counts
        self._clock = clock if clock is not None else SystemClock()
        self._metrics = metrics if metrics is not None else NoMetrics()
        self._policies: dict[str, _PolicyStatus] = {}
        self._written_unschedulable: dict[str, int] = {}

    def adopt(
        self, name: str, uid: str, status: Mapping[str, Any], history: int, afresh: bool = False
    ) -> None:
        """Start from what the object's status says when the policy is new here (counts
        survive a restart), is another object than the one known by its name (deleted and
        created again), or ``afresh`` (a new leader, from what it read on taking over)."""
        old = self._policies.get(name)
        if old is not None and old.uid == uid and not afresh:
            self.set_history(name, history)
            return
        decisions = [d for d in status.get("decisions") or () if isinstance(d, Mapping)]
        scheduled = status.get("scheduled")
        self._policies[name] = entry = _PolicyStatus(
            uid=uid,
            history=history,
            scheduled=scheduled if isinstance(scheduled, int) else 0,
            last_decision=status.get("lastDecision"),
            decisions=deque((bounded(d) for d in decisions[:history]), maxlen=history),
            conditions={
                c["type"]: dict(c)
                for c in status.get("conditions") or ()
                if isinstance(c, Mapping) and "type" in c
            },
        )
        if old is not None and old.uid == uid:
            entry.generation, entry.scheduler_name = old.generation, old.scheduler_name

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
        """Conditions as of ``generation``, and no others (a condition that no longer applies is
        removed); a transition time changes only with the status."""
        entry = self._policies[name]
        conditions = list(conditions)
        for gone in entry.conditions.keys() - {c.type for c in conditions}:
            del entry.conditions[gone]
            entry.dirty = True
        if (entry.generation, entry.scheduler_name) != (generation, scheduler_name):
            entry.generation = generation
            entry.scheduler_name = scheduler_name
            entry.dirty = True
        for condition in conditions:
            status = "True" if condition.status else "False"
            old = entry.conditions.get(condition.type)
            if old and (
                old.get("status"),
                old.get("reason"),
                old.get("message"),
                old.get("observedGeneration"),
            ) == (status, condition.reason, condition.message, generation):
                continue
            stamp = rfc3339(self._clock.now())
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

    def record(
        self,
        name: str,
        decision: Decision,
        dry_run: bool,
        preemption: Preemption | None = None,
        *,
        history: bool = True,
    ) -> None:
        """Count ``decision`` in the policy's status and keep it in its history; without
        ``history``, only count it (a gang member's, whose group's pass is the decision kept:
        :meth:`record_group`)."""
        entry = self._policies.get(name)
        if entry is None:
            return
        record = decision_record(decision, rfc3339(self._clock.now()), dry_run, preemption)
        if decision.node is not None:
            if not dry_run:
                entry.scheduled += 1
            entry.last_decision = {k: record[k] for k in ("pod", "node", "time")}
            if dry_run:
                entry.last_decision["dryRun"] = True
        entry.dirty = True
        if history:
            self._keep(name, entry, record, dry_run, decision.node is not None)

    def record_group(self, name: str, decision: GroupDecision, dry_run: bool) -> None:
        """Keep a gang's pass in the policy's history, as one decision."""
        entry = self._policies.get(name)
        if entry is None:
            return
        record = {"time": rfc3339(self._clock.now()), **decision.to_dict()}
        group = record["podGroup"]
        if "message" in group:
            group["message"] = truncate(group["message"])
        group["pods"] = [
            {**pod, "message": truncate(pod["message"])} if "message" in pod else pod
            for pod in group["pods"][:GROUP_PODS_LIMIT]
        ]
        if dry_run:
            record["dryRun"] = True
        entry.dirty = True
        self._keep(name, entry, record, dry_run, not decision.message)

    def _keep(
        self, name: str, entry: _PolicyStatus, record: dict[str, Any], dry_run: bool, placed: bool
    ) -> None:
        if entry.history:
            entry.decisions.appendleft(record)
        self._metrics.decision_recorded(
            name, Mode.DRY_RUN if dry_run else Mode.ENFORCE, SCHEDULED if placed else UNSCHEDULABLE
        )

    def body(self, name: str, unschedulable: int) -> dict[str, Any]:
        """The status patch: the newest decisions that fit in :data:`STATUS_BUDGET`."""
        entry = self._policies[name]
        decisions: list[dict[str, Any]] = []
        status: dict[str, Any] = {
            "observedGeneration": entry.generation,
            "schedulerName": entry.scheduler_name,
            "conditions": list(entry.conditions.values()),
            "heartbeatTime": rfc3339(self._clock.now()),
            "scheduled": entry.scheduled,
            "unschedulable": unschedulable,
            "decisions": decisions,
        }
        if entry.last_decision is not None:
            status["lastDecision"] = entry.last_decision
        body = {"status": status}
        # Sized by json.dumps' defaults, 2 for the ", " before each: a little over the client's
        # compact JSON, so what is sent is never over the budget.
        room = STATUS_BUDGET - len(json.dumps(body))
        for record in entry.decisions:
            room -= len(json.dumps(record)) + 2
            if room < 0:
                break
            decisions.append(record)
        return body

    async def flush(self) -> None:
        """Write every policy whose status changed, or whose heartbeat is due."""
        now = self._clock.monotonic()
        counts = self._unschedulable_counts()
        for name, entry in list(self._policies.items()):
            unschedulable = counts.get(name, 0)
            changed = entry.dirty or self._written_unschedulable.get(name) != unschedulable
            if not changed and now - entry.written_at < HEARTBEAT_INTERVAL:
                continue
            entry.dirty = False
            entry.written_at = now
            self._written_unschedulable[name] = unschedulable
            result = await self._store.write(name, entry.uid, self.body(name, unschedulable))
            self._metrics.status_write(result.value)
            # NOT_FOUND: the object is gone, and its deletion, on its way through the watch,
            # forgets the entry; until then the entry stays, as the policy table's does.
            if result is WriteResult.FAILED:
                entry.dirty = True

    async def run(self) -> None:
        while True:
            await self.flush()
            await asyncio.sleep(WRITE_INTERVAL)
