"""Device choice beyond kube-scheduler (issue 30): with examples/policies/gpu-choice.yaml
(DynamicResources' priority with ``preferSmallest``) the operator gives a claim the smallest
device that fits, where kube-scheduler's allocator takes the first one its slice lists.

Two nodes of one pool of the test, each with a ResourceSlice listing an 80Gi GPU before a 20Gi
one; a claim on each asks for one GPU of at least 10Gi. kube-scheduler (the control plane's)
serves the pod kept to the first node, the operator the pod kept to the second. Both bind; the
claims' ``status.allocation`` (what each wrote) name the devices: kube's the 80Gi, ours the
20Gi, and the policy's ``status.decisions`` say why ours was taken.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, items
from harness.objects import device, device_class, exactly, node, pod, resource_claim, resource_slice

GPU_CHOICE = Path(__file__).resolve().parents[2] / "examples/policies/gpu-choice.yaml"
DRIVER = "gpu.example.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
TIMEOUT = 60.0


@pytest.fixture
def prefix(cluster: Cluster, operator: Operator) -> Iterator[str]:
    """A name for this test's objects (label ``pool``), all deleted afterwards."""
    served = cluster.kubectl("api-resources", "--api-group=resource.k8s.io").stdout
    if "resourceslices" not in served:
        pytest.skip("resource.k8s.io/v1 is not served by this control plane")
    name = f"choice-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force")
    for claim in items(cluster, "resourceclaims.resource.k8s.io", "-n", name):
        # No controller removes the claims' delete protection here.
        cluster.kubectl(
            "patch",
            "resourceclaims.resource.k8s.io",
            claim["metadata"]["name"],
            "-n",
            name,
            "--type=merge",
            "-p",
            '{"metadata": {"finalizers": null}}',
            check=False,
        )
    cluster.kubectl("delete", "namespace", name, "--wait=false")
    cluster.kubectl(
        "delete",
        "schedulingpolicies,nodes,deviceclasses.resource.k8s.io,resourceslices.resource.k8s.io",
        "-l",
        f"pool={name}",
        "--wait=false",
    )


def gpu_choice(name: str) -> dict[str, Any]:
    """The example policy, serving ``name`` on the test's nodes."""
    policy: dict[str, Any] = yaml.safe_load(GPU_CHOICE.read_text())
    policy["metadata"] = {"name": name, "labels": {"pool": name}}
    policy["spec"]["nodeSelector"] = {"matchLabels": {"pool": name}}
    return policy


def allocated(cluster: Cluster, namespace: str, claim: str) -> list[str]:
    """The devices of the claim's allocation once the pod using it is bound ([] before)."""
    found = json.loads(
        cluster.kubectl(
            "get", "resourceclaims.resource.k8s.io", claim, "-n", namespace, "-o", "json"
        ).stdout
    )
    status = found.get("status", {})
    if not status.get("reservedFor"):
        return []
    results = (status.get("allocation") or {}).get("devices", {}).get("results", ())
    return [f"{r['pool']}/{r['device']}" for r in results]


def test_the_smallest_device_where_kube_takes_the_first(
    cluster: Cluster, operator: Operator, prefix: str
) -> None:
    labels = {"pool": prefix}
    nodes = {side: f"{prefix}-{side}" for side in ("kube", "ours")}
    gpus = [
        device("big", attributes={"numa": 0}, capacity={"memory": "80Gi"}),
        device("small", attributes={"numa": 0}, capacity={"memory": "20Gi"}),
    ]
    cluster.apply(
        *(node(name, labels=labels) for name in nodes.values()),
        device_class(f"{prefix}-gpu", selectors=[f'device.driver == "{DRIVER}"'], labels=labels),
        *(
            resource_slice(name, DRIVER, name, node=name, devices=gpus, labels=labels)
            for name in nodes.values()
        ),
    )
    at_least = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("10Gi")) >= 0'
    cluster.apply(
        *(
            resource_claim(f"{side}-claim", [exactly("gpu", f"{prefix}-gpu", selectors=[at_least])])
            for side in nodes
        ),
        namespace=prefix,
    )
    cluster.apply(gpu_choice(prefix))
    operator.start()
    schedulers = {"kube": "default-scheduler", "ours": prefix}
    cluster.apply(
        *(
            pod(
                f"{side}-pod",
                schedulers[side],
                claims={"gpu": f"{side}-claim"},
                extra={"nodeSelector": {"kubernetes.io/hostname": name}},
            )
            for side, name in nodes.items()
        ),
        namespace=prefix,
    )
    deadline = time.monotonic() + TIMEOUT
    devices: dict[str, list[str]] = {}
    while time.monotonic() < deadline:
        devices = {side: allocated(cluster, prefix, f"{side}-claim") for side in nodes}
        if all(devices.values()):
            break
        time.sleep(0.5)
    assert devices == {"kube": [f"{nodes['kube']}/big"], "ours": [f"{nodes['ours']}/small"]}
    for side, name in nodes.items():
        bound = json.loads(
            cluster.kubectl("get", "pod", f"{side}-pod", "-n", prefix, "-o", "json").stdout
        )
        assert bound["spec"].get("nodeName") == name
    # The decisions are written to the policy's status in the background.
    told: list[Any] = []
    while not told and time.monotonic() < deadline + TIMEOUT:
        policy = json.loads(
            cluster.kubectl("get", "schedulingpolicies", prefix, "-o", "json").stdout
        )
        decisions = policy.get("status", {}).get("decisions", [])
        told = [d.get("devices") for d in decisions if d.get("pod") == f"{prefix}/ours-pod"]
        time.sleep(0.5)
    assert told == [
        {
            "ours-claim": [
                f"gpu: {DRIVER}/{nodes['ours']}/small "
                f"(smallest first: {DRIVER}/memory=20Gi; NUMA Pack: {DRIVER}/numa=0)"
            ]
        }
    ]
