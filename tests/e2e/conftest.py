"""The real control planes for end-to-end tests.

``cluster``: one etcd + kube-apiserver + kube-scheduler per test session, built by hack/controlplane
and started in a state directory of its own (so a developer's `make cluster` is left alone). It is
bare (``up --bare``: no controller, no kubelet): the tests that need what those do stand in for
them and control when it happens. Or the cluster that ``POLICY_SCHEDULER_E2E_KUBECONFIG`` names,
started the same way (``hack/controlplane/up --bare --with-scheduler``), whose admin kubeconfig must
have ``operator.kubeconfig`` beside it as ``up`` writes.
``real_cluster``: kube-controller-manager and kwok's simulated kubelets beside them, as ``make
cluster WITH_SCHEDULER=1`` runs, for the tests that let the real controllers act; started only
when a test asks for it. A test marked ``real_cluster`` gets its ``namespace``, ``pool`` and
``operator`` there.
A plain ``KUBECONFIG`` is deliberately ignored: tests create and delete objects, and must never do
so on whatever cluster a shell happens to point at.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.controlplane import CONTROLPLANE
from harness.e2e import Cluster, Operator, control_plane


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    given = os.environ.get("POLICY_SCHEDULER_E2E_KUBECONFIG")
    if given:
        kubeconfig = Path(given).resolve()
        bin_dir = Path(
            subprocess.run(
                [str(CONTROLPLANE / "build")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        yield Cluster(kubeconfig, kubeconfig.with_name("operator.kubeconfig"), bin_dir)
        return
    with control_plane(tmp_path_factory.mktemp("control-plane"), "--with-scheduler") as started:
        yield started


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A control plane with kube-controller-manager, kwok and kube-scheduler (``make cluster
    WITH_SCHEDULER=1``), its SchedulingPolicy CRD installed and the operators' lease namespace
    created."""
    with control_plane(
        tmp_path_factory.mktemp("real-cluster"), "--with-scheduler", controllers=True
    ) as started:
        started.install_crd()
        _create_lease_namespace(started)
        yield started


def _on(request: pytest.FixtureRequest, *bare_needs: str) -> Cluster:
    """The cluster the requesting test works on: ``real_cluster`` for a test marked
    ``real_cluster``, else ``cluster``, after the session fixtures ``bare_needs`` that prepare
    it as ``real_cluster`` comes prepared."""
    if request.node.get_closest_marker("real_cluster") is not None:
        real: Cluster = request.getfixturevalue("real_cluster")
        return real
    for name in bare_needs:
        request.getfixturevalue(name)
    bare: Cluster = request.getfixturevalue("cluster")
    return bare


@pytest.fixture
def namespace(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards."""
    cluster = _on(request)
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false")


@pytest.fixture(scope="session")
def crd(cluster: Cluster) -> None:
    """The SchedulingPolicy CRD, installed and established."""
    cluster.install_crd()


@pytest.fixture
def pool(request: pytest.FixtureRequest) -> Iterator[str]:
    """A name for this test's nodes and policies (label ``pool``), all deleted afterwards."""
    cluster = _on(request, "crd")
    name = f"pool-{uuid.uuid4().hex[:6]}"
    yield name
    cluster.kubectl("delete", "schedulingpolicies,nodes", "-l", f"pool={name}", "--wait=false")


def _create_lease_namespace(cluster: Cluster) -> str:
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "policy-scheduler"}}
    )
    return "policy-scheduler"


@pytest.fixture(scope="session")
def lease_namespace(cluster: Cluster) -> str:
    """Where the operators' leader-election Lease lives, as in deploy/."""
    return _create_lease_namespace(cluster)


@pytest.fixture
def operator(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Operator]:
    """An operator for the test to start (so a test can create pods before it starts); stopped
    afterwards, with its log printed, which pytest shows when the test failed."""
    cluster = _on(request, "crd", "lease_namespace")
    process = Operator(cluster.kubeconfig, tmp_path / "operator.log")
    yield process
    process.stop()
    if process.log.exists():
        print(process.logs()[-20000:])
