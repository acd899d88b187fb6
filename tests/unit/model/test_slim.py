"""What the informers keep of pods and nodes (``slim_pod``, ``slim_node``): every view property
reads the same of the slim object as of the whole one, and the bookkeeping is gone."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.model.objects import NON_ZERO_DEFAULTS, NodeView, PodView, slim_node, slim_pod
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.simulate import ClusterDump, load_cluster, simulate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

RUNNING_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "shop",
        "uid": "u-web-0",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"app": "web"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
        "creationTimestamp": "2026-12-01T09:00:00Z",
        "deletionTimestamp": "2026-12-01T10:00:00Z",
        "deletionGracePeriodSeconds": 30,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "web",
                "uid": "s1",
                "controller": True,
            }
        ],
        "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {}}],
    },
    "spec": {
        "schedulerName": "default-profile",
        "nodeName": "n1",
        "priority": 1000,
        "preemptionPolicy": "Never",
        "nodeSelector": {"disk": "ssd"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            },
        },
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
        "schedulingGates": [{"name": "example.com/quota"}],
        "overhead": {"cpu": "50m"},
        "resources": {"requests": {"memory": "1Gi"}},
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
            {"name": "disk", "gcePersistentDisk": {"pdName": "pd-1"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        ],
        "initContainers": [
            {
                "name": "proxy",
                "image": "envoy:1",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "100m"}},
                "env": [{"name": "MODE", "value": "sidecar"}],
            },
            {
                "name": "migrate",
                "image": "tools:2",
                "command": ["migrate"],
                "resources": {"requests": {"cpu": "2"}},
            },
        ],
        "containers": [
            {
                "name": "main",
                "image": "web:3",
                "command": ["serve"],
                "args": ["--port", "8080"],
                "env": [
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}}
                ],
                "ports": [{"containerPort": 8080, "hostPort": 80, "protocol": "TCP"}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                    "limits": {"cpu": "1"},
                },
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "disk", "mountPath": "/disk", "bindMountOptions": ["nosuid"]},
                ],
                "restartPolicyRules": [
                    {
                        "action": "RestartAllContainers",
                        "exitCodes": {"operator": "In", "values": [42]},
                    }
                ],
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
        "hostNetwork": True,
        "hostUsers": False,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {"runAsUser": 1000},
    },
    "status": {
        "phase": "Running",
        "nominatedNodeName": "n2",
        "startTime": "2026-12-01T09:00:05Z",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "web-0-gpu-x1"}],
        "containerStatuses": [
            {
                "name": "main",
                "ready": True,
                "restartCount": 0,
                "allocatedResources": {"cpu": "750m", "memory": "256Mi"},
                "resources": {"requests": {"cpu": "600m", "memory": "512Mi"}},
                "state": {"running": {"startedAt": "2026-12-01T09:00:06Z"}},
            }
        ],
        "initContainerStatuses": [
            {"name": "proxy", "ready": True, "allocatedResources": {"cpu": "300m"}}
        ],
        "podIP": "10.0.0.7",
        "qosClass": "Burstable",
    },
}

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "uid": "u-n1",
        "resourceVersion": "7",
        "labels": {"zone": "a", "disk": "ssd"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "managedFields": [{"manager": "kubelet"}],
    },
    "spec": {
        "unschedulable": True,
        "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
        "podCIDR": "10.0.0.0/24",
    },
    "status": {
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "images": [{"names": ["web:3", "registry/web@sha256:1"], "sizeBytes": 300000000}],
        "declaredFeatures": ["RestartAllContainersOnContainerExits", "VolumeBindMountOptions"],
        "conditions": [{"type": "Ready", "status": "True"}],
        "nodeInfo": {"kubeletVersion": "v1.34.4"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
    },
}


def properties(view_type: type, excluded: frozenset[str] = frozenset()) -> list[str]:
    """Every property and cached property of a view: a new one is compared without a new
    test."""
    return sorted(
        name
        for name, member in vars(view_type).items()
        if isinstance(member, property | functools.cached_property) and name not in excluded
    )


# The slim containers and their statuses themselves differ (fewer keys); everything read from
# them is compared.
# required_node_affinity is compiled into matching functions, which compare by identity; what it
# is compiled from (node_selector, affinity) is compared.
POD_PROPERTIES = properties(
    PodView,
    frozenset({"containers", "init_containers", "_container_statuses", "required_node_affinity"}),
)


@pytest.mark.parametrize("name", POD_PROPERTIES)
def test_every_pod_property_reads_the_same_of_the_slim_pod(name: str) -> None:
    whole, slim = PodView(RUNNING_POD), PodView(slim_pod(RUNNING_POD))
    assert getattr(slim, name) == getattr(whole, name)


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("requests with the non-zero defaults", lambda p: p.pod_requests(NON_ZERO_DEFAULTS)),
        ("requests without the pod level", lambda p: p.pod_requests(pod_level=False)),
        ("preemption policy", lambda p: p.spec.get("preemptionPolicy")),
    ],
)
def test_what_else_the_scheduler_reads_is_the_same(name: str, read: Any) -> None:
    assert read(PodView(slim_pod(RUNNING_POD))) == read(PodView(RUNNING_POD))


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("managed fields", ("metadata", "managedFields")),
        ("annotations", ("metadata", "annotations")),
        ("a container status' state", ("status", "containerStatuses", 0, "state")),
        ("a container status' readiness", ("status", "containerStatuses", 0, "ready")),
        ("pod IP", ("status", "podIP")),
        ("ephemeral containers", ("spec", "ephemeralContainers")),
        ("a container's environment", ("spec", "containers", 0, "env")),
        ("a container's probes", ("spec", "containers", 0, "livenessProbe")),
        ("an init container's command", ("spec", "initContainers", 1, "command")),
    ],
)
def test_the_slim_pod_drops_what_scheduling_never_reads(name: str, path: tuple[Any, ...]) -> None:
    value: Any = slim_pod(RUNNING_POD)
    for step in path[:-1]:
        value = value[step]
    assert path[-1] not in value


def test_slimming_leaves_the_decoded_pod_alone() -> None:
    whole = copy.deepcopy(RUNNING_POD)
    slim_pod(whole)
    assert whole == RUNNING_POD


def test_a_pod_with_nothing_but_a_name_stays_readable() -> None:
    pod = PodView(slim_pod({"metadata": {"name": "p"}}))
    assert (pod.key, pod.phase, pod.requests) == ("default/p", "Pending", {})


@pytest.mark.parametrize("name", properties(NodeView))
def test_every_node_property_reads_the_same_of_the_slim_node(name: str) -> None:
    assert getattr(NodeView(slim_node(NODE)), name) == getattr(NodeView(NODE), name)


def attributes(view: PodView | NodeView) -> dict[str, Any]:
    """What a view parsed when it was made (the raw parts it holds aside)."""
    return {k: v for k, v in vars(view).items() if k not in ("raw", "spec", "metadata")}


def test_the_slim_pod_and_node_parse_alike() -> None:
    assert attributes(PodView(slim_pod(RUNNING_POD))) == attributes(PodView(RUNNING_POD))
    assert attributes(NodeView(slim_node(NODE))) == attributes(NodeView(NODE))


def test_the_slim_node_drops_what_the_node_view_never_reads() -> None:
    slim = slim_node(NODE)
    assert slim["metadata"] == {
        key: NODE["metadata"][key] for key in ("name", "uid", "resourceVersion", "labels")
    }
    assert set(slim["status"]) == {"allocatable", "images", "declaredFeatures"}
    assert "podCIDR" not in slim["spec"]


@pytest.mark.parametrize(
    "cluster", sorted((EXAMPLES / "clusters").glob("*.yaml")), ids=lambda p: p.name
)
def test_the_example_clusters_are_decided_alike_from_slim_objects(cluster: Path) -> None:
    policy = yaml.safe_load((EXAMPLES / "policies" / "default-profile.yaml").read_text())
    dump = load_cluster(cluster)
    slim = ClusterDump(
        tuple(NodeView(slim_node(n.raw)) for n in dump.nodes),
        tuple(PodView(slim_pod(p.raw)) for p in dump.pods),
        dump.workloads,
        dump.namespaces,
        dump.storage,
    )
    assert [outcome(d) for d in simulate(policy, slim, seed=1)] == [
        outcome(d) for d in simulate(policy, dump, seed=1)
    ]


def outcome(decision: Decision) -> tuple[Any, ...]:
    return decision.pod, decision.node, decision.score, decision.message, decision.candidates


def test_the_slim_pod_keeps_only_the_mounts_with_bind_mount_options() -> None:
    mount = {"name": "disk", "mountPath": "/disk", "bindMountOptions": ["nosuid"]}
    raw = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "volumeMounts": [{"name": "a", "mountPath": "/a"}]}],
            "ephemeralContainers": [
                {"name": "debug", "image": "busybox", "volumeMounts": [mount]},
                {"name": "shell", "image": "busybox"},
            ],
        },
    }
    spec = slim_pod(raw)["spec"]
    assert spec["containers"] == [{"name": "c"}]
    assert spec["ephemeralContainers"] == [{"name": "debug", "volumeMounts": [mount]}]
