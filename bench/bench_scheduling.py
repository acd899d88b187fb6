"""policy-scheduler against kube-scheduler and the raw bind limits, on the same local control plane.

For each node count, four runs one after another, each on a fresh control plane
(``hack/controlplane/down`` + ``up``, so every run starts from identical, empty state; in
``--dir``'s ``run-0`` and ``run-1`` by turns, so that one run's teardown, seconds of waiting for
watches to end and processes to stop, goes on while the next one's control plane starts; the
next scheduler starts only once it is over):

- ``policy-scheduler``: ``policy-scheduler run`` with examples/policies/default-profile.yaml,
  under the operator's service account and deploy/rbac.yaml; pods say ``schedulerName:
  default-profile``;
- ``kube-scheduler``: the binary hack/controlplane built, default profile, leader election off,
  started here with a KubeSchedulerConfiguration whose client QPS/burst are raised (``--kube-qps``)
  so that its client-side rate limit, 50/100 by default, does not hold it back: our client has
  none; pods say ``schedulerName: default-scheduler``;
- ``raw``: bench/raw_binder.py, which binds each pod round-robin onto the nodes with the same
  concurrency as our binder (``BIND_CONCURRENCY``), deciding nothing; pods name a scheduler
  nobody serves;
- ``raw+events``: the same binder, which also posts for each pod it bound the one ``Scheduled``
  event every scheduler posts (a core/v1 Event shaped as policy-scheduler's, from a pool of its
  own as wide as policy-scheduler's, ``POST_CONCURRENCY``): the limit a scheduler can really
  reach, since it owes the API server both.

Each run creates N nodes (with allocatable large enough that even round-robin placement of every
pod the schedulers bind on them fits; each labelled ``topology.kubernetes.io/zone``, one of
three zones in turn), starts the scheduler, waits until it has bound a warm-up pod pinned to the
last node (so its node cache is filled), then measures its phases, one after another, each only
if the one before bound all its pods; the pods of a phase stay through the next ones. The raw
binders run the first two (bound round-robin, the other phases' pods would break their claims,
priorities or constraints, and a preference would mean nothing): for the others, the raws' burst
is the limit. Every pod carries its phase as the label PHASE_LABEL.

- burst: M pods with a mix of requests, created as fast as ``--create-threads`` concurrent POSTs
  go, while the scheduler runs. Throughput is bound pods / (last bound - first created).
- steady: pods created at ``--steady-rate`` per second for ``--steady-seconds``: latency under load.
- storage (``--storage-pods``, a fifth of ``--pods`` by default): a burst of pods each with one
  PersistentVolumeClaim of a StorageClass with ``volumeBindingMode: WaitForFirstConsumer`` and the
  provisioner of bench/provisioner.py, which stands in for an external provisioner and the PV
  controller (no kube-controller-manager runs here): once the scheduler has written
  ``volume.kubernetes.io/selected-node`` on a claim, it creates a PV bound to that node and binds
  the claim. The scheduler binds the pod only once the claim is bound (VolumeBinding's PreBind).
  Each pod's claim is POSTed just before the pod, and its created time is that of the claim's
  POST. The provisioner's own time per claim (selected node seen to claim bound) is reported
  beside the latency, and its requests, the admin's, count in no scheduler's figure.
- preemption (``--preemption-pods`` N, a tenth of ``--pods`` by default): PriorityClasses
  ``bench-low`` (100) and ``bench-high`` (1000) are created with the namespace; the phase adds N
  nodes of its own (4 cpu, labelled PREEMPTION_LABEL, which all its pods select) and fills each
  exactly with VICTIMS_PER_NODE low-priority pods of 400m, created bound (``spec.nodeName``: no
  scheduler places them, and none of it is measured), then a marker pod (high priority, no
  requests) pinned to the last of those nodes: once it is bound the scheduler has seen them all.
  Then N high-priority pods asking for a whole node's cpu are created as a burst: each can only be
  placed once every low-priority pod of one node is evicted, so the fewest evictions are N x
  VICTIMS_PER_NODE. No kubelet runs here, so a victim deleted gracefully would keep its room
  forever: the stand-in ``Kubelet`` force-deletes (grace 0, as the admin, in no scheduler's
  figure) every pod the bind watch shows with a deletionTimestamp, and its own time per pod is
  reported. Measured as the other phases (creation to bound of the high-priority pods, CPU, the
  scheduler's requests: its DisruptionTarget patches and deletes of victims included), plus the
  low-priority pods evicted per high-priority pod.

Then the workload phases, shaped after kube-scheduler's own benchmark, scheduler_perf
(test/integration/scheduler_perf/*/performance-config.yaml and its pod templates, v1.34), each a
burst of pods of the mix of requests with one term added, measured as the burst:

- anti-affinity (``--anti-affinity-pods``, a fifth of ``--pods``, at most N): required pod
  anti-affinity per ``kubernetes.io/hostname`` against the pods of this phase
  (SchedulingPodAntiAffinity): at most one per node, so the last pods have few nodes left.
- spread (``--spread-pods``, a fifth of ``--pods``): a topologySpreadConstraint over the zone
  label, maxSkew 1, DoNotSchedule, selecting the pods of this phase (TopologySpreading, whose
  template has maxSkew 5).
- preferred-affinity (``--preferred-affinity-pods``, a fifth of ``--pods``): preferred node
  affinity, weight 100, for the zone PREFERRED_ZONE (SchedulingNodeAffinity's zone term as a
  preference: the v1.34 suite has no case of preferred node affinity).
- the other cases of v1.37.2's affinity and topology_spreading suites, each its own phase (SHAPES
  says which follows which; ``--PHASE-pods``, a fifth of ``--pods`` each), in this order:
  anti-affinity-ns (at most half the nodes), pod-affinity, preferred-anti-affinity,
  node-affinity, affinity-ns, preferred-anti-affinity-ns, preferred-spread, node-inclusion,
  preferred-pod-affinity, preferred-affinity-ns. Where the case creates init pods of its shape
  first (in other namespaces: the benchmark's namespace stands for its measured one), as many are
  created and bound before the phase's pods, not measured: in SCHED_NAMESPACE, which the terms
  list beside NAMESPACE, or in the ten INIT_NAMESPACES, which the terms' namespaceSelector picks
  by the label TEAM (NAMESPACE is given it too). node-affinity requires two of the three zones;
  node-inclusion first adds a quarter as many nodes as its pods, tainted, and spreads per
  hostname with nodeTaintsPolicy and nodeAffinityPolicy Honor (its node affinity refuses the
  preemption phase's nodes, which would otherwise count).
- parked (``--parked-pods``, ``--pods`` by default, after ``--unschedulable-pods``, a fifth of
  ``--pods``): the unschedulable pods (a nodeSelector on NOWHERE_LABEL, which no node carries:
  only a node gaining it could help them, no pod event can) are created first and left parked,
  until every one is told PodScheduled=False (that time is reported, ``park_seconds``, not
  measured); then the schedulable pods arrive as a burst and are what is measured (the shape of
  scheduler_perf's Unschedulable: the queue must not spend its time on pods an event cannot help).

Between the shaped phases and parked, the misc and volume cases of scheduler_perf v1.37.2
(misc/ and volumes/performance-config.yaml, templates/), MISC_PHASES; by default each has its
case's measured pods per node (MISC_PER_NODE), at most MISC_MOST (gated: GATED_PODS):

- secrets (SchedulingSecrets): pods of the mix, each with a secret volume, as a burst.
- in-tree-pvs, csi-pvs (SchedulingInTreePVs, SchedulingCSIPVs): pods of the mix, each with a
  claim bound beforehand, as scheduler_perf's CreatePodWithPersistentVolume makes them, to a PV
  of its own (in-tree AWS EBS, or CSI of the driver CSI_DRIVER; no node affinity); for csi-pvs
  every node first gets a CSINode allowing CSI_VOLUME_LIMIT volumes of the driver. The PVs and
  claims are created before the burst, not measured. Check: every claim still bound; no node
  holds more EBS volumes (the in-tree ones migrate to the driver) than its CSINode allows.
- daemonset (SchedulingDaemonset): a node of the phase's own, room for every pod, then pods
  requesting nothing, each with required node affinity to it by ``matchFields metadata.name``
  as the daemonset controller writes it. Check: all on that node.
- finalizers (SchedulingDeletedPodsWithFinalizers): as many pods with a finalizer as measured,
  created, then deleted FINALIZER_DELETE_RATE a second (grace 0) while the measured pods
  (requesting nothing) arrive as a burst; at the end of the phase every deletion is done and the
  finalizers removed, so the deleted pods are gone (each told Scheduled once at most).
- gated (SchedulingWhileGated), on a node of the phase's own, as the case's one node: half as
  many pods with a scheduling gate as measured, then a marker pod bound (the scheduler has seen
  them), as many pods bound, then deleted GATED_DELETE_RATE a second while the measured pods
  arrive as a burst (all requesting nothing and pinned to the node by matchFields). At the end
  the gated pods and the pods not deleted yet are deleted at once, so that none waits through
  the phases after. Check: no gated pod ever bound (the bind watch saw none).
- mixed-churn (SchedulingWithMixedChurn, recreate): while the measured pods of the mix arrive as
  a burst, a node with room for no pod, a pod of priority 10 asking for more cpu than any node
  has (it fits nowhere and no preemption can make room) and a Service are created, deleted
  CHURN_INTERVAL later, created again after as long, and so on until every measured pod is
  bound; then the last ones are deleted. Check: no churn pod ever bound, no churn object left.

A phase of 0 pods is skipped.

Then, for the two deciders only, the DRA steady state (``--dra-nodes``, 500; 0 skips it), in a
run of its own on a control plane that also runs kube-controller-manager and kwok (``up``
without ``--bare``): its resourceclaim controller makes each pod's ResourceClaim from the
template, and deletes it once the pod is gone, which nothing here can stand in for as cheaply.
The shape is scheduler_perf's SteadyStateClusterResourceClaimTemplate/half_500nodes (v1.37.2,
test/integration/scheduler_perf/dra): a DeviceClass of the test driver, one ResourceSlice per
node of ``--dra-devices`` (10) devices with its templates' attributes and capacities, half of
each node's devices allocated beforehand to claims of the namespace DRA_INIT_NAMESPACE (written
allocated by this harness, as its allocResourceClaims does), and a ResourceClaimTemplate of one
request. kube-controller-manager's client rate limit is raised to ``--kube-qps`` (up's
``--controller-qps``): scheduler_perf runs the controller unthrottled, and its default, 20
requests/s, would cap both schedulers at about 5 pods/s. ``--dra-in-flight`` (10) pods, each
with a claim from the template and no requests, are created; each pod seen bound is deleted
(grace 0) and replaced by a new one until ``--dra-seconds`` (10) have passed; the pods then left
are waited for. Measured as the other
phases, from the first pod created to the last bound; kube-controller-manager and kwok share the
machine with the scheduler, alike for both. Its check: no device is allocated to two claims, and
each pod left has its claim allocated on its node and reserved for it.

Then, for the two deciders only, the gang phases (``--gang-nodes``, 1,000; 0 skips them), in a
run of their own on a bare control plane started with the gate GenericWorkload on
(``--feature-gates GenericWorkload=true``: kube-apiserver serves scheduling.k8s.io/v1beta1
PodGroup, and kube-scheduler, given the gate too, runs its GangScheduling plugin in the default
profile); ours runs the default profile with GangScheduling in ``spec.plugins.preEnqueue``. One
phase per group size of GANG_SIZES (8 and 64): ``--gang-pods`` (2,048) pods of the mix in groups
of that size, each group a native PodGroup of ``gang.minCount`` its size (no Workload) whose
members name it in ``spec.schedulingGroup.podGroupName``. The PodGroups are created first (not
measured), then every member of every group as a burst, group after group. Measured as the other
phases, and per group: from its last member created (no gang scheduler may place it before) to
its last member bound, p50/p90/p99. The nodes have room for every pod, so each group fits whole.
Its check: no group partly bound; the groups whose PodGroupInitiallyScheduled condition is True
are counted (kube-scheduler's status), not required.

Definitions:

- created: this process's clock when the pod's POST is sent (creationTimestamp has one-second
  resolution, too coarse for these latencies); bound: this process's clock when its watch of the
  namespace (field selector ``spec.nodeName!=``) first delivers the pod with a node. Latency is
  bound - created, reported as p50/p90/p99; the watch delay is in every scheduler's figure alike.
- CPU: the scheduler process's utime + stime (/proc/PID/stat) over the phase, from just before
  the first pod is created until all are bound plus one second (events and status writes that
  follow the binds belong to the phase). Peak RSS: VmHWM (/proc/PID/status) at the end of the run.
- API requests: apiserver_flowcontrol_dispatched_requests_total of the scheduler's own flow
  schema, from kube-apiserver's /metrics before and after the phase. API Priority and Fairness
  classifies by identity: kube-scheduler's user has the ``kube-scheduler`` flow schema, the
  operator's service account (used by policy-scheduler and the raw binders) ``service-accounts``,
  and this harness, an admin, ``exempt``; so the count is the scheduler's requests and none of the
  harness's. The JSON also keeps apiserver_request_total's change by verb/resource/subresource
  (that one counts every client, the harness's pod creates and its watch included).
- attempts/pod: the change of the scheduler's scheduler_schedule_attempts_total (every result)
  over the phase, read from its /metrics as CPU is (kube-scheduler's is opened to reads without
  credentials for this, ``--authorization-always-allow-paths``), per pod of the phase: 1 when
  each pod was decided once; a preemptor takes at least 2 (it fails, evicts, then binds). The
  raw binders decide nothing and have none.
- where the latency goes, per phase (p50/p99 of each part alone; the parts' percentiles do not
  add up): the create call, from the pod's POST sent to its answer (in the storage phase, from
  its claim's POST sent: created, as above; the API server's alone: no scheduler can see the
  pod before it is stored); and the scheduler's attempts that bound a
  pod, from its scheduler_scheduling_attempt_duration_seconds{result="scheduled"} over the phase
  (both schedulers time an attempt from the pod popped off their queue to its bind answered,
  with the same buckets, so the figures are bucket bounds). What neither holds is the pod's way
  to the scheduler's watch, its wait in the scheduler's queue, and the bound pod's way to ours.

Every run ends by checking correctness: every pod has a node but the parked ones, no node's
summed requests (cpu, memory, pod count) exceed its allocatable, and no pod has more than one
``Scheduled`` event; then each phase's own check: after the storage phase, every claim is bound
to a PV whose node affinity allows the node its pod is bound to; after the preemption phase,
every high-priority pod is bound on a preemption node, and the low-priority pods gone are counted
against the fewest that make room (``evicted_vs_minimum``); no two anti-affinity pods share a
node; the spread pods per zone differ by at most 1; the pods of pod-affinity and affinity-ns (init
pods included) all in one zone; no node-affinity pod outside its two zones; no two
anti-affinity-ns pods (init pods included) on one node; no node-inclusion pod on a node its
policies exclude, and its pods per included node within 1; no parked pod is bound, and each is
still told PodScheduled=False. The share of preferred-affinity pods in the preferred zone, and of
each preferred shape's pods placed as preferred (beside another of them, on a node holding no
more of them than an even spread would, within maxSkew of the emptiest zone), is reported, not
required. The overcommit check counts every namespace's pods.

Results go to ``--out`` (default bench/results/): scheduling.json, scheduling.md (per phase, a
table of every scheduler and node count and one of ratios: policy-scheduler against
kube-scheduler, and against both raw limits), scheduling-PHASE.png for each phase (throughput and
p99 against node count, the raw limits beside), and each scheduler's log under logs/. The exit
status is 1 when a run did not bind all its pods or failed a correctness check.

    python bench/bench_scheduling.py [--nodes 100 1000 5000] [--pods 5000]
        [--steady-rate 100] [--steady-seconds 30] [--storage-pods PODS/5]
        [--preemption-pods PODS/10] [--anti-affinity-pods PODS/5] [--spread-pods PODS/5]
        [--preferred-affinity-pods PODS/5] [--SHAPE-pods PODS/5 for each of SHAPES]
        [--secrets-pods] [--in-tree-pvs-pods] [--csi-pvs-pods] [--daemonset-pods]
        [--finalizers-pods] [--gated-pods 1000] [--mixed-churn-pods]
        [--parked-pods PODS] [--unschedulable-pods PODS/5]
        [--dra-nodes 500] [--dra-devices 10] [--dra-in-flight 10] [--dra-seconds 10]
        [--gang-nodes 1000] [--gang-pods 2048]
        [--schedulers policy-scheduler kube-scheduler raw raw+events]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checks import overcommitted, told, told_wrongly
from harness.controlplane import ControlPlane
from harness.kube import Api, ApiError
from harness.metrics import (
    APISERVER,
    DISPATCHED,
    Samples,
    buckets,
    requests_by_kind,
    samples_of,
    total,
)
from harness.objects import (
    HOSTNAME,
    device,
    device_class,
    exactly,
    pod,
    resource_claim,
    resource_claim_template,
    resource_slice,
    version,
)
from harness.objects import node as node_object
from harness.processes import KUBE_QPS, Process, start_kube_scheduler, start_operator
from harness.watches import PROGRESS_SECONDS, BindWatch
from harness.workload import (
    FLOW_SCHEMAS,
    NAMESPACE,
    PHASE_LABEL,
    SCHEDULER_NAMES,
    ZONE,
    ZONES,
    Creator,
    NodeSize,
    add_dirs,
    create_nodes,
    log,
    node_names,
    node_size,
    pod_body,
    prepare,
)
from provisioner import BIND_COMPLETED, Provisioner, claim_body, pv_node, storage_class_body
from scheduling_report import GANG_SIZES, MISC_PHASES, gang_phase, write_reports

from policy_scheduler.kube.events import POST_CONCURRENCY
from policy_scheduler.model.objects import NodeView
from policy_scheduler.scheduling.core import BIND_CONCURRENCY

SCHEDULERS = ("policy-scheduler", "kube-scheduler", "raw", "raw+events")
# The schedulers that decide: only they run the phases past burst and steady. A raw binder places
# round-robin, which a claim, a preemption, anti-affinity or a spread constraint would make wrong
# (and a preference meaningless); for those phases the raw limit is the raws' burst.
DECIDERS = ("policy-scheduler", "kube-scheduler")
# The storage phase's StorageClass (WaitForFirstConsumer, bench/provisioner.py's provisioner).
STORAGE_CLASS = "bench-wait-for-first-consumer"
PROVISIONER_WORKERS = 32
# The preferred-affinity phase's zone (the workload phases after scheduler_perf: SHAPES).
PREFERRED_ZONE = ZONES[0]
# The parked phase's unschedulable pods select a label no node carries: no pod event can help them
# (only a node gaining the label could), so a queue that follows the events leaves them alone.
NOWHERE_LABEL = "bench.policy-scheduler.dev/nowhere"
# The preemption phase: its own nodes (by this label, which its pods select), each filled exactly
# by VICTIMS_PER_NODE low-priority pods; each high-priority pod asks for a whole node's cpu.
PREEMPTION_LABEL = "bench.policy-scheduler.dev/preemption"
PRIORITY_CLASSES = {"bench-low": 100, "bench-high": 1000}
VICTIMS_PER_NODE = 10
KUBELET_WORKERS = 16
# After the last bind: the Scheduled events and status writes that follow it are the phase's.
SETTLE_SECONDS = 1.0
# The metrics both deciding schedulers serve, with kube-scheduler's names and buckets.
ATTEMPTS = "scheduler_schedule_attempts_total"
ATTEMPT_DURATION = "scheduler_scheduling_attempt_duration_seconds"
# The gang phases' control plane: GenericWorkload serves scheduling.k8s.io/v1beta1 Workload and
# PodGroup (up adds the beta API versions) and gives kube-scheduler's default profile its
# GangScheduling plugin, which kube-scheduler only runs with the gate on its own command line too.
GANG_GATES = ("--feature-gates", "GenericWorkload=true")
PODGROUPS = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NAMESPACE}/podgroups"
# What our policy adds to the default profile for the gang phases (kube's plugin name).
GANG_PLUGINS = {"preEnqueue": [{"name": "GangScheduling"}]}


@dataclass(frozen=True)
class Config:
    nodes: tuple[int, ...]
    pods: int
    steady_rate: float
    steady_seconds: float
    storage_pods: int
    preemption_pods: int
    shaped_pods: Mapping[str, int]  # by phase of SHAPES
    parked_pods: int  # the parked phase's schedulable pods, measured
    unschedulable_pods: int  # the parked phase's pods that fit nowhere, parked first
    misc_pods: Mapping[str, int | None]  # by phase of MISC_PHASES; None: by the node count
    schedulers: tuple[str, ...]
    dra_nodes: int  # the DRA steady state's nodes (0: not run)
    dra_devices: int  # devices per node, half allocated before the phase
    dra_in_flight: int  # its pods in flight
    dra_seconds: float  # how long they are churned
    gang_nodes: int  # the gang phases' nodes (0: not run)
    gang_pods: int  # pods of each gang phase, rounded down to whole groups
    repeats: int  # runs of each scheduler at each node count, in turns
    concurrency: int
    create_threads: int
    kube_qps: int
    timeout: float
    state_dir: Path
    out: Path

    @property
    def steady_pods(self) -> int:
        return round(self.steady_rate * self.steady_seconds)

    def gang_pods_of(self, size: int) -> int:
        """The pods of the gang phase of groups of ``size``: whole groups only."""
        return self.gang_pods // size * size


# --- the workload -----------------------------------------------------------------------------

# A preemption node: VICTIMS_PER_NODE low-priority pods of 400m fill its cpu exactly.
PREEMPTION_NODE = NodeSize(cpu=4, memory=16, pods=110)


def workload(
    prefix: str,
    count: int,
    scheduler_name: str,
    *,
    extra: Mapping[str, Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    claims: bool = False,
) -> list[tuple[str, bytes]]:
    """``count`` pods named ``prefix-NNNNN`` and labelled with ``prefix`` as their phase, cycling
    through the mix of requests; each with ``extra`` in its spec, ``node_selector``, and, with
    ``claims``, a volume of the claim ``claim_name(pod)``."""
    names = [f"{prefix}-{i:05d}" for i in range(count)]
    return [
        (
            name,
            pod_body(
                name,
                scheduler_name,
                i,
                node_selector=node_selector,
                claim=claim_name(name) if claims else None,
                phase=prefix,
                extra=extra,
            ),
        )
        for i, name in enumerate(names)
    ]


def claim_name(pod: str) -> str:
    return f"{pod}-data"


def storage_workload(
    prefix: str, count: int, scheduler_name: str
) -> tuple[list[tuple[str, bytes]], dict[str, bytes]]:
    """``count`` pods like ``workload``'s, each with a claim of STORAGE_CLASS, and the claims'
    bodies by pod name."""
    pods = workload(prefix, count, scheduler_name, claims=True)
    claims = {
        name: json.dumps(claim_body(claim_name(name), STORAGE_CLASS)).encode() for name, _ in pods
    }
    return pods, claims


def priority_class_body(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
        "globalDefault": False,
    }


def preemption_pod_body(
    name: str,
    scheduler_name: str,
    priority_class: str,
    *,
    cpu_m: int,
    memory_mi: int,
    node: str | None = None,
    node_selector: Mapping[str, str] | None = None,
) -> bytes:
    """A pod of the preemption phase: on the preemption nodes only (their label selected), bound
    at creation to ``node`` if given (a low-priority pod: no scheduler places it)."""
    spec: dict[str, Any] = {
        "priorityClassName": priority_class,
        "nodeSelector": dict(node_selector or {PREEMPTION_LABEL: "true"}),
    }
    if node:
        spec["nodeName"] = node
    body = pod(
        name,
        scheduler_name,
        cpu=f"{cpu_m}m" if cpu_m else None,
        memory=f"{memory_mi}Mi" if memory_mi else None,
        labels={"app": f"bench-{priority_class}"},
        extra=spec,
    )
    return json.dumps(body).encode()


def preemption_workload(
    nodes: Sequence[str], scheduler_name: str
) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """The low-priority pods that fill ``nodes`` exactly (VICTIMS_PER_NODE each, bound at
    creation), and one high-priority pod per node that needs a whole node's cpu: each can only be
    placed by evicting every low-priority pod of one node."""
    cpu_m = PREEMPTION_NODE.cpu * 1000 // VICTIMS_PER_NODE
    low: list[tuple[str, bytes]] = []
    for n, node in enumerate(nodes):
        for v in range(VICTIMS_PER_NODE):
            name = f"low-{n:05d}-{v:02d}"
            body = preemption_pod_body(
                name, scheduler_name, "bench-low", cpu_m=cpu_m, memory_mi=1024, node=node
            )
            low.append((name, body))
    high = [
        (
            f"high-{i:05d}",
            preemption_pod_body(
                f"high-{i:05d}",
                scheduler_name,
                "bench-high",
                cpu_m=PREEMPTION_NODE.cpu * 1000,
                memory_mi=1024,
            ),
        )
        for i in range(len(nodes))
    ]
    return low, high


# --- the schedulers under test ----------------------------------------------------------------


def start_scheduler(
    kind: str, plane: ControlPlane, config: Config, nodes_file: Path, *gates: str
) -> Process:
    """One scheduler under test, as a child process, its log under ``config.out``/logs/;
    kube-scheduler with ``gates`` (``--feature-gates``, as ``plane`` was started with)."""
    log_path = config.out / "logs" / f"{kind}-{nodes_file.stem}.log"
    if kind == "policy-scheduler":
        return start_operator(plane.operator, log_path, "--leader-elect=false")
    if kind == "kube-scheduler":
        return start_kube_scheduler(plane, log_path, SCHEDULER_NAMES[kind], config.kube_qps, *gates)
    command = [
        sys.executable,
        str(Path(__file__).with_name("raw_binder.py")),
        "--kubeconfig",
        str(plane.operator),
        "--namespace",
        NAMESPACE,
        "--nodes",
        str(nodes_file),
        "--concurrency",
        str(config.concurrency),
    ]
    if kind == "raw+events":
        command += ["--events", "--event-concurrency", str(POST_CONCURRENCY)]
    # It learns of each pod (and its uid, which its events name) from us, as soon as it exists.
    return Process(kind, command, log_path, stdin=True)


def created(scheduler: Process) -> Callable[[str, str], None]:
    """What tells ``scheduler`` of a pod just created: a raw binder reads them on its input."""
    return lambda name, uid: scheduler.feed(f"{name} {uid}")


# --- measuring --------------------------------------------------------------------------------


class Kubelet:
    """The preemption phase's stand-in for the kubelets (none run here): a victim a scheduler
    deletes gracefully only gets a deletionTimestamp, and stays (its room taken) until its
    kubelet has stopped it. This deletes, grace 0, every pod of the namespace that ``watch``
    shows with a deletionTimestamp, ``workers`` at once, with the admin's identity (``exempt``:
    in no scheduler's API requests). It listens on the bench's BindWatch: a victim is bound."""

    def __init__(self, kubeconfig: Path, watch: BindWatch, workers: int = KUBELET_WORKERS) -> None:
        self.api = Api(kubeconfig, pool=workers)
        # Pod name -> its priorityClassName, for every pod deleted here.
        self.deleted: dict[str, str] = {}
        # Seconds from the deletionTimestamp seen to the pod gone, per pod.
        self.took: list[float] = []
        self.errors: list[str] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kubelet")
        self._watch = watch
        watch.listeners.append(self._offer)

    def _offer(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp"):
            return
        with self._lock:
            if meta["uid"] in self._seen:
                return
            self._seen.add(meta["uid"])
        self._pool.submit(self._delete, pod, time.monotonic())

    def _delete(self, pod: dict[str, Any], seen: float) -> None:
        meta = pod["metadata"]
        try:
            # 404: gone already; 409: the uid precondition failed (another pod of that name).
            self.api.request(
                "DELETE",
                f"/api/v1/namespaces/{NAMESPACE}/pods/{meta['name']}",
                {
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": meta["uid"]},
                },
                ok=frozenset({404, 409}),
            )
        except (ApiError, OSError) as error:
            with self._lock:
                self.errors.append(f"{meta['name']}: {error}")
            return
        with self._lock:
            self.deleted[meta["name"]] = pod["spec"].get("priorityClassName") or ""
            self.took.append(time.monotonic() - seen)

    def evicted(self) -> Counter[str]:
        """Pods deleted here so far, by priorityClassName."""
        with self._lock:
            return Counter(self.deleted.values())

    def close(self) -> None:
        self._watch.listeners.remove(self._offer)
        self._pool.shutdown(wait=True)
        self.api.session.close()


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: a latency that some pod really had."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def percentiles(values: Sequence[float], ps: Sequence[int]) -> dict[str, float | None]:
    """Per percentile of ``ps`` ("p50": ...), ``values``' nearest rank, to 0.1; None where there
    are no values."""
    return {f"p{p}": round(percentile(values, p), 1) if values else None for p in ps}


def timeline(
    created: Mapping[str, float], answered: Mapping[str, float], bound: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Per second of the phase, by the pods created in it (from the first created): how many,
    their creation-to-bound p50 and slowest (ms, of those bound), and their slowest create call
    (ms): where a stall is, and whether the API server's own answers slowed with it."""
    if not created:
        return []
    start = min(created.values())
    seconds: dict[int, list[str]] = {}
    for name, at in created.items():
        seconds.setdefault(int(at - start), []).append(name)
    rows = []
    for second in range(max(seconds) + 1):
        names = seconds.get(second, [])
        latencies = [(bound[n] - created[n]) * 1000 for n in names if n in bound]
        calls = [(answered[n] - created[n]) * 1000 for n in names if n in answered]
        rows.append(
            {
                "second": second,
                "created": len(names),
                "p50_ms": round(percentile(latencies, 50), 1) if latencies else None,
                "max_ms": round(max(latencies), 1) if latencies else None,
                "create_max_ms": round(max(calls), 1) if calls else None,
            }
        )
    return rows


def group_latencies(
    groups: Mapping[str, Sequence[str]], created: Mapping[str, float], bound: Mapping[str, float]
) -> list[float]:
    """Per group of ``groups`` (name -> its members) whose every member was created and bound: the
    ms from its last member created (no gang scheduler can place it before) to its last member
    bound (the group whole), by the times in ``created`` and ``bound``."""
    return [
        (max(bound[name] for name in members) - max(created[name] for name in members)) * 1000
        for members in groups.values()
        if members and all(name in created and name in bound for name in members)
    ]


def bucket_percentiles(
    before: Samples, after: Samples, histogram: str, percentiles: Sequence[int], **labels: str
) -> dict[str, float | None]:
    """Per percentile ("p50": ...), the upper bound in ms of the bucket that holds it among the
    observations of ``histogram`` made between two scrapes of one /metrics page: a latency no
    greater than that. None where nothing was observed, or above the largest finite bound."""
    start, end = buckets(before, histogram, labels), buckets(after, histogram, labels)
    bounds = sorted(end)
    counts = [end[bound] - start.get(bound, 0.0) for bound in bounds]
    observed = counts[-1] if counts else 0.0
    result: dict[str, float | None] = {}
    for p in percentiles:
        rank = math.ceil(p / 100 * observed)
        bound = next(
            (b for b, count in zip(bounds, counts, strict=True) if count >= rank), math.inf
        )
        result[f"p{p}"] = bound * 1000 if observed and bound != math.inf else None
    return result


def apiserver_requests(admin: Api, flow_schema: str) -> tuple[float, Counter[str]]:
    """From kube-apiserver's /metrics: the requests dispatched for ``flow_schema``, and every
    request by verb/resource/subresource."""
    samples = samples_of(admin.metrics(), *APISERVER)
    return total(samples, DISPATCHED, flow_schema=flow_schema), requests_by_kind(samples)


class Teardown:
    """What a run leaves to stop once it is measured: its helpers (the bind watch, the phases'
    stand-ins), then its control plane. Each helper's watch may take up to its server-side
    timeout to end, so they are closed at once, each in a thread of its own."""

    def __init__(self, last: Callable[[], None]) -> None:
        self._last = last
        self._closers: list[Callable[[], None]] = []

    def callback(self, close: Callable[[], None]) -> None:
        self._closers.append(close)

    def close(self) -> None:
        threads = [threading.Thread(target=close, name="teardown") for close in self._closers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self._last()


@dataclass(frozen=True)
class Run:
    """One scheduler's run: the admin's client, the watch, the scheduler, the settings, and what
    tears down the helpers a phase starts (the stand-in provisioner, the stand-in kubelet)."""

    admin: Api
    kubeconfig: Path  # the admin's, for the helpers' clients of their own
    watch: BindWatch
    scheduler: Process
    config: Config
    teardown: Teardown

    @property
    def scheduler_name(self) -> str:
        return SCHEDULER_NAMES[self.scheduler.name]


@dataclass(frozen=True)
class Listing:
    """The cluster as the checks at the end of a run see it: the namespace's pods and the nodes,
    by name."""

    pods: Mapping[str, dict[str, Any]]
    nodes: Mapping[str, dict[str, Any]]

    def node_of(self, pod: str) -> str | None:
        node: str | None = self.pods.get(pod, {}).get("spec", {}).get("nodeName")
        return node

    def label_of(self, node: str, key: str) -> str | None:
        label: str | None = self.nodes[node]["metadata"].get("labels", {}).get(key)
        return label


# A phase's own check of its pods at the end of the run (their placement, their claims): a dict
# of what it found, with "ok".
Check = Callable[[Api, Listing], dict[str, Any]]


@dataclass(frozen=True)
class PhaseRun:
    """A phase measured: its figures, the pods that must be bound at the end of the run, those
    that must still be pending there (parked), and its own check, if any."""

    figures: dict[str, Any]
    bound: list[str]
    pending: list[str] = field(default_factory=list)
    check: Check | None = None
    gone: list[str] = field(default_factory=list)
    """Pods the phase deleted once bound (the DRA steady state's): told Scheduled once, on no
    node now."""


@dataclass(frozen=True)
class Before:
    """What a phase's figures are measured from: the scheduler's requests, metrics and CPU
    just before its first pod is created."""

    requests: float
    kinds: Counter[str]
    page: Samples | None
    cpu: float

    @classmethod
    def taken(cls, run: Run) -> Before:
        requests, kinds = apiserver_requests(run.admin, FLOW_SCHEMAS[run.scheduler.name])
        return cls(requests, kinds, run.scheduler.metrics(), run.scheduler.cpu_seconds())


def measure(
    phase: str,
    pods: Sequence[tuple[str, bytes]],
    rate: float | None,
    run: Run,
    claims: Mapping[str, bytes] | None = None,
    *,
    groups: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """One phase: create ``pods`` (each after its claim in ``claims``, if any), wait for all to be
    bound, and what it took (per group of ``groups`` too, if the pods make groups)."""
    config, scheduler = run.config, run.scheduler
    before = Before.taken(run)
    creator = Creator(run.admin, config.create_threads, claims or {}, on_uid=created(scheduler))
    names = [name for name, _ in pods]
    with creator.running(pods, rate):
        complete = run.watch.wait(
            names,
            config.timeout,
            lambda bound: (
                f"{phase}: {len(creator.created)}/{len(names)} created, {bound}/{len(names)} bound"
            ),
            scheduler.check_alive,
        )
    return phase_figures(phase, names, creator, complete, run=run, before=before, groups=groups)


def phase_figures(
    phase: str,
    names: Sequence[str],
    creator: Creator,
    complete: bool,
    *,
    run: Run,
    before: Before,
    groups: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """A phase's figures once its pods ``names``, created by ``creator``, are bound (or the
    wait for them gave up: not ``complete``), measured from ``before``; with ``groups`` (name ->
    members), the groups' latencies too (``group_latencies``)."""
    admin, watch, scheduler = run.admin, run.watch, run.scheduler
    time.sleep(SETTLE_SECONDS)
    cpu = scheduler.cpu_seconds() - before.cpu
    page_after = scheduler.metrics()
    requests_after, kinds_after = apiserver_requests(admin, FLOW_SCHEMAS[scheduler.name])
    kinds_after.subtract(before.kinds)
    latencies = [
        (watch.bound[name] - creator.created[name]) * 1000
        for name in names
        if name in watch.bound and name in creator.created
    ]
    if not creator.created:
        raise RuntimeError(f"{phase}: no pod could be created")
    create_calls = [(creator.answered[n] - creator.created[n]) * 1000 for n in creator.created]
    first_created = min(creator.created.values())
    last_bound = max((watch.bound[n] for n in names if n in watch.bound), default=first_created)
    seconds = last_bound - first_created
    requests = requests_after - before.requests
    result: dict[str, Any] = {
        "pods": len(names),
        "bound": len(latencies),
        "complete": complete,
        "seconds": round(seconds, 3),
        "throughput": round(len(latencies) / seconds, 2) if seconds > 0 else 0.0,
        "create_rate": round(len(creator.created) / max(creator.done - first_created, 1e-9), 2),
        "latency_ms": percentiles(latencies, (50, 90, 99, 100)),
        "cpu_seconds": round(cpu, 2),
        "cpu_ms_per_pod": round(cpu * 1000 / len(names), 3),
        "api_requests": round(requests),
        "api_requests_per_pod": round(requests / len(names), 3),
        "api_requests_all_clients": {k: v for k, v in sorted(kinds_after.items()) if v > 0},
        "attempts_per_pod": None,
        # Where the latency goes: the create call (sent to answered: the API server's, before
        # any scheduler can see the pod), and the scheduler's attempts that bound a pod (popped
        # from its queue to bound, as both schedulers' histogram times them; bucket bounds).
        # The rest is the pod's way to the scheduler's watch, its wait in the queue, and the
        # bound pod's way to ours.
        "create_ms": percentiles(create_calls, (50, 99)),
        "attempt_ms": None,
        "timeline": timeline(
            {n: creator.created[n] for n in names if n in creator.created},
            creator.answered,
            watch.bound,
        ),
    }
    if groups is not None:
        whole = group_latencies(groups, creator.created, watch.bound)
        result.update(
            groups=len(groups), groups_bound=len(whole), group_ms=percentiles(whole, (50, 90, 99))
        )
    if before.page is not None and page_after is not None:
        attempts = total(page_after, ATTEMPTS) - total(before.page, ATTEMPTS)
        result["attempts_per_pod"] = round(attempts / len(names), 3)
        result["attempt_ms"] = bucket_percentiles(
            before.page, page_after, ATTEMPT_DURATION, (50, 99), result="scheduled"
        )
    log(
        f"  {phase}: {result['bound']}/{len(names)} bound in {seconds:.1f} s, "
        f"{result['throughput']} pods/s, p99 {result['latency_ms']['p99']} ms, "
        f"{result['cpu_ms_per_pod']} CPU ms/pod, {result['api_requests_per_pod']} requests/pod"
    )
    return result


def measured(
    run: Run,
    phase: str,
    pods: Sequence[tuple[str, bytes]],
    *,
    rate: float | None = None,
    claims: Mapping[str, bytes] | None = None,
    check: Callable[[Api, Listing, Sequence[str]], dict[str, Any]] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
) -> PhaseRun:
    """What every phase does: ``pods`` created (a burst, or ``rate`` a second) and measured until
    bound (and per group of ``groups``, if they make groups); at the end of the run they must be
    bound, and pass ``check(admin, listing, names)``."""
    names = [name for name, _ in pods]
    return PhaseRun(
        measure(phase, pods, rate, run, claims, groups=groups),
        names,
        check=None if check is None else lambda admin, listing: check(admin, listing, names),
    )


def burst(run: Run, count: int) -> PhaseRun:
    """The burst phase: ``count`` pods of the mix of requests, all at once."""
    return measured(run, "burst", workload("burst", count, run.scheduler_name))


def steady(run: Run, count: int) -> PhaseRun:
    """The steady phase: ``count`` pods of the mix, ``--steady-rate`` a second."""
    pods = workload("steady", count, run.scheduler_name)
    return measured(run, "steady", pods, rate=run.config.steady_rate)


def storage(run: Run, count: int) -> PhaseRun:
    """The storage phase: ``count`` pods each after its WaitForFirstConsumer claim, with the
    stand-in provisioner running."""
    provisioner = Provisioner(run.kubeconfig, NAMESPACE, STORAGE_CLASS, workers=PROVISIONER_WORKERS)
    run.teardown.callback(provisioner.close)
    pods, claims = storage_workload("storage", count, run.scheduler_name)
    ran = measured(run, "storage", pods, claims=claims, check=verify_storage)
    took = [seconds * 1000 for seconds in provisioner.provisioned.values()]
    ran.figures["provision_ms"] = percentiles(took, (50, 99))
    ran.figures["provision_errors"] = provisioner.errors[:10]
    return ran


def preemption(run: Run, count: int) -> PhaseRun:
    """The preemption phase: ``count`` nodes filled exactly with low-priority pods (created bound:
    no scheduler takes part, and none of it is measured), then ``count`` high-priority pods as a
    burst, each needing one node's low-priority pods evicted, with the stand-in kubelet
    running."""
    admin, watch, scheduler, config = run.admin, run.watch, run.scheduler, run.config
    scheduler_name = run.scheduler_name
    kubelet = Kubelet(run.kubeconfig, watch)
    run.teardown.callback(kubelet.close)
    width = len(str(count - 1))
    nodes = [f"preempt-{i:0{width}d}" for i in range(count)]
    create_nodes(admin, nodes, PREEMPTION_NODE, config.create_threads, {PREEMPTION_LABEL: "true"})
    low, high = preemption_workload(nodes, scheduler_name)
    Creator(admin, config.create_threads).create_all(low)
    low_names = [name for name, _ in low]
    if not watch.wait(
        low_names,
        config.timeout,
        lambda bound: f"preemption: {bound}/{len(low)} low-priority pods created",
        scheduler.check_alive,
    ):
        raise RuntimeError("preemption: the low-priority pods were not all created")
    # Bound on the last preemption node, created after every low-priority pod: once the scheduler
    # has bound it, its caches hold them all and the node. No requests, so it fits a full node;
    # high priority, so it is nobody's victim.
    marker = preemption_pod_body(
        "preemption-ready",
        scheduler_name,
        "bench-high",
        cpu_m=0,
        memory_mi=0,
        node_selector={HOSTNAME: nodes[-1]},
    )
    marked(run, "preemption", "preemption-ready", marker)
    log(f"  preemption: {count} nodes filled with {len(low)} low-priority pods")
    evicted_before = kubelet.evicted()
    ran = measured(
        run,
        "preemption",
        high,
        check=lambda _admin, listing, high_pods: verify_preemption(
            listing, high_pods, low_names, nodes
        ),
    )
    result = ran.figures
    evicted = kubelet.evicted()
    evicted.subtract(evicted_before)
    victims = evicted["bench-low"]
    took = [seconds * 1000 for seconds in list(kubelet.took)]
    result.update(
        {
            "nodes": count,
            "low_pods": len(low),
            "evicted": victims,
            "evicted_other": sum(n for c, n in evicted.items() if c != "bench-low" and n > 0),
            "evicted_per_preemptor": round(victims / len(high), 3),
            "evicted_minimum": len(high) * VICTIMS_PER_NODE,
            "evicted_vs_minimum": round(victims / (len(high) * VICTIMS_PER_NODE), 3),
            "force_delete_ms": percentiles(took, (50, 99)),
            "kubelet_errors": kubelet.errors[:10],
        }
    )
    log(
        f"  preemption: {victims} low-priority pods evicted, "
        f"{result['evicted_per_preemptor']} per high-priority pod "
        f"(minimum {VICTIMS_PER_NODE})"
    )
    return PhaseRun(result, ["preemption-ready", *ran.bound], check=ran.check)


def marked(run: Run, phase: str, name: str, body: bytes) -> None:
    """The marker pod ``name`` (``body``: pinned to the last of the nodes ``phase`` added, after
    them) created and waited for until bound: once it is, the scheduler has seen those nodes and
    every pod created before it (a watch delivers in order)."""
    Creator(run.admin, 1).create(name, body)
    if not run.watch.wait(
        [name],
        run.config.timeout,
        lambda _: f"{phase}: the marker pod not bound yet",
        run.scheduler.check_alive,
    ):
        raise RuntimeError(f"{phase}: the marker pod was not bound; see {run.scheduler.log_path}")


def parked(run: Run, count: int) -> PhaseRun:
    """The parked phase: ``config.unschedulable_pods`` pods no node can take (a nodeSelector on a
    label none carries), created first and left parked once each is told PodScheduled=False;
    then ``count`` schedulable pods of the mix as a burst, which are what is measured."""
    config = run.config
    unschedulable = workload(
        "parked", config.unschedulable_pods, run.scheduler_name, node_selector={NOWHERE_LABEL: "on"}
    )
    names = [name for name, _ in unschedulable]
    started = time.monotonic()
    if unschedulable:
        Creator(run.admin, config.create_threads).create_all(unschedulable)
        wait_parked(run, names)
    park_seconds = round(time.monotonic() - started, 2)
    log(f"  parked: {len(names)} unschedulable pods parked after {park_seconds} s")
    arrivals = workload("arrival", count, run.scheduler_name)
    ran = measured(run, "parked", arrivals)
    ran.figures.update({"unschedulable": len(names), "park_seconds": park_seconds})
    return PhaseRun(
        ran.figures,
        ran.bound,
        pending=names,
        check=lambda _admin, listing: check_parked(listing, names),
    )


def told_unschedulable(pod: Mapping[str, Any]) -> bool:
    return any(
        condition.get("type") == "PodScheduled" and condition.get("status") == "False"
        for condition in pod.get("status", {}).get("conditions") or []
    )


def wait_parked(run: Run, names: Sequence[str]) -> None:
    """Until every pod of ``names`` (the parked phase's unschedulable pods) is told
    PodScheduled=False: each tried and found to fit nowhere."""
    wait_listed(
        run,
        "parked",
        "unschedulable pods parked",
        names,
        done=told_unschedulable,
        path=f"/api/v1/namespaces/{NAMESPACE}/pods",
        labelSelector=f"{PHASE_LABEL}=parked",
    )


def wait_listed(
    run: Run,
    phase: str,
    what: str,
    names: Sequence[str],
    *,
    done: Callable[[dict[str, Any]], bool],
    path: str,
    **params: str,
) -> None:
    """Until every pod of ``names`` that ``path`` lists (with ``params``) is ``done``, for
    ``phase``'s pods out of the bind watch's sight (not yet bound, or of another namespace).
    Listed every half second (the admin's requests: in no scheduler's figure, and before the
    phase's are counted)."""
    wanted = set(names)
    deadline = time.monotonic() + run.config.timeout
    next_progress = time.monotonic() + PROGRESS_SECONDS
    while True:
        pods = run.admin.list_items(path, **params)
        count = sum(1 for pod in pods if pod["metadata"]["name"] in wanted and done(pod))
        if count == len(wanted):
            return
        run.scheduler.check_alive()
        now = time.monotonic()
        if now > deadline:
            raise RuntimeError(f"{phase}: {count}/{len(wanted)} {what} in time")
        if now >= next_progress:
            log(f"  {phase}: {count}/{len(wanted)} {what}")
            next_progress = now + PROGRESS_SECONDS
        time.sleep(0.5)


# --- the DRA steady state ---------------------------------------------------------------------

# scheduler_perf's DRA objects (test/integration/scheduler_perf/dra/templates, v1.37.2): the test
# driver's DeviceClass, a ResourceSlice of basic devices per node, and the one-request template.
DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_CLASS = "test-class"
DRA_TEMPLATE = "test-claim-template"
# The claims allocated before the phase (scheduler_perf's "init" namespace): half the devices.
DRA_INIT_NAMESPACE = "bench-init"
DRA_NODE = NodeSize(cpu=4, memory=32, pods=110)
DRA_PCI_ROOTS = 2


def dra_device(index: int) -> dict[str, Any]:
    """resourceslice-basic-devices.yaml's device ``index``: an Intel GPU's attributes."""
    root = index % DRA_PCI_ROOTS
    return device(
        f"basic-device-{index}",
        attributes={
            "driver": "xe",
            "driverVersion": version("1.2.3"),
            "resource.k8s.io/pciRoot": str(root),
            "family": "Arc Pro B-Series",
            "health": "Healthy",
            "model": "B60",
            "pciAddress": f"0000:0{index}:00.0",
            "pciId": "0xe211",
            "pciRoot": f"0{root}",
            "resource.kubernetes.io/pciBusID": f"0000:0{index}:00.0",
            "resource.kubernetes.io/pciRoot": f"pci0000:0{root}",
            "sriov": True,
            "type": "gpu",
        },
        capacity={"memory": "24480Mi", "millicores": "1k"},
    )


def dra_slice(node: str, devices: int) -> dict[str, Any]:
    """The node's ResourceSlice: a pool of its own, named after it, of ``devices`` devices."""
    return resource_slice(
        f"{node}-{DRA_DRIVER}",
        DRA_DRIVER,
        node,
        node=node,
        devices=[dra_device(i) for i in range(devices)],
    )


def dra_init_claim(index: int, node: str, device_index: int) -> tuple[bytes, dict[str, Any]]:
    """A claim of the init namespace and its allocation (the device ``device_index`` of
    ``node``), as scheduler_perf's allocResourceClaims leaves it: allocated, reserved for no
    one."""
    claim = resource_claim(f"init-{index:05d}", [exactly("req-0", DRA_CLASS)])
    node_term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    result = {
        "request": "req-0",
        "driver": DRA_DRIVER,
        "pool": node,
        "device": f"basic-device-{device_index}",
    }
    allocation = {
        "devices": {"results": [result]},
        "nodeSelector": {"nodeSelectorTerms": [node_term]},
        # As v1.37's allocator writes it: an allocation without it is stamped by the scheduler
        # that reserves the claim, which the API server refuses (allocation is immutable).
        "allocationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return json.dumps(claim).encode(), {"status": {"allocation": allocation}}


def create_dra_objects(admin: Api, nodes: Sequence[str], config: Config) -> int:
    """The DeviceClass, a slice per node, half of each node's devices allocated to claims of the
    init namespace, and the template of the phase's pods; the claims allocated."""
    resource = "/apis/resource.k8s.io/v1"
    admin.post(
        f"{resource}/deviceclasses",
        device_class(DRA_CLASS, selectors=[f'device.driver == "{DRA_DRIVER}"']),
    )
    admin.post("/api/v1/namespaces", {"metadata": {"name": DRA_INIT_NAMESPACE}}, exists_ok=True)
    per_node = config.dra_devices // 2
    claims = [
        dra_init_claim(n * per_node + d, node, d)
        for n, node in enumerate(nodes)
        for d in range(per_node)
    ]
    claims_path = f"{resource}/namespaces/{DRA_INIT_NAMESPACE}/resourceclaims"

    def allocated(item: tuple[bytes, dict[str, Any]]) -> None:
        body, status = item
        admin.post(claims_path, body, exists_ok=True)
        name = json.loads(body)["metadata"]["name"]
        admin.merge_patch(f"{claims_path}/{name}/status", status)

    started = time.monotonic()
    with ThreadPoolExecutor(config.create_threads) as pool:
        list(
            pool.map(
                lambda node: admin.post(
                    f"{resource}/resourceslices", dra_slice(node, config.dra_devices)
                ),
                nodes,
            )
        )
        list(pool.map(allocated, claims))
    template = resource_claim_template(DRA_TEMPLATE, [exactly("req-0", DRA_CLASS)])
    admin.post(f"{resource}/namespaces/{NAMESPACE}/resourceclaimtemplates", template)
    log(
        f"  dra: {len(nodes)} slices of {config.dra_devices} devices, {len(claims)} claims "
        f"allocated in {time.monotonic() - started:.1f} s"
    )
    return len(claims)


def dra_pod_body(name: str, scheduler_name: str) -> bytes:
    """pod-with-claim-template.yaml: no requests, one claim from the template."""
    body = pod(
        name,
        scheduler_name,
        cpu=None,
        memory=None,
        labels={PHASE_LABEL: "dra"},
        templates={"resource": DRA_TEMPLATE},
    )
    return json.dumps(body).encode()


class Churn:
    """scheduler_perf's steady state (createPodsSteadily): ``in_flight`` pods are created, and
    each pod seen bound is deleted (grace 0: no kubelet stops it here) and replaced by a new
    one, until ``seconds`` have passed; so the queue is never empty and the cluster stays as
    allocated as it started. The resourceclaim controller deletes a deleted pod's claim, which
    frees its device."""

    def __init__(self, run: Run, creator: Creator, in_flight: int, seconds: float) -> None:
        self.run = run
        self.creator = creator
        self.in_flight = in_flight
        self.until = time.monotonic() + seconds
        self.names: list[str] = []
        self.deleted: set[str] = set()
        self.errors: list[str] = []
        self._handled: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(in_flight, thread_name_prefix="churn")

    def run_out(self) -> None:
        """Seed the pods, churn until the time is up, then wait for the deletions and
        replacements under way."""
        self.run.watch.listeners.append(self.bound)
        for _ in range(self.in_flight):
            self._pool.submit(self.create_next)
        time.sleep(max(0.0, self.until - time.monotonic()))
        self._pool.shutdown(wait=True)

    def create_next(self) -> None:
        with self._lock:
            name = f"dra-{len(self.names):05d}"
            self.names.append(name)
        self.creator.create(name, dra_pod_body(name, self.run.scheduler_name))
        self.creator.done = time.monotonic()

    def bound(self, found: dict[str, Any]) -> None:
        """The bind watch's listener: a pod of the phase bound while the time runs is replaced."""
        name = found["metadata"]["name"]
        if found["metadata"].get("labels", {}).get(PHASE_LABEL) != "dra":
            return
        with self._lock:
            if name in self._handled or time.monotonic() >= self.until:
                return
            self._handled.add(name)
        self._pool.submit(self.replace, name)

    def replace(self, name: str) -> None:
        try:
            self.run.admin.request(
                "DELETE",
                f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
                {"gracePeriodSeconds": 0},
                ok=frozenset({404}),
            )
        except (ApiError, OSError) as error:
            self.errors.append(f"deleting {name}: {error}")
            return
        with self._lock:
            self.deleted.add(name)
        if time.monotonic() < self.until:
            self.create_next()


def dra(run: Run, in_flight: int) -> PhaseRun:
    """The DRA steady state (scheduler_perf's SteadyStateClusterResourceClaimTemplate, half
    allocated): pods each with a claim from the template, ``in_flight`` at a time, churned for
    ``--dra-seconds``; measured from the first pod created to the last bound."""
    config = run.config
    before = Before.taken(run)
    creator = Creator(run.admin, config.create_threads, on_uid=created(run.scheduler))
    churn = Churn(run, creator, in_flight, config.dra_seconds)
    churn.run_out()
    names = list(churn.names)
    # The pods created last are bound after the time is up: they stay.
    complete = run.watch.wait(
        names,
        config.timeout,
        lambda bound: f"dra: {bound}/{len(names)} bound",
        run.scheduler.check_alive,
    )
    figures = phase_figures("dra", names, creator, complete, run=run, before=before)
    figures.update(
        {
            "in_flight": in_flight,
            "deleted": len(churn.deleted),
            "churn_errors": churn.errors[:10],
        }
    )
    left = [name for name in names if name not in churn.deleted]
    return PhaseRun(
        figures,
        left,
        check=lambda admin, listing: verify_dra(admin, listing, left),
        gone=sorted(churn.deleted),
    )


# --- gang scheduling --------------------------------------------------------------------------


def pod_group_body(name: str, min_count: int) -> dict[str, Any]:
    """A native PodGroup (scheduling.k8s.io/v1beta1, no Workload): its members are bound only
    when at least ``min_count`` of them fit together."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def gang_workload(size: int, count: int, scheduler_name: str) -> dict[str, list[tuple[str, bytes]]]:
    """``count // size`` groups of ``size`` pods of the mix, labelled with their phase, each
    member naming its group in ``spec.schedulingGroup.podGroupName``: the members by group."""
    phase = gang_phase(size)
    groups: dict[str, list[tuple[str, bytes]]] = {}
    for g in range(count // size):
        group = f"{phase}-{g:04d}"
        extra = {"schedulingGroup": {"podGroupName": group}}
        groups[group] = [
            (
                f"{group}-{m:02d}",
                pod_body(f"{group}-{m:02d}", scheduler_name, m, phase=phase, extra=extra),
            )
            for m in range(size)
        ]
    return groups


def gang(size: int) -> Callable[[Run, int], PhaseRun]:
    """The gang phase of groups of ``size``: a PodGroup of minCount ``size`` per group, created
    first (not measured), then every member of every group as one burst, group after group;
    measured as the others, and per group from its last member created to its last bound."""

    def start(run: Run, count: int) -> PhaseRun:
        phase = gang_phase(size)
        groups = gang_workload(size, count, run.scheduler_name)
        with ThreadPoolExecutor(run.config.create_threads) as pool:
            list(
                pool.map(lambda name: run.admin.post(PODGROUPS, pod_group_body(name, size)), groups)
            )
        log(f"  {phase}: {len(groups)} PodGroups of minCount {size} created")
        members = {group: [name for name, _ in pods] for group, pods in groups.items()}
        ran = measured(
            run,
            phase,
            [member for pods in groups.values() for member in pods],
            groups=members,
            check=lambda admin, listing, _pods: check_gang(admin, listing, members),
        )
        log(
            f"  {phase}: {ran.figures['groups_bound']}/{len(groups)} groups whole, group ms "
            + ", ".join(f"{p} {ms}" for p, ms in ran.figures["group_ms"].items())
        )
        return ran

    return start


# --- scheduler_perf's misc and volume shapes --------------------------------------------------

# Each phase's pods by default: its suite case's measured pods per node (SchedulingSecrets
# 5000Nodes_10000Pods, SchedulingInTreePVs 5000Nodes_2000Pods, SchedulingCSIPVs
# 5000Nodes_5000Pods, SchedulingDaemonset 15000Nodes, SchedulingDeletedPodsWithFinalizers
# 5000Node_5000DeletingPods, SchedulingWithMixedChurn 5000Nodes_10000Pods), at most MISC_MOST:
# some seconds of binding at either scheduler's pace here, not the suite's minutes. The gated
# phase's case has one node whatever the size: GATED_PODS.
MISC_PER_NODE = {
    "secrets": 2.0,
    "in-tree-pvs": 0.4,
    "csi-pvs": 1.0,
    "daemonset": 2.0,
    "finalizers": 1.0,
    "mixed-churn": 2.0,
}
MISC_MOST = 2000
GATED_PODS = 1000
# The cpu and memory of a node of a phase's own (node-with-name.yaml's; pods sized for the phase).
OWN_NODE_CPU, OWN_NODE_MEMORY = 4, 32
# The phases whose pods go on nodes of their own, which the run's nodes need no room for.
OWN_NODES = ("preemption", "daemonset", "gated")
# gated-pod.yaml's gate, and SchedulingWhileGated's counts beside its measured pods: half as many
# held gated to the end, as many bound then deleted at GATED_DELETE_RATE a second.
SCHEDULING_GATE = "test.k8s.io/hold"
GATED_DELETE_RATE = 50.0
# pod-with-finalizer.yaml's finalizer; SchedulingDeletedPodsWithFinalizers deletes as many such
# pods as it measures, FINALIZER_DELETE_RATE a second.
FINALIZER = "test.k8s.io/finalizer"
FINALIZER_DELETE_RATE = 100.0
# Deletions in flight at once: enough to hold those rates when each takes a tenth of a second.
DELETE_WORKERS = 16
# SchedulingWithMixedChurn: a node, a high-priority pod and a Service created, then deleted
# the next interval ("recreate", number 1, 1,000 ms); pod-high-priority-large-cpu.yaml's priority.
CHURN_INTERVAL = 1.0
CHURN_PRIORITY_CLASS = "bench-churn"
CHURN_PRIORITY = 10
# SchedulingSecrets' volume (pod-with-secret-volume.yaml: the secret need not exist to schedule).
SECRET_VOLUME = {"name": "secret", "secret": {"secretName": "secret"}}
# SchedulingCSIPVs: pv-csi.yaml's driver, and each node's CSINode allowing it 39 volumes.
CSI_DRIVER = "ebs.csi.aws.com"
CSI_VOLUME_LIMIT = 39
CSINODES = "/apis/storage.k8s.io/v1/csinodes"
# The phases whose volumes are the driver's: pv-aws.yaml's in-tree EBS migrates to it.
EBS_PHASES = ("in-tree-pvs", "csi-pvs")


def pinned(node: str) -> dict[str, Any]:
    """daemonset-pod.yaml's affinity: required ``metadata.name In [node]`` by matchFields, as the
    daemonset controller writes it (kube's NodeAffinity PreFilter narrows the pod to that node)."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }


def light_workload(
    prefix: str,
    count: int,
    scheduler_name: str,
    *,
    phase: str,
    extra: Mapping[str, Any] | None = None,
    finalizer: bool = False,
) -> list[tuple[str, bytes]]:
    """``count`` pods named ``prefix-NNNNN``, labelled with ``phase``, requesting nothing
    (light-pod.yaml, daemonset-pod.yaml: terminationGracePeriodSeconds 0), ``extra`` in their
    spec; each with FINALIZER if ``finalizer``."""
    pods = []
    for i in range(count):
        name = f"{prefix}-{i:05d}"
        spec = {"terminationGracePeriodSeconds": 0, **(extra or {})}
        body = pod(
            name, scheduler_name, cpu=None, memory=None, labels={PHASE_LABEL: phase}, extra=spec
        )
        if finalizer:
            body["metadata"]["finalizers"] = [FINALIZER]
        pods.append((name, json.dumps(body).encode()))
    return pods


def own_node(run: Run, phase: str, name: str, pods: int) -> str:
    """A node of the phase's own, ``name``, with room for ``pods`` pods; once the scheduler has
    bound a marker pod pinned to it (returned: it stays, bound), it has seen the node and every
    pod created before."""
    size = NodeSize(OWN_NODE_CPU, OWN_NODE_MEMORY, pods + 1)
    create_nodes(run.admin, [name], size, 1)
    marker = f"{phase}-ready"
    body = pod(marker, run.scheduler_name, cpu=None, memory=None, extra=pinned(name))
    marked(run, phase, marker, json.dumps(body).encode())
    return marker


class Deleter:
    """scheduler_perf's deletePods op, in a thread: ``names`` deleted one after another,
    ``rate`` a second (grace 0: no kubelet runs here), until all are or it is stopped; each
    deletion from a pool of DELETE_WORKERS, so that a slow answer on a busy API server does not
    hold back the next ones. With the admin's identity (in no scheduler's requests), on a client
    of its own (its sockets not shared with the pods being created)."""

    def __init__(self, kubeconfig: Path, names: Sequence[str], rate: float) -> None:
        self.api = Api(kubeconfig, pool=DELETE_WORKERS)
        self.names = list(names)
        self.rate = rate
        self.deleted: list[str] = []
        self.errors: list[str] = []
        self.started = time.monotonic()
        self.ended = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(DELETE_WORKERS, thread_name_prefix="deleter")
        self._thread = threading.Thread(target=self._run, name="deleter")
        self._thread.start()

    def _run(self) -> None:
        for index, name in enumerate(self.names):
            due = self.started + index / self.rate
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            self._pool.submit(self._delete, name)

    def _delete(self, name: str) -> None:
        try:
            delete_pod(self.api, name)
        except (ApiError, OSError) as error:
            with self._lock:
                self.errors.append(f"{name}: {error}")
            return
        with self._lock:
            self.deleted.append(name)
            self.ended = time.monotonic()

    def finish(self, *, stop: bool = False) -> list[str]:
        """The pods deleted, once every one is (or, with ``stop``, once the deletions under way
        end); the client closed."""
        if stop:
            self._stop.set()
        self._thread.join()
        self._pool.shutdown(wait=True)
        self.api.session.close()
        return list(self.deleted)

    def achieved_rate(self) -> float:
        """Deletions a second, from the first due to the last answered."""
        seconds = self.ended - self.started
        return round(len(self.deleted) / seconds, 1) if seconds > 0 else 0.0


def delete_pod(admin: Api, name: str) -> None:
    admin.request(
        "DELETE",
        f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
        {"gracePeriodSeconds": 0},
        ok=frozenset({404}),
    )


def secrets(run: Run, count: int) -> PhaseRun:
    """SchedulingSecrets: pods of the mix, each with a secret volume, as a burst."""
    pods = workload("secrets", count, run.scheduler_name, extra={"volumes": [SECRET_VOLUME]})
    return measured(run, "secrets", pods)


def prebound_volume(
    pod_name: str, source: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PV (of ``source``: pv-aws.yaml's or pv-csi.yaml's, its volume id the PV's name) and
    the claim of ``pod_name``, bound to each other as scheduler_perf's CreatePodWithPersistentVolume
    makes them (pvc.yaml's bind-completed annotation, the claim's volumeName, the PV's claimRef
    without a uid); their statuses Bound are written after."""
    claim = claim_name(pod_name)
    volume = f"{NAMESPACE}-{claim}"
    kind, fields = next(iter(source.items()))
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            kind: {
                **fields,
                **({"volumeHandle": volume} if kind == "csi" else {"volumeID": volume}),
            },
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": NAMESPACE,
                "name": claim,
            },
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "annotations": {BIND_COMPLETED: "true"}},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume,
        },
    }
    return pv, pvc


def create_prebound(run: Run, pods: Sequence[str], source: Mapping[str, Any]) -> None:
    """Each pod's claim and PV, bound (``prebound_volume``), statuses included: before the
    phase, by the admin, in no scheduler's figure."""
    admin = run.admin
    claims = f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims"

    def create(pod_name: str) -> None:
        pv, pvc = prebound_volume(pod_name, source)
        admin.post(claims, pvc, exists_ok=True)
        admin.merge_patch(
            f"{claims}/{pvc['metadata']['name']}/status",
            {
                "status": {
                    "phase": "Bound",
                    "accessModes": ["ReadOnlyMany"],
                    "capacity": {"storage": "1Gi"},
                }
            },
        )
        admin.post("/api/v1/persistentvolumes", pv, exists_ok=True)
        admin.merge_patch(
            f"/api/v1/persistentvolumes/{pv['metadata']['name']}/status",
            {"status": {"phase": "Bound"}},
        )

    started = time.monotonic()
    with ThreadPoolExecutor(run.config.create_threads) as pool:
        list(pool.map(create, pods))
    log(f"  {len(pods)} bound PVs and claims created in {time.monotonic() - started:.1f} s")


def volume_phase(phase: str, source: Mapping[str, Any]) -> Callable[[Run, int], PhaseRun]:
    """SchedulingInTreePVs and SchedulingCSIPVs: pods of the mix, each with a claim bound
    beforehand to a PV of ``source`` (no node affinity), as a burst; for CSI, every node's
    CSINode first allows CSI_VOLUME_LIMIT volumes of the driver."""

    def start(run: Run, count: int) -> PhaseRun:
        pods = workload(phase, count, run.scheduler_name, claims=True)
        names = [name for name, _ in pods]
        limit = None
        if "csi" in source:
            limit = CSI_VOLUME_LIMIT
            create_csi_nodes(run)
        create_prebound(run, names, source)
        return measured(
            run,
            phase,
            pods,
            check=lambda admin, listing, pods: check_prebound(admin, listing, pods, limit),
        )

    return start


def create_csi_nodes(run: Run) -> None:
    """A CSINode per node (as the suite's NodeAllocatableStrategy makes them): the driver
    CSI_DRIVER, CSI_VOLUME_LIMIT volumes allocatable."""
    nodes = [item["metadata"]["name"] for item in run.admin.list_items("/api/v1/nodes")]

    def create(name: str) -> None:
        driver = {"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": CSI_VOLUME_LIMIT}}
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": [driver]},
        }
        run.admin.post(CSINODES, body, exists_ok=True)

    with ThreadPoolExecutor(run.config.create_threads) as pool:
        list(pool.map(create, nodes))
    log(f"  {len(nodes)} CSINodes of {CSI_VOLUME_LIMIT} {CSI_DRIVER} volumes created")


def daemonset(run: Run, count: int) -> PhaseRun:
    """SchedulingDaemonset: a node of the phase's own with room for ``count`` pods, then
    ``count`` pods requesting nothing, each pinned to it by matchFields (as a daemonset's), as a
    burst: the scheduler must find the one node among all."""
    node_name = "daemonset-node"
    marker = own_node(run, "daemonset", node_name, count)
    pods = light_workload(
        "daemonset", count, run.scheduler_name, phase="daemonset", extra=pinned(node_name)
    )
    ran = measured(
        run,
        "daemonset",
        pods,
        check=lambda _admin, listing, names: check_on_node(listing, names, node_name),
    )
    return PhaseRun(ran.figures, [marker, *ran.bound], check=ran.check)


def finalizers(run: Run, count: int) -> PhaseRun:
    """SchedulingDeletedPodsWithFinalizers: ``count`` pods with a finalizer, created, then
    deleted FINALIZER_DELETE_RATE a second (most before they are bound: they stay, deleting,
    held by the finalizer) while ``count`` pods requesting nothing arrive as a burst, measured.
    At the end every deletion is done and the finalizers removed, so the deleted pods are gone."""
    deleting = light_workload(
        "finalizing", count, run.scheduler_name, phase="finalizers", finalizer=True
    )
    names = [name for name, _ in deleting]
    Creator(run.admin, run.config.create_threads).create_all(deleting)
    deleter = Deleter(run.kubeconfig, names, FINALIZER_DELETE_RATE)
    pods = light_workload("finalizers", count, run.scheduler_name, phase="finalizers")
    ran = measured(run, "finalizers", pods)
    deleted = deleter.finish()
    bound_first = sum(1 for name in names if name in run.watch.bound)
    release(run.admin, names)
    ran.figures.update(
        {
            "deleting": len(names),
            "deleting_bound": bound_first,
            "delete_rate": deleter.achieved_rate(),
            "delete_errors": deleter.errors[:10],
        }
    )
    log(
        f"  finalizers: {len(deleted)} pods deleted ({deleter.achieved_rate()}/s), "
        f"{bound_first} of them bound first"
    )
    return PhaseRun(ran.figures, ran.bound, gone=names, check=ran.check)


def release(admin: Api, names: Sequence[str]) -> None:
    """The finalizer removed from each pod of ``names`` (deleted, grace 0): each is then gone."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def remove(name: str) -> None:
        try:
            admin.merge_patch(f"{path}/{name}", {"metadata": {"finalizers": None}})
        except ApiError as error:
            if error.status != 404:
                raise

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(remove, names))


def gated(run: Run, count: int) -> PhaseRun:
    """SchedulingWhileGated, on a node of the phase's own (the suite's one node): ``count // 2``
    pods with a scheduling gate, held to the end; ``count`` pods bound, then deleted
    GATED_DELETE_RATE a second while ``count`` pods arrive as a burst, measured (all requesting
    nothing, pinned to the node). At the end the gated pods, never bound, and the pods not
    deleted yet are deleted at once, so that none waits through the phases after."""
    node_name = "gated-node"
    scheduler_name = run.scheduler_name
    extra = pinned(node_name)
    held = light_workload(
        "gated-held",
        count // 2,
        scheduler_name,
        phase="gated",
        extra={"schedulingGates": [{"name": SCHEDULING_GATE}]},
    )
    held_names = [name for name, _ in held]
    Creator(run.admin, run.config.create_threads).create_all(held)
    # Created after the gated pods: once it is bound the scheduler has seen them all.
    marker = own_node(run, "gated", node_name, 2 * count)
    deleting = light_workload("gated-deleting", count, scheduler_name, phase="gated", extra=extra)
    deleting_names = [name for name, _ in deleting]
    Creator(run.admin, run.config.create_threads).create_all(deleting)
    if not run.watch.wait(
        deleting_names,
        run.config.timeout,
        lambda bound: f"gated: {bound}/{count} pods to delete bound",
        run.scheduler.check_alive,
    ):
        raise RuntimeError("gated: the pods to delete were not all bound")
    log(f"  gated: {len(held)} gated pods held, {count} pods bound to delete")
    deleter = Deleter(run.kubeconfig, deleting_names, GATED_DELETE_RATE)
    pods = light_workload("gated", count, scheduler_name, phase="gated", extra=extra)
    ran = measured(run, "gated", pods)
    deleted = deleter.finish(stop=True)
    # Bound through the measurement? The watch saw every bind of the namespace.
    bound_held = [name for name in held_names if name in run.watch.bound]
    left = [*held_names, *(name for name in deleting_names if name not in set(deleted))]
    with ThreadPoolExecutor(run.config.create_threads) as pool:
        list(pool.map(lambda name: delete_pod(run.admin, name), left))
    ran.figures.update(
        {
            "held": len(held),
            "deleted_while_measured": len(deleted),
            "delete_rate": deleter.achieved_rate(),
            "delete_errors": deleter.errors[:10],
        }
    )
    log(
        f"  gated: {len(deleted)} bound pods deleted while the pods arrived "
        f"({deleter.achieved_rate()}/s)"
    )
    return PhaseRun(
        ran.figures,
        [marker, *ran.bound],
        gone=[*held_names, *deleting_names],
        check=lambda _admin, _listing: check_gated(held_names, bound_held),
    )


class Recreate:
    """scheduler_perf's churn op in "recreate" mode, number 1, in a thread: each object of
    ``make(round)`` (path -> body) created at once, deleted ``interval`` seconds later, those of
    the next round created ``interval`` after that, and so on until stopped; then the last ones
    are deleted too. With the admin's identity."""

    def __init__(
        self,
        admin: Api,
        make: Callable[[int], Mapping[str, dict[str, Any]]],
        interval: float,
    ) -> None:
        self.admin = admin
        self.make = make
        self.interval = interval
        self.rounds = 0
        self.errors: list[str] = []
        self._live: list[str] = []  # paths of the objects created last, to delete
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="churn")
        self._thread.start()

    def _run(self) -> None:
        # The first objects at once: the measured pods arrive from now on.
        self._turn()
        while not self._stop.wait(self.interval):
            self._turn()
        if self._live:
            self._turn()

    def _turn(self) -> None:
        try:
            if self._live:
                for path in self._live:
                    self.admin.request(
                        "DELETE", path, {"gracePeriodSeconds": 0}, ok=frozenset({404})
                    )
                self._live = []
            else:
                for path, body in self.make(self.rounds).items():
                    self.admin.post(path, body)
                    self._live.append(f"{path}/{body['metadata']['name']}")
                self.rounds += 1
        except (ApiError, OSError) as error:
            self.errors.append(str(error))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def churn_objects(scheduler_name: str, cpu_m: int) -> Callable[[int], dict[str, dict[str, Any]]]:
    """SchedulingWithMixedChurn's objects of a round: a node with room for no pod
    (churn/node-default.yaml), a high-priority pod asking for ``cpu_m`` millicores, more than any
    node has (pod-high-priority-large-cpu.yaml: 9 cpu on nodes of 4; so it fits nowhere, and
    no preemption can make room), and a Service (churn/service-default.yaml)."""

    def objects(index: int) -> dict[str, dict[str, Any]]:
        name = f"churn-{index:05d}"
        churn_pod = pod(
            name,
            scheduler_name,
            cpu=f"{cpu_m}m",
            memory="500Mi",
            labels={PHASE_LABEL: "mixed-churn-churn"},
            extra={"priorityClassName": CHURN_PRIORITY_CLASS},
        )
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {
                "selector": {"app": "foo"},
                "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}],
            },
        }
        return {
            "/api/v1/nodes": node_object(name, pods="0"),
            f"/api/v1/namespaces/{NAMESPACE}/pods": churn_pod,
            f"/api/v1/namespaces/{NAMESPACE}/services": service,
        }

    return objects


def mixed_churn(run: Run, count: int) -> PhaseRun:
    """SchedulingWithMixedChurn: while ``count`` pods of the mix arrive as a burst, measured, a
    node, a high-priority pod that fits nowhere and a Service are created and deleted again by
    turns every CHURN_INTERVAL seconds; the churn stops once they are bound, its objects
    deleted."""
    admin = run.admin
    admin.post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        priority_class_body(CHURN_PRIORITY_CLASS, CHURN_PRIORITY),
        exists_ok=True,
    )
    largest = max(
        NodeView(item).allocatable.get("cpu", 0) for item in admin.list_items("/api/v1/nodes")
    )
    churn = Recreate(admin, churn_objects(run.scheduler_name, 2 * largest + 1000), CHURN_INTERVAL)
    try:
        pods = workload("mixed-churn", count, run.scheduler_name)
        ran = measured(run, "mixed-churn", pods)
    finally:
        churn.stop()
    churned = [f"churn-{i:05d}" for i in range(churn.rounds)]
    bound_churn = [name for name in churned if name in run.watch.bound]
    ran.figures.update({"churn_rounds": churn.rounds, "churn_errors": churn.errors[:10]})
    log(f"  mixed-churn: {churn.rounds} rounds of churn")
    return PhaseRun(
        ran.figures,
        ran.bound,
        gone=churned,
        check=lambda _admin, listing: check_churn(listing, churned, bound_churn),
    )


MISC: dict[str, Callable[[Run, int], PhaseRun]] = {
    "secrets": secrets,
    "in-tree-pvs": volume_phase("in-tree-pvs", {"awsElasticBlockStore": {}}),
    "csi-pvs": volume_phase("csi-pvs", {"csi": {"driver": CSI_DRIVER}}),
    "daemonset": daemonset,
    "finalizers": finalizers,
    "gated": gated,
    "mixed-churn": mixed_churn,
}


def misc_pods(config: Config, node_count: int) -> dict[str, int]:
    """The pods of each phase of MISC_PHASES at ``node_count`` nodes: as given, or by default
    MISC_PER_NODE per node (the suite's ratio), at most MISC_MOST; the gated phase's
    GATED_PODS."""
    return {
        phase: count
        if count is not None
        else GATED_PODS
        if phase == "gated"
        else min(round(MISC_PER_NODE[phase] * node_count), MISC_MOST)
        for phase, count in config.misc_pods.items()
    }


def room(phase: str, count: int) -> int:
    """The pods a phase of ``count`` puts on the run's nodes at once, which they are sized for:
    none for a phase on nodes of its own; the finalizers phase's deleted pods hold theirs
    until the end of the phase."""
    if phase in OWN_NODES:
        return 0
    return 2 * count if phase == "finalizers" else count


def check_on_node(listing: Listing, pods: Sequence[str], node_name: str) -> dict[str, Any]:
    """Every pod of ``pods`` on ``node_name`` (the daemonset phase's: their required affinity)."""
    off = [
        f"{name}: on {listing.node_of(name)}" for name in pods if listing.node_of(name) != node_name
    ]
    return {
        "pods": len(pods),
        "off_node": off[:10],
        "off_node_count": len(off),
        "ok": not off,
        "summary": f"{len(pods) - len(off)}/{len(pods)} pods on {node_name}",
    }


def check_gated(held: Sequence[str], bound: Sequence[str]) -> dict[str, Any]:
    """No gated pod of ``held`` ever bound (``bound``: those the bind watch saw with a node)."""
    return {
        "held": len(held),
        "bound": list(bound)[:10],
        "bound_count": len(bound),
        "ok": not bound,
        "summary": f"{len(bound)}/{len(held)} gated pods bound",
    }


def check_churn(listing: Listing, churned: Sequence[str], bound: Sequence[str]) -> dict[str, Any]:
    """No churn pod ever bound (it fits nowhere), and none of the churn's nodes or pods left."""
    left = sorted(name for name in churned if name in listing.pods or name in listing.nodes)
    return {
        "churn_pods": len(churned),
        "bound": list(bound)[:10],
        "bound_count": len(bound),
        "left": left[:10],
        "ok": not (bound or left),
        "summary": f"{len(bound)}/{len(churned)} churn pods bound, {len(left)} churn objects left",
    }


def check_prebound(
    admin: Api, listing: Listing, pods: Sequence[str], limit: int | None
) -> dict[str, Any]:
    """Every claim of ``pods`` still bound to its PV; with ``limit`` (CSI), no node holding more
    than ``limit`` EBS volumes, in-tree or CSI (its CSINode's allocatable count)."""
    claims = {
        claim["metadata"]["name"]: claim
        for claim in admin.list_items(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
    }
    unbound = [
        name
        for name in pods
        if (claims.get(claim_name(name)) or {}).get("spec", {}).get("volumeName")
        != f"{NAMESPACE}-{claim_name(name)}"
    ]
    # The in-tree EBS volumes count against the CSI driver's limit too (kube migrates them
    # wherever the node has a CSINode), so both volume phases' pods are counted.
    per_node = Counter(
        node
        for name, found in listing.pods.items()
        if found["metadata"].get("labels", {}).get(PHASE_LABEL) in EBS_PHASES
        and (node := listing.node_of(name))
    )
    over = sorted(f"{n}: {c}" for n, c in per_node.items() if limit is not None and c > limit)
    return {
        "pods": len(pods),
        "unbound_claims": unbound[:10],
        "most_on_a_node": max(per_node.values(), default=0),
        "over_limit": over[:10],
        "ok": not (unbound or over),
        "summary": f"{len(pods) - len(unbound)}/{len(pods)} claims bound, at most "
        f"{max(per_node.values(), default=0)} volumes on a node"
        + (f" (limit {limit}), {len(over)} nodes over it" if limit is not None else ""),
    }


# --- correctness ------------------------------------------------------------------------------


def verify(admin: Api, phases: Mapping[str, PhaseRun], kind: str) -> dict[str, Any]:
    """Every pod bound but the parked ones, no node overcommitted, no pod told Scheduled twice;
    then each phase's own check."""
    nodes = {node["metadata"]["name"]: node for node in admin.list_items("/api/v1/nodes")}
    pods = {
        pod["metadata"]["name"]: pod
        for pod in admin.list_items(f"/api/v1/namespaces/{NAMESPACE}/pods")
    }
    listing = Listing(pods, nodes)
    expected = {"warm-up", *(name for ran in phases.values() for name in ran.bound)}
    pending = {name for ran in phases.values() for name in ran.pending}
    events = admin.list_items(
        f"/api/v1/namespaces/{NAMESPACE}/events", fieldSelector="reason=Scheduled"
    )
    unbound = sorted(name for name in pods if name not in pending and not listing.node_of(name))
    # Every namespace's pods take room (the init pods of the shapes are in namespaces of their own).
    everywhere = admin.list_items("/api/v1/pods")
    overloaded = [f"{o.node}: {o.resource}" for o in overcommitted(nodes.values(), everywhere)]
    scheduled = told(events)
    placed = {name: node for name in pods if (node := listing.node_of(name))}
    gone = {name for ran in phases.values() for name in ran.gone}
    twice = told_wrongly({k: v for k, v in scheduled.items() if k not in gone}, placed)
    twice += sorted(name for name in gone if len(scheduled.get(name, ())) > 1)
    result: dict[str, Any] = {
        "pods": len(pods),
        "parked_pods": len(pending),
        "missing": sorted((expected | pending) - pods.keys())[:10],
        "unbound": unbound[:10],
        "unbound_count": len(unbound),
        "overcommitted": overloaded[:10],
        "scheduled_events": sum(map(len, scheduled.values())),
        "scheduled_more_than_once": twice[:10],
    }
    result["ok"] = not (result["missing"] or unbound or overloaded or twice)
    verdict = "ok" if result["ok"] else "FAILED"
    log(
        f"  check {verdict}: {len(pods) - len(pending) - len(unbound)}/{len(pods) - len(pending)}"
        f" pods bound ({len(pending)} parked), {len(overloaded)} resources overcommitted, "
        f"{len(twice)} pods Scheduled twice, {result['scheduled_events']} Scheduled events ({kind})"
    )
    for phase, ran in phases.items():
        if ran.check is not None:
            checked = ran.check(admin, listing)
            result[phase] = checked
            result["ok"] = result["ok"] and checked["ok"]
            log(f"  {phase} check {'ok' if checked['ok'] else 'FAILED'}: {checked['summary']}")
    return result


def verify_storage(admin: Api, listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Every claim of ``pods`` bound to a PV (both ways: the claim's volumeName, the PV's
    claimRef) whose node affinity allows the node its pod is bound to."""
    claims = {
        claim["metadata"]["name"]: claim
        for claim in admin.list_items(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
    }
    volumes = {pv["metadata"]["name"]: pv for pv in admin.list_items("/api/v1/persistentvolumes")}
    unbound: list[str] = []
    wrong_node: list[str] = []
    for name in pods:
        claim = claims.get(claim_name(name))
        pv = volumes.get((claim or {}).get("spec", {}).get("volumeName") or "")
        if (
            claim is None
            or pv is None
            or BIND_COMPLETED not in (claim["metadata"].get("annotations") or {})
            or (pv["spec"].get("claimRef") or {}).get("uid") != claim["metadata"]["uid"]
        ):
            unbound.append(name)
            continue
        node = listing.node_of(name)
        if node is None or pv_node(pv) != node:
            wrong_node.append(f"{name}: on {node}, its PV on {pv_node(pv)}")
    return {
        "pods": len(pods),
        "claims_bound": len(pods) - len(unbound),
        "unbound_claims": unbound[:10],
        "unbound_claims_count": len(unbound),
        "wrong_node": wrong_node[:10],
        "wrong_node_count": len(wrong_node),
        "ok": not (unbound or wrong_node),
        "summary": f"{len(pods) - len(unbound)}/{len(pods)} claims bound, "
        f"{len(wrong_node)} pods off their PV's node",
    }


def verify_dra(admin: Api, listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """No device allocated to two claims (the init claims and the phase's, all namespaces), and
    each pod of ``pods`` (those the phase left) reserved its claim, allocated on its node."""
    claims = {
        (c["metadata"]["namespace"], c["metadata"]["name"]): c
        for c in admin.list_items("/apis/resource.k8s.io/v1/resourceclaims")
    }
    holders: Counter[tuple[str, str, str]] = Counter()
    for claim in claims.values():
        allocation = claim.get("status", {}).get("allocation") or {}
        for result in allocation.get("devices", {}).get("results", ()):
            holders[(result["driver"], result["pool"], result["device"])] += 1
    twice = sorted("/".join(d) for d, n in holders.items() if n > 1)
    wrong = []
    for name in pods:
        statuses = listing.pods.get(name, {}).get("status", {}).get("resourceClaimStatuses", [])
        node = listing.node_of(name)
        for status in statuses or [{}]:
            claim = claims.get((NAMESPACE, status.get("resourceClaimName", "")), {})
            claim_status = claim.get("status", {})
            terms = (claim_status.get("allocation") or {}).get("nodeSelector", {})
            on = [
                value
                for term in terms.get("nodeSelectorTerms", ())
                for field in term.get("matchFields", ())
                for value in field.get("values", ())
            ]
            reserved = [r["name"] for r in claim_status.get("reservedFor", ())]
            if on != [node] or name not in reserved:
                wrong.append(name)
    return {
        "ok": not twice and not wrong,
        "claims": len(claims),
        "devices_allocated": sum(holders.values()),
        "allocated_twice": twice[:10],
        "not_on_node": wrong[:10],
        "summary": (
            f"{sum(holders.values())} devices allocated, {len(twice)} twice; "
            f"{len(pods) - len(wrong)}/{len(pods)} pods' claims allocated on their node"
        ),
    }


def verify_preemption(
    listing: Listing, high: Sequence[str], low: Sequence[str], nodes: Sequence[str]
) -> dict[str, Any]:
    """Every high-priority pod bound to a preemption node, and how many low-priority pods are
    gone (evicted) against the fewest that make room for them all (a node's worth each)."""
    pods = listing.pods
    preemption_nodes = set(nodes)
    unbound = [name for name in high if not listing.node_of(name)]
    off_nodes = [
        f"{name}: on {listing.node_of(name)}"
        for name in high
        if name not in unbound and listing.node_of(name) not in preemption_nodes
    ]
    remaining = [name for name in low if name in pods]
    terminating = [name for name in remaining if pods[name]["metadata"].get("deletionTimestamp")]
    evicted = len(low) - len(remaining)
    minimum = len(high) * VICTIMS_PER_NODE
    return {
        "preemptors": len(high),
        "preemptors_bound": len(high) - len(unbound),
        "unbound": unbound[:10],
        "off_preemption_nodes": off_nodes[:10],
        "low_pods": len(low),
        "evicted": evicted,
        "evicted_minimum": minimum,
        "evicted_vs_minimum": round(evicted / minimum, 3) if minimum else None,
        "terminating_at_end": len(terminating),
        "ok": not (unbound or off_nodes),
        "summary": f"{len(high) - len(unbound)}/{len(high)} high-priority pods bound, "
        f"{evicted} low-priority pods evicted (minimum {minimum}), {len(off_nodes)} off the "
        "preemption nodes",
    }


def check_anti_affinity(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """No two pods of the phase on one node (their required anti-affinity per hostname)."""
    per_node = Counter(node for name in pods if (node := listing.node_of(name)))
    shared = sorted(f"{node}: {count} pods" for node, count in per_node.items() if count > 1)
    return {
        "pods": len(pods),
        "nodes_used": len(per_node),
        "shared_nodes": shared[:10],
        "shared_nodes_count": len(shared),
        "ok": not shared,
        "summary": f"{len(per_node)} nodes hold the {len(pods)} pods, {len(shared)} hold two or "
        "more",
    }


def check_spread(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """The phase's pods per zone differ by at most maxSkew (1) between any two zones: each pod
    was placed within it, and a zone's count only grows, so the end must be within it too."""
    counts = zone_counts(listing, pods)
    skew = max(counts.values()) - min(counts.values()) if counts else 0
    return {
        "pods": len(pods),
        "zones": counts,
        "skew": skew,
        "ok": skew <= 1,
        "summary": f"pods per zone {'/'.join(map(str, counts.values()))}, skew {skew}",
    }


def check_preferred_affinity(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """How many of the phase's pods went to the preferred zone: reported, not required (a full
    node there is no fault), and compared between the schedulers in the report."""
    on = sum(
        1
        for name in pods
        if (node := listing.node_of(name)) and listing.label_of(node, ZONE) == PREFERRED_ZONE
    )
    return {
        "pods": len(pods),
        "on_preferred": on,
        "on_preferred_share": round(on / len(pods), 3) if pods else None,
        "ok": True,
        "summary": f"{on}/{len(pods)} pods in the preferred zone {PREFERRED_ZONE}",
    }


def check_gang(admin: Api, listing: Listing, groups: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """No group partly bound (some members on a node, others not: what gang scheduling exists to
    prevent); how many groups their PodGroup's PodGroupInitiallyScheduled condition tells
    scheduled (kube-scheduler's status, reported, not required)."""
    pod_groups = {group["metadata"]["name"]: group for group in admin.list_items(PODGROUPS)}
    partly = []
    for group, members in groups.items():
        bound = sum(1 for name in members if listing.node_of(name))
        if 0 < bound < len(members):
            partly.append(f"{group}: {bound}/{len(members)} bound")
    told_scheduled = sum(
        1
        for group in groups
        if any(
            condition.get("type") == "PodGroupInitiallyScheduled"
            and condition.get("status") == "True"
            for condition in pod_groups.get(group, {}).get("status", {}).get("conditions") or []
        )
    )
    return {
        "groups": len(groups),
        "partly_bound": partly[:10],
        "partly_bound_count": len(partly),
        "told_scheduled": told_scheduled,
        "ok": not partly,
        "summary": f"{len(partly)}/{len(groups)} groups partly bound, {told_scheduled} told "
        "PodGroupInitiallyScheduled",
    }


def check_parked(listing: Listing, parked_pods: Sequence[str]) -> dict[str, Any]:
    """No parked pod bound (no node can take one), every one still there and told
    PodScheduled=False."""
    bound = [name for name in parked_pods if listing.node_of(name)]
    untold = [
        name
        for name in parked_pods
        if name in listing.pods and not told_unschedulable(listing.pods[name])
    ]
    return {
        "parked": len(parked_pods),
        "bound": bound[:10],
        "bound_count": len(bound),
        "not_unschedulable": untold[:10],
        "ok": not (bound or untold),
        "summary": f"{len(bound)}/{len(parked_pods)} parked pods bound, {len(untold)} without "
        "PodScheduled=False",
    }


# --- the workload phases after scheduler_perf ---------------------------------------------------

# The namespace of the init pods of the shapes whose terms list their namespaces (scheduler_perf's
# sched-0; NAMESPACE, where the measured pods go, stands for its sched-1).
SCHED_NAMESPACE = f"{NAMESPACE}-sched-0"
# The namespaces of the init pods of the shapes whose terms select namespaces by label (its
# init-ns-N, ten as in its 500-node workloads), and that label (namespace-with-labels.yaml's),
# which NAMESPACE is given too (as its measure-ns-0).
INIT_NAMESPACES = tuple(f"{NAMESPACE}-init-ns-{i}" for i in range(10))
TEAM = {"team": "devops"}
# The zones the node-affinity phase requires (pod-with-node-affinity.yaml's zone1 and zone2).
REQUIRED_ZONES = ZONES[:2]
# The preferred-spread phase's maxSkew (pod-with-preferred-topology-spreading.yaml's).
PREFERRED_SKEW = 5
# The node-inclusion phase's own nodes: node-with-taint.yaml's size, and a taint of their own (its
# foo:NoSchedule) that no pod of the phase tolerates.
TAINTED_NODE = NodeSize(cpu=4, memory=32, pods=110)
TAINT_KEY = "bench.policy-scheduler.dev/tainted"

Selector = Mapping[str, Any]


def own(phase: str) -> dict[str, Any]:
    """The label selector of the pods of ``phase`` (its init pods too): what its terms select."""
    return {"matchLabels": {PHASE_LABEL: phase}}


def pod_term(
    kind: str, topology: str, namespaces: Mapping[str, Any], weight: int = 0
) -> Callable[[Selector], dict[str, Any]]:
    """The spec of one pod affinity (``kind`` "podAffinity") or anti-affinity ("podAntiAffinity")
    term per ``topology`` over the pods a selector picks in ``namespaces`` (the term's
    ``namespaces`` or ``namespaceSelector``; neither: the pod's own namespace); preferred with
    ``weight``, required without."""

    def spec(selector: Selector) -> dict[str, Any]:
        term = {"labelSelector": selector, "topologyKey": topology, **namespaces}
        if weight:
            preferred = [{"weight": weight, "podAffinityTerm": term}]
            return {
                "affinity": {kind: {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
            }
        return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}

    return spec


def spread_over(
    topology: str, max_skew: int, when: str, **policies: str
) -> Callable[[Selector], dict[str, Any]]:
    """The spec of one topologySpreadConstraint over ``topology`` of the pods a selector picks,
    with the node inclusion ``policies`` (``nodeAffinityPolicy``, ``nodeTaintsPolicy``) given."""

    def spec(selector: Selector) -> dict[str, Any]:
        constraint = {
            "maxSkew": max_skew,
            "topologyKey": topology,
            "whenUnsatisfiable": when,
            "labelSelector": selector,
            **policies,
        }
        return {"topologySpreadConstraints": [constraint]}

    return spec


def node_affinity(expression: Mapping[str, Any], *, weight: int = 0) -> dict[str, Any]:
    """A pod's ``affinity`` of node affinity by one match expression: preferred with ``weight``,
    required without."""
    term = {"matchExpressions": [dict(expression)]}
    if weight:
        preferred = [{"weight": weight, "preference": term}]
        return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def node_inclusion(selector: Selector) -> dict[str, Any]:
    """pod-with-node-inclusion-policy.yaml: spread per hostname, maxSkew 1, DoNotSchedule, the
    nodes counted those its node affinity and its tolerations allow (both policies Honor). Its
    node affinity, not in the template, keeps it off the preemption phase's nodes: full, they
    would hold every node's count to one if they were counted."""
    spread = spread_over(
        HOSTNAME, 1, "DoNotSchedule", nodeAffinityPolicy="Honor", nodeTaintsPolicy="Honor"
    )
    away = node_affinity({"key": PREEMPTION_LABEL, "operator": "DoesNotExist"})
    return {**spread(selector), "affinity": away}


# A shape's check at the end of the run: (the listing, the phase's pods, its init pods among
# them) -> what it found, with "ok" and "summary".
ShapeCheck = Callable[[Listing, Sequence[str]], dict[str, Any]]


@dataclass(frozen=True)
class Shape:
    """A workload phase after one of scheduler_perf's cases: its pods, of the mix of requests,
    each with ``spec(own(phase))`` added to its spec (so its terms select the phase's own pods),
    created as a burst and measured as the burst; ``check`` of their placement at the end."""

    phase: str
    follows: str  # the scheduler_perf case (test/integration/scheduler_perf, v1.37.2)
    spec: Callable[[Selector], dict[str, Any]]
    check: ShapeCheck
    help: str  # its --PHASE-pods flag's
    init_namespaces: tuple[str, ...] = ()
    """Where its init pods go, by turns: as many as its pods, of the same shape, created and
    bound before them and not measured (the case's initPods, which its pods must join or
    avoid); none: no init pods."""
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    """Given to NAMESPACE and init_namespaces before its pods: what its namespaceSelector picks."""
    one_per_node: bool = False
    """At most one of its pods (init pods too) per node: its count is capped at the nodes."""
    prepare: Callable[[Run, int], list[str]] | None = None
    """What sets the cluster up for it (given its count of pods) before its init pods, and the
    pods that bound (they stay)."""

    def init_pods(self, count: int) -> int:
        return count if self.init_namespaces else 0

    def most(self, count: int, nodes: int) -> int:
        """Its pods out of ``count`` asked for, at ``nodes`` nodes."""
        if not self.one_per_node:
            return count
        return min(count, nodes // (2 if self.init_namespaces else 1))


def shaped(shape: Shape) -> Callable[[Run, int], PhaseRun]:
    """A workload phase of SHAPES: the cluster set up, its init pods bound, then its pods as a
    burst, measured; its check over them all."""
    phase = shape.phase
    spec = shape.spec(own(phase))

    def start(run: Run, count: int) -> PhaseRun:
        ready = shape.prepare(run, count) if shape.prepare else []
        init = place_init_pods(run, shape, count, spec)
        pods = workload(phase, count, run.scheduler_name, extra=spec)

        def check(admin: Api, listing: Listing, names: Sequence[str]) -> dict[str, Any]:
            seen = with_phase_pods(admin, listing, phase) if init else listing
            return shape.check(seen, [*init, *names])

        ran = measured(run, phase, pods, check=check)
        ran.figures.update(follows=shape.follows, init_pods=len(init))
        return PhaseRun(ran.figures, [*ready, *ran.bound], check=ran.check)

    return start


def place_init_pods(run: Run, shape: Shape, count: int, spec: Mapping[str, Any]) -> list[str]:
    """``shape``'s namespaces labelled, and its init pods (``count``, of ``spec``) created at once
    in its init namespaces by turns, then waited for until bound (not measured); their names."""
    admin, phase = run.admin, shape.phase
    labels = dict(shape.namespace_labels)
    if labels:
        admin.merge_patch(f"/api/v1/namespaces/{NAMESPACE}", {"metadata": {"labels": labels}})
    for namespace in shape.init_namespaces:
        body = {"metadata": {"name": namespace, "labels": labels}}
        admin.post("/api/v1/namespaces", body, exists_ok=True)
    names = [f"{phase}-init-{i:05d}" for i in range(shape.init_pods(count))]
    if not names:
        return []
    pods = [
        (
            f"/api/v1/namespaces/{shape.init_namespaces[i % len(shape.init_namespaces)]}/pods",
            pod_body(name, run.scheduler_name, i, phase=phase, extra=spec),
        )
        for i, name in enumerate(names)
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(run.config.create_threads) as pool:
        list(pool.map(lambda item: admin.post(*item), pods))
    wait_listed(
        run,
        phase,
        "init pods bound",
        names,
        done=lambda pod: bool(pod["spec"].get("nodeName")),
        path="/api/v1/pods",
        labelSelector=f"{PHASE_LABEL}={phase}",
    )
    log(f"  {phase}: {len(names)} init pods bound in {time.monotonic() - started:.1f} s")
    return names


def with_phase_pods(admin: Api, listing: Listing, phase: str) -> Listing:
    """``listing`` with the pods of ``phase`` of every namespace (its init pods), by name."""
    found = admin.list_items("/api/v1/pods", labelSelector=f"{PHASE_LABEL}={phase}")
    return Listing({**listing.pods, **{p["metadata"]["name"]: p for p in found}}, listing.nodes)


def tainted_nodes(run: Run, count: int) -> list[str]:
    """The node-inclusion phase's own nodes, a quarter as many as its pods (as the case's
    taintNodes to its measurePods), tainted TAINT_KEY:NoSchedule; then a marker pod that
    tolerates the taint, bound on the last of them."""
    tainted = max(1, count // 4)
    nodes = [f"tainted-{i:0{len(str(tainted - 1))}d}" for i in range(tainted)]
    taint = {"key": TAINT_KEY, "effect": "NoSchedule"}
    create_nodes(run.admin, nodes, TAINTED_NODE, run.config.create_threads, taints=[taint])
    tolerate = {"tolerations": [{**taint, "operator": "Exists"}]}
    name = "node-inclusion-ready"
    marker = pod_body(
        name, run.scheduler_name, 0, node_selector={HOSTNAME: nodes[-1]}, extra=tolerate
    )
    marked(run, "node-inclusion", name, marker)
    return [name]


def zone_counts(listing: Listing, pods: Sequence[str]) -> dict[str, int]:
    """Per zone of the nodes, in order, the pods of ``pods`` bound in it."""
    zones = Counter(
        listing.label_of(node, ZONE) for name in pods if (node := listing.node_of(name))
    )
    all_zones = {listing.label_of(node, ZONE) for node in listing.nodes} - {None}
    return {zone: zones.get(zone, 0) for zone in sorted(z for z in all_zones if z)}


def check_one_zone(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Every pod of the phase (its init pods too) in one zone: required pod affinity per zone to
    the others lets the first go anywhere (no pod matches yet) and every later one only where
    one of them is already."""
    zones = {zone: n for zone, n in zone_counts(listing, pods).items() if n}
    return {
        "pods": len(pods),
        "zones": zones,
        "ok": len(zones) <= 1,
        "summary": f"{len(pods)} pods in {len(zones)} zone(s): "
        + ", ".join(f"{zone} {n}" for zone, n in zones.items()),
    }


def check_node_affinity(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Every pod of the phase on a node of REQUIRED_ZONES (its required node affinity)."""
    off = [
        f"{name}: on {node} in {zone}"
        for name in pods
        if (node := listing.node_of(name))
        and (zone := listing.label_of(node, ZONE)) not in REQUIRED_ZONES
    ]
    return {
        "pods": len(pods),
        "zones": zone_counts(listing, pods),
        "off_zones": off[:10],
        "off_zones_count": len(off),
        "ok": not off,
        "summary": f"{len(off)}/{len(pods)} pods outside {'/'.join(REQUIRED_ZONES)}",
    }


def on_nodes(
    listing: Listing, pods: Sequence[str], preferred: Callable[[int], bool], where: str
) -> dict[str, Any]:
    """How many pods of ``pods`` are on a node where the count of them is ``preferred``: a
    preference's share, reported, not required (a node may be full)."""
    per_node = Counter(node for name in pods if (node := listing.node_of(name)))
    on = sum(n for n in per_node.values() if preferred(n))
    return {
        "pods": len(pods),
        "nodes_used": len(per_node),
        "on_preferred": on,
        "on_preferred_share": round(on / len(pods), 3) if pods else None,
        "ok": True,
        "summary": f"{on}/{len(pods)} pods on a node {where}, {len(per_node)} nodes used",
    }


def check_together(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Preferred pod affinity per hostname to the others: the pods of the phase (its init pods
    too) on a node with another of them."""
    return on_nodes(listing, pods, lambda n: n > 1, "with another of them")


def check_apart(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Preferred pod anti-affinity per hostname to the others: the pods of the phase (its init
    pods too) on a node holding no more of them than an even spread over the nodes they can use
    would put there (all but those excluded_by_policy: tainted, or the preemption phase's,
    full)."""
    usable = sum(1 for node in listing.nodes.values() if not excluded_by_policy(node))
    fair = math.ceil(len(pods) / usable) if usable else 0
    return on_nodes(listing, pods, lambda n: n <= fair, f"holding at most {fair} of them")


def check_preferred_spread(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """Preferred spreading over the zones (maxSkew PREFERRED_SKEW, ScheduleAnyway): the pods per
    zone, their skew, and the share of the pods within PREFERRED_SKEW of the emptiest zone (those
    beyond it in a zone counted out), reported, not required."""
    counts = zone_counts(listing, pods)
    low = min(counts.values(), default=0)
    beyond = sum(max(0, n - low - PREFERRED_SKEW) for n in counts.values())
    skew = max(counts.values(), default=0) - low
    return {
        "pods": len(pods),
        "zones": counts,
        "skew": skew,
        "on_preferred_share": round((len(pods) - beyond) / len(pods), 3) if pods else None,
        "ok": True,
        "summary": f"pods per zone {'/'.join(map(str, counts.values()))}, skew {skew} "
        f"(maxSkew {PREFERRED_SKEW}, preferred)",
    }


def excluded_by_policy(node: Mapping[str, Any]) -> bool:
    """Whether the node-inclusion phase's policies leave ``node`` out of its spreading: a taint its
    pods do not tolerate (nodeTaintsPolicy Honor), or a label its node affinity refuses
    (nodeAffinityPolicy Honor)."""
    tainted = any(t.get("key") == TAINT_KEY for t in node.get("spec", {}).get("taints") or [])
    return tainted or PREEMPTION_LABEL in node["metadata"].get("labels", {})


def check_node_inclusion(listing: Listing, pods: Sequence[str]) -> dict[str, Any]:
    """No pod of the phase on a node its policies exclude (excluded_by_policy), and its pods per
    included node within maxSkew 1 of each other (counts only grow, and each pod went where the
    count was lowest)."""
    per_node = Counter(node for name in pods if (node := listing.node_of(name)))
    excluded = {name for name, node in listing.nodes.items() if excluded_by_policy(node)}
    wrong = sorted(f"{node}: {n} pods" for node, n in per_node.items() if node in excluded)
    included = [per_node.get(node, 0) for node in listing.nodes if node not in excluded]
    skew = max(included) - min(included) if included else 0
    return {
        "pods": len(pods),
        "nodes_included": len(included),
        "nodes_excluded": len(excluded),
        "on_excluded": wrong[:10],
        "on_excluded_count": len(wrong),
        "skew": skew,
        "ok": not wrong and skew <= 1,
        "summary": f"{len(wrong)} excluded nodes hold pods; per included node (of "
        f"{len(included)}) {min(included, default=0)} to {max(included, default=0)}, skew {skew}",
    }


LISTED = {"namespaces": [NAMESPACE, SCHED_NAMESPACE]}
SELECTED = {"namespaceSelector": {"matchLabels": TEAM}}
FIFTH = "(default: a fifth of --pods)"
INIT = "after as many init pods"

# Every workload phase after scheduler_perf, in the order a run goes through them: the first three
# as they were first written (after the v1.34 suite), then every other case of its affinity and
# topology_spreading performance-config.yaml (v1.37.2). The two of preferred pod affinity come
# last: they pile their pods onto few nodes until full, and a full node would stop a phase that
# needs every node (anti-affinity-ns may) or counts every node (node-inclusion's spreading).
# Where the suite puts every node in one zone (zone1), ours keep their three; the cases whose
# init pods are plain pods (pod-default.yaml) have none here: the phases before leave as many.
SHAPES = {
    shape.phase: shape
    for shape in (
        Shape(
            "anti-affinity",
            "SchedulingPodAntiAffinity",
            pod_term("podAntiAffinity", HOSTNAME, {}),
            check_anti_affinity,
            "pods of the anti-affinity phase, each with required anti-affinity per hostname to "
            "the others (default: a fifth of --pods, at most one per node)",
            one_per_node=True,
        ),
        Shape(
            "spread",
            "TopologySpreading",
            # With maxSkew 1 rather than its 5: every pod then has zones it may not go to.
            spread_over(ZONE, 1, "DoNotSchedule"),
            check_spread,
            "pods of the spread phase, each spread over the zones with maxSkew 1, DoNotSchedule "
            + FIFTH,
        ),
        Shape(
            "preferred-affinity",
            "SchedulingNodeAffinity",
            # Its zone term as a weighted preference: v1.34's suite had no preferred node affinity.
            lambda _: {
                "affinity": node_affinity(
                    {"key": ZONE, "operator": "In", "values": [PREFERRED_ZONE]}, weight=100
                )
            },
            check_preferred_affinity,
            f"pods of the preferred-affinity phase, each preferring the zone {PREFERRED_ZONE} "
            + FIFTH,
        ),
        Shape(
            "anti-affinity-ns",
            "SchedulingRequiredPodAntiAffinityWithNSSelector",
            pod_term("podAntiAffinity", HOSTNAME, SELECTED),
            check_anti_affinity,
            f"pods of the anti-affinity-ns phase, {INIT} in {len(INIT_NAMESPACES)} namespaces, "
            "each with required anti-affinity per hostname to them all, namespaces by label "
            "(default: a fifth of --pods, at most half the nodes)",
            one_per_node=True,
            init_namespaces=INIT_NAMESPACES,
            namespace_labels=TEAM,
        ),
        Shape(
            "pod-affinity",
            "SchedulingPodAffinity",
            pod_term("podAffinity", ZONE, LISTED),
            check_one_zone,
            f"pods of the pod-affinity phase, {INIT} in {SCHED_NAMESPACE}, each with required "
            "pod affinity per zone to them all " + FIFTH,
            init_namespaces=(SCHED_NAMESPACE,),
        ),
        Shape(
            "preferred-anti-affinity",
            "SchedulingPreferredPodAntiAffinity",
            pod_term("podAntiAffinity", HOSTNAME, LISTED, weight=1),
            check_apart,
            f"pods of the preferred-anti-affinity phase, {INIT} in {SCHED_NAMESPACE}, each "
            "avoiding (weight 1) the nodes of the others " + FIFTH,
            init_namespaces=(SCHED_NAMESPACE,),
        ),
        Shape(
            "node-affinity",
            "SchedulingNodeAffinity",
            lambda _: {
                "affinity": node_affinity(
                    {"key": ZONE, "operator": "In", "values": list(REQUIRED_ZONES)}
                )
            },
            check_node_affinity,
            "pods of the node-affinity phase, each requiring the zones "
            f"{' or '.join(REQUIRED_ZONES)} " + FIFTH,
        ),
        Shape(
            "affinity-ns",
            "SchedulingRequiredPodAffinityWithNSSelector",
            pod_term("podAffinity", ZONE, SELECTED),
            check_one_zone,
            f"pods of the affinity-ns phase, {INIT} in {len(INIT_NAMESPACES)} namespaces, each "
            "with required pod affinity per zone to them all, namespaces by label " + FIFTH,
            init_namespaces=INIT_NAMESPACES,
            namespace_labels=TEAM,
        ),
        Shape(
            "preferred-anti-affinity-ns",
            "SchedulingPreferredAntiAffinityWithNSSelector",
            pod_term("podAntiAffinity", HOSTNAME, SELECTED, weight=1),
            check_apart,
            f"pods of the preferred-anti-affinity-ns phase, {INIT} in {len(INIT_NAMESPACES)} "
            "namespaces, each avoiding (weight 1) the nodes of them all, namespaces by label "
            + FIFTH,
            init_namespaces=INIT_NAMESPACES,
            namespace_labels=TEAM,
        ),
        Shape(
            "preferred-spread",
            "PreferredTopologySpreading",
            spread_over(ZONE, PREFERRED_SKEW, "ScheduleAnyway"),
            check_preferred_spread,
            f"pods of the preferred-spread phase, each spread over the zones with maxSkew "
            f"{PREFERRED_SKEW}, ScheduleAnyway " + FIFTH,
        ),
        Shape(
            "node-inclusion",
            "SchedulingWithNodeInclusionPolicy",
            node_inclusion,
            check_node_inclusion,
            "pods of the node-inclusion phase, each spread per hostname with maxSkew 1 over the "
            "nodes its node affinity and tolerations allow, beside a quarter as many tainted nodes "
            + FIFTH,
            prepare=tainted_nodes,
        ),
        Shape(
            "preferred-pod-affinity",
            "SchedulingPreferredPodAffinity",
            pod_term("podAffinity", HOSTNAME, LISTED, weight=1),
            check_together,
            f"pods of the preferred-pod-affinity phase, {INIT} in {SCHED_NAMESPACE}, each "
            "preferring (weight 1) the nodes of the others " + FIFTH,
            init_namespaces=(SCHED_NAMESPACE,),
        ),
        Shape(
            "preferred-affinity-ns",
            "SchedulingPreferredAffinityWithNSSelector",
            pod_term("podAffinity", HOSTNAME, SELECTED, weight=1),
            check_together,
            f"pods of the preferred-affinity-ns phase, {INIT} in {len(INIT_NAMESPACES)} "
            "namespaces, each preferring (weight 1) the nodes of them all, namespaces by label "
            + FIFTH,
            init_namespaces=INIT_NAMESPACES,
            namespace_labels=TEAM,
        ),
    )
}
SHAPED_PHASES = tuple(SHAPES)


# --- one run ----------------------------------------------------------------------------------

# Every phase, in the order a run goes through them, and what runs it with its count of pods.
# Pods of a phase stay when the next begins (as in a cluster); the shaped phases (SHAPES) come
# after the others, so that the figures of those do not change with them, then the misc and
# volume shapes (on nodes of their own, or light pods that need no particular node: those whose
# pods stay bound first; the finalizers, gated and mixed-churn phases leave nothing pending:
# their deleted, gated and churn pods are gone at their end), and the parked phase last, so that
# its parked pods wait through no other phase.
PHASES: dict[str, Callable[[Run, int], PhaseRun]] = {
    "burst": burst,
    "steady": steady,
    "storage": storage,
    "preemption": preemption,
    **{phase: shaped(shape) for phase, shape in SHAPES.items()},
    **{phase: MISC[phase] for phase in MISC_PHASES},
    "parked": parked,
    "dra": dra,
    **{gang_phase(size): gang(size) for size in GANG_SIZES},
}


def phase_pods(config: Config, kind: str, node_count: int) -> dict[str, int]:
    """The pods of each phase ``kind`` runs at ``node_count`` nodes, in PHASES' order; a phase of
    none is skipped. The raw binders run the burst and the steady phase only."""
    counts = {"burst": config.pods, "steady": config.steady_pods}
    if kind in DECIDERS:
        counts |= {"storage": config.storage_pods, "preemption": config.preemption_pods}
        counts |= {
            phase: SHAPES[phase].most(count, node_count)
            for phase, count in config.shaped_pods.items()
        }
        counts |= misc_pods(config, node_count)
        counts["parked"] = config.parked_pods
    return {phase: counts[phase] for phase in PHASES if counts.get(phase, 0) > 0}


def alone_pods(config: Config, alone: str) -> dict[str, int]:
    """The pods of each phase of the run ``alone`` ("dra" or "gang", on a control plane of its
    own after the runs of every node count); a phase of none is skipped."""
    if alone == "dra":
        return {"dra": config.dra_in_flight}
    counts = {gang_phase(size): config.gang_pods_of(size) for size in GANG_SIZES}
    return {phase: count for phase, count in counts.items() if count > 0}


def run_case(
    config: Config,
    kind: str,
    node_count: int,
    state_dir: Path,
    settled: Callable[[], None],
    *,
    alone: str = "",
) -> tuple[dict[str, Any], Teardown]:
    """One scheduler's run at ``node_count`` nodes on a fresh control plane in ``state_dir``: its
    figures and checks, and what is left to tear down (the phases' helpers, the watch, the
    control plane), for the caller to do while the next run starts. ``settled()`` returns once
    the run before is torn down: it is waited for before this run's scheduler starts, so that
    nothing of it runs while this one is measured. A run ``alone`` runs only its own phases:
    "dra", the DRA steady state, on a control plane with kube-controller-manager (whose
    resourceclaim controller makes the claims of the template) and kwok; "gang", the gang phases,
    on a bare one with GANG_GATES, as kube-scheduler is started then."""
    title = {"dra": " (DRA)", "gang": " (gang)"}.get(alone, "")
    log(f"{kind}, {node_count} nodes{title}: fresh control plane")
    gates = GANG_GATES if alone == "gang" else ()
    # kube-controller-manager's resourceclaim controller is on the DRA pods' path (it makes each
    # claim): its client rate limit, 20 requests/s by default, would cap both schedulers alike.
    flags = ("--controller-qps", str(config.kube_qps)) if alone == "dra" else gates
    plane = ControlPlane.fresh(state_dir, *flags, controllers=alone == "dra")
    teardown = Teardown(plane.down)
    try:
        admin = Api(plane.admin, pool=config.create_threads)
        prepare(plane, kind, GANG_PLUGINS if alone == "gang" else {})
        counts = alone_pods(config, alone) if alone else phase_pods(config, kind, node_count)
        if "storage" in counts:
            admin.post("/apis/storage.k8s.io/v1/storageclasses", storage_class_body(STORAGE_CLASS))
        if "preemption" in counts:
            for name, value in PRIORITY_CLASSES.items():
                admin.post(
                    "/apis/scheduling.k8s.io/v1/priorityclasses", priority_class_body(name, value)
                )
        nodes = node_names(node_count)
        if alone == "dra":
            create_nodes(admin, nodes, DRA_NODE, config.create_threads)
            create_dra_objects(admin, nodes, config)
        else:
            # Nodes as large for every scheduler, sized for the pods the deciders bind on them
            # (the preemption phase brings nodes of its own; parked pods take no room).
            on_nodes = counts if alone else phase_pods(config, DECIDERS[0], node_count)
            total_pods = 1 + sum(
                room(phase, n) + (SHAPES[phase].init_pods(n) if phase in SHAPES else 0)
                for phase, n in on_nodes.items()
            )
            create_nodes(admin, nodes, node_size(node_count, total_pods), config.create_threads)
        # Its name says the run, as the scheduler's log (named after it) does.
        nodes_file = plane.dir / f"nodes-{node_count}{f'-{alone}' if alone else ''}.txt"
        nodes_file.write_text("\n".join(nodes) + "\n")
        result: dict[str, Any] = {"scheduler": kind, "nodes": node_count}
        if alone == "dra":
            result["devices_per_node"] = config.dra_devices
        ran: dict[str, PhaseRun] = {}
        # Watching before the scheduler starts, so that no bind goes unseen.
        watch = BindWatch(Api(plane.admin, pool=1))
        teardown.callback(watch.close)
        settled()
        # The scheduler is stopped before the checks (its last events posted), whatever fails.
        with contextlib.ExitStack() as running:
            scheduler = start_scheduler(kind, plane, config, nodes_file, *gates)
            running.callback(scheduler.stop)
            started = time.monotonic()
            # Pinned to the last node listed: once it is bound the scheduler has seen every node.
            warm_up = pod_body(
                "warm-up", SCHEDULER_NAMES[kind], 4, node_selector={HOSTNAME: nodes[-1]}
            )
            Creator(admin, 1, on_uid=created(scheduler)).create("warm-up", warm_up)
            if not watch.wait(
                ["warm-up"],
                config.timeout,
                lambda _: f"{kind} starting: warm-up pod not bound yet",
                scheduler.check_alive,
            ):
                raise RuntimeError(f"{kind} did not bind the warm-up pod; see {scheduler.log_path}")
            result["ready_seconds"] = round(time.monotonic() - started, 2)
            log(f"  {kind} ready (warm-up pod bound) after {result['ready_seconds']} s")
            run = Run(admin, plane.admin, watch, scheduler, config, teardown)
            for phase, count in counts.items():
                # A phase left unfinished leaves pods behind that would be the next one's.
                if not all(done.figures["complete"] for done in ran.values()):
                    break
                ran[phase] = PHASES[phase](run, count)
                result[phase] = ran[phase].figures
            result["cpu_seconds_total"] = round(scheduler.cpu_seconds(), 2)
            result["peak_rss_mib"] = round(scheduler.peak_rss_mib(), 1)
        result["correctness"] = verify(admin, ran, kind)
    except BaseException:
        teardown.close()
        raise
    return result, teardown


# --- the command ------------------------------------------------------------------------------


def misc_default(phase: str) -> str:
    """What a phase of MISC_PHASES has by default, for its --help."""
    if phase == "gated":
        return f"{GATED_PODS:,}"
    return f"{MISC_PER_NODE[phase]:g} per node, at most {MISC_MOST:,}"


MISC_HELP = {
    "secrets": "pods of the secrets phase, each with a secret volume (SchedulingSecrets)",
    "in-tree-pvs": "pods of the in-tree-pvs phase, each with a claim bound beforehand to an "
    "in-tree AWS EBS PV (SchedulingInTreePVs)",
    "csi-pvs": "pods of the csi-pvs phase, each with a claim bound beforehand to a CSI PV, "
    f"{CSI_VOLUME_LIMIT} per node at most (SchedulingCSIPVs)",
    "daemonset": "pods of the daemonset phase, all pinned by matchFields to one node of the "
    "phase's own (SchedulingDaemonset)",
    "finalizers": "pods of the finalizers phase, arriving while as many pods with a finalizer "
    f"are deleted, {FINALIZER_DELETE_RATE:g} a second (SchedulingDeletedPodsWithFinalizers)",
    "gated": "pods of the gated phase, arriving past half as many gated pods while as many bound "
    f"ones are deleted, {GATED_DELETE_RATE:g} a second, all on one node of the phase's own "
    "(SchedulingWhileGated)",
    "mixed-churn": "pods of the mixed-churn phase, arriving while a node, a high-priority pod "
    "and a Service are created and deleted by turns every second (SchedulingWithMixedChurn)",
}


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(
        description="policy-scheduler vs kube-scheduler vs the raw bind limits, on a local "
        "control plane; see the module docstring for what is measured and how."
    )
    parser.add_argument(
        "--nodes", type=int, nargs="*", default=[100, 1000, 5000], help="none: the DRA runs only"
    )
    parser.add_argument("--pods", type=int, default=5000, help="pods of the burst phase")
    parser.add_argument("--steady-rate", type=float, default=100.0, help="pods per second")
    parser.add_argument("--steady-seconds", type=float, default=30.0, help="0 skips the phase")
    parser.add_argument(
        "--storage-pods",
        type=int,
        default=None,
        help="pods of the storage phase, each with a WaitForFirstConsumer claim (default: a "
        "fifth of --pods)",
    )
    parser.add_argument(
        "--preemption-pods",
        type=int,
        default=None,
        help="high-priority pods of the preemption phase, and its nodes, each filled with "
        f"{VICTIMS_PER_NODE} low-priority pods (default: a tenth of --pods)",
    )
    for phase, shape in SHAPES.items():
        parser.add_argument(f"--{phase}-pods", type=int, default=None, help=shape.help)
    parser.add_argument(
        "--parked-pods",
        type=int,
        default=None,
        help="schedulable pods of the parked phase, created as a burst while the unschedulable "
        "ones are parked (default: --pods)",
    )
    parser.add_argument(
        "--unschedulable-pods",
        type=int,
        default=None,
        help="unschedulable pods parked before the parked phase's burst (default: a fifth of "
        "--pods)",
    )
    for phase, text in MISC_HELP.items():
        parser.add_argument(
            f"--{phase}-pods",
            type=int,
            default=None,
            help=f"{text} (default: {misc_default(phase)})",
        )
    parser.add_argument(
        "--dra-nodes",
        type=int,
        default=500,
        help="nodes of the DRA steady state, each with a ResourceSlice of --dra-devices devices, "
        "on a control plane of its own with kube-controller-manager (0 skips it)",
    )
    parser.add_argument(
        "--dra-devices", type=int, default=10, help="devices per node, half allocated first"
    )
    parser.add_argument("--dra-in-flight", type=int, default=10, help="DRA pods in flight")
    parser.add_argument(
        "--dra-seconds", type=float, default=10.0, help="how long the DRA pods are churned"
    )
    parser.add_argument(
        "--gang-nodes",
        type=int,
        default=1000,
        help="nodes of the gang phases, on a control plane of its own with the gate "
        "GenericWorkload on (0 skips them)",
    )
    parser.add_argument(
        "--gang-pods",
        type=int,
        default=2048,
        help="pods of each gang phase, in groups of "
        + " and of ".join(map(str, GANG_SIZES))
        + " (rounded down to whole groups)",
    )
    parser.add_argument("--schedulers", nargs="+", choices=SCHEDULERS, default=list(SCHEDULERS))
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each scheduler at each node count (and of the DRA and gang runs), the "
        "schedulers in turns: the ratios are given per run and as median and range",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=BIND_CONCURRENCY,
        help=f"the raw binders' (policy-scheduler's: {BIND_CONCURRENCY})",
    )
    parser.add_argument("--create-threads", type=int, default=32, help="concurrent POSTs")
    parser.add_argument(
        "--kube-qps", type=int, default=KUBE_QPS, help="kube-scheduler's client QPS and burst"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds a phase may take to bind its pods"
    )
    add_dirs(parser, "bench", "the control plane's state directory (wiped before every run)")
    parser.epilog = (
        "A phase of 0 pods is skipped. Only policy-scheduler and kube-scheduler run the phases "
        "past burst and steady."
    )
    args = parser.parse_args(argv)

    def pods(value: int | None, default: int) -> int:
        return default if value is None else value

    fifth = args.pods // 5
    return Config(
        nodes=tuple(args.nodes),
        pods=args.pods,
        steady_rate=args.steady_rate,
        steady_seconds=args.steady_seconds,
        storage_pods=pods(args.storage_pods, fifth),
        preemption_pods=pods(args.preemption_pods, args.pods // 10),
        shaped_pods={
            phase: pods(getattr(args, f"{phase.replace('-', '_')}_pods"), fifth)
            for phase in SHAPED_PHASES
        },
        parked_pods=pods(args.parked_pods, args.pods),
        unschedulable_pods=pods(args.unschedulable_pods, fifth),
        misc_pods={
            phase: getattr(args, f"{phase.replace('-', '_')}_pods") for phase in MISC_PHASES
        },
        schedulers=tuple(args.schedulers),
        dra_nodes=args.dra_nodes,
        dra_devices=args.dra_devices,
        dra_in_flight=args.dra_in_flight,
        dra_seconds=args.dra_seconds,
        gang_nodes=args.gang_nodes,
        gang_pods=args.gang_pods,
        repeats=max(1, args.repeat),
        concurrency=args.concurrency,
        create_threads=args.create_threads,
        kube_qps=args.kube_qps,
        timeout=args.timeout,
        state_dir=args.dir,
        out=args.out,
    )


def passed(case: dict[str, Any]) -> bool:
    phases = [case[p] for p in PHASES if p in case]
    return bool(phases) and all(p["complete"] for p in phases) and case["correctness"]["ok"]


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    config.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "config": {
            "nodes": list(config.nodes),
            "pods": config.pods,
            "steady_rate": config.steady_rate,
            "steady_seconds": config.steady_seconds,
            "storage_pods": config.storage_pods,
            "preemption_pods": config.preemption_pods,
            "victims_per_node": VICTIMS_PER_NODE,
            **{f"{phase.replace('-', '_')}_pods": n for phase, n in config.shaped_pods.items()},
            "parked_pods": config.parked_pods,
            "unschedulable_pods": config.unschedulable_pods,
            **{f"{phase.replace('-', '_')}_pods": n for phase, n in config.misc_pods.items()},
            "preferred_zone": PREFERRED_ZONE,
            "dra_nodes": config.dra_nodes,
            "dra_devices": config.dra_devices,
            "dra_init_claims": config.dra_nodes * (config.dra_devices // 2),
            "dra_in_flight": config.dra_in_flight,
            "dra_seconds": config.dra_seconds,
            "gang_nodes": config.gang_nodes,
            **{f"gang_pods_{size}": config.gang_pods_of(size) for size in GANG_SIZES},
            "repeats": config.repeats,
            "concurrency": config.concurrency,
            "event_concurrency": POST_CONCURRENCY,
            "create_threads": config.create_threads,
            "kube_qps": config.kube_qps,
        },
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()},
        "cases": [],
    }
    # Each run tears the one before down (its helpers' watches ending, its control plane
    # stopping: seconds of waiting) while its own control plane starts, in a directory of its
    # own; it waits for that to be over before its scheduler starts.
    tearing_down = threading.Thread()
    tearing_down.start()
    # Node count outermost, then the repeats, so the schedulers of one size run close together
    # in time, in turns, and share whatever else the machine is doing; the runs alone (the DRA
    # steady state, the gang phases) last, the deciders only.
    repeats = range(config.repeats)
    plan = [
        (node_count, kind, "", repeat)
        for node_count in config.nodes
        for repeat in repeats
        for kind in config.schedulers
    ]
    for alone, alone_nodes in (("dra", config.dra_nodes), ("gang", config.gang_nodes)):
        if alone_nodes and alone_pods(config, alone):
            plan += [
                (alone_nodes, kind, alone, repeat)
                for repeat in repeats
                for kind in config.schedulers
                if kind in DECIDERS
            ]
    for runs, (node_count, kind, alone, repeat) in enumerate(plan):
        state_dir = config.state_dir / f"run-{runs % 2}"
        try:
            case, teardown = run_case(
                config, kind, node_count, state_dir, tearing_down.join, alone=alone
            )
        except (RuntimeError, ApiError, OSError, subprocess.SubprocessError) as error:
            log(f"  {kind} at {node_count} nodes failed: {error}")
            case = {"scheduler": kind, "nodes": node_count, "error": str(error)}
        else:
            tearing_down.join()
            tearing_down = threading.Thread(target=teardown.close, name="teardown")
            tearing_down.start()
        case["repeat"] = repeat
        results["cases"].append(case)
        # After every run, so that an interrupted benchmark still leaves what it measured;
        # the charts, slower to draw, once at the end.
        write_reports(results, config.out, charts=False)
    tearing_down.join()
    written = write_reports(results, config.out)
    log("results: " + ", ".join(str(path) for path in written))
    failed = [
        f"{c['scheduler']}@{c['nodes']}#{c['repeat'] + 1}"
        for c in results["cases"]
        if not passed(c)
    ]
    if failed:
        log(f"FAILED (incomplete or incorrect): {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
