"""What policy-scheduler's memory grows by with the cluster it caches, beside kube-scheduler's on
the same cluster: the figures that size the Deployment's memory request and limit
(deploy/deployment.yaml), and issue 32's goal (peak RSS at 15,000 nodes and 150,000 pods at most
kube-scheduler's).

On a fresh local control plane (hack/controlplane/up, with deploy/'s RBAC and
examples/policies/default-profile.yaml, as bench_scheduling.py prepares it), each scheduler of
``--schedulers`` is started as bench_scheduling.py starts it (harness/processes.py:
``policy-scheduler run --metrics`` under the operator's service account; kube-scheduler with its
default profile, its /metrics readable), then, in steps:

1. pods: ``--nodes`` nodes, then bound pods (``spec.nodeName`` set: no scheduler places them),
   added up to each count of ``--pods``;
2. nodes: at the last pod count, nodes added up to each count of ``--more-nodes``.

At every step, two processes of each scheduler are measured, one scheduler after the other, each
once its /metrics shows every object in its cache (both serve ``scheduler_cache_size{type="nodes"}``
and ``{type="pods"}``: kube-scheduler's cache holds every node and assigned pod too) and
``--settle`` seconds more have passed: the one running since the start (``running``: its VmRSS
from /proc/PID/status, and its own ``process_resident_memory_bytes``), which took the cluster in
watch event by watch event; and one started beside it for the step and stopped after
(``restarted``: how long it took to list the cluster, its VmRSS, and its VmHWM, the peak since it
started), which lists the cluster whole, as a replica restarted or rolled out does: the peak its
memory limit must allow. With both schedulers, ours ÷ kube-scheduler's of the running VmRSS and
of the restarted VmHWM at each step. Then, per scheduler, for the running VmRSS and the restarted
VmHWM each, a least-squares line through the pod steps (MiB per 1,000 pods; its intercept, the
baseline at ``--nodes`` nodes) and one through the node steps and the last pod step (MiB per
1,000 nodes), the formula they make, and what it predicts at ``--predict`` (15,000 nodes and
150,000 pods), a size this machine may not hold; with both, ours ÷ kube-scheduler's of the
predictions.

The objects are shaped as a running cluster's, since the operator keeps what its views read of
them (model/objects.py's ``slim_pod`` and ``slim_node``): each pod as a Deployment's in a cluster
with kubelets, with three labels, an owner reference to its ReplicaSet (one per
PODS_PER_REPLICA_SET pods, created too), a request of bench_scheduling's mix and a memory limit,
a port, the service-account token volume that admission would add (the local control plane runs
without that admission plugin), and the status a kubelet writes (Running, five conditions, IPs,
start time, the container's state), patched in after the create; each node with a cloud node's
labels, capacity, conditions and NODE_IMAGES images (a kubelet reports at most 50).

The tables go to stdout, progress (with how fast each step's objects were created: what a large
run's time is made of) to stderr, the schedulers' logs to ``--out``/logs/. The operator runs as
``policy-scheduler`` beside this interpreter, importing ``policy_scheduler`` from this environment
(PYTHONPATH first).

    python bench/bench_memory.py [--nodes 100] [--pods 0 2000 5000 10000 20000]
        [--more-nodes 1000 2000 5000] [--settle 5]
        [--schedulers policy-scheduler kube-scheduler] [--predict 15000 150000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from harness.controlplane import ControlPlane
from harness.kube import Api, ApiError
from harness.metrics import total
from harness.objects import HOSTNAME
from harness.processes import Process, imported_from, start_kube_scheduler, start_operator
from harness.workload import (
    NAMESPACE,
    REQUESTS,
    SCHEDULER_NAMES,
    ZONE,
    ZONES,
    add_dirs,
    log,
    prepare,
)

PODS_PER_REPLICA_SET = 20
NODE_IMAGES = 50
# The images a node reports: a few every node has, the rest drawn from the workloads' images.
SYSTEM_IMAGES = (
    "registry.k8s.io/pause:3.10",
    "registry.k8s.io/kube-proxy:v1.37.2",
    "registry.k8s.io/coredns/coredns:v1.12.1",
    "docker.io/calico/node:v3.30.2",
    "docker.io/calico/cni:v3.30.2",
    "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.45.0",
    "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.14.0",
    "quay.io/prometheus/node-exporter:v1.9.1",
)
WORKLOAD_IMAGES = 400
# A node of a size that takes the pods of the pod steps round-robin (pod count is not checked:
# the pods are bound by their spec).
NODE_CPU, NODE_MEMORY_GI, NODE_PODS = 16, 64, 250
SCHEDULERS = ("policy-scheduler", "kube-scheduler")
"""Ours first: the ratios are ours ÷ kube-scheduler's."""
POLL_SECONDS = 0.5
MIB = 1024 * 1024


@dataclass(frozen=True)
class Config:
    nodes: int
    pods: tuple[int, ...]
    more_nodes: tuple[int, ...]
    settle: float
    schedulers: tuple[str, ...]
    predict: tuple[int, int]
    create_threads: int
    timeout: float
    state_dir: Path
    out: Path


@dataclass(frozen=True)
class Memory:
    """One process's memory, in MiB."""

    rss: float
    """VmRSS (/proc/PID/status)."""
    metric_rss: float
    """Its own process_resident_memory_bytes."""
    hwm: float
    """VmHWM: its peak RSS since it started."""


@dataclass(frozen=True)
class Measured:
    """One scheduler at one step: the one that has run since the start, and one started on the
    step's cluster."""

    running: Memory
    restarted: Memory
    listed_seconds: float
    """From the restarted one's start to every object in its cache."""


@dataclass(frozen=True)
class Row:
    step: str
    nodes: int
    pods: int
    schedulers: Mapping[str, Measured]
    """By scheduler, in --schedulers' order."""


# --- the objects ------------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def workload_image(index: int) -> str:
    return f"registry.example.com/team-{index % 25:02d}/service-{index:03d}:1.{index % 7}.{index}"


def image_entry(image: str) -> dict[str, Any]:
    """A node's status.images entry as a kubelet writes it: the digest and the tag."""
    repository = image.rsplit(":", 1)[0]
    size = 5_000_000 + int(_digest(image)[:6], 16) * 40
    return {"names": [f"{repository}@sha256:{_digest(image)}", image], "sizeBytes": size}


def node_name(index: int) -> str:
    # Distinct below 64,000 nodes.
    return f"ip-10-{index // 250 % 256}-{index % 250 + 1}-10.ec2.internal"


def node_body(index: int) -> dict[str, Any]:
    name = node_name(index)
    zone = ZONES[index % len(ZONES)]
    drawn = random.Random(index).sample(range(WORKLOAD_IMAGES), NODE_IMAGES - len(SYSTEM_IMAGES))
    images = [*SYSTEM_IMAGES, *map(workload_image, drawn)]
    capacity = {
        "cpu": str(NODE_CPU),
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{NODE_MEMORY_GI}Gi",
        "pods": str(NODE_PODS),
    }
    ready = {
        "lastHeartbeatTime": "2026-03-02T10:05:00Z",
        "lastTransitionTime": "2026-03-02T08:00:20Z",
        "message": "kubelet is posting ready status",
        "reason": "KubeletReady",
        "status": "True",
        "type": "Ready",
    }
    pressures = [
        {
            "lastHeartbeatTime": "2026-03-02T10:05:00Z",
            "lastTransitionTime": "2026-03-02T08:00:10Z",
            "message": f"kubelet has {reason.removeprefix('KubeletHas').lower()}",
            "reason": reason,
            "status": "False",
            "type": kind,
        }
        for kind, reason in (
            ("MemoryPressure", "KubeletHasSufficientMemory"),
            ("DiskPressure", "KubeletHasNoDiskPressure"),
            ("PIDPressure", "KubeletHasSufficientPID"),
        )
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "m6i.4xlarge",
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "kubernetes.io/arch": "amd64",
                HOSTNAME: name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.4xlarge",
                "topology.ebs.csi.aws.com/zone": zone,
                "topology.kubernetes.io/region": "us-east-1",
                ZONE: zone,
                "eks.amazonaws.com/nodegroup": f"general-{index % 4}",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-{_digest(name)[:17]}"},
        "status": {
            "addresses": [
                {"address": f"10.{index // 250 % 256}.{index % 250}.10", "type": "InternalIP"},
                {"address": name, "type": "InternalDNS"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {**capacity, "cpu": f"{NODE_CPU * 1000 - 90}m"},
            "capacity": capacity,
            "conditions": [*pressures, ready],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": list(map(image_entry, images)),
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": _digest(f"boot-{name}")[:36],
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.12.40",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.2",
                "machineID": _digest(f"machine-{name}")[:32],
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023",
                "systemUUID": _digest(f"system-{name}")[:36],
            },
        },
    }


def replica_set_name(index: int) -> str:
    return f"service-{index:05d}-5d8c9f6b7"


def replica_set_body(index: int) -> dict[str, Any]:
    app = f"service-{index:05d}"
    labels = {"app": app, "pod-template-hash": "5d8c9f6b7"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": replica_set_name(index), "labels": labels},
        "spec": {
            "replicas": PODS_PER_REPLICA_SET,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "app", "image": workload_image(index)}],
                },
            },
        },
    }


def pod_name(index: int) -> str:
    return f"{replica_set_name(index // PODS_PER_REPLICA_SET)}-{_digest(str(index))[:5]}"


def pod_body(index: int, node: str, owner_uid: str) -> dict[str, Any]:
    """A Deployment's pod, bound to ``node``: what a cluster with kubelets holds, but for the
    status (see :func:`pod_status`)."""
    owner = index // PODS_PER_REPLICA_SET
    cpu, memory = REQUESTS[index % len(REQUESTS)]
    token_volume = f"kube-api-access-{_digest(f'token-{index}')[:5]}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(index),
            "labels": {
                "app": f"service-{owner:05d}",
                "pod-template-hash": "5d8c9f6b7",
                "team": f"team-{owner % 25:02d}",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": replica_set_name(owner),
                    "uid": owner_uid,
                }
            ],
        },
        "spec": {
            "schedulerName": SCHEDULER_NAMES["kube-scheduler"],
            "nodeName": node,
            "containers": [
                {
                    "name": "app",
                    "image": workload_image(owner % WORKLOAD_IMAGES),
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "env": [{"name": "LOG_LEVEL", "value": "info"}],
                    "resources": {
                        "requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"},
                        "limits": {"memory": f"{2 * memory}Mi"},
                    },
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                    "volumeMounts": [
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": token_volume,
                            "readOnly": True,
                        }
                    ],
                }
            ],
            "serviceAccountName": "default",
            "volumes": [
                {
                    "name": token_volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {
                                "serviceAccountToken": {
                                    "expirationSeconds": 3607,
                                    "path": "token",
                                }
                            },
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
        },
    }


def pod_status(index: int) -> dict[str, Any]:
    """What a kubelet writes of a running pod."""
    started = f"2026-03-02T{8 + index // 3600 % 12:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z"
    ip = f"10.{100 + index // 65536 % 100}.{index // 256 % 256}.{index % 256}"
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
        for kind in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        )
    ]
    return {
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "10.0.0.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": started,
            "qosClass": "Burstable",
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": workload_image(index // PODS_PER_REPLICA_SET % WORKLOAD_IMAGES),
                    "imageID": f"registry.example.com/x@sha256:{_digest(str(index))}",
                    "containerID": f"containerd://{_digest(f'c-{index}')}",
                    "state": {"running": {"startedAt": started}},
                    "lastState": {},
                }
            ],
        }
    }


class Cluster:
    """The nodes, ReplicaSets and pods made so far, added to in steps, ``threads`` requests at
    once."""

    def __init__(self, api: Api, threads: int) -> None:
        self.api = api
        self.threads = threads
        self.nodes = 0
        self.pods = 0
        self.owners: dict[int, str] = {}  # ReplicaSet uids, by number

    def _each(self, what: str, indexes: range, create: Callable[[int], object]) -> None:
        """``create`` of each index, ``self.threads`` at once; how fast, logged: what sizes a
        run's time (most of it, at tens of thousands of pods)."""
        started = time.monotonic()
        with ThreadPoolExecutor(self.threads) as pool:
            list(pool.map(create, indexes))
        seconds = time.monotonic() - started
        if indexes:
            log(f"  {what}: {len(indexes)} in {seconds:.0f} s ({len(indexes) / seconds:.0f}/s)")

    def grow_nodes(self, count: int) -> None:
        self._each(
            "nodes",
            range(self.nodes, count),
            lambda i: self.api.post("/api/v1/nodes", node_body(i), exists_ok=True),
        )
        self.nodes = max(self.nodes, count)

    def grow_pods(self, count: int) -> None:
        """Pods up to ``count``, round-robin over the first ``self.nodes`` nodes, with their
        ReplicaSets; each created, then given a kubelet's status."""
        owners = -(-count // PODS_PER_REPLICA_SET)
        self._each("ReplicaSets", range(len(self.owners), owners), self._replica_set)
        self._each("pods (created, then their status)", range(self.pods, count), self._pod)
        self.pods = max(self.pods, count)

    def _replica_set(self, index: int) -> None:
        created = self.api.request(
            "POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets", replica_set_body(index)
        ).json()
        self.owners[index] = created["metadata"]["uid"]

    def _pod(self, index: int) -> None:
        pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
        owner = self.owners[index // PODS_PER_REPLICA_SET]
        self.api.post(pods, pod_body(index, node_name(index % self.nodes), owner), exists_ok=True)
        self.api.request(
            "PATCH",
            f"{pods}/{pod_name(index)}/status",
            pod_status(index),
            content_type="application/merge-patch+json",
        )


# --- measuring --------------------------------------------------------------------------------


def wait_cached(scheduler: Process, nodes: int, pods: int, timeout: float) -> float:
    """Seconds until the scheduler's cache holds ``nodes`` nodes and ``pods`` pods (both serve
    ``scheduler_cache_size``)."""
    started = time.monotonic()
    while True:
        scheduler.check_alive()
        try:
            page = scheduler.scrape()
        except requests.RequestException:
            page = {}  # its metrics server is not up yet
        cached = (
            total(page, "scheduler_cache_size", type="nodes"),
            total(page, "scheduler_cache_size", type="pods"),
        )
        if page and cached == (nodes, pods):
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise RuntimeError(
                f"after {timeout:.0f} s {scheduler.name} caches {cached[0]:.0f} nodes and "
                f"{cached[1]:.0f} pods, not {nodes} and {pods}"
            )
        time.sleep(POLL_SECONDS)


def memory(scheduler: Process, cluster: Cluster, config: Config) -> Memory:
    """The scheduler's memory once its cache holds the cluster and ``config.settle`` seconds
    more have passed."""
    wait_cached(scheduler, cluster.nodes, cluster.pods, config.timeout)
    time.sleep(config.settle)
    page = scheduler.scrape()
    return Memory(
        round(scheduler.status_mib("VmRSS"), 1),
        round(total(page, "process_resident_memory_bytes") / MIB, 1),
        round(scheduler.status_mib("VmHWM"), 1),
    )


def measure(
    step: str,
    running: Mapping[str, Process],
    plane: ControlPlane,
    cluster: Cluster,
    config: Config,
) -> Row:
    """Each running scheduler's memory, then that of one of its kind started beside it on the
    same cluster, which lists it whole, as a replica restarted or taking over does."""
    measured: dict[str, Measured] = {}
    for kind, scheduler in running.items():
        now = memory(scheduler, cluster, config)
        restarted = start(plane, config, kind, f"memory-{cluster.nodes}-{cluster.pods}")
        try:
            listed = round(wait_cached(restarted, cluster.nodes, cluster.pods, config.timeout))
            peak = memory(restarted, cluster, config)
        finally:
            restarted.stop()
        log(
            f"  {step}: {cluster.nodes} nodes, {cluster.pods} pods: {kind}: running VmRSS "
            f"{now.rss} MiB; restarted VmRSS {peak.rss} MiB, VmHWM {peak.hwm} MiB (listed in "
            f"{listed} s)"
        )
        measured[kind] = Measured(now, peak, listed)
    return Row(step, cluster.nodes, cluster.pods, measured)


def slope(
    rows: Sequence[Row], per: str, kind: str, mib: Callable[[Measured], float]
) -> tuple[float, float]:
    """MiB (``mib`` of scheduler ``kind`` at each row) per 1,000 of ``per`` (nodes or pods), and
    the intercept: least squares."""
    fitted = statistics.linear_regression(
        [getattr(r, per) / 1000 for r in rows], [mib(r.schedulers[kind]) for r in rows]
    )
    return fitted.slope, fitted.intercept


def markdown(header: Sequence[str], cells: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(row) + " |" for row in [header, *cells]]
    lines.insert(1, "|" + "---|" * len(header))
    return lines


def table(rows: Sequence[Row]) -> list[str]:
    """A line per step and scheduler; then, with both, ours ÷ kube-scheduler's per step."""
    header = (
        "step",
        "nodes",
        "pods",
        "scheduler",
        "running: VmRSS MiB",
        "process_resident_memory MiB",
        "restarted: listed s",
        "VmRSS MiB",
        "VmHWM MiB",
    )
    lines = markdown(
        header,
        [
            (
                r.step,
                f"{r.nodes:,}",
                f"{r.pods:,}",
                kind,
                f"{m.running.rss:.1f}",
                f"{m.running.metric_rss:.1f}",
                f"{m.listed_seconds:g}",
                f"{m.restarted.rss:.1f}",
                f"{m.restarted.hwm:.1f}",
            )
            for r in rows
            for kind, m in r.schedulers.items()
        ],
    )
    if set(rows[0].schedulers) != set(SCHEDULERS):
        return lines
    ratios = [
        (
            r.step,
            f"{r.nodes:,}",
            f"{r.pods:,}",
            *(f"{ratio(mib, r):.2f}" for mib in FITTED.values()),
        )
        for r in rows
    ]
    return [*lines, "", *markdown(("step", "nodes", "pods", *RATIO_COLUMNS), ratios)]


FITTED: dict[str, Callable[[Measured], float]] = {
    "running VmRSS": lambda m: m.running.rss,
    "restarted VmHWM": lambda m: m.restarted.hwm,
}
RATIO_COLUMNS = tuple(f"{name}: ours ÷ kube-scheduler's" for name in FITTED)


def ratio(mib: Callable[[Measured], float], row: Row) -> float:
    ours, kube = (mib(row.schedulers[kind]) for kind in SCHEDULERS)
    return ours / kube


def start(plane: ControlPlane, config: Config, kind: str, name: str) -> Process:
    """A scheduler as bench_scheduling.py starts it (its metrics on a free port, no leader
    election); its log under --out/logs/, named after ``kind`` and ``name``."""
    log_path = config.out / "logs" / f"{kind}-{name}.log"
    if kind == "kube-scheduler":
        return start_kube_scheduler(plane, log_path, SCHEDULER_NAMES[kind])
    return start_operator(plane.operator, log_path, "--leader-elect=false")


def run(config: Config) -> list[Row]:
    plane = ControlPlane.fresh(config.state_dir)
    rows: list[Row] = []
    admin = Api(plane.admin, pool=config.create_threads)
    with ExitStack() as running_stack:
        running_stack.callback(plane.down)
        running_stack.callback(admin.session.close)
        # The operator's RBAC, CRD and policy when it is measured; the namespace in any case.
        prepare(plane, config.schedulers[0])
        cluster = Cluster(admin, config.create_threads)
        cluster.grow_nodes(config.nodes)
        if "policy-scheduler" in config.schedulers:
            log(f"policy-scheduler from {imported_from()}")
        running: dict[str, Process] = {}
        for kind in config.schedulers:
            running[kind] = start(plane, config, kind, "memory")
            running_stack.callback(running[kind].stop)
        for pods in config.pods:
            cluster.grow_pods(pods)
            rows.append(measure("pods", running, plane, cluster, config))
        for nodes in config.more_nodes:
            cluster.grow_nodes(nodes)
            rows.append(measure("nodes", running, plane, cluster, config))
    return rows


@dataclass(frozen=True)
class Fit:
    """A least-squares line of one scheduler's memory: MiB per 1,000 pods and per 1,000 nodes,
    and with neither."""

    per_pods: float
    per_nodes: float
    base: float

    def at(self, nodes: int, pods: int) -> float:
        return self.base + self.per_pods * pods / 1000 + self.per_nodes * nodes / 1000


def report(rows: Sequence[Row], config: Config) -> list[str]:
    """The table, then for each scheduler's running VmRSS and restarted peak: MiB per 1,000 pods,
    per 1,000 nodes, the formula, and what it predicts at ``--predict``; then ours ÷
    kube-scheduler's of the predictions."""
    lines = table(rows)
    pod_rows = [r for r in rows if r.step == "pods"]
    # The last pod step is the node steps' first: the same pods, --nodes nodes.
    node_rows = [pod_rows[-1], *(r for r in rows if r.step == "nodes")]
    nodes, pods = config.predict
    predicted: dict[str, dict[str, float]] = {name: {} for name in FITTED}
    for kind in config.schedulers:
        for name, mib in FITTED.items():
            label = f"{kind} {name}"
            per_pods, baseline = slope(pod_rows, "pods", kind, mib)
            lines += ["", f"{label}: {per_pods:.1f} MiB per 1,000 pods (at {config.nodes:,} nodes)"]
            if len(node_rows) < 2:
                continue
            per_nodes, _ = slope(node_rows, "nodes", kind, mib)
            fit = Fit(per_pods, per_nodes, baseline - per_nodes * config.nodes / 1000)
            predicted[name][kind] = fit.at(nodes, pods)
            lines += [
                f"{label}: {per_nodes:.1f} MiB per 1,000 nodes (at {config.pods[-1]:,} pods)",
                f"{label}: {baseline:.1f} MiB at {config.nodes:,} nodes and no pod, "
                f"{fit.base:.1f} MiB with neither",
                f"{label} ~ {fit.base:.0f} MiB + {per_pods:.1f} MiB x pods/1,000 + "
                f"{per_nodes:.1f} MiB x nodes/1,000",
                f"{label}: {predicted[name][kind]:,.0f} MiB predicted at {nodes:,} nodes and "
                f"{pods:,} pods",
            ]
    compared = {name: by_kind for name, by_kind in predicted.items() if len(by_kind) > 1}
    if compared:
        lines.append("")
    for name, by_kind in compared.items():
        ours, kube = (by_kind[kind] for kind in SCHEDULERS)
        lines.append(
            f"{name}: ours ÷ kube-scheduler's, predicted at {nodes:,} nodes and {pods:,} pods: "
            f"{ours / kube:.2f}"
        )
    return lines


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(
        description="policy-scheduler's memory against the pods and nodes it caches, on a local "
        "control plane; see the module docstring for what is measured and how."
    )
    parser.add_argument("--nodes", type=int, default=100, help="nodes of the pod steps")
    parser.add_argument(
        "--pods", type=int, nargs="+", default=[0, 2000, 5000, 10000, 20000], help="pod steps"
    )
    parser.add_argument(
        "--more-nodes",
        type=int,
        nargs="*",
        default=[1000, 2000, 5000],
        help="node steps, at the last pod step's count",
    )
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds between cached and measured"
    )
    parser.add_argument(
        "--schedulers",
        nargs="+",
        choices=SCHEDULERS,
        default=list(SCHEDULERS),
        help="the schedulers measured, side by side",
    )
    parser.add_argument(
        "--predict",
        type=int,
        nargs=2,
        default=[15000, 150000],
        metavar=("NODES", "PODS"),
        help="where the fitted lines are evaluated",
    )
    parser.add_argument("--create-threads", type=int, default=16, help="concurrent requests")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds a step may take to be cached"
    )
    add_dirs(parser, "bench-memory", "the control plane's state directory (wiped first)")
    args = parser.parse_args(argv)
    if sorted(args.pods) != args.pods or sorted(args.more_nodes) != args.more_nodes:
        parser.error("--pods and --more-nodes must each grow step by step")
    if args.more_nodes and args.more_nodes[0] <= args.nodes:
        parser.error("--more-nodes must start above --nodes")
    return Config(
        nodes=args.nodes,
        pods=tuple(args.pods),
        more_nodes=tuple(args.more_nodes),
        settle=args.settle,
        # In SCHEDULERS' order, once each.
        schedulers=tuple(kind for kind in SCHEDULERS if kind in args.schedulers),
        predict=(args.predict[0], args.predict[1]),
        create_threads=args.create_threads,
        timeout=args.timeout,
        state_dir=args.dir,
        out=args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    try:
        rows = run(config)
    except (RuntimeError, ApiError, OSError, subprocess.SubprocessError) as error:
        log(f"failed: {error}")
        return 1
    print("\n".join(report(rows, config)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
