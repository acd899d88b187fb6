"""The operator on the older Kubernetes releases it supports (docs/operations.md, "Kubernetes
versions"): for each release of ``OLDER_KUBERNETES_VERSIONS`` (hack/controlplane/versions.env),
a control plane of its own whose kube-apiserver is that release's (``build --older``, ``up
--apiserver``), and the operator on it: it starts, binds a pod, tells an unschedulable one, and
writes its policy's status."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.controlplane import CONTROLPLANE
from harness.e2e import Cluster, Operator, bound, control_plane, events, status, wait_for
from harness.objects import node, pod, policy


def _older_versions() -> list[str]:
    for line in (CONTROLPLANE / "versions.env").read_text().splitlines():
        if line.startswith("OLDER_KUBERNETES_VERSIONS="):
            return line.partition("=")[2].strip('"').split()
    return []


@pytest.fixture(scope="module")
def apiservers() -> dict[str, Path]:
    """Each older release's kube-apiserver (built once, then cached like the others)."""
    built = subprocess.run(
        [str(CONTROLPLANE / "build"), "--older"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return {version: Path(path) for version, path in (line.split() for line in built if line)}


@pytest.fixture
def older(
    request: pytest.FixtureRequest, apiservers: dict[str, Path], tmp_path: Path
) -> Iterator[Cluster]:
    state = tmp_path / "control-plane"
    binary = apiservers[request.param]
    with control_plane(state, "--apiserver", str(binary)) as cluster:
        yield cluster


@pytest.mark.parametrize("older", _older_versions(), indirect=True)
def test_the_operator_serves_an_older_api_server(
    older: Cluster, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    version = request.node.callspec.params["older"]
    served = json.loads(older.kubectl("get", "--raw", "/version").stdout)
    assert served["gitVersion"] == version
    older.install_crd()
    older.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "policy-scheduler"}})
    older.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "work"}})
    older.apply(node("n1", cpu="2", labels={"pool": "old"}), policy("old", "old"))
    older.apply(pod("fits", "old"), pod("huge", "old", cpu="64"), namespace="work")
    operator = Operator(older.kubeconfig, tmp_path / "operator.log")
    operator.start()
    try:
        wait_for("the pod bound", lambda: bound(older, "work") == {"fits": "n1"})
        (failed,) = wait_for(
            "the huge pod's FailedScheduling", lambda: events(older, "work", "FailedScheduling")
        )
        assert failed["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
        wait_for("the policy's status", lambda: status(older, "old").get("scheduled") == 1)
    finally:
        operator.stop()
        print(operator.logs()[-20000:])
