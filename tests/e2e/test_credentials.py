"""The operator on a managed cluster's kind of identity: a credential that expires every few
seconds, from an exec plugin, an OIDC refresh token or a rotated token file, for longer than
several expiries. Pods keep being bound, Kopf's own start-up requests go out as the operator
(not as system:anonymous), ``explain`` works with the same kubeconfig, and kube-apiserver counts
no failed authentication.

These run on a control plane of their own, whose kube-apiserver trusts a small OpenID Connect
issuer (identity.py) besides its static tokens, as EKS, GKE and AKS API servers trust their
cloud's identity.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.controlplane import free_port
from harness.e2e import Cluster, Operator, control_plane, logs_status, wait_for
from harness.metrics import samples_of, scrape
from harness.objects import node, pod, policy
from identity import CLIENT_ID, CLIENT_SECRET, USERNAME, Issuer

LIFETIME = 5.0
"""Seconds each token lives."""
RUN = 4 * LIFETIME
"""How long pods are created and bound: several expiries."""
PLUGIN = Path(__file__).with_name("exec_plugin.py")


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Issuer]:
    issuer = Issuer(tmp_path_factory.mktemp("issuer"), LIFETIME)
    issuer.start()
    yield issuer
    issuer.stop()


@pytest.fixture(scope="module")
def managed(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A control plane whose API server trusts ``issuer``; its user is cluster-admin (what is
    tested here is who the operator is, not what it may do: test_deploy tests that)."""
    state = tmp_path_factory.mktemp("managed-control-plane")
    with control_plane(
        state, "--authentication-config", str(issuer.authentication_config())
    ) as cluster:
        cluster.install_crd()
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            "oidc-operator",
            "--clusterrole=cluster-admin",
            f"--user={USERNAME}",
        )
        cluster.kubectl("create", "namespace", "policy-scheduler")
        cluster.kubectl("create", "namespace", "work")
        yield cluster


def kubeconfig(cluster: Cluster, path: Path, user: dict[str, Any]) -> Path:
    """``cluster``'s server and CA, with ``user``."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": "operator", "user": user}],
        "contexts": [{"name": "managed", "context": {"cluster": "local", "user": "operator"}}],
        "current-context": "managed",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def exec_user(issuer: Issuer, runs: Path) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(PLUGIN)],
            "env": [
                {"name": "ISSUER", "value": issuer.url},
                {"name": "ISSUER_CA", "value": str(issuer.ca_file)},
                {"name": "CLIENT_ID", "value": CLIENT_ID},
                {"name": "CLIENT_SECRET", "value": CLIENT_SECRET},
                {"name": "RUNS", "value": str(runs)},
            ],
            "interactiveMode": "Never",
        }
    }


def oidc_user(issuer: Issuer) -> dict[str, Any]:
    return {
        "auth-provider": {
            "name": "oidc",
            "config": {
                "idp-issuer-url": issuer.url,
                "idp-certificate-authority": str(issuer.ca_file),
                "client-id": CLIENT_ID,
                "client-secret": CLIENT_SECRET,
                "id-token": issuer.token(),
                "refresh-token": "refresh-0",
            },
        }
    }


def failed_authentications(cluster: Cluster) -> float:
    """What kube-apiserver counts as failed or erroneous authentication attempts so far."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    return sum(
        value
        for (name, labels), value in samples_of(text).items()
        if name == "authentication_attempts_total" and dict(labels).get("result") != "success"
    )


def rotating(path: Path, issuer: Issuer, stop: threading.Event) -> None:
    """What the kubelet does for a projected token: a new one well before the old expires."""
    while not stop.wait(LIFETIME / 2):
        fresh = path.with_suffix(".new")
        fresh.write_text(issuer.token())
        fresh.replace(path)


KINDS: dict[str, Callable[[Issuer, Path], dict[str, Any]]] = {
    "an exec plugin": lambda issuer, tmp: exec_user(issuer, tmp / "runs"),
    "an OIDC refresh token": lambda issuer, tmp: oidc_user(issuer),
    "a rotated token file": lambda issuer, tmp: {"tokenFile": str(tmp / "token")},
}


@pytest.mark.parametrize("kind", KINDS)
def test_the_operator_outlives_its_credentials(
    managed: Cluster, issuer: Issuer, kind: str, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(issuer.token())
    config = kubeconfig(managed, tmp_path / "kubeconfig", KINDS[kind](issuer, tmp_path))
    pool = f"cred-{int(time.time() * 1000)}"
    managed.apply(node(f"{pool}-a", labels={"pool": pool}), policy(pool, pool))
    stop = threading.Event()
    rotator = threading.Thread(target=rotating, args=(tmp_path / "token", issuer, stop))
    rotator.start()
    port = free_port()
    operator = Operator(config, tmp_path / "operator.log")
    failed_before = failed_authentications(managed)
    issued_before, refreshes_before = issuer.issued, issuer.refreshes
    operator.start(extra_args=["--metrics", f"http://127.0.0.1:{port}/metrics"])
    try:
        deadline = time.monotonic() + RUN
        created = 0
        while time.monotonic() < deadline or created < 3:
            name = f"{pool}-{created}"
            managed.apply(pod(name, pool), namespace="work")
            created += 1

            def bound(name: str = name) -> bool:
                found = json.loads(
                    managed.kubectl("get", "pod", name, "-n", "work", "-o", "json").stdout
                )
                return bool(found["spec"].get("nodeName"))

            wait_for(f"{name} bound", bound, timeout=30)
            time.sleep(1.0)
        explained = subprocess.run(
            [
                str(Path(sys.executable).with_name("policy-scheduler")),
                "explain",
                f"{pool}-0",
                "-n",
                "work",
                "--kubeconfig",
                str(config),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert explained.returncode == 0, explained.stderr
        scraped = scrape(f"http://127.0.0.1:{port}/metrics")
        assert scraped is not None
        refusals = {
            labels: value
            for (name, labels), value in scraped.items()
            if name == "policy_scheduler_api_refusals_total"
        }
    finally:
        stop.set()
        rotator.join()
        operator.stop()
    logs = operator.logs()
    assert refusals == {}, logs[-3000:]
    assert "system:anonymous" not in logs and not logs_status(logs, 401), logs[-3000:]
    # None of the operator's requests (Kopf's discovery included) was refused authentication.
    assert failed_authentications(managed) == failed_before
    if kind == "an exec plugin":
        assert len((tmp_path / "runs").read_text().splitlines()) >= RUN / LIFETIME
    if kind == "an OIDC refresh token":
        assert issuer.refreshes - refreshes_before >= RUN / LIFETIME
    assert issuer.issued > issued_before
