"""Long FailedScheduling messages on the real API server: events are cut to its 1,024 bytes as
kube-scheduler cuts them, and the policy's status stays under its budget, so its writes and its
heartbeat go on (issue 11, item 5)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from harness.e2e import Cluster, Operator, events, status, wait_for
from harness.objects import node, pod, policy

from policy_scheduler.scheduling.status import MESSAGE_LIMIT, STATUS_BUDGET

PODS = 60
RESOURCES = 50
# A qualified name at its longest parts: a 203-character prefix, a 63-character name.
PREFIX = ".".join(c * 63 for c in "abc") + ".example.com"


def _greedy(name: str, scheduler: str) -> dict[str, Any]:
    """A pod asking for one of each of 50 extended resources no node has: its FailedScheduling
    message names every one, about 14,000 characters."""
    wanted = {f"{PREFIX}/{f'r-{i}-'.ljust(63, 'x')}": "1" for i in range(RESOURCES)}
    raw = pod(name, scheduler)
    # The API server requires the limit of an extended resource, equal to its request.
    raw["spec"]["containers"][0]["resources"] = {"requests": wanted, "limits": wanted}
    return raw


def test_long_failure_messages_cut_in_events_and_kept_under_budget_in_the_status(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", labels={"pool": pool}))
    cluster.apply(policy(pool, pool, history=100))
    cluster.apply(*(_greedy(f"greedy-{i}", pool) for i in range(PODS)), namespace=namespace)
    operator.start()

    def every_pod_told() -> list[dict[str, Any]] | None:
        told = events(cluster, namespace, "FailedScheduling")
        return told if len({e["involvedObject"]["name"] for e in told}) == PODS else None

    for event in wait_for("a FailedScheduling event for every pod", every_pod_told, 60):
        message = event["message"]
        assert message.startswith("0/") and "Insufficient" in message
        assert len(message.encode()) == MESSAGE_LIMIT
        assert message.endswith(" ...")
    told_at = datetime.now(UTC).replace(microsecond=0)

    def fresh() -> dict[str, Any] | None:
        found = status(cluster, pool)
        beat = found.get("heartbeatTime")
        if beat and datetime.fromisoformat(beat) > told_at and found.get("decisions"):
            return found
        return None

    written = wait_for("a heartbeat after the last failure", fresh, 30)
    assert len(json.dumps({"status": written})) <= STATUS_BUDGET
    assert written["unschedulable"] == PODS
    for decision in written["decisions"]:
        assert decision.get("node") is None  # a merge patch drops a null
        assert len(decision["message"].encode()) <= MESSAGE_LIMIT
    assert "could not write the status" not in operator.logs()
