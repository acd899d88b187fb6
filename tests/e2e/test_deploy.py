"""deploy/ on the real API server: the manifests apply, the RBAC is what the operator needs and
not a verb more, and the operator schedules pods under the service account's own token.

The Deployment's pods cannot run here (no kubelet on this bare cluster; kwok's, on a full one, runs
no container either), so the operator runs as a process outside the cluster with the service
account's kubeconfig: the same identity and permissions as in the cluster. deploy/'s namespace and
ServiceAccount are left behind afterwards (deleting a namespace needs kube-controller-manager, which
does not run here; neither grants anything), its roles and bindings are removed, so later tests see
the service account without permissions.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.controlplane import free_port
from harness.e2e import Cluster, Operator, items, logs_status, wait_for
from harness.e2e import bound as _bound
from harness.e2e import events as _events
from harness.objects import node, pod, policy

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NAMESPACE = "policy-scheduler"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:policy-scheduler"
APPLIED_FOR_REAL = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}
ROLES = ("ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role")
POLICIES = "schedulingpolicies.policy-scheduler.dev"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
LEASES = "leases.coordination.k8s.io"
WEBHOOKS = "validatingwebhookconfigurations.admissionregistration.k8s.io"
WEBHOOK_SERVICE = "policy-scheduler-webhook"
# The only objects the account may touch by name alone: its webhook's certificate and
# configuration.
NAMED = {
    ("secrets", "policy-scheduler-webhook-tls"): {"get", "update"},
    (WEBHOOKS, "policy-scheduler"): {"get", "patch"},
}
# Listed and watched for PodTopologySpread's default selectors and InterPodAffinity's
# namespaceSelector (kube/scheduler.py).
WATCHED = (
    "services",
    "replicationcontrollers",
    "namespaces",
    "replicasets.apps",
    "statefulsets.apps",
)
# Listed and watched for the volume plugins and DynamicResources (kube/scheduler.py's STORAGE).
STORAGE_WATCHED = (
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses.storage.k8s.io",
    "csinodes.storage.k8s.io",
    "csidrivers.storage.k8s.io",
    "csistoragecapacities.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "resourceclaims.resource.k8s.io",
)
# Merge-patched by VolumeBinding's PreBind (kube/ports.py's KubeObjects): a PV's claimRef, a
# PVC's selected-node annotation.
STORAGE_PATCHED = ("persistentvolumeclaims", "persistentvolumes")
# Listed and watched for DynamicResources: the devices, their classes and taints.
DEVICES_WATCHED = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "devicetaintrules.resource.k8s.io",
)
# DynamicResources' PreBind: a claim's finalizer patched (and read again on a conflict), and the
# claim of a pod's extended resources created (deleted by Unreserve when the bind fails).
CLAIMS = "resourceclaims.resource.k8s.io"
CLAIM_VERBS = ("get", "patch", "create", "delete")
# The PodGroups of gang scheduling (Kubernetes', scheduler-plugins', Volcano's): read, and their
# status written, never their spec. This control plane serves none of them, and `kubectl auth
# can-i` answers "no" for a resource the server does not have, whatever the rules: only the rules
# listed (test_the_service_account_has_no_rule_beyond_these) say what is granted for them.
POD_GROUPS = (
    "podgroups.scheduling.k8s.io",
    "podgroups.scheduling.x-k8s.io",
    "podgroups.scheduling.volcano.sh",
)


def manifests(cluster: Cluster) -> list[dict[str, Any]]:
    """What `kubectl apply -k deploy/` applies."""
    built = cluster.kubectl("kustomize", str(DEPLOY)).stdout
    return [obj for obj in yaml.safe_load_all(built) if obj]


def can_i(cluster: Cluster, verb: str, resource: str, *scope: str) -> bool:
    """`kubectl auth can-i`, asked by the admin on the service account's behalf."""
    result = cluster.kubectl(
        "auth", "can-i", verb, resource, f"--as={ACCOUNT}", *scope, check=False
    )
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stdout + result.stderr
    return answer == "yes"


@pytest.fixture(scope="module")
def rbac(cluster: Cluster, crd: None) -> Iterator[None]:
    """deploy/'s namespace, ServiceAccount and RBAC, applied for real."""
    objects = [obj for obj in manifests(cluster) if obj["kind"] in APPLIED_FOR_REAL]
    assert {obj["kind"] for obj in objects} == APPLIED_FOR_REAL
    cluster.apply(*objects)
    wait_for("the ClusterRole to take effect", lambda: can_i(cluster, "list", "pods", "-A"))
    wait_for(
        "the Role to take effect",
        lambda: can_i(cluster, "update", LEASES, "-n", NAMESPACE),
    )
    yield
    for obj in sorted(objects, key=lambda o: ROLES.index(o["kind"]) if o["kind"] in ROLES else 9):
        if obj["kind"] in ROLES:
            scope = ("-n", obj["metadata"]["namespace"]) if obj["kind"].startswith("Role") else ()
            cluster.kubectl(
                "delete", obj["kind"], obj["metadata"]["name"], *scope, "--ignore-not-found"
            )
    wait_for(
        "the RBAC to be gone",
        lambda: (
            not can_i(cluster, "list", "pods", "-A")
            and not can_i(cluster, "update", LEASES, "-n", NAMESPACE)
        ),
    )


def test_server_side_dry_run_accepts_every_manifest(cluster: Cluster, rbac: None) -> None:
    # The namespace exists (rbac): a server-side dry run creates nothing, so the namespaced
    # objects of a dry run on an empty cluster would be refused for want of their namespace.
    result = cluster.kubectl("apply", "--dry-run=server", "-k", str(DEPLOY))
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(manifests(cluster))
    assert all(line.endswith("(server dry run)") for line in lines), result.stdout


def test_the_deployment_is_hardened_and_probed(cluster: Cluster) -> None:
    (deployment,) = (obj for obj in manifests(cluster) if obj["kind"] == "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod_spec = spec["template"]["spec"]
    assert pod_spec["serviceAccountName"] == "policy-scheduler"
    assert pod_spec["automountServiceAccountToken"] is True
    assert pod_spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod_spec["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert set(container["resources"]) == {"requests", "limits"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-metrics"}
    assert "--readiness=http://0.0.0.0:8081/readyz" in container["args"]
    assert "--admission=https://0.0.0.0:9443" in container["args"]
    assert container["ports"] == [
        {"name": "healthz", "containerPort": 8080, "protocol": "TCP"},
        {"name": "http-metrics", "containerPort": 8081, "protocol": "TCP"},
        {"name": "webhook", "containerPort": 9443, "protocol": "TCP"},
    ]
    services = {
        obj["metadata"]["name"]: obj for obj in manifests(cluster) if obj["kind"] == "Service"
    }
    for name, port in (("policy-scheduler-metrics", "http-metrics"), (WEBHOOK_SERVICE, "webhook")):
        assert services[name]["spec"]["selector"] == spec["selector"]["matchLabels"]
        assert services[name]["spec"]["ports"][0]["targetPort"] == port
    (configuration,) = (
        obj for obj in manifests(cluster) if obj["kind"] == "ValidatingWebhookConfiguration"
    )
    (webhook,) = configuration["webhooks"]
    assert webhook["clientConfig"]["service"] == {
        "name": WEBHOOK_SERVICE,
        "namespace": NAMESPACE,
        "path": "/validate",
        "port": 443,
    }
    assert webhook["failurePolicy"] == "Ignore"


def _status(cluster: Cluster, name: str) -> dict[str, Any]:
    (found,) = items(cluster, "schedulingpolicies", "--field-selector", f"metadata.name={name}")
    status: dict[str, Any] = found.get("status") or {}
    return status


def _unschedulable_condition(cluster: Cluster, namespace: str, name: str) -> bool:
    (found,) = items(cluster, "pods", "-n", namespace, "--field-selector", f"metadata.name={name}")
    return any(
        c["type"] == "PodScheduled" and c["status"] == "False" and c["reason"] == "Unschedulable"
        for c in found["status"].get("conditions") or ()
    )


def test_the_operator_schedules_under_the_service_accounts_token(
    cluster: Cluster, rbac: None, namespace: str, pool: str, tmp_path: Path
) -> None:
    cluster.apply(*(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in range(2)))
    cluster.apply(policy(pool, pool))
    cluster.apply(
        pod("web", pool), pod("huge", pool, cpu="64"), namespace=namespace
    )  # one fits, one never does: every write the operator makes is exercised
    operator = Operator(cluster.operator_kubeconfig, tmp_path / "operator.log")
    operator.start()
    try:
        placed = wait_for("web bound", lambda: _bound(cluster, namespace).get("web"))
        assert placed in {f"{pool}-0", f"{pool}-1"}
        (scheduled,) = wait_for(
            "the Scheduled event", lambda: _events(cluster, namespace, "Scheduled")
        )
        assert scheduled["message"].startswith(f"Successfully assigned {namespace}/web to {placed}")
        (failed,) = wait_for(
            "the FailedScheduling event", lambda: _events(cluster, namespace, "FailedScheduling")
        )
        assert failed["involvedObject"]["name"] == "huge"
        wait_for(
            "huge's PodScheduled=False condition",
            lambda: _unschedulable_condition(cluster, namespace, "huge"),
        )
        status = wait_for(
            "the policy's status",
            lambda: (
                (s := _status(cluster, pool)).get("scheduled") == 1
                and s.get("unschedulable") == 1
                and s
            ),
        )
        assert status["lastDecision"]["node"] == placed
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in status["conditions"])
        assert "huge" not in _bound(cluster, namespace)
        # Nothing the operator (or Kopf for it) tried was refused.
        logs = operator.logs()
        assert "forbidden" not in logs.lower() and not logs_status(logs, 403)
    finally:
        operator.stop()
        print(operator.logs()[-20000:])


# (verb, resource, scope) the operator uses; see the comments of deploy/rbac.yaml.
ALLOWED = [
    ("get", "pods", "-n default"),
    ("list", "pods", "-A"),
    ("watch", "pods", "-A"),
    ("create", "pods/binding", "-n default"),
    ("patch", "pods/status", "-n default"),
    ("create", "events", "-n default"),
    # Preemption: a victim is deleted; the budgets protecting pods are read.
    ("delete", "pods", "-n default"),
    ("list", "poddisruptionbudgets.policy", "-A"),
    ("watch", "poddisruptionbudgets.policy", "-A"),
    ("list", "nodes", ""),
    ("watch", "nodes", ""),
    # Default topology spreading's selectors, and the namespace labels of namespaceSelector.
    *((verb, kind, "-A") for kind in WATCHED for verb in ("list", "watch")),
    # The storage and device objects the volume plugins and DynamicResources read.
    *((verb, kind, "-A") for kind in STORAGE_WATCHED for verb in ("list", "watch")),
    *((verb, kind, "") for kind in DEVICES_WATCHED for verb in ("list", "watch")),
    *(("patch", kind, "-n default") for kind in STORAGE_PATCHED),
    # DynamicResources' PreBind reserves an allocated claim for the pod.
    ("patch", "resourceclaims.resource.k8s.io/status", "-n default"),
    *((verb, CLAIMS, "-n default") for verb in CLAIM_VERBS),
    # ... and, since v1.36, the reservation's cluster-wide permission.
    ("patch", "resourceclaims.resource.k8s.io/binding", ""),
    ("get", POLICIES, ""),
    ("list", POLICIES, ""),
    ("watch", POLICIES, ""),
    ("patch", f"{POLICIES}/status", ""),
    # The webhook's certificate, made by the first replica (get and update are by name only).
    ("create", "secrets", f"-n {NAMESPACE}"),
    ("get", LEASES, f"-n {NAMESPACE}"),
    ("create", LEASES, f"-n {NAMESPACE}"),
    ("update", LEASES, f"-n {NAMESPACE}"),
]

REFUSED = [
    ("get", "secrets", "-A"),
    ("list", "secrets", "-A"),
    ("get", "secrets", f"-n {NAMESPACE}"),
    ("create", "pods", "-n default"),
    ("deletecollection", "pods", "-n default"),
    ("update", "pods", "-n default"),
    ("patch", "pods", "-n default"),
    ("update", "pods/status", "-n default"),
    # Preemption deletes; it never evicts through the API's Eviction, nor writes a budget.
    ("create", "pods/eviction", "-n default"),
    *(
        (verb, "poddisruptionbudgets.policy", "-n default")
        for verb in ("get", "create", "update", "patch", "delete")
    ),
    ("patch", "poddisruptionbudgets.policy/status", "-n default"),
    ("create", "pods/exec", "-n default"),
    ("get", "pods/log", "-n default"),
    # Read as lists and watches only, never written, nor got one by one.
    *((verb, kind, "-A") for kind in WATCHED for verb in ("get", "create", "update", "delete")),
    ("patch", "namespaces", ""),
    # Read as lists and watches; the only write is VolumeBinding's patch of PVs and PVCs.
    *(
        (verb, kind, "-A")
        for kind in STORAGE_WATCHED
        for verb in ("get", "create", "update", "delete")
        if kind != CLAIMS or verb not in CLAIM_VERBS
    ),
    *(
        ("patch", kind, "-A")
        for kind in STORAGE_WATCHED
        if kind.partition(".")[0] not in STORAGE_PATCHED and kind != CLAIMS
    ),
    ("patch", "persistentvolumeclaims/status", "-n default"),
    ("update", "resourceclaims.resource.k8s.io/status", "-n default"),
    ("list", "resourceclaimtemplates.resource.k8s.io", "-A"),
    ("list", "deployments.apps", "-A"),
    ("list", "jobs.batch", "-A"),
    ("list", "endpoints", "-A"),
    ("patch", "nodes", ""),
    ("update", "nodes", ""),
    ("delete", "nodes", ""),
    ("create", "nodes", ""),
    ("patch", "nodes/status", ""),
    ("create", POLICIES, ""),
    ("delete", POLICIES, ""),
    ("update", POLICIES, ""),
    ("patch", POLICIES, ""),
    ("update", f"{POLICIES}/status", ""),
    # Kopf scans and watches nothing (settings.scanning.disabled).
    ("list", CRDS, ""),
    ("watch", CRDS, ""),
    ("create", CRDS, ""),
    ("update", CRDS, ""),
    ("delete", CRDS, ""),
    ("list", "secrets", f"-n {NAMESPACE}"),
    ("update", "secrets", f"-n {NAMESPACE}"),
    ("create", "secrets", "-n default"),
    ("create", WEBHOOKS, ""),
    ("patch", WEBHOOKS, ""),
    ("list", WEBHOOKS, ""),
    ("patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io", ""),
    ("get", "configmaps", f"-n {NAMESPACE}"),
    ("list", "configmaps", "-A"),
    ("create", "configmaps", f"-n {NAMESPACE}"),
    ("patch", "events", "-n default"),
    ("delete", "events", "-n default"),
    ("get", LEASES, "-n kube-system"),
    ("update", LEASES, "-n kube-system"),
    ("create", LEASES, "-n default"),
    ("delete", LEASES, f"-n {NAMESPACE}"),
    ("list", LEASES, "-A"),
    ("create", "serviceaccounts/token", f"-n {NAMESPACE}"),
    ("impersonate", "users", ""),
    ("bind", "clusterroles.rbac.authorization.k8s.io", ""),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", ""),
    ("*", "*", "-A"),
    ("*", "*", f"-n {NAMESPACE}"),
]


@pytest.mark.parametrize(("verb", "resource", "scope"), ALLOWED)
def test_the_service_account_may(
    cluster: Cluster, rbac: None, verb: str, resource: str, scope: str
) -> None:
    resource, _, subresource = resource.partition("/")
    extra = [f"--subresource={subresource}"] if subresource else []
    assert can_i(cluster, verb, resource, *extra, *scope.split())


@pytest.mark.parametrize(("verb", "resource", "scope"), REFUSED)
def test_the_service_account_may_not(
    cluster: Cluster, rbac: None, verb: str, resource: str, scope: str
) -> None:
    resource, _, subresource = resource.partition("/")
    extra = [f"--subresource={subresource}"] if subresource else []
    assert not can_i(cluster, verb, resource, *extra, *scope.split())


@pytest.mark.parametrize(("resource", "name"), NAMED)
def test_the_service_account_may_touch_its_webhooks_objects_by_name(
    cluster: Cluster, rbac: None, resource: str, name: str
) -> None:
    scope = ("-n", NAMESPACE) if resource == "secrets" else ()
    for verb in NAMED[resource, name]:
        assert can_i(cluster, verb, f"{resource}/{name}", *scope)
    assert not can_i(cluster, "delete", f"{resource}/{name}", *scope)


# What every authenticated user, or (from v1.37, system:cluster-trust-bundle-discovery) every
# service account, may do; not granted by deploy/.
GRANTED_TO_ALL = {
    "selfsubjectreviews.authentication.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "clustertrustbundles.certificates.k8s.io",
}


def _resource_rules(cluster: Cluster, namespace: str) -> dict[str, set[str]]:
    """`kubectl auth can-i --list` for the account: resource -> verbs, with ``resource/name``
    for a rule limited to one object (non-resource URLs, which are the public discovery and
    health endpoints, left out)."""
    listed = cluster.kubectl("auth", "can-i", "--list", f"--as={ACCOUNT}", "-n", namespace)
    rules: dict[str, set[str]] = {}
    for line in listed.stdout.splitlines()[1:]:
        match = re.match(r"^(\S+)\s+\[.*?\]\s+\[(.*?)\]\s+\[(.*)\]$", line)
        if match and match[1] not in GRANTED_TO_ALL:
            key = f"{match[1]}/{match[2]}" if match[2] else match[1]
            rules.setdefault(key, set()).update(match[3].split())
    return rules


def test_the_service_account_has_no_rule_beyond_these(cluster: Cluster, rbac: None) -> None:
    cluster_wide = {
        "pods": {"get", "list", "watch", "delete"},
        "pods/binding": {"create"},
        "pods/status": {"patch"},
        "events": {"create"},
        "nodes": {"list", "watch"},
        "poddisruptionbudgets.policy": {"list", "watch"},
        **{kind: {"list", "watch"} for kind in WATCHED},
        **{kind: {"list", "watch"} for kind in STORAGE_WATCHED},
        **{kind: {"list", "watch", "patch"} for kind in STORAGE_PATCHED},
        CLAIMS: {"list", "watch", *CLAIM_VERBS},
        **{kind: {"list", "watch"} for kind in DEVICES_WATCHED},
        "resourceclaims.resource.k8s.io/status": {"patch"},
        "resourceclaims.resource.k8s.io/binding": {"patch"},
        **{kind: {"list", "watch"} for kind in POD_GROUPS},
        **{f"{kind}/status": {"patch"} for kind in POD_GROUPS},
        POLICIES: {"get", "list", "watch"},
        f"{POLICIES}/status": {"patch"},
        f"{WEBHOOKS}/policy-scheduler": {"get", "patch"},
    }
    assert _resource_rules(cluster, "default") == cluster_wide
    assert _resource_rules(cluster, NAMESPACE) == {
        **cluster_wide,
        LEASES: {"get", "create", "update"},
        "secrets": {"create"},
        "secrets/policy-scheduler-webhook-tls": {"get", "update"},
    }


CORPUS_DIR = REPO / "tests" / "policies" / "invalid"
CORPUS = sorted(CORPUS_DIR.glob("*.yaml"))


def _webhook_at(url: str) -> dict[str, Any]:
    """deploy/'s webhook configuration, calling ``url`` instead of the Service (nothing routes
    to a Service here: no kube-proxy, no pod)."""
    configuration: dict[str, Any] = yaml.safe_load((DEPLOY / "webhook.yaml").read_text())
    for webhook in configuration["webhooks"]:
        webhook["clientConfig"] = {"url": f"{url}/validate"}
    return configuration


def _validate(path: Path) -> list[str]:
    """What `policy-scheduler validate` says of ``path``, without the file name."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("policy-scheduler")), "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout
    return [line.removeprefix(f"{path}: ") for line in result.stdout.splitlines()]


# The corpus's policies that only a CEL rule of the CRD refuses.
CEL_REFUSED = [
    "duplicate-predicate",
    "legacy-and-current-name",
    "permit-plugin-at-reserve",
    "selector-in-without-values",
]


@pytest.mark.parametrize("name", CEL_REFUSED)
def test_the_api_server_words_a_failed_cel_rule_as_validate_does(
    cluster: Cluster, crd: None, name: str
) -> None:
    """validate evaluates the CRD's x-kubernetes-validations rules itself (model/cel): what it
    says is what the API server says, field and words."""
    path = CORPUS_DIR / f"{name}.yaml"
    (said,) = _validate(path)
    refused = cluster.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert refused.returncode != 0
    field_and_message = said.removeprefix(f"{name}: ")
    assert (
        refused.stderr.strip() == f'The SchedulingPolicy "{name}" is invalid: {field_and_message}'
    )


def test_the_webhook_refuses_at_apply_what_validate_refuses_in_its_words(
    cluster: Cluster, rbac: None, pool: str, tmp_path: Path
) -> None:
    """Under the service account and deploy/'s RBAC: the first replica makes the certificate's
    Secret and makes the webhook configuration trust its CA; then every policy of the corpus is
    refused at apply. The CRD's schema is checked before any webhook is called, so what it
    catches the API server refuses in its own words, naming the field validate names; the rest
    the webhook refuses in validate's very words."""
    port = free_port()
    cluster.apply(_webhook_at(f"https://127.0.0.1:{port}"))
    operator = Operator(cluster.operator_kubeconfig, tmp_path / "operator.log")
    operator.start(extra_args=["--admission", f"https://127.0.0.1:{port}"])
    try:
        probe = str(CORPUS_DIR / "random-probability-out-of-range.yaml")
        wait_for(
            "the webhook to answer",
            lambda: (
                "denied the request"
                in cluster.kubectl("apply", "--dry-run=server", "-f", probe, check=False).stderr
            ),
            timeout=60,
        )
        by_webhook = 0
        for path in CORPUS:
            said = _validate(path)
            refused = cluster.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
            assert refused.returncode != 0, (path.name, refused.stdout)
            if "denied the request" in refused.stderr:
                by_webhook += 1
                message = refused.stderr.split("denied the request: ", 1)[1].strip()
                assert message == "\n".join(said), path.name
            else:
                field = said[0].split(": ")[1]
                assert field.split("[")[0].split(".")[0] in refused.stderr, (path.name, said)
        assert by_webhook >= 4  # the plugins' args, which the schema leaves to them
        overcommitting = policy(pool, pool, predicates=[{"name": "TaintToleration"}])
        applied = cluster.kubectl("apply", "-f", "-", stdin=json.dumps(overcommitting))
        assert "Warning: " in applied.stderr and "no NodeResourcesFit predicate" in applied.stderr
        condition = wait_for(
            "the Overcommit condition",
            lambda: next(
                (
                    c
                    for c in _status(cluster, pool).get("conditions", ())
                    if c["type"] == "Overcommit"
                ),
                None,
            ),
        )
        assert condition["status"] == "True"
        logs = operator.logs()
        assert "forbidden" not in logs.lower() and not logs_status(logs, 403)
    finally:
        operator.stop()
        cluster.kubectl("delete", WEBHOOKS, "policy-scheduler", "--ignore-not-found")
        cluster.kubectl(
            "delete",
            "secret",
            "policy-scheduler-webhook-tls",
            "-n",
            NAMESPACE,
            "--ignore-not-found",
        )
        print(operator.logs()[-20000:])
