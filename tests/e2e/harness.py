"""Helpers for end-to-end tests: the running cluster, object builders, polling."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pykube
import pytest
from prometheus_client.parser import text_string_to_metric_families

from policy_scheduler.model.objects import NodeView, PodView

T = TypeVar("T")
CRDS = Path(__file__).resolve().parents[2] / "crds"


@dataclass(frozen=True)
class Cluster:
    """A running control plane: kubeconfigs for the admin and the operator, and its binaries."""

    kubeconfig: Path
    operator_kubeconfig: Path
    bin: Path

    def api(self, operator: bool = False) -> pykube.HTTPClient:
        config = self.operator_kubeconfig if operator else self.kubeconfig
        return pykube.HTTPClient(pykube.KubeConfig.from_file(str(config)))

    def kubectl(
        self, *args: str, operator: bool = False, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        config = self.operator_kubeconfig if operator else self.kubeconfig
        return subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(config), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def install_crd(self) -> None:
        """Apply crds/ and wait for the SchedulingPolicy CRD to be Established. kubectl wait may
        fail at once on a just-started API server of a loaded machine, so it is asked again
        until it waits."""
        self.kubectl("apply", "-f", str(CRDS))
        wait_for(
            "the SchedulingPolicy CRD established",
            lambda: (
                self.kubectl(
                    "wait",
                    "--for=condition=Established",
                    "crd/schedulingpolicies.policy-scheduler.dev",
                    check=False,
                ).returncode
                == 0
            ),
        )

    def apply(self, *objects: dict[str, Any], namespace: str | None = None) -> None:
        self.kubectl(
            "apply",
            *(("-n", namespace) if namespace else ()),
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
        )


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 30.0) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node object as a kubelet would register it (no kubelet runs here)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


class Operator:
    """``policy-scheduler run`` as a separate process, as users run it."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, extra_args: Sequence[str] = ()) -> None:
        """Start it; ``extra_args`` are more ``run`` flags (``--metrics URL``, ...)."""
        executable = Path(sys.executable).with_name("policy-scheduler")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(executable),
                    "run",
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--log-format",
                    "full",
                    *extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


def items(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    """``kubectl get ... -o json`` items."""
    result: list[dict[str, Any]] = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)[
        "items"
    ]
    return result


def pod(
    name: str,
    scheduler: str,
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    labels: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
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


def bound(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Pod name -> node, for the bound pods of ``namespace``."""
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in items(cluster, "pods", "-n", namespace)
        if p["spec"].get("nodeName")
    }


def events(cluster: Cluster, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in items(cluster, "events", "-n", namespace) if e["reason"] == reason]


def assert_not_overcommitted(cluster: Cluster, pool: str) -> None:
    """No node of the pool has pods requesting more than it can allocate."""
    nodes = {
        n["metadata"]["name"]: NodeView(n) for n in items(cluster, "nodes", "-l", f"pool={pool}")
    }
    requested: Counter[str] = Counter()
    for raw in items(cluster, "pods", "-A"):
        view = PodView(raw)
        if view.node_name in nodes:
            requested[view.node_name] += view.requests.get("cpu", 0)
    for name, cpu in requested.items():
        assert cpu <= nodes[name].allocatable["cpu"], f"{name} overcommitted: {cpu}m"


def status(cluster: Cluster, name: str) -> dict[str, Any]:
    """The status of SchedulingPolicy ``name``; empty until an operator writes one."""
    found = items(cluster, "schedulingpolicies", "--field-selector", f"metadata.name={name}")
    result: dict[str, Any] = found[0].get("status") or {}
    return result


def posted_since(
    cluster: Cluster, namespace: str, reason: str, since: datetime
) -> list[dict[str, Any]]:
    """The ``reason`` events posted at or after ``since``, by their ``eventTime``: the poster's
    clock, which is this machine's, as everything runs here. What a restarted or a new operator
    said, apart from what the one before it said."""
    return [
        e
        for e in events(cluster, namespace, reason)
        if datetime.fromisoformat(e["eventTime"]) >= since
    ]


ASSIGNED = re.compile(r"Successfully assigned [^/\s]+/(\S+) to (\S+) ")


def assert_scheduled_at_most_once(
    cluster: Cluster, namespace: str, placed: Mapping[str, str]
) -> None:
    """At most one ``Scheduled`` event per pod, naming the node ``placed`` says it is bound to:
    no pod was bound twice, nor told bound where it is not. (A pod may have none: its operator
    can be killed between the bind and the event.)"""
    told: Counter[str] = Counter()
    for event in events(cluster, namespace, "Scheduled"):
        found = ASSIGNED.match(event["message"])
        assert found, f"not a Scheduled message: {event['message']}"
        name, told_node = found.groups()
        assert placed.get(name) == told_node, f"{name} is on {placed.get(name)}, told {told_node}"
        told[name] += 1
    twice = sorted(name for name, count in told.items() if count > 1)
    assert not twice, f"Scheduled more than once: {twice}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for an operator's ``--metrics``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


Samples = Mapping[tuple[str, frozenset[tuple[str, str]]], float]
"""A scrape of an operator's ``--metrics``: (metric, labels) -> value."""


def scrape(url: str) -> Samples | None:
    """Every sample of the exposition, or None while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            text = response.read().decode()
    except OSError:
        return None
    return samples_of(text)


def samples_of(text: str) -> Samples:
    """Every sample of a Prometheus text exposition (an operator's, or kube-apiserver's)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, metric: str, /, **labels: str) -> float | None:
    return samples.get((metric, frozenset(labels.items())))
