"""Health that tells the truth, and permissions lost said at once, on the real API server.

The operator runs as a service account of its own whose RBAC is deploy/'s minus two rules:
listing PodDisruptionBudgets (a watched kind) and creating events (a write). Without the first
its watch never lists: the replica is not ready, says which watch and why, exports
``policy_scheduler_watch_synced{kind="poddisruptionbudgets"} 0``, and decides nothing (a decision
without the budgets could evict what they protect); Kopf's liveness probe still answers, since
a restart would not help. Given the rule back, the watch lists within its backoff and the replica
is ready. Without the second, the first event refused is logged at once, naming ``create events``,
while the pod is bound all the same.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.controlplane import free_port
from harness.e2e import Cluster, Operator, wait_for
from harness.metrics import Samples, scrape, value
from harness.objects import node, pod, policy

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "policy-scheduler"
ACCOUNT = "health-drift"
BUDGETS = {
    "apiGroups": ["policy"],
    "resources": ["poddisruptionbudgets"],
    "verbs": ["list", "watch"],
}


def deploy_rules() -> list[dict[str, Any]]:
    """The rules of deploy/'s ClusterRole, but those granting events and budgets."""
    (role,) = (
        obj
        for obj in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text())
        if obj and obj["kind"] == "ClusterRole"
    )
    return [
        rule
        for rule in role["rules"]
        if "events" not in rule.get("resources", ()) and rule["apiGroups"] != ["policy"]
    ]


def role(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ACCOUNT},
        "rules": rules,
    }


@pytest.fixture
def drifting(cluster: Cluster, lease_namespace: str, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for a service account with deploy/'s RBAC minus the two rules."""
    user = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": NAMESPACE},
        },
        role(deploy_rules()),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ACCOUNT},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": ACCOUNT,
            },
            "subjects": [{"kind": "User", "name": user}],
        },
    )
    cluster.kubectl(
        "create",
        "role",
        ACCOUNT,
        "-n",
        NAMESPACE,
        "--verb=get,create,update",
        "--resource=leases.coordination.k8s.io",
    )
    cluster.kubectl(
        "create", "rolebinding", ACCOUNT, "-n", NAMESPACE, f"--role={ACCOUNT}", f"--user={user}"
    )
    token = cluster.kubectl(
        "create", "token", ACCOUNT, "-n", NAMESPACE, "--duration=1h"
    ).stdout.strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    config = tmp_path / "drifting.kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                **admin,
                "users": [{"name": ACCOUNT, "user": {"token": token}}],
                "contexts": [{"name": "drift", "context": {"cluster": "local", "user": ACCOUNT}}],
                "current-context": "drift",
            }
        )
    )
    yield config
    cluster.kubectl("delete", "clusterrolebinding,clusterrole", ACCOUNT, "--ignore-not-found")
    cluster.kubectl("delete", "rolebinding,role", ACCOUNT, "-n", NAMESPACE, "--ignore-not-found")


def probe(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")
    except OSError:
        return 0, {}


def test_a_watch_refused_makes_the_replica_unready_and_a_refused_write_is_said_at_once(
    cluster: Cluster, drifting: Path, namespace: str, pool: str, tmp_path: Path
) -> None:
    # DefaultPreemption reads the budgets: their watch runs only while a served policy has it.
    preempting = policy(pool, pool, postFilters=[{"name": "DefaultPreemption"}])
    cluster.apply(node(f"{pool}-a", labels={"pool": pool}), preempting)
    serving, liveness = free_port(), free_port()
    ready_url = f"http://127.0.0.1:{serving}/readyz"
    metrics_url = f"http://127.0.0.1:{serving}/metrics"
    operator = Operator(drifting, tmp_path / "operator.log")
    operator.start(
        extra_args=[
            "--readiness",
            ready_url,
            "--metrics",
            metrics_url,
            "--liveness",
            f"http://127.0.0.1:{liveness}/healthz",
        ]
    )
    try:
        status, report = wait_for(
            "the readiness endpoint", lambda: answer if (answer := probe(ready_url))[0] else None
        )
        assert status == 503, report
        wait_for(
            "the budgets' watch to be named",
            lambda: any(
                "poddisruptionbudgets" in r for r in probe(ready_url)[1].get("reasons", ())
            ),
        )

        def listed_pods() -> Samples | None:
            found = scrape(metrics_url)
            synced = found and value(found, "policy_scheduler_watch_synced", kind="pods")
            return found if synced == 1 else None

        samples = wait_for("the pods' watch listed", listed_pods)
        assert value(samples, "policy_scheduler_watch_synced", kind="poddisruptionbudgets") == 0
        assert value(
            samples,
            "policy_scheduler_api_refusals_total",
            verb="list",
            resource="poddisruptionbudgets.policy",
            code="403",
        )
        assert wait_for(
            "the refusal logged",
            lambda: (
                "403 Forbidden" in (logs := operator.logs())
                and "list poddisruptionbudgets.policy" in logs
            ),
        )
        # Alive all the same: a restart would not give it the permission.
        assert probe(f"http://127.0.0.1:{liveness}/healthz")[0] == 200
        cluster.apply(pod("web", pool), namespace=namespace)
        time.sleep(2)
        assert not cluster.kubectl(
            "get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.nodeName}"
        ).stdout

        cluster.apply(role([*deploy_rules(), BUDGETS]))
        wait_for("ready", lambda: probe(ready_url)[0] == 200, timeout=120)
        wait_for(
            "web bound",
            lambda: (
                cluster.kubectl(
                    "get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.nodeName}"
                ).stdout
            ),
        )
        bound_at = time.monotonic()
        wait_for(
            "the refused event logged at once",
            lambda: "create events in namespace" in operator.logs(),
            timeout=10,
        )
        assert time.monotonic() - bound_at < 10
        samples = wait_for("a scrape", lambda: scrape(metrics_url))
        assert value(
            samples,
            "policy_scheduler_api_refusals_total",
            verb="create",
            resource="events",
            code="403",
        )
        assert value(samples, "policy_scheduler_watch_synced", kind="poddisruptionbudgets") == 1
    finally:
        operator.stop()
