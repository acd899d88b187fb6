"""A policy that enables a Permit-only plugin (``spec.plugins.permit``) on the real API server:
BindRateLimit, with a bucket of one pod and next to no refill, lets the first pod bind and refuses
the second, which is not bound and is told why in its FailedScheduling event."""

from __future__ import annotations

from typing import Any

from harness.e2e import Cluster, Operator, bound, events, wait_for
from harness.objects import node, pod, policy

REFUSAL = (
    "BindRateLimit: the policy's pods go to binding at most 0.001 a second, in bursts of 1; "
    "tried again later"
)


def test_a_policy_enables_a_permit_only_plugin(
    cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    cluster.apply(node(f"{pool}-0", cpu="2", labels={"pool": pool}))
    permit = [{"name": "BindRateLimit", "args": {"qps": 0.001, "burst": 1}}]
    cluster.apply(policy(pool, pool, plugins={"permit": permit}))
    cluster.apply(pod("first", pool), namespace=namespace)
    operator.start()
    wait_for("first bound", lambda: bound(cluster, namespace).get("first"))

    cluster.apply(pod("second", pool), namespace=namespace)

    def refused() -> list[dict[str, Any]] | None:
        told = [
            e
            for e in events(cluster, namespace, "FailedScheduling")
            if e["involvedObject"]["name"] == "second"
        ]
        return told or None

    (event, *_) = wait_for("second refused", refused)
    assert event["message"] == REFUSAL
    assert list(bound(cluster, namespace)) == ["first"]
