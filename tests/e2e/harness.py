"""Helpers for end-to-end tests: the running cluster, object builders, polling."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pykube
import pytest

T = TypeVar("T")


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

    def apply(self, *objects: dict[str, Any]) -> None:
        self.kubectl(
            "apply",
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
