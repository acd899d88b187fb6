"""The scheduler's list-and-watch against the real API server: what it hands on, and when."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
from harness.e2e import Cluster
from harness.objects import pod

from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.credentials import load
from policy_scheduler.kube.informer import Informer
from policy_scheduler.model import workloads

NOBODY = "no-such-scheduler"  # nothing binds these pods: they only have to exist


class Seen:
    """What an informer handed on: the objects it holds now, by name, and the deletions."""

    def __init__(self) -> None:
        self.objects: dict[str, Mapping[str, Any]] = {}
        self.deleted: list[str] = []

    def change(self, raw: Mapping[str, Any]) -> None:
        self.objects[raw["metadata"]["name"]] = raw

    def delete(self, raw: Mapping[str, Any]) -> None:
        self.objects.pop(raw["metadata"]["name"], None)
        self.deleted.append(raw["metadata"]["name"])


async def until(what: str, probe: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not probe():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


def watching(
    cluster: Cluster,
    collection: str,
    scenario: Callable[[Informer, Seen], Awaitable[None]],
    operator: bool = False,
    **options: Any,
) -> None:
    """Run ``scenario`` while an informer (with these ``options``) follows ``collection``; stop
    it afterwards."""
    config = cluster.operator_kubeconfig if operator else cluster.kubeconfig
    kube = Kube(load(str(config)), concurrency=4)
    seen = Seen()
    informer = Informer(kube, collection, seen.change, seen.delete, **options)

    async def run() -> None:
        try:
            await scenario(informer, seen)
        finally:
            await kube.close()

    asyncio.run(run())


def test_lists_then_hands_on_changes_and_deletions(cluster: Cluster, namespace: str) -> None:
    cluster.apply(pod("before-a", NOBODY), pod("before-b", NOBODY), namespace=namespace)

    async def scenario(informer: Informer, seen: Seen) -> None:
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 20)
        assert set(seen.objects) == {"before-a", "before-b"}
        # kubectl's field manager wrote managedFields; nothing downstream needs them.
        assert all("managedFields" not in o["metadata"] for o in seen.objects.values())
        await asyncio.to_thread(cluster.apply, pod("after", NOBODY), namespace=namespace)
        await until("the new pod", lambda: "after" in seen.objects)
        await asyncio.to_thread(
            cluster.kubectl, "delete", "pod", "before-a", "-n", namespace, "--wait=false"
        )
        await until("the deletion", lambda: seen.deleted == ["before-a"])
        assert set(seen.objects) == {"before-b", "after"}
        task.cancel()

    watching(cluster, f"/api/v1/namespaces/{namespace}/pods", scenario)


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"team": "x"}},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    }


def test_a_slim_informer_lists_in_pages_and_keeps_only_what_it_reads(
    cluster: Cluster, namespace: str
) -> None:
    """As the operator follows Services: pages of two, and of each object, listed or watched,
    only what Workloads reads."""
    cluster.apply(*(service(f"s{i}") for i in range(5)), namespace=namespace)

    async def scenario(informer: Informer, seen: Seen) -> None:
        def slim(name: str) -> bool:
            kept = seen.objects[name]
            return set(kept) == {"metadata", "spec"} and kept["spec"] == {"selector": {"app": name}}

        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 20)
        assert set(seen.objects) == {f"s{i}" for i in range(5)}
        assert all(map(slim, seen.objects))
        await asyncio.to_thread(cluster.apply, service("late"), namespace=namespace)
        await until("the new Service", lambda: "late" in seen.objects)
        assert slim("late")
        await asyncio.to_thread(cluster.kubectl, "delete", "service", "s0", "-n", namespace)
        await until("the deletion", lambda: seen.deleted == ["s0"])
        task.cancel()

    collection = f"/api/v1/namespaces/{namespace}/services"
    watching(cluster, collection, scenario, keep=workloads.slim, page_size=2)


def test_a_relisting_reports_what_vanished_meanwhile_as_deleted(
    cluster: Cluster, namespace: str
) -> None:
    cluster.apply(pod("stays", NOBODY), pod("goes", NOBODY), namespace=namespace)

    async def scenario(informer: Informer, seen: Seen) -> None:
        first = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 20)
        first.cancel()  # as if the connection broke
        await asyncio.to_thread(
            cluster.kubectl, "delete", "pod", "goes", "-n", namespace, "--wait=false"
        )
        informer.synced.clear()
        second = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 20)
        assert seen.deleted == ["goes"]
        assert set(seen.objects) == {"stays"}
        second.cancel()

    watching(cluster, f"/api/v1/namespaces/{namespace}/pods", scenario)


def test_an_object_longer_than_a_read_buffer_arrives_whole(
    cluster: Cluster, namespace: str
) -> None:
    # One watch line of ~200 KB (annotations may total 256 KiB), far more than one read.
    note = "x" * 200_000

    async def scenario(informer: Informer, seen: Seen) -> None:
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 20)
        big = pod("big", NOBODY)
        big["metadata"]["annotations"] = {"example.com/note": note}
        # create, not apply: apply would copy the note into its last-applied annotation.
        await asyncio.to_thread(
            cluster.kubectl, "create", "-n", namespace, "-f", "-", stdin=json.dumps(big)
        )
        await until("the big pod", lambda: "big" in seen.objects)
        assert seen.objects["big"]["metadata"]["annotations"]["example.com/note"] == note
        task.cancel()

    watching(cluster, f"/api/v1/namespaces/{namespace}/pods", scenario)


def test_a_refused_watch_is_logged_and_retried_not_raised(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(informer: Informer, seen: Seen) -> None:
        task = asyncio.create_task(informer.run())
        await until("a warning", lambda: "watch of /api/v1/secrets failed" in caplog.text, 10)
        assert 'cannot list resource "secrets"' in caplog.text
        assert not task.done() and not informer.synced.is_set()
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.informer"):
        # The operator's account may not read secrets (deploy/rbac.yaml).
        watching(cluster, "/api/v1/secrets", scenario, operator=True)
