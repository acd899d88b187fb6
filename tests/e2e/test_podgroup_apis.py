"""The PodGroup APIs on a real API server (issue 31): the test CRDs of scheduler-plugins and
Volcano install; the operator's watches of the three kinds (Kubernetes' own served with the
GenericWorkload gate) fill the scheduler's pod groups; each API takes the status patch the model
writes for it through the status subresource; and on a server without the gate the native kind
is simply not served, with no error."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from harness.e2e import Cluster
from test_informer import until

from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.credentials import load
from policy_scheduler.kube.events import Recorder
from policy_scheduler.kube.ports import KubeObjects
from policy_scheduler.kube.scheduler import KubeScheduler
from policy_scheduler.model.podgroups import (
    API_VERSIONS,
    KIND_NAMES,
    NATIVE,
    SCHEDULER_PLUGINS,
    VOLCANO,
    GroupKey,
    GroupOutcome,
    PodGroup,
    status_patch,
    status_ref,
)
from policy_scheduler.scheduling.kinds import NAMED

NAMESPACE = "training"
SPECS: dict[str, dict[str, Any]] = {
    NATIVE: {"schedulingPolicy": {"gang": {"minCount": 3}}},
    SCHEDULER_PLUGINS: {"minMember": 4, "scheduleTimeoutSeconds": 30, "minResources": {"cpu": 2}},
    VOLCANO: {"minMember": 5, "minTaskMember": {"worker": 4}, "queue": "default"},
}


def groups(namespace: str) -> list[dict[str, Any]]:
    """A PodGroup of each API in ``namespace``, ``train-<api>``, with its spec of SPECS."""
    return [
        {
            "apiVersion": API_VERSIONS[api],
            "kind": "PodGroup",
            "metadata": {"name": f"train-{api}", "namespace": namespace},
            "spec": spec,
        }
        for api, spec in SPECS.items()
    ]


@pytest.fixture(scope="module")
def gated(gang_cluster: Cluster, pod_group_crds: None) -> Cluster:
    """The control plane serving scheduling.k8s.io/v1beta1 (GenericWorkload), with the two test
    CRDs installed and established, and a PodGroup of each API in ``training``."""
    gang_cluster.kubectl("create", "namespace", NAMESPACE)
    gang_cluster.apply(*groups(NAMESPACE))
    return gang_cluster


def watched_groups(
    cluster: Cluster, namespace: str, count: int
) -> tuple[list[PodGroup], dict[str, bool]]:
    """The pod groups of ``namespace`` that the operator's informers of the three kinds hand to
    its cache, once every informer has listed and ``count`` are there; and whether each kind's
    API is served."""

    async def run() -> tuple[list[PodGroup], dict[str, bool]]:
        kube = Kube(load(str(cluster.kubeconfig)), concurrency=8)
        scheduler = KubeScheduler(kube)
        informers = {
            api: scheduler._informers[NAMED[kind].watch] for api, kind in KIND_NAMES.items()
        }
        tasks = [asyncio.create_task(informer.run()) for informer in informers.values()]
        groups = scheduler.scheduler.cache.snapshot.pod_groups

        def mine() -> list[PodGroup]:
            return sorted((g for g in groups if g.key.namespace == namespace), key=lambda g: g.key)

        try:
            await until(
                "every pod group watch listed",
                lambda: all(i.synced.is_set() for i in informers.values()),
            )
            await until(f"{count} pod groups of {namespace}", lambda: len(mine()) == count)
            return mine(), {api: informer.served for api, informer in informers.items()}
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await kube.close()

    return asyncio.run(run())


def test_the_watches_read_the_groups_of_the_three_apis(gated: Cluster) -> None:
    groups, served = watched_groups(gated, NAMESPACE, 3)
    assert served == {NATIVE: True, SCHEDULER_PLUGINS: True, VOLCANO: True}
    read = {
        g.key: (g.min_member, g.gang, g.timeout, dict(g.min_resources), g.error) for g in groups
    }
    assert read == {
        GroupKey(NATIVE, NAMESPACE, f"train-{NATIVE}"): (3, True, None, {}, ""),
        GroupKey(SCHEDULER_PLUGINS, NAMESPACE, f"train-{SCHEDULER_PLUGINS}"): (
            4,
            True,
            30.0,
            {"cpu": 2000},
            "",
        ),
        GroupKey(VOLCANO, NAMESPACE, f"train-{VOLCANO}"): (5, True, None, {}, ""),
    }


@pytest.mark.parametrize("outcome", ["scheduled", "unschedulable"])
def test_each_api_takes_its_status_patch(gated: Cluster, outcome: str) -> None:
    """The patch of each API's status, as the group pass would write it, is one its schema takes
    through the status subresource; written again unchanged, it is nothing."""
    result = (
        GroupOutcome(scheduled=True, placed=5, members=5, message="")
        if outcome == "scheduled"
        else GroupOutcome(
            scheduled=False,
            placed=1,
            members=5,
            message="minCount (3) cannot be satisfied: 1 scheduled, 4 remaining",
        )
    )
    namespace = f"{NAMESPACE}-{outcome}"
    gated.kubectl("create", "namespace", namespace)
    gated.apply(*groups(namespace))
    mine, _ = watched_groups(gated, namespace, 3)
    now = datetime.now(UTC)

    async def write() -> None:
        kube = Kube(load(str(gated.kubeconfig)), concurrency=4)
        try:
            for group in mine:
                patch = status_patch(group, result, now)
                assert patch is not None, group.key
                await KubeObjects(kube, Recorder(kube)).patch(status_ref(group), patch)
        finally:
            await kube.close()

    asyncio.run(write())
    for group in mine:
        written = json.loads(
            gated.kubectl(
                "get",
                f"podgroups.{API_VERSIONS[group.key.api].split('/')[0]}",
                group.key.name,
                "-n",
                namespace,
                "-o",
                "json",
            ).stdout
        )["status"]
        expected = status_patch(group, result, now)
        assert expected is not None
        for name, value in expected["status"].items():
            if name == "conditions":
                assert [(c["type"], c["status"], c["reason"]) for c in written[name]] == [
                    (c["type"], c["status"], c["reason"]) for c in value
                ], group.key
            else:
                assert written[name] == value, group.key
    again, _ = watched_groups(gated, namespace, 3)
    assert [g.resource_version for g in again] != [g.resource_version for g in mine]
    for group in again:
        assert status_patch(group, result, now) is None, group.key


def test_without_the_gate_the_native_kind_is_not_served_and_no_error(cluster: Cluster) -> None:
    """The session's control plane runs without GenericWorkload and without the CRDs: each
    watch lists as an API not served, with nothing in it."""
    groups, served = watched_groups(cluster, NAMESPACE, 0)
    assert (groups, served) == ([], {NATIVE: False, SCHEDULER_PLUGINS: False, VOLCANO: False})
