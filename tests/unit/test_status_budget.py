"""The policy status stays under its byte budget whatever the FailedScheduling messages, and a
refused write never stops the heartbeat (issue 11, item 5)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling.ports import WriteResult
from policy_scheduler.scheduling.status import (
    HEARTBEAT_INTERVAL,
    MESSAGE_LIMIT,
    REASONS_LIMIT,
    STATUS_BUDGET,
    WRITE_INTERVAL,
    StatusWriter,
    truncate,
)
from policy_scheduler.simulate import FrozenClock

API_REQUEST_LIMIT = 3 * 1024 * 1024 // 2
"""etcd's default --max-request-bytes: a larger object is refused."""


class _Store:
    """Refuses, as the API server does, a status patch larger than it can store."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.written: dict[str, Any] | None = None
        self.refuse_next = False

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult:
        size = len(json.dumps(body))
        self.sizes.append(size)
        if self.refuse_next or size > API_REQUEST_LIMIT:
            self.refuse_next = False
            return WriteResult.FAILED
        self.written = dict(body["status"])
        return WriteResult.WRITTEN


def _failure(pod: str) -> Decision:
    """No node fits a pod asking for 50 extended resources with long names that no node has:
    one reason per resource, so the FailedScheduling message runs to 14,000 characters."""
    reasons = {
        f"Insufficient {f'r-{i}-'.ljust(245, 'x')}.example.com/gpu": 1000 + i for i in range(50)
    }
    return Decision(pod, None, None, (), reasons, total_nodes=5000, feasible_nodes=0)


def _writer(history: int = 100) -> tuple[StatusWriter, _Store, FrozenClock]:
    store, clock = _Store(), FrozenClock(1000.0)
    writer = StatusWriter(store, lambda: {}, clock)
    writer.adopt("p", "", {}, history=history)
    return writer, store, clock


def test_truncate_cuts_as_kube_scheduler_does_to_the_api_servers_limit() -> None:
    assert truncate("x" * MESSAGE_LIMIT) == "x" * MESSAGE_LIMIT
    cut = truncate("x" * (MESSAGE_LIMIT + 1))
    assert cut == "x" * (MESSAGE_LIMIT - 4) + " ..."
    assert len(cut) == MESSAGE_LIMIT


def test_truncate_counts_bytes_and_never_splits_a_character() -> None:
    # The API server counts a message's UTF-8 bytes, not its characters.
    cut = truncate("é" * MESSAGE_LIMIT)
    assert len(cut.encode()) <= MESSAGE_LIMIT
    assert cut == "é" * ((MESSAGE_LIMIT - 4) // 2) + " ..."


def test_a_kept_failure_has_a_bounded_message_and_its_most_common_reasons() -> None:
    writer, store, _ = _writer()
    decision = _failure("ns/big")
    assert len(decision.message) > 14_000
    writer.record("p", decision, dry_run=False)
    asyncio.run(writer.flush())
    assert store.written is not None
    (record,) = store.written["decisions"]
    assert record["message"] == truncate(decision.message)
    assert record["message"].endswith(" ...")
    kept = sorted(decision.reasons.items(), key=lambda item: -item[1])[:REASONS_LIMIT]
    assert record["reasons"] == dict(kept)


def test_a_kept_failure_has_its_most_common_detailed_reasons_each_cut() -> None:
    """The device allocator's reasons, one per claim and request, quote long selectors."""
    writer, store, _ = _writer()
    details = {f"claim c-{i}, request r: {'x' * 2000}": 10 + i for i in range(40)}
    writer.record("p", dataclasses.replace(_failure("ns/big"), details=details), dry_run=False)
    asyncio.run(writer.flush())
    assert store.written is not None
    (record,) = store.written["decisions"]
    kept = sorted(details.items(), key=lambda item: -item[1])[:REASONS_LIMIT]
    assert record["details"] == {truncate(detail): count for detail, count in kept}
    assert all(len(detail) <= MESSAGE_LIMIT for detail in record["details"])


def test_the_status_stays_under_its_budget_keeping_the_newest_decisions() -> None:
    writer, store, _ = _writer(history=100)
    for i in range(100):
        writer.record("p", _failure(f"ns/p{i}"), dry_run=False)
    asyncio.run(writer.flush())
    assert store.written is not None
    assert store.sizes[-1] <= STATUS_BUDGET
    pods = [d["pod"] for d in store.written["decisions"]]
    assert 0 < len(pods) < 100
    assert pods == [f"ns/p{i}" for i in range(99, 99 - len(pods), -1)]


def test_oversized_decisions_read_from_an_older_status_are_bounded_too() -> None:
    huge: dict[str, Any] = {"pod": "ns/old", "node": None, "message": "m" * 100_000, "reasons": {}}
    store, clock = _Store(), FrozenClock(1000.0)
    writer = StatusWriter(store, lambda: {}, clock)
    writer.adopt("p", "", {"decisions": [huge] * 20}, history=20)
    asyncio.run(writer.flush())
    assert store.written is not None
    assert store.sizes[-1] <= STATUS_BUDGET
    assert [len(d["message"]) for d in store.written["decisions"]] == [MESSAGE_LIMIT] * 20


def test_long_failure_messages_never_stop_the_heartbeat() -> None:
    writer, store, clock = _writer(history=100)
    for i in range(100):
        writer.record("p", _failure(f"ns/p{i}"), dry_run=False)
    asyncio.run(writer.flush())
    assert store.written is not None
    first = store.written["heartbeatTime"]
    clock.at += HEARTBEAT_INTERVAL
    asyncio.run(writer.flush())
    assert store.written["heartbeatTime"] != first


def test_a_refused_write_is_tried_again_on_the_next_interval() -> None:
    writer, store, clock = _writer()
    store.refuse_next = True
    asyncio.run(writer.flush())
    assert store.written is None
    clock.at += WRITE_INTERVAL
    asyncio.run(writer.flush())
    assert store.written is not None
    assert len(store.sizes) == 2
