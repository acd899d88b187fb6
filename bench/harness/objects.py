"""Node, Pod and SchedulingPolicy objects as the tests and benchmarks create them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
PAUSE = "registry.k8s.io/pause:3.10"


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node object as a kubelet would register it (on a cluster with kwok, kwok then keeps it
    Ready; on a bare one no kubelet runs)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod(
    name: str,
    scheduler: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "64Mi",
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod of one pause container requesting ``cpu`` and ``memory`` (None: nothing of it), for
    ``scheduler``; ``extra`` added to its spec."""
    requests = {key: amount for key, amount in (("cpu", cpu), ("memory", memory)) if amount}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": PAUSE, "resources": {"requests": requests}}],
            **(extra or {}),
        },
    }


def policy(name: str, pool: str, **spec: Any) -> dict[str, Any]:
    """A SchedulingPolicy whose node pool is the nodes labelled ``pool=<pool>``."""
    return {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name, "labels": {"pool": pool}},
        "spec": {
            "nodeSelector": {"matchLabels": {"pool": pool}},
            "predicates": [{"name": "NodeResourcesFit"}, {"name": "TaintToleration"}],
            "priorities": [{"name": "LeastAllocated", "weight": 1}],
            **spec,
        },
    }
