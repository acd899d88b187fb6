"""What ``explain`` reads of a live cluster: every kind the operator watches, so that its picture
of the cluster is the operator's. It did not read the PodDisruptionBudgets (issue 28)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from policy_scheduler import explain
from policy_scheduler.kube.client import Kube

BUDGET = {
    "metadata": {"name": "web", "namespace": "shop", "uid": "b1"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 0},
}


class Listings:
    """A cluster that holds one PodDisruptionBudget and nothing else; it logs what is listed."""

    def __init__(self) -> None:
        self.listed: list[str] = []

    async def pages(
        self, collection: str, params: Mapping[str, str | int]
    ) -> AsyncIterator[dict[str, Any]]:
        self.listed.append(collection)
        items = [BUDGET] if collection == "/apis/policy/v1/poddisruptionbudgets" else []
        yield {"metadata": {}, "items": items}


def test_explain_reads_the_disruption_budgets() -> None:
    cluster = Listings()
    dump = asyncio.run(explain.read_cluster(cast(Kube, cluster)))
    assert "/apis/policy/v1/poddisruptionbudgets" in cluster.listed
    assert [b["metadata"]["name"] for b in dump.disruption_budgets] == ["web"]
