"""The harness is real: kube-scheduler schedules onto our Nodes and RBAC is enforced. The cluster
is read with pykube, a client independent of the harness's own."""

from __future__ import annotations

import json
import uuid

import pykube
import pytest
import requests
from harness.e2e import Cluster, wait_for
from harness.objects import node


def pykube_api(cluster: Cluster, operator: bool = False) -> pykube.HTTPClient:
    config = cluster.operator_kubeconfig if operator else cluster.kubeconfig
    return pykube.HTTPClient(pykube.KubeConfig.from_file(str(config)))


def test_kube_scheduler_binds_a_pod_onto_a_created_node(cluster: Cluster, namespace: str) -> None:
    suffix = uuid.uuid4().hex[:6]
    names = [f"harness-{suffix}-{i}" for i in range(3)]
    cluster.apply(*(node(n, cpu="2", memory="4Gi") for n in names))
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                    }
                ]
            },
        }
    )
    api = pykube_api(cluster)

    def bound_node() -> str | None:
        pod = pykube.Pod.objects(api, namespace=namespace).get(name="web")
        bound: str | None = pod.obj["spec"].get("nodeName")
        return bound

    assert wait_for("kube-scheduler to bind the pod", bound_node) in names
    events = wait_for(
        "the Scheduled event",
        lambda: [
            e
            for e in json.loads(
                cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
            )["items"]
            if e["reason"] == "Scheduled" and e["involvedObject"]["name"] == "web"
        ],
    )
    assert events[0]["message"].startswith(f"Successfully assigned {namespace}/web to ")
    cluster.kubectl("delete", "node", *names)


def test_operator_token_may_not_read_secrets(cluster: Cluster) -> None:
    result = cluster.kubectl("get", "secrets", "-A", operator=True, check=False)
    assert result.returncode != 0
    assert "forbidden" in result.stderr
    assert 'User "system:serviceaccount:policy-scheduler:policy-scheduler"' in result.stderr


def _bind(cluster: Cluster, namespace: str, pod: str, node_name: str) -> requests.Response:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    response: requests.Response = pykube_api(cluster, operator=True).post(
        url=f"pods/{pod}/binding", namespace=namespace, json=binding
    )
    return response


@pytest.fixture
def unscheduled_pod(cluster: Cluster, namespace: str) -> str:
    """A pod for a scheduler nobody runs, so only the test binds it."""
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "waiting", "namespace": namespace},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    return "waiting"


def test_binding_needs_the_pods_binding_role(
    cluster: Cluster, namespace: str, unscheduled_pod: str
) -> None:
    target = f"bind-{uuid.uuid4().hex[:6]}"
    cluster.apply(node(target))

    refused = _bind(cluster, namespace, unscheduled_pod, target)
    assert refused.status_code == 403, refused.text
    assert "pods/binding" in refused.json()["message"]

    role = f"binder-{namespace}"
    cluster.kubectl(
        "create", "role", role, "-n", namespace, "--verb=create", "--resource=pods/binding"
    )
    cluster.kubectl(
        "create",
        "rolebinding",
        role,
        "-n",
        namespace,
        f"--role={role}",
        "--serviceaccount=policy-scheduler:policy-scheduler",
    )
    accepted = wait_for(
        "the role to take effect",
        lambda: (
            response
            if (response := _bind(cluster, namespace, unscheduled_pod, target)).ok
            else None
        ),
    )
    assert accepted.status_code == 201, accepted.text
    pod = pykube.Pod.objects(pykube_api(cluster), namespace=namespace).get(name=unscheduled_pod)
    assert pod.obj["spec"]["nodeName"] == target
    cluster.kubectl("delete", "node", target)
