"""The storage and device objects on the real API server (issue 13): the operator's watches of
PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities, VolumeAttachments and ResourceClaims fill the scheduler's cache; a watched API
the server does not serve (a 404 to its listing) counts as listed and empty instead of holding every
decision; and explain reads the same objects."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest
from harness.e2e import Cluster
from harness.objects import policy
from test_informer import Seen, until, watching

from policy_scheduler import explain
from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.credentials import load
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.kinds import collection
from policy_scheduler.kube.scheduler import KubeScheduler
from policy_scheduler.model import volumes
from policy_scheduler.scheduling.kinds import NAMED
from policy_scheduler.simulate import ClusterDump

Raw = dict[str, Any]
# An API version no server serves: its listing answers 404, as resource.k8s.io/v1's does on a
# cluster older than 1.34.
NOT_SERVED = "/apis/resource.k8s.io/v0alpha9/resourceclaims"


def storage_objects(suffix: str, namespace: str) -> list[Raw]:
    """One object of each kind, named ``*-<suffix>``."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": f"fast-{suffix}"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pv-{suffix}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": f"fast-{suffix}",
                "csi": {"driver": "csi.example.com", "volumeHandle": f"vol-{suffix}"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"data-{suffix}", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": f"fast-{suffix}",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": f"node-{suffix}"},
            "spec": {
                "drivers": [
                    {
                        "name": "csi.example.com",
                        "nodeID": f"node-{suffix}",
                        "allocatable": {"count": 7},
                    }
                ]
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": f"csi-{suffix}.example.com"},
            "spec": {"storageCapacity": True, "preventPodSchedulingIfMissing": True},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"capacity-{suffix}", "namespace": namespace},
            "storageClassName": f"fast-{suffix}",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}},
            "capacity": "10Gi",
            "maximumVolumeSize": "4Gi",
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": f"attachment-{suffix}"},
            "spec": {
                "attacher": "csi.example.com",
                "nodeName": f"node-{suffix}",
                "source": {"persistentVolumeName": f"pv-{suffix}"},
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"gpu-{suffix}", "namespace": namespace},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            },
        },
    ]


@pytest.fixture
def created(cluster: Cluster, namespace: str) -> Any:
    """One object of each storage kind, deleted afterwards; their suffix."""
    suffix = uuid.uuid4().hex[:6]
    objects = storage_objects(suffix, namespace)
    cluster.apply(*objects)
    yield suffix
    for obj in objects:
        scope = ["-n", namespace] if obj["kind"] in volumes.NAMESPACED else []
        name = [obj["kind"], obj["metadata"]["name"], *scope]
        if obj["kind"] in (volumes.PVC, volumes.PV):
            # Their protection finalizers are kube-controller-manager's to remove, which does
            # not run here: without this, they would stay Terminating for good.
            cluster.kubectl("patch", *name, "--type=merge", "-p", NO_FINALIZERS)
        cluster.kubectl("delete", *name, "--wait=false", "--ignore-not-found")


NO_FINALIZERS = '{"metadata": {"finalizers": null}}'


def test_the_scheduler_watches_every_storage_kind(
    cluster: Cluster, pool: str, namespace: str, created: str
) -> None:
    """With the admin's kubeconfig: test_deploy runs the operator under deploy/'s RBAC, which
    grants these watches. The CRD too: the scheduler's watches include the policies', and it
    is not confirmed until they are served. A policy whose plugins read every storage kind:
    a kind no served policy reads is not watched."""
    cluster.apply(
        policy(
            pool,
            pool,
            predicates=[
                {"name": "VolumeBinding"},
                {"name": "NodeVolumeLimits"},
                {"name": "DynamicResources"},
            ],
        )
    )

    async def run() -> None:
        # A connection per watch (15) and room for the listings.
        kube = Kube(load(str(cluster.kubeconfig)), concurrency=32)
        scheduler = KubeScheduler(kube)
        task = asyncio.create_task(scheduler.watch())
        try:

            def seen() -> bool:
                catalog = scheduler.scheduler.cache.snapshot.volumes
                return all(
                    (
                        catalog.claim(namespace, f"data-{created}"),
                        catalog.volume(f"pv-{created}"),
                        catalog.storage_class(f"fast-{created}"),
                        catalog.csi_node(f"node-{created}"),
                        catalog.csi_driver(f"csi-{created}.example.com"),
                        catalog.storage_capacities(f"fast-{created}"),
                        catalog.volume_attachments(f"node-{created}"),
                        catalog.resource_claim(namespace, f"gpu-{created}"),
                    )
                )

            await until("every storage object in the cache", seen)
            catalog = scheduler.scheduler.cache.snapshot.volumes
            csi_node = catalog.csi_node(f"node-{created}")
            assert csi_node is not None and csi_node.limits == {"csi.example.com": 7}
            claim = catalog.claim(namespace, f"data-{created}")
            assert claim is not None and claim.storage_class == f"fast-{created}"
            driver = catalog.csi_driver(f"csi-{created}.example.com")
            assert driver is not None and driver.prevents_scheduling_if_missing
            assert driver.storage_capacity
            (capacity,) = catalog.storage_capacities(f"fast-{created}")
            assert (capacity.key, capacity.volume_limit) == (
                f"{namespace}/capacity-{created}",
                4 * 2**30,
            )
            (attached,) = catalog.volume_attachments(f"node-{created}")
            assert (attached.attacher, attached.volume_name) == ("csi.example.com", f"pv-{created}")
            # What the informer keeps is volumes.slim's: no managedFields, no creation time.
            assert set(claim.raw["metadata"]) <= {
                "name", "namespace", "uid", "resourceVersion", "labels", "annotations"
            }  # fmt: skip
            # Every watch listed, storage ones included: decisions are not held.
            await until("every watch confirmed", lambda: not scheduler.scheduler._unconfirmed)
            await asyncio.to_thread(
                cluster.kubectl, "delete", "csinode", f"node-{created}", "--wait=false"
            )
            await until(
                "the deletion",
                lambda: (
                    scheduler.scheduler.cache.snapshot.volumes.csi_node(f"node-{created}") is None
                ),
            )
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await kube.close()

    asyncio.run(run())


def test_the_storage_collections_are_the_served_ones(cluster: Cluster) -> None:
    """What kube/scheduler.py watches answers on this server (resource.k8s.io/v1 is served
    from Kubernetes 1.34, the control plane's version)."""
    served = cluster.kubectl("api-resources", "-o", "name").stdout.split()
    for kind in volumes.KINDS:
        path = collection(NAMED[kind])
        parts = path.strip("/").split("/")
        resource = parts[-1] if parts[0] == "api" else f"{parts[-1]}.{parts[1]}"
        assert resource in served, path


def test_an_optional_collection_not_served_is_listed_as_empty_and_said_once(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    confirmed: list[bool] = []

    async def scenario(informer: Informer, seen: Seen) -> None:
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 10)
        assert (confirmed, seen.objects, informer.served) == ([True], {}, False)
        await asyncio.sleep(2)  # past the first retries of a failing watch
        assert not task.done() and informer.synced.is_set() and confirmed == [True]
        task.cancel()

    with caplog.at_level(logging.INFO, logger="policy_scheduler.kube.informer"):
        watching(cluster, NOT_SERVED, scenario, optional=True, on_synced=confirmed.append)
    (said,) = [r for r in caplog.records if NOT_SERVED in r.getMessage()]
    assert said.levelno == logging.WARNING
    assert "is not served by this API server" in said.getMessage()


def test_a_required_collection_not_served_is_not_taken_as_listed(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Without ``optional`` (nodes, pods, policies: a 404 there is a fault), the informer keeps
    retrying and never says it is synced."""

    async def scenario(informer: Informer, seen: Seen) -> None:
        task = asyncio.create_task(informer.run())
        await until("a warning", lambda: f"watch of {NOT_SERVED} failed" in caplog.text, 10)
        assert not task.done() and not informer.synced.is_set()
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.informer"):
        watching(cluster, NOT_SERVED, scenario)


NOT_SERVED_CLAIMS = "/apis/resource.k8s.io/v0alpha9/resourceclaims"


def test_explain_reads_every_storage_kind(cluster: Cluster, namespace: str, created: str) -> None:
    kube = explain.connect(str(cluster.kubeconfig))

    async def read() -> tuple[ClusterDump, list[dict[str, Any]]]:
        try:
            dump, listing = await asyncio.gather(
                explain.read_cluster(kube),
                explain.read_listing(kube, NOT_SERVED_CLAIMS, optional=True),
            )
            return dump, listing
        finally:
            await kube.close()

    dump, not_served = asyncio.run(read())
    read_ = {
        (kind, raw["metadata"].get("namespace", ""), raw["metadata"]["name"])
        for kind, raw in dump.storage
    }
    assert {
        (volumes.PVC, namespace, f"data-{created}"),
        (volumes.PV, "", f"pv-{created}"),
        (volumes.STORAGE_CLASS, "", f"fast-{created}"),
        (volumes.CSI_NODE, "", f"node-{created}"),
        (volumes.CSI_DRIVER, "", f"csi-{created}.example.com"),
        (volumes.CSI_STORAGE_CAPACITY, namespace, f"capacity-{created}"),
        (volumes.VOLUME_ATTACHMENT, "", f"attachment-{created}"),
        (volumes.RESOURCE_CLAIM, namespace, f"gpu-{created}"),
    } <= read_
    # An API the server does not serve has no objects, as the operator takes it.
    assert not_served == []
