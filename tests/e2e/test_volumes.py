"""The operator's own binding cycle with volumes (issue 13), end to end on the real control plane.

A SchedulingPolicy made from examples/policies/default-profile.yaml serves pods with claims. No
PV controller or provisioner runs here: test_parity_volumes.PVController stands in for them, but
only once the operator has done its part (the PV's claimRef, the claim's selected-node
annotation), so that each test sees that part done by the operator. Waits are generous and never
assume the operator is slow or fast. They stay on the bare cluster: the real PV controller would
not wait for the test to see the pod held, and no provisioner runs on real_cluster either
(test_real_cluster has the real PV controller bind a StatefulSet's claims).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, bound, events, wait_for
from harness.objects import node, pod
from test_parity import create_objects, delete_storage
from test_parity_volumes import (
    PROVISIONER,
    RWOP_CONFLICT,
    SELECTED_NODE,
    ZONE,
    PVController,
    allocated_claim,
    bound_pair,
    claim,
    claiming,
    csi_driver,
    storage_capacity,
    storage_class,
    using,
    volume,
)

DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"
TIMEOUT = 60.0


@pytest.fixture
def storage(cluster: Cluster, namespace: str, pool: str) -> Iterator[None]:
    """The pool's storage objects are deleted after the test, as test_parity's ``prefix``
    fixture deletes a scenario's; bound pods are forced away (no kubelet confirms)."""
    yield
    cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force")
    delete_storage(cluster, namespace, pool)


def serve(cluster: Cluster, pool: str, operator: Operator, nodes: list[dict[str, Any]]) -> str:
    """Nodes of the pool, a default-profile policy over them, the operator started; the policy's
    name, which the pods name as their scheduler."""
    policy = yaml.safe_load(DEFAULT_PROFILE.read_text())
    policy["metadata"] = {"name": pool, "labels": {"pool": pool}}
    policy["spec"]["nodeSelector"] = {"matchLabels": {"pool": pool}}
    for obj in nodes:
        obj["metadata"]["labels"]["pool"] = pool
    cluster.apply(*nodes)
    cluster.apply(policy)
    operator.start()
    return pool


def get(cluster: Cluster, resource: str, name: str, namespace: str | None = None) -> Any:
    scoped = ("-n", namespace) if namespace else ()
    return json.loads(cluster.kubectl("get", resource, name, *scoped, "-o", "json").stdout)


def claim_pod(name: str, scheduler: str, *claims: str) -> dict[str, Any]:
    return pod(name, scheduler, extra=using(*claims))


def test_local_volume_is_reserved_then_pod_bound_once_claim_is(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """WaitForFirstConsumer with a local PV on one node: the operator picks that node (not the
    roomier one), writes the PV's claimRef, waits for the claim to be bound (here by the
    stand-in PV controller) and binds the pod there."""
    local = f"{pool}-local"
    pv = f"{pool}-pv"
    scheduler = serve(
        cluster,
        pool,
        operator,
        [node(f"{pool}-small"), node(f"{pool}-big", cpu="16", memory="32Gi")],
    )
    create_objects(
        cluster,
        namespace,
        pool,
        [
            storage_class(local),
            volume(pv, storage_class=local, nodes=[f"{pool}-small"]),
            claim("data", storage_class=local),
        ],
    )
    cluster.apply(claim_pod("web", scheduler, "data"), namespace=namespace)

    def reserved() -> dict[str, Any] | None:
        ref = get(cluster, "persistentvolume", pv)["spec"].get("claimRef")
        return ref if ref and ref.get("name") == "data" else None

    ref = wait_for("the operator to write the PV's claimRef", reserved, TIMEOUT)
    assert ref["namespace"] == namespace and ref["uid"]
    # The claim is not bound yet: the pod must wait for it.
    assert "web" not in bound(cluster, namespace)

    controller = PVController(cluster, namespace, pool)

    def placed() -> str | None:
        controller()
        return bound(cluster, namespace).get("web")

    assert wait_for("the pod to be bound", placed, TIMEOUT) == f"{pool}-small"
    assert controller.bound == {"data": pv}


def test_provisioned_claim_gets_the_selected_node(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """WaitForFirstConsumer with a provisioner: the operator writes the node it picked in the
    claim's selected-node annotation; the stand-in provisions a PV there and binds it; the pod
    is bound on that node."""
    fast = f"{pool}-fast"
    scheduler = serve(
        cluster, pool, operator, [node(f"{pool}-a"), node(f"{pool}-b", cpu="16", memory="32Gi")]
    )
    create_objects(
        cluster,
        namespace,
        pool,
        [storage_class(fast, provisioner=PROVISIONER), claim("fresh", storage_class=fast)],
    )
    cluster.apply(claim_pod("web", scheduler, "fresh"), namespace=namespace)

    def selected() -> str | None:
        pvc = get(cluster, "persistentvolumeclaim", "fresh", namespace)
        return (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)

    chosen = wait_for("the selected-node annotation", selected, TIMEOUT)
    assert chosen == f"{pool}-b"  # the roomier
    assert "web" not in bound(cluster, namespace)

    controller = PVController(cluster, namespace, pool)

    def placed() -> str | None:
        controller()
        return bound(cluster, namespace).get("web")

    assert wait_for("the pod to be bound", placed, TIMEOUT) == chosen
    assert set(controller.bound) == {"fresh"}


def test_missing_claim_then_created_wakes_the_pod(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """A pod whose claim does not exist is told so, as kube-scheduler tells it; creating the
    claim (bound to a PV) brings the pod back and it is bound."""
    scheduler = serve(cluster, pool, operator, [node(f"{pool}-0"), node(f"{pool}-1")])
    cluster.apply(claim_pod("web", scheduler, "later"), namespace=namespace)

    def told() -> list[dict[str, Any]]:
        return [
            e
            for e in events(cluster, namespace, "FailedScheduling")
            if e["involvedObject"]["name"] == "web"
        ]

    failed = wait_for("FailedScheduling for the missing claim", told, TIMEOUT)
    # VolumeRestrictions' PreFilter rejects the pod: kube's text, without node counts, and
    # kube's DynamicResources PostFilter's error ("not found": its PreFilter never ran), after
    # which no preemption is tried.
    assert re.fullmatch(
        r'0/\d+ nodes are available: persistentvolumeclaim "later" not found\. not found',
        failed[0]["message"],
    ), failed[0]["message"]
    assert "web" not in bound(cluster, namespace)

    # Parked, the pod is tried again after 300 s regardless; within TIMEOUT only the claim's
    # event can have moved it.
    create_objects(cluster, namespace, pool, bound_pair(namespace, f"{pool}-later", "later"))
    placed = wait_for("the pod to be bound", lambda: bound(cluster, namespace).get("web"), TIMEOUT)
    assert placed in {f"{pool}-0", f"{pool}-1"}


def test_storage_capacity_that_grows_wakes_the_pod(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """The operator watches CSIDrivers and CSIStorageCapacities: a claim to provision by a CSI
    driver that asks for capacity checks, larger than any capacity, keeps the pod pending with
    kube's text; the capacity of zone a growing (an update with a larger volume limit, which
    VolumeBinding's hint lets through) brings the pod back, and the claim is provisioned
    there."""
    driver, fast = f"{pool}.csi.example.com", f"{pool}-fast"
    scheduler = serve(
        cluster,
        pool,
        operator,
        [
            node(f"{pool}-a", labels={ZONE: f"{pool}-a"}),
            node(f"{pool}-b", cpu="16", memory="32Gi", labels={ZONE: f"{pool}-b"}),
        ],
    )
    capacity = storage_capacity(f"{pool}-a", fast, f"{pool}-a", "1Gi")
    create_objects(
        cluster,
        namespace,
        pool,
        [
            csi_driver(driver, storageCapacity=True),
            storage_class(fast, provisioner=driver),
            capacity,
            claim("big", size="5Gi", storage_class=fast),
        ],
    )
    cluster.apply(claim_pod("web", scheduler, "big"), namespace=namespace)

    def told() -> list[str]:
        return [
            e["message"]
            for e in events(cluster, namespace, "FailedScheduling")
            if e["involvedObject"]["name"] == "web"
        ]

    (message, *_) = wait_for("FailedScheduling for want of storage", told, TIMEOUT)
    assert message.startswith(
        "0/2 nodes are available: 2 node(s) did not have enough free storage."
    ), message

    # Parked, the pod is tried again after 300 s regardless; within TIMEOUT only the
    # capacity's update can have moved it.
    cluster.kubectl(
        "patch", "csistoragecapacity", capacity["metadata"]["name"], "-n", namespace,
        "--type=merge", "-p", json.dumps({"capacity": "10Gi"}),
    )  # fmt: skip
    controller = PVController(cluster, namespace, pool)

    def placed() -> str | None:
        controller()
        return bound(cluster, namespace).get("web")

    assert wait_for("the pod to be bound", placed, TIMEOUT) == f"{pool}-a"
    assert set(controller.bound) == {"big"}


def test_second_pod_of_read_write_once_pod_claim_stays_pending(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """ReadWriteOncePod: the first pod is bound, the second is told kube-scheduler's reason and
    stays pending."""
    scheduler = serve(cluster, pool, operator, [node(f"{pool}-0"), node(f"{pool}-1")])
    create_objects(
        cluster,
        namespace,
        pool,
        bound_pair(namespace, f"{pool}-solo", "solo", modes=["ReadWriteOncePod"]),
    )
    cluster.apply(claim_pod("first", scheduler, "solo"), namespace=namespace)
    wait_for("the first pod bound", lambda: bound(cluster, namespace).get("first"), TIMEOUT)
    cluster.apply(claim_pod("second", scheduler, "solo"), namespace=namespace)

    def told() -> list[dict[str, Any]]:
        return [
            e
            for e in events(cluster, namespace, "FailedScheduling")
            if e["involvedObject"]["name"] == "second"
        ]

    failed = wait_for("FailedScheduling for the second pod", told, TIMEOUT)
    message = failed[0]["message"]
    # Both nodes of the pool for this reason (other tests' nodes, outside the pool, for theirs).
    # Then kube's preemption sentence: the other pod has no lower priority.
    assert re.fullmatch(
        rf"0/(\d+) nodes are available: (.*, )?2 {re.escape(RWOP_CONFLICT)}(, .*)?\. "
        r"preemption: 0/\1 nodes are available: .*\.",
        message,
    ), message
    assert "second" not in bound(cluster, namespace)


def test_allocated_claim_is_reserved_and_pod_bound_where_allocated(
    cluster: Cluster, namespace: str, pool: str, operator: Operator, storage: None
) -> None:
    """An allocated ResourceClaim not reserved yet: the operator binds the pod on the node the
    allocation allows (not the roomier one) and reserves the claim for it, as kube-scheduler's
    PreBind does."""
    served = cluster.kubectl("api-resources", "--api-group=resource.k8s.io").stdout
    if "resourceclaims" not in served:
        pytest.skip("resource.k8s.io/v1 is not served by this control plane")
    scheduler = serve(
        cluster, pool, operator, [node(f"{pool}-big", cpu="16", memory="32Gi"), node(f"{pool}-gpu")]
    )
    create_objects(cluster, namespace, pool, [allocated_claim("gpu", f"{pool}-gpu")])
    web = pod("web", scheduler, extra=claiming("gpu"))
    web["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    cluster.apply(web, namespace=namespace)

    placed = wait_for("the pod to be bound", lambda: bound(cluster, namespace).get("web"), TIMEOUT)
    assert placed == f"{pool}-gpu"
    uid = get(cluster, "pod", "web", namespace)["metadata"]["uid"]
    reserved = get(cluster, "resourceclaims.resource.k8s.io", "gpu", namespace)["status"]
    assert reserved.get("reservedFor") == [{"resource": "pods", "name": "web", "uid": uid}]
