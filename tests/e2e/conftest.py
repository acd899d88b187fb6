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
``gang_cluster``: a bare control plane like ``cluster`` with the GenericWorkload gate on
(``up --feature-gates GenericWorkload=true``): the API server serves scheduling.k8s.io/v1beta1
PodGroups and kube-scheduler's default profile has its GangScheduling plugin. Started only when a
test asks for it; a test marked ``gang_cluster`` gets its ``namespace``, ``pool`` and ``operator``
there. ``pod_group_crds`` installs on it the test CRDs of Volcano's and scheduler-plugins'
PodGroups (tests/e2e/crds/, written from those APIs' published fields).
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


@pytest.fixture(scope="session")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A bare control plane with kube-scheduler and the GenericWorkload gate on everywhere (the
    native PodGroup API served, kube-scheduler's gang plugin on), its SchedulingPolicy CRD
    installed and the operators' lease namespace created."""
    with control_plane(
        tmp_path_factory.mktemp("gang-cluster"),
        "--with-scheduler",
        "--feature-gates",
        "GenericWorkload=true",
    ) as started:
        started.install_crd()
        _create_lease_namespace(started)
        yield started


# The test CRDs of the pod group APIs other schedulers define, written from their published
# fields (the project ships no copy of them in deploy/): name -> file.
POD_GROUP_CRDS = {
    "podgroups.scheduling.volcano.sh": Path(__file__).parent / "crds/volcano-podgroups.yaml",
    "podgroups.scheduling.x-k8s.io": Path(__file__).parent
    / "crds/scheduler-plugins-podgroups.yaml",
}


@pytest.fixture(scope="session")
def pod_group_crds(gang_cluster: Cluster) -> None:
    """Volcano's and scheduler-plugins' PodGroup CRDs, installed on ``gang_cluster``."""
    for name, path in POD_GROUP_CRDS.items():
        gang_cluster.install_crds(path, name)


@pytest.fixture(scope="session")
def volcano_crd(real_cluster: Cluster) -> None:
    """Volcano's PodGroup CRD, installed on ``real_cluster``."""
    name = "podgroups.scheduling.volcano.sh"
    real_cluster.install_crds(POD_GROUP_CRDS[name], name)


# Session clusters a test asks for by its marker, each prepared as it is started.
MARKED_CLUSTERS = ("real_cluster", "gang_cluster")


def _on(request: pytest.FixtureRequest, *bare_needs: str) -> Cluster:
    """The cluster the requesting test works on: ``real_cluster`` or ``gang_cluster`` for a test
    marked so, else ``cluster``, after the session fixtures ``bare_needs`` that prepare it as
    those come prepared."""
    for marker in MARKED_CLUSTERS:
        if request.node.get_closest_marker(marker) is not None:
            marked: Cluster = request.getfixturevalue(marker)
            return marked
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
