"""Parity with kube-scheduler: a policy mirroring its default profile places pods as it does.

Each scenario builds nodes (labels, taints, capacity, images) and pods already bound to them, then
hands pending pods to the real kube-scheduler one at a time. Every pending pod is created with a
scheduling gate, so kube-scheduler leaves it alone while we read the cluster exactly as it will see
it (the pod included, with the API server's defaults) and decide offline with our pipeline; then
the gate is lifted and kube-scheduler decides. kube's node must be among our top-scored nodes
(among equal totals v1.37 takes the root of a heap built over its feasible nodes in the order its
parallel filters found them, an order we cannot see), and a pod kube leaves unschedulable must fit
nowhere for us, for the same reasons.

Our snapshot holds the whole cluster, not only the scenario's nodes: ImageLocality scales an image's
size by the share of *all* nodes that hold it, so a smaller snapshot would score differently. The
pods' nodeSelector on the scenario label keeps other tests' nodes out of the running for both
schedulers (and out of topology spreading, whose nodeAffinityPolicy is Honor), and makes both count
them under the same reasons, so reasons are compared as sets, without their counts.

Each step also names the node kube-scheduler is expected to choose (worked out by hand from
kube's formulas), which checks that the scenario really exercises what it claims to.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, items, wait_for
from harness.objects import node

from policy_scheduler import simulate
from policy_scheduler.plugins.registry import FILTERS
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.runtime.schedule_one import Pipeline
from policy_scheduler.simulate import ClusterDump, snapshot_of

SCENARIO_LABEL = "parity.policy-scheduler.dev/scenario"
GATE = "parity.policy-scheduler.dev/hold"
PAUSE = "registry.k8s.io/pause:3.10"
MB = 1024 * 1024

# kube-scheduler v1.37's default profile (pkg/scheduler/apis/config/v1/default_plugins.go): the
# filters in its order (a node's first failing filter gives its reason) and the score weights.
# NodeResourcesFit's default scoring strategy is LeastAllocated over cpu and memory, weight 1 each.
SCORE_WEIGHTS: Mapping[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "LeastAllocated": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 2,
    "BalancedAllocation": 1,
    "ImageLocality": 1,
}
# examples/policies/default-profile.yaml mirrors kube-scheduler's default profile (its filters in
# its order, its scorers with its weights); the parity test is what keeps that claim true.
DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"

# What our decision reads: as a cluster dump for simulate holds them.
KINDS = (
    "nodes",
    "pods",
    "namespaces",
    "services",
    "replicationcontrollers",
    "replicasets",
    "statefulsets",
)
# The storage and device objects the volume plugins read (issue 13), by kind and resource; read
# as soon as simulate's cluster dumps hold them.
STORAGE_KINDS: Mapping[str, str] = {
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses.storage.k8s.io",
    "CSINode": "csinodes.storage.k8s.io",
    "CSIDriver": "csidrivers.storage.k8s.io",
    "CSIStorageCapacity": "csistoragecapacities.storage.k8s.io",
    "VolumeAttachment": "volumeattachments.storage.k8s.io",
    "ResourceClaim": "resourceclaims.resource.k8s.io",
}


def kinds_read() -> tuple[str, ...]:
    """The resources our decision reads: KINDS, and the storage kinds simulate reads."""
    return KINDS + tuple(r for k, r in STORAGE_KINDS.items() if k in simulate.KINDS)


UNSCHEDULABLE = "<unschedulable>"
ANY = "<any feasible node>"


@dataclass(frozen=True)
class Step:
    """A pending pod and the node kube-scheduler should pick (a suffix of the scenario's node
    names), the nodes that tie for it (a frozenset of suffixes: v1.37 takes one by an order of
    the feasible nodes that its parallel filters decide), UNSCHEDULABLE, or ANY."""

    pod: dict[str, Any]
    expect: str | frozenset[str]
    prepare: Callable[[Cluster, str], None] | None = None
    """Run once the gated pod exists, before either scheduler decides (given the cluster and
    the namespace): what another controller would have done for the pod by then."""


StandIn = Callable[[], None]
"""One pass of a controller that does not run here (the PV controller, a provisioner): called
while waiting for kube-scheduler's decision, as kube-scheduler may wait for it to bind. Parity
needs it on the bare cluster: a real controller would change the state between our decision and
kube-scheduler's."""


@dataclass
class Scenario:
    """Nodes (by name suffix), pods bound to them from the start, and the pending pods in order.
    ``objects`` are created before the pods, with their ``status`` if they have one (StorageClasses,
    PVs, PVCs, CSINodes, ResourceClaims: named by the test, cluster-scoped ones after the prefix;
    the ``prefix`` fixture deletes them); ``stand_in`` runs while kube-scheduler decides."""

    nodes: list[dict[str, Any]]
    steps: list[Step]
    existing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    stand_in: StandIn | None = None


def make_node(
    suffix: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    images: list[tuple[str, int]] | None = None,
    unschedulable: bool = False,
    pods: str = "110",
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A node named by its suffix for now; :func:`run` prefixes the scenario's name. ``extra``
    adds resources (extended, ephemeral-storage) to its capacity and allocatable."""
    obj = node(suffix, cpu=cpu, memory=memory, pods=pods, labels=labels, taints=taints)
    obj["status"]["capacity"].update(extra or {})  # allocatable is the same dict
    if images:
        obj["status"]["images"] = [{"names": [n], "sizeBytes": size} for n, size in images]
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


def make_pod(
    name: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    labels: dict[str, str] | None = None,
    image: str = PAUSE,
    spec: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod for the default scheduler; ``cpu``/``memory`` None leaves that request out,
    ``extra`` adds requests for other resources."""
    requests: dict[str, str] = {
        k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None
    }
    requests.update(extra or {})
    main: dict[str, Any] = {"name": "main", "image": image, **(container or {})}
    if requests:
        main["resources"] = {"requests": requests}
    # Extended resources cannot be overcommitted: the API server wants limits equal to requests.
    extended = {k: v for k, v in (extra or {}).items() if "/" in k}
    if extended:
        main["resources"]["limits"] = extended
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [main], **(spec or {})},
    }


def default_profile() -> Pipeline:
    pipeline = compile_policy(read_policy_file(DEFAULT_PROFILE)[0]).pipeline
    assert {ws.scorer.name: ws.weight for ws in pipeline.scorers} == SCORE_WEIGHTS
    # Every feasible node's breakdown, to find all the nodes sharing the top total.
    pipeline.candidates_to_report = 1_000_000
    return pipeline


def our_decision(pipeline: Pipeline, cluster: Cluster, namespace: str, name: str) -> Decision:
    """Our decision for the gated pod ``name``, over the cluster as the API server has it now."""
    dump = ClusterDump.of(items(cluster, ",".join(kinds_read()), "-A"))
    (pending,) = (p for p in dump.pods if p.namespace == namespace and p.name == name)
    return pipeline.decide(pending, snapshot_of(dump), random.Random(0))


def kube_outcome(
    cluster: Cluster, namespace: str, name: str, stand_in: StandIn | None = None
) -> tuple[str | None, str]:
    """(node, "") once kube-scheduler bound the pod, or (None, its FailedScheduling message);
    ``stand_in`` runs before each look."""

    def probe() -> tuple[str | None, str] | None:
        if stand_in is not None:
            stand_in()
        pod = json.loads(cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout)
        if pod["spec"].get("nodeName"):
            return pod["spec"]["nodeName"], ""
        for condition in pod.get("status", {}).get("conditions", ()):
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return None, str(condition.get("message", ""))
        return None

    return wait_for(f"kube-scheduler to decide {namespace}/{name}", probe)


def kube_reasons(message: str) -> set[str]:
    """The reasons of "0/9 nodes are available: 2 Insufficient cpu, 7 .... <what PostFilter
    plugins say: DynamicResources, preemption>", without their counts. A PreFilter rejection
    has no count ("0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.
    preemption: ..."): its whole text is the one reason."""
    listed = message.partition(" nodes are available: ")[2].partition(". ")[0].rstrip(".")
    if not listed.partition(" ")[0].isdigit():
        return {listed} if listed else set()
    return {part.split(" ", 1)[1] for part in listed.split(", ") if part}


def kube_failure(message: str) -> str:
    """kube-scheduler's FitError text without what PostFilter plugins (DynamicResources,
    preemption) add after it: what our Decision.message says."""
    return message.partition(". ")[0].rstrip(".") + "."


def totals(decision: Decision) -> dict[str, int]:
    """Each feasible node's weighted total, as kube-scheduler sums it (integers, no division);
    the only node that fits, taken unscored as kube-scheduler takes it, with 0."""
    if decision.node is not None and not decision.candidates:
        return {decision.node: 0}
    return {
        c.node: sum(SCORE_WEIGHTS[plugin] * score for plugin, score in c.scores.items())
        for c in decision.candidates
    }


def breakdown(decision: Decision) -> str:
    lines = [f"ours: {decision.node} reasons={dict(decision.reasons)}"]
    lines += [
        f"  {c.node}: {totals(decision)[c.node]} {dict(c.scores)}" for c in decision.candidates
    ]
    return "\n".join(lines)


def set_up(cluster: Cluster, namespace: str, prefix: str, scenario: Scenario) -> None:
    """Create the scenario's nodes, named and labelled after ``prefix``, and its bound pods."""
    for obj in scenario.nodes:
        name = f"{prefix}-{obj['metadata']['name']}"
        obj["metadata"]["name"] = name
        obj["metadata"]["labels"]["kubernetes.io/hostname"] = name
        obj["metadata"]["labels"][SCENARIO_LABEL] = prefix
    cluster.apply(*scenario.nodes)
    # kube-scheduler counts how many nodes hold an image (ImageLocality's spread) when a node's
    # entry in its snapshot is refreshed, which happens only when that node changes: a node
    # snapshotted before the later ones were created keeps a count that is too small, and
    # scores lower, whenever kube-scheduler ran a cycle meanwhile (for another test's pending
    # pod, say). Changing every node once all exist refreshes their counts.
    cluster.kubectl(
        "annotate", "nodes", "-l", f"{SCENARIO_LABEL}={prefix}", f"{SCENARIO_LABEL}-complete=true"
    )
    create_objects(cluster, namespace, prefix, scenario.objects)
    for suffix, pod in scenario.existing:
        pod["spec"]["nodeName"] = f"{prefix}-{suffix}"
    if scenario.existing:
        cluster.apply(*(pod for _, pod in scenario.existing), namespace=namespace)
    # kube-scheduler learns of nodes and bound pods through its informers; give them a moment,
    # as nothing in the API tells when its cache has caught up.
    time.sleep(1.0)


def create_objects(
    cluster: Cluster, namespace: str, prefix: str, objects: list[dict[str, Any]]
) -> None:
    """Create ``objects`` (labelled with the scenario, so that the ``prefix`` fixture finds the
    cluster-scoped ones), then write the status of those that have one, through the status
    subresource as their controllers would (apply leaves status out)."""
    if not objects:
        return
    for obj in objects:
        metadata = obj.setdefault("metadata", {})
        metadata.setdefault("labels", {})[SCENARIO_LABEL] = prefix
    cluster.apply(*objects, namespace=namespace)
    for obj in objects:
        if obj.get("status"):
            write_status(cluster, namespace, obj)


def write_status(cluster: Cluster, namespace: str, obj: Mapping[str, Any]) -> None:
    """Merge ``obj``'s status into the API's object of its kind and name."""
    resource = STORAGE_KINDS.get(obj["kind"], obj["kind"].lower())
    scoped = ("-n", namespace) if obj["kind"] in NAMESPACED_KINDS else ()
    cluster.kubectl(
        "patch", resource, obj["metadata"]["name"], *scoped, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": obj["status"]}),
    )  # fmt: skip


NAMESPACED_KINDS = frozenset(
    {"PersistentVolumeClaim", "CSIStorageCapacity", "ResourceClaim", "Pod"}
)
NAMESPACED_STORAGE = (
    "persistentvolumeclaims,csistoragecapacities.storage.k8s.io,resourceclaims.resource.k8s.io"
)
CLUSTER_SCOPED_STORAGE = (
    "persistentvolumes,storageclasses.storage.k8s.io,csinodes.storage.k8s.io,"
    "csidrivers.storage.k8s.io,volumeattachments.storage.k8s.io"
)


def submit(
    cluster: Cluster,
    namespace: str,
    prefix: str,
    pipeline: Pipeline,
    pod: dict[str, Any],
    *,
    prepare: Callable[[Cluster, str], None] | None = None,
) -> Decision:
    """Create the pending pod (kept to the scenario's nodes), decide it with ``pipeline`` while
    its gate holds kube-scheduler back, then lift the gate; our decision."""
    name = pod["metadata"]["name"]
    spec = pod["spec"]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), SCENARIO_LABEL: prefix}
    spec["schedulingGates"] = [{"name": GATE}]
    cluster.apply(pod, namespace=namespace)
    if prepare is not None:
        prepare(cluster, namespace)
    ours = our_decision(pipeline, cluster, namespace, name)
    cluster.kubectl(
        "patch", "pod", name, "-n", namespace, "--type=json",
        "-p", '[{"op": "remove", "path": "/spec/schedulingGates"}]',
    )  # fmt: skip
    return ours


ScoreCheck = Callable[[str, Pipeline, Decision], list[str]]
"""Given a bound pod's name, our pipeline and our decision: how kube's scores differ from ours."""


def run(
    cluster: Cluster,
    namespace: str,
    prefix: str,
    scenario: Scenario,
    *,
    scheduler: str | None = None,
    scores: ScoreCheck | None = None,
) -> None:
    """Set the scenario up, then compare both schedulers on each step; all failures at the end.
    ``scheduler`` names another kube-scheduler profile to submit the pods to; with ``scores``,
    every plugin's score on every feasible node is compared too, where kube had a choice."""
    set_up(cluster, namespace, prefix, scenario)
    pipeline = default_profile()
    problems: list[str] = []
    for step in scenario.steps:
        name = step.pod["metadata"]["name"]
        if scheduler is not None:
            step.pod["spec"]["schedulerName"] = scheduler
        ours = submit(cluster, namespace, prefix, pipeline, step.pod, prepare=step.prepare)
        chosen, message = kube_outcome(cluster, namespace, name, scenario.stand_in)
        where = f"{name}: kube chose {chosen or message!r}\n{breakdown(ours)}"
        if chosen is None:
            if ours.node is not None:
                problems.append(f"kube found no node, we did. {where}")
            elif set(ours.reasons) != kube_reasons(message):
                problems.append(f"reasons differ: {sorted(ours.reasons)}. {where}")
            elif ours.pre_filter_rejection and ours.message != kube_failure(message):
                # No count to tell the nodes apart: the whole message is comparable.
                problems.append(f"messages differ: {ours.message!r}. {where}")
            # A pod left pending would be retried on every later change and could land later.
            cluster.kubectl("delete", "pod", name, "-n", namespace, "--grace-period=0", "--force")
        else:
            scored = totals(ours)
            if chosen not in scored:
                problems.append(f"kube's node is not feasible for us. {where}")
            elif scored[chosen] != max(scored.values()):
                problems.append(f"kube's node is not among our best. {where}")
            elif scores is not None and len(scored) > 1:
                differences = scores(name, pipeline, ours)
                if differences:
                    problems.append(f"scores differ: {'; '.join(differences)}. {where}")
        tied = step.expect if isinstance(step.expect, frozenset) else frozenset([step.expect])
        expected = {e if e == UNSCHEDULABLE else f"{prefix}-{e}" for e in tied}
        if step.expect != ANY and (chosen or UNSCHEDULABLE) not in expected:
            problems.append(f"scenario: expected kube to choose {sorted(tied)}. {where}")
    assert not problems, "\n\n".join(problems)


@pytest.fixture
def prefix(cluster: Cluster, namespace: str) -> Iterator[str]:
    """A name for the scenario's nodes; its pods and nodes are gone after the test, so that later
    scenarios count no stale node (ImageLocality counts all nodes)."""
    name = f"parity-{uuid.uuid4().hex[:6]}"
    yield name
    # Without a kubelet, a bound pod would stay Terminating forever unless forced.
    cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force")
    cluster.kubectl("delete", "nodes", "-l", f"{SCENARIO_LABEL}={name}")
    delete_storage(cluster, namespace, name)


def delete_storage(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Delete the scenario's storage objects. No controller removes the protection finalizers
    (kubernetes.io/pv-protection, pvc-protection) here: they are dropped by hand."""
    selector = f"{SCENARIO_LABEL}={prefix}"
    for resource, scoped in (
        (NAMESPACED_STORAGE, ("-n", namespace)),
        (CLUSTER_SCOPED_STORAGE, ()),
    ):
        for obj in items(cluster, resource, *scoped, "-l", selector):
            if obj["metadata"].get("finalizers"):
                cluster.kubectl(
                    "patch", STORAGE_KINDS[obj["kind"]], obj["metadata"]["name"], *scoped,
                    "--type=merge", "-p", '{"metadata": {"finalizers": null}}',
                )  # fmt: skip
        cluster.kubectl("delete", resource, *scoped, "-l", selector, "--wait=false")


def test_resources_least_allocated_against_balanced(
    cluster: Cluster, namespace: str, prefix: str
) -> None:
    """Room left (LeastAllocated) against even use of cpu and memory (BalancedAllocation).

    v1.37's BalancedAllocation scores the change a pod makes to the node's balance, 50 + (50 +
    with - without) // 2: a node the pod leaves as even as it was gets 75, no longer 100, so the
    emptier node now wins where v1.34 gave the even one the pod by a point.

    1 cpu + 1Gi on wide (16 cpu, 4Gi): LeastAllocated (93+75)//2 = 84, balance with the pod
    1 - |1/16-1/4|/2 -> 90, without 100: 50 + 40 // 2 = 70, 154; on even (4 cpu, 4Gi): 75 + 75
    = 150.
    """
    scenario = Scenario(
        nodes=[
            make_node("wide", cpu="16", memory="4Gi"),
            make_node("even", cpu="4", memory="4Gi"),
            make_node("tiny", cpu="1", memory="1Gi"),
        ],
        steps=[
            Step(make_pod("p1", cpu="1", memory="1Gi"), "wide"),
            # wide: cpu 87, mem 50 -> 68, balance 81 against 90 -> 70, 138; even 75 + 75.
            Step(make_pod("p2", cpu="1", memory="1Gi"), "even"),
            # wide still 138; even: 50 + 75.
            Step(make_pod("p3", cpu="1", memory="1Gi"), "wide"),
            # Best effort: the scorers count 100m/200Mi, BalancedAllocation skips the pod.
            # wide (2.1/16 cpu, 2.2/4Gi): (86+45)//2 = 65; even (1.1/4, 1.2/4): (72+70)//2 = 71;
            # tiny (0.1/1, 0.2/1): (90+80)//2 = 85.
            Step(make_pod("p4", cpu=None, memory=None), "tiny"),
            # Memory only: cpu counts as 100m for LeastAllocated, as 0 for the balance.
            # wide: (86+12)//2 = 49, balance 62 against 81 -> 65; even: (72+37)//2 = 54,
            # balance 81 against 100 -> 65.
            Step(make_pod("p5", cpu=None, memory="1536Mi"), "even"),
            Step(make_pod("p6", cpu="20"), UNSCHEDULABLE),
            Step(make_pod("p7", cpu="100m", memory="3Gi"), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_taints_and_tolerations(cluster: Cluster, namespace: str, prefix: str) -> None:
    """NoSchedule and NoExecute filter, PreferNoSchedule scores (weight 3), cordoned nodes."""
    dedicated = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    soft = {"key": "soft", "value": "yes", "effect": "PreferNoSchedule"}
    softer = {"key": "softer", "value": "yes", "effect": "PreferNoSchedule"}
    scenario = Scenario(
        nodes=[
            make_node("gpu", cpu="8", taints=[dedicated]),
            make_node("soft", cpu="8", taints=[soft]),
            make_node("softer", cpu="8", taints=[soft, softer]),
            make_node("small", cpu="2"),
            make_node("evict", cpu="8", taints=[{"key": "gone", "effect": "NoExecute"}]),
            make_node("cordoned", cpu="9", unschedulable=True),
        ],
        steps=[
            # TaintToleration: small 100, soft 50, softer 0; small's lower LeastAllocated and
            # balance do not make up for 3 * 50.
            Step(make_pod("p1", cpu="500m", memory="512Mi"), "small"),
            # Tolerating the dedicated taint makes gpu the emptiest node without soft taints.
            Step(
                make_pod("p2", cpu="500m", memory="512Mi", spec=tolerating({"key": "dedicated"})),
                "gpu",
            ),
            # Tolerating soft=yes: soft has no taint left to avoid, softer one.
            Step(
                make_pod(
                    "p3",
                    cpu="500m",
                    memory="512Mi",
                    spec=tolerating({"key": "soft", "value": "yes", "effect": "PreferNoSchedule"}),
                ),
                "soft",
            ),
            # Tolerating the NoExecute taint: evict is as empty as softer, without soft taints.
            Step(make_pod("p4", cpu="7", spec=tolerating({"key": "gone"})), "evict"),
            # Room for 8.5 cpu only on the cordoned node; a toleration with the wrong value
            # tolerates nothing, so gpu and evict fail on their taints, not on cpu.
            Step(
                make_pod("p5", cpu="8500m", spec=tolerating({"key": "dedicated", "value": "tpu"})),
                UNSCHEDULABLE,
            ),
            # Tolerating everything tolerates node.kubernetes.io/unschedulable too, which
            # NodeUnschedulable honours.
            Step(make_pod("p6", cpu="8500m", spec=tolerating({})), "cordoned"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def tolerating(toleration: dict[str, str]) -> dict[str, Any]:
    """A pod spec fragment with one toleration; Equal when it has a value, else Exists."""
    operator = "Equal" if "value" in toleration else "Exists"
    return {"tolerations": [{"operator": operator, **toleration}]}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def node_affinity(
    required: list[list[dict[str, Any]]] | None = None,
    preferred: list[tuple[int, list[dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """A pod spec fragment: required terms (each a list of matchExpressions, ORed) and
    (weight, matchExpressions) preferences."""
    terms: dict[str, Any] = {}
    if required is not None:
        terms["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": term} for term in required]
        }
    if preferred is not None:
        terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": {"matchExpressions": term}}
            for weight, term in preferred
        ]
    return {"affinity": {"nodeAffinity": terms}}


def test_node_affinity(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Required terms (ORed; In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields) and weighted
    preferences (NodeAffinity weight 2)."""
    by_name = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [f"{prefix}-bare"],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    }
    scenario = Scenario(
        nodes=[
            make_node("t1", labels={"tier": "1", "disk": "ssd"}),
            make_node("t2", labels={"tier": "2", "disk": "hdd"}),
            make_node("t3", labels={"tier": "3", "disk": "ssd", "gpu": "true"}),
            make_node("t4", labels={"tier": "4", "disk": "ssd"}, cpu="8"),
            make_node("bare", cpu="8"),
        ],
        steps=[
            # 1 < tier < 4: t2 or t3; preferring ssd picks t3.
            Step(
                make_pod(
                    "p1",
                    spec=node_affinity(
                        [[expr("tier", "Gt", "1"), expr("tier", "Lt", "4")]],
                        [(10, [expr("disk", "In", "ssd")])],
                    ),
                ),
                "t3",
            ),
            # Two ORed terms: tier 1, or no tier label (bare). bare has more room, but t1 has a
            # disk: 2 * 100 against 0.
            Step(
                make_pod(
                    "p2",
                    spec=node_affinity(
                        [[expr("tier", "In", "1")], [expr("tier", "DoesNotExist")]],
                        [(5, [expr("disk", "Exists")]), (1, [expr("gpu", "Exists")])],
                    ),
                ),
                "t1",
            ),
            # Preferences only, summed per node: t3 3 + 4 = 7, t4 4 + 1 = 5, t1 4; normalized
            # 100, 71, 57, which t4's extra room does not make up for.
            Step(
                make_pod(
                    "p3",
                    spec=node_affinity(
                        None,
                        [
                            (3, [expr("gpu", "In", "true")]),
                            (4, [expr("disk", "In", "ssd")]),
                            (1, [expr("tier", "Gt", "3")]),
                        ],
                    ),
                ),
                "t3",
            ),
            # NotIn matches nodes without the label, Lt does not; Lt compares integers
            # (2 < 10, though "2" > "10").
            Step(
                make_pod(
                    "p4",
                    spec=node_affinity([[expr("disk", "NotIn", "ssd"), expr("tier", "Lt", "10")]]),
                ),
                "t2",
            ),
            Step(make_pod("p5", spec=node_affinity([[expr("tier", "Gt", "4")]])), UNSCHEDULABLE),
            Step(make_pod("p6", spec=by_name), "bare"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def pod_term(labels: dict[str, str], topology: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": topology}


def pod_affinity(
    kind: str,
    required: list[dict[str, Any]] | None = None,
    preferred: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """``{kind: {...}}`` for kind podAffinity or podAntiAffinity, to merge into ``affinity``."""
    terms: dict[str, Any] = {}
    if required:
        terms["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred:
        terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "podAffinityTerm": term} for weight, term in preferred
        ]
    return {kind: terms}


def test_inter_pod_affinity(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Required and preferred anti-affinity on hostname and zone, their symmetry (existing pods'
    terms), required and preferred affinity (InterPodAffinity weight 2)."""
    # Node: (zone, cpu). b1 is the roomiest, c1 the smallest.
    zones = {"a1": ("a", "4"), "a2": ("a", "4"), "b1": ("b", "5"), "c1": ("c", "2")}
    web = {
        "affinity": {
            **pod_affinity(
                "podAntiAffinity",
                required=[pod_term({"app": "db"}, HOSTNAME)],
                preferred=[(100, pod_term({"app": "web"}, ZONE))],
            )
        }
    }
    solo = {
        "affinity": pod_affinity(
            "podAntiAffinity",
            required=[pod_term({"app": "web"}, HOSTNAME), pod_term({"app": "solo"}, HOSTNAME)],
        )
    }
    scenario = Scenario(
        nodes=[
            make_node(name, cpu=cpu, labels={ZONE: f"{prefix}-{zone}"})
            for name, (zone, cpu) in zones.items()
        ],
        existing=[
            ("a1", make_pod("db", labels={"app": "db"})),
            # Keeps pods labelled role=intruder off its node, whatever their own terms say.
            (
                "a1",
                make_pod(
                    "guard",
                    labels={"app": "guard"},
                    spec={
                        "affinity": pod_affinity(
                            "podAntiAffinity", [pod_term({"role": "intruder"}, HOSTNAME)]
                        )
                    },
                ),
            ),
        ],
        steps=[
            # Not beside db (a1); no web pod yet: b1 has the most room (98 + 99 against 97 + 99).
            Step(make_pod("web1", labels={"app": "web"}, spec=web), "b1"),
            # Zone b now holds a web pod: -100 from web2's term and -100 from web1's (symmetry);
            # normalized b1 0, a2 and c1 100.
            Step(make_pod("web2", labels={"app": "web"}, spec=web), "a2"),
            Step(make_pod("web3", labels={"app": "web"}, spec=web), "c1"),
            # Every zone has a web pod now: all score the same, room decides.
            Step(make_pod("web4", labels={"app": "web"}, spec=web), "b1"),
            # Not beside any web pod: only a1.
            Step(make_pod("solo1", labels={"app": "solo"}, spec=solo), "a1"),
            # ... and not beside solo1 either: nowhere.
            Step(make_pod("solo2", labels={"app": "solo"}, spec=solo), UNSCHEDULABLE),
            # Wants to be beside db, but guard keeps it off a1: the other nodes fail the pod's
            # own affinity, a1 the existing pod's anti-affinity.
            Step(
                make_pod(
                    "intruder",
                    labels={"role": "intruder"},
                    spec={
                        "affinity": pod_affinity("podAffinity", [pod_term({"app": "db"}, HOSTNAME)])
                    },
                ),
                UNSCHEDULABLE,
            ),
            # Prefers db's zone (a1, a2): a2 has more room left than a1.
            Step(
                make_pod(
                    "friend",
                    spec={
                        "affinity": pod_affinity(
                            "podAffinity", preferred=[(50, pod_term({"app": "db"}, ZONE))]
                        )
                    },
                ),
                "a2",
            ),
            # The first matching pod of a required affinity may go anywhere its own labels
            # satisfy the term: none exists, the pod matches itself, so every node is fine.
            Step(
                make_pod(
                    "first",
                    labels={"app": "first"},
                    spec={
                        "affinity": pod_affinity("podAffinity", [pod_term({"app": "first"}, ZONE)])
                    },
                ),
                ANY,
            ),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def spread(
    labels: dict[str, str], topology: str, max_skew: int, when: str, **extra: Any
) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": labels},
        "topologyKey": topology,
        "maxSkew": max_skew,
        "whenUnsatisfiable": when,
        **extra,
    }


def test_topology_spread(cluster: Cluster, namespace: str, prefix: str) -> None:
    """DoNotSchedule filters by skew (minDomains, a node without the key), ScheduleAnyway scores
    (PodTopologySpread weight 2). z5 became a tie of a2 and b1 with v1.37's BalancedAllocation
    (it scores the change the pod makes to the node's balance)."""
    nodes = [
        make_node("a1", labels={ZONE: f"{prefix}-a"}),
        make_node("a2", labels={ZONE: f"{prefix}-a"}),
        make_node("b1", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-b"}),
        make_node("c1", cpu="2", memory="4Gi", labels={ZONE: f"{prefix}-c"}),
        make_node("nozone", cpu="32", memory="64Gi"),
    ]
    zonal = {"topologySpreadConstraints": [spread({"app": "zonal"}, ZONE, 1, "DoNotSchedule")]}
    soft = {"topologySpreadConstraints": [spread({"app": "soft"}, HOSTNAME, 1, "ScheduleAnyway")]}
    scenario = Scenario(
        nodes=nodes,
        existing=[
            ("a1", make_pod("z0", labels={"app": "zonal"})),
            ("a1", make_pod("z00", labels={"app": "zonal"})),
            *(("b1", make_pod(f"s{i}", labels={"app": "soft"})) for i in range(3)),
        ],
        steps=[
            # Zones a 2, b 0, c 0: a would make a skew of 3; nozone lacks the key; b1 is bigger.
            Step(make_pod("z1", labels={"app": "zonal"}, spec=zonal), "b1"),
            Step(make_pod("z2", labels={"app": "zonal"}, spec=zonal), "c1"),
            Step(make_pod("z3", labels={"app": "zonal"}, spec=zonal), "b1"),
            Step(make_pod("z4", labels={"app": "zonal"}, spec=zonal), "c1"),
            # A pod its own selector does not match adds nothing to a domain's count: a 2 + 0,
            # b 2 and c 2 are all fine; nozone still lacks the key. a2, the emptiest, and b1,
            # the biggest, tie: 97 + 74 against 96 + 75 (v1.37's BalancedAllocation gives the
            # empty a2 one point less than b1, whose balance the pod leaves as it was).
            Step(make_pod("z5", labels={"app": "other"}, spec=zonal), frozenset({"a2", "b1"})),
            # minDomains 4 with 3 zones: the global minimum counts as 0, every zone skews by 3.
            Step(
                make_pod(
                    "z6",
                    labels={"app": "zonal"},
                    spec={
                        "topologySpreadConstraints": [
                            spread({"app": "zonal"}, ZONE, 1, "DoNotSchedule", minDomains=4)
                        ]
                    },
                ),
                UNSCHEDULABLE,
            ),
            # ScheduleAnyway on hostname: b1, holding three soft pods, scores lowest although it
            # has the most room of the zoned nodes; nozone, the biggest, holds none and wins.
            Step(make_pod("soft1", labels={"app": "soft"}, spec=soft), "nozone"),
            # nozone now holds one, a2 none: a2's spread score outweighs nozone's room.
            Step(make_pod("soft2", labels={"app": "soft"}, spec=soft), "a2"),
            # Both kinds: maxSkew 2 on zones admits a, b and c (2 each); on hostnames, a2 is
            # the only zoned node without an app=zonal pod.
            Step(
                make_pod(
                    "both",
                    labels={"app": "zonal"},
                    spec={
                        "topologySpreadConstraints": [
                            spread({"app": "zonal"}, ZONE, 2, "DoNotSchedule"),
                            spread({"app": "zonal"}, HOSTNAME, 1, "ScheduleAnyway"),
                        ]
                    },
                ),
                "a2",
            ),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_image_locality(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Nodes holding the pod's images score higher, by size and by how many nodes hold them
    (ImageLocality weight 1); every other score is equal, the nodes being alike."""
    big, small = f"example.com/{prefix}/big:1", f"example.com/{prefix}/small:1"
    scenario = Scenario(
        nodes=[
            make_node("i1", images=[(big, 800 * MB)]),
            make_node("i2", images=[(small, 300 * MB)]),
            make_node("i3", images=[(big, 800 * MB), (small, 300 * MB)]),
            make_node("i4"),
        ],
        steps=[
            # Two containers: i3 holds both images, the threshold is 2 * 1000 MiB.
            Step(
                make_pod("p1", image=big, spec={"initContainers": [{"name": "i", "image": small}]}),
                "i3",
            ),
            # One container: i1 and i3 hold big alike; i3 is busier now.
            Step(make_pod("p2", image=big), "i1"),
            Step(make_pod("p3", image=small), "i2"),
            # "big" without a tag means big:latest, which no node holds: room decides.
            Step(make_pod("p4", image=f"example.com/{prefix}/big"), "i4"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def container(name: str, cpu: str, *, sidecar: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": PAUSE,
        "resources": {"requests": {"cpu": cpu}},
        **({"restartPolicy": "Always"} if sidecar else {}),
        **extra,
    }


def test_init_containers_and_sidecars(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Init containers need their peak, sidecars (restartable init containers) run beside the
    containers and the init containers after them."""
    scenario = Scenario(
        nodes=[make_node("s", cpu="2", memory="4Gi"), make_node("m", cpu="3", memory="4Gi")],
        steps=[
            # max(500m, 2500m): only m.
            Step(
                make_pod("p1", cpu="500m", spec={"initContainers": [container("init", "2500m")]}),
                "m",
            ),
            # The sidecar first: the init container runs beside it, 1000m + 1500m = 2500m.
            Step(
                make_pod(
                    "p2",
                    cpu="1",
                    spec={
                        "initContainers": [
                            container("side", "1", sidecar=True),
                            container("init", "1500m"),
                        ]
                    },
                ),
                UNSCHEDULABLE,
            ),
            # The init container first: max(1500m, 1000m + 900m) = 1900m fits s.
            Step(
                make_pod(
                    "p3",
                    cpu="900m",
                    spec={
                        "initContainers": [
                            container("init", "1500m"),
                            container("side", "1", sidecar=True),
                        ]
                    },
                ),
                "s",
            ),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def port(number: int, protocol: str = "TCP", **extra: Any) -> dict[str, Any]:
    return {"ports": [{"containerPort": number, "hostPort": number, "protocol": protocol, **extra}]}


def test_host_ports(cluster: Cluster, namespace: str, prefix: str) -> None:
    """A host port conflicts on the same protocol and an overlapping IP; init containers'
    ports are free again once they have exited, sidecars' are not."""
    scenario = Scenario(
        nodes=[
            make_node("h1"),
            make_node("h2", cpu="16", memory="32Gi"),
            make_node("h3"),
        ],
        existing=[
            ("h1", make_pod("tcp", container=port(8080))),
            ("h2", make_pod("udp", container=port(8080, "UDP"))),
        ],
        steps=[
            # h1 holds 8080/TCP; UDP does not conflict; h2 has the most room.
            Step(make_pod("p1", container=port(8080)), "h2"),
            Step(make_pod("p2", container=port(8080, hostIP="127.0.0.1")), "h3"),
            Step(make_pod("p3", container=port(8080)), UNSCHEDULABLE),
            # An init container's host port conflicts with nothing once the pod runs.
            Step(
                make_pod(
                    "p4", spec={"initContainers": [{**container("init", "100m"), **port(8080)}]}
                ),
                "h2",
            ),
            # A sidecar's port counts: h2 and h3 hold 9090 after this.
            Step(
                make_pod(
                    "p5",
                    spec={
                        "initContainers": [
                            {**container("side", "100m", sidecar=True), **port(9090)}
                        ]
                    },
                ),
                "h2",
            ),
            Step(make_pod("p6", container=port(9090)), ANY),
        ],
    )
    run(cluster, namespace, prefix, scenario)


GPU = "example.com/gpu"


def test_resource_edges(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Extended resources, the pod count, pod-level requests, ephemeral storage."""
    scenario = Scenario(
        nodes=[
            make_node("g", extra={GPU: "2"}),
            make_node("p", cpu="16", memory="32Gi", pods="2"),
            make_node("e", extra={"ephemeral-storage": "10Gi"}),
        ],
        existing=[("p", make_pod("resident"))],
        steps=[
            Step(make_pod("gpu1", extra={GPU: "1"}), "g"),
            Step(make_pod("gpu2", extra={GPU: "2"}), UNSCHEDULABLE),
            # p is the roomiest, and has room for one more pod.
            Step(make_pod("p1"), "p"),
            # p is full (2 pods); e is emptier than g.
            Step(make_pod("p2"), "e"),
            # Pod-level requests (3950m) replace the containers' (100m): nowhere has that.
            Step(
                make_pod("pod-level", spec={"resources": {"requests": {"cpu": "3950m"}}}),
                UNSCHEDULABLE,
            ),
            Step(make_pod("disk", extra={"ephemeral-storage": "5Gi"}), "e"),
            # Explicit zero requests are not replaced by the scorers' defaults (100m, 200Mi).
            Step(make_pod("zero", cpu="0", memory="0"), "g"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_inter_pod_affinity_of_existing_pods(cluster: Cluster, namespace: str, prefix: str) -> None:
    """Existing pods' terms score the incoming pod too: their preferred affinity and anti-affinity
    with their weights, their required affinity with hardPodAffinityWeight (1)."""
    scenario = Scenario(
        nodes=[
            make_node("x1", labels={ZONE: f"{prefix}-x"}),
            make_node("y1", cpu="8", memory="16Gi", labels={ZONE: f"{prefix}-y"}),
        ],
        existing=[
            (
                "x1",
                make_pod(
                    "star",
                    spec={
                        "affinity": pod_affinity(
                            "podAffinity", preferred=[(80, pod_term({"role": "fan"}, ZONE))]
                        )
                    },
                ),
            ),
            (
                "y1",
                make_pod(
                    "loner",
                    spec={
                        "affinity": pod_affinity(
                            "podAntiAffinity",
                            preferred=[(100, pod_term({"role": "shy"}, HOSTNAME))],
                        )
                    },
                ),
            ),
            (
                "x1",
                make_pod(
                    "needy",
                    spec={
                        "affinity": pod_affinity(
                            "podAffinity", [pod_term({"role": "pal"}, HOSTNAME)]
                        )
                    },
                ),
            ),
        ],
        steps=[
            # Without terms of their own, each would go to the roomier y1.
            Step(make_pod("plain"), "y1"),
            Step(make_pod("fan", labels={"role": "fan"}), "x1"),
            Step(make_pod("shy", labels={"role": "shy"}), "x1"),
            Step(make_pod("pal", labels={"role": "pal"}), "x1"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_topology_spread_policies(cluster: Cluster, namespace: str, prefix: str) -> None:
    """nodeTaintsPolicy and nodeAffinityPolicy decide which nodes' domains count;
    matchLabelKeys narrows the pods counted."""
    in_k_or_l = node_affinity(
        [[{"key": ZONE, "operator": "In", "values": [f"{prefix}-k", f"{prefix}-l"]}]]
    )

    def tp(
        name: str, spec: dict[str, Any] | None = None, version: str = "", **extra: Any
    ) -> dict[str, Any]:
        """A pod labelled app=tp, spread over zones by app=tp with maxSkew 1, DoNotSchedule."""
        constraint = spread({"app": "tp"}, ZONE, 1, "DoNotSchedule", **extra)
        return make_pod(
            name,
            labels={"app": "tp", **({"version": version} if version else {})},
            spec={"topologySpreadConstraints": [constraint], **(spec or {})},
        )

    scenario = Scenario(
        nodes=[
            make_node("k1", labels={ZONE: f"{prefix}-k"}),
            make_node("l1", cpu="8", memory="16Gi", labels={ZONE: f"{prefix}-l"}),
            make_node(
                "n1",
                labels={ZONE: f"{prefix}-n"},
                taints=[{"key": "t", "value": "x", "effect": "NoSchedule"}],
            ),
        ],
        existing=[
            ("k1", make_pod("k-0", labels={"app": "tp"})),
            ("l1", make_pod("l-0", labels={"app": "tp"})),
        ],
        steps=[
            # Ignore (default) counts the tainted n's 0 as the minimum: k and l skew by 2.
            Step(tp("ignore-taints"), UNSCHEDULABLE),
            # Honor leaves n out: the minimum is 1.
            Step(tp("honor-taints", nodeTaintsPolicy="Honor"), "l1"),
            # Honor (default) for node affinity leaves n out too: k 1, l 2, only k1.
            Step(tp("honor-affinity", in_k_or_l), "k1"),
            # Ignore counts n (0) again: k and l skew by 2.
            Step(tp("ignore-affinity", in_k_or_l, nodeAffinityPolicy="Ignore"), UNSCHEDULABLE),
            # Only pods with the pod's own version count: none anywhere, l1 has more room.
            Step(tp("version", version="v2", matchLabelKeys=["version"]), "l1"),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_a_nominated_node_is_tried_first(cluster: Cluster, namespace: str, prefix: str) -> None:
    """A pod whose status names a node (``nominatedNodeName``, as an earlier preemption leaves
    it) goes there when that node fits it, though another scores higher; when it does not fit,
    every node is filtered and the best one wins (kube's evaluateNominatedNode)."""

    def nominate(name: str, suffix: str) -> Callable[[Cluster, str], None]:
        def prepare(cluster: Cluster, namespace: str) -> None:
            status = {"nominatedNodeName": f"{prefix}-{suffix}"}
            write_status(
                cluster, namespace, {"kind": "Pod", "metadata": {"name": name}, "status": status}
            )

        return prepare

    scenario = Scenario(
        nodes=[
            make_node("roomy", cpu="8", memory="16Gi"),
            make_node("small"),
            make_node("tiny", cpu="1"),
        ],
        steps=[
            # LeastAllocated prefers roomy; small, nominated, fits.
            Step(make_pod("to-small", cpu="2"), "small", nominate("to-small", "small")),
            # tiny, nominated, has no room for 2 cpu: roomy, the best of all.
            Step(make_pod("to-tiny", cpu="2"), "roomy", nominate("to-tiny", "tiny")),
        ],
    )
    run(cluster, namespace, prefix, scenario)


RESTART_ALL = "RestartAllContainersOnContainerExits"


def test_node_declared_features(cluster: Cluster, namespace: str, prefix: str) -> None:
    """NodeDeclaredFeatures (v1.37's default profile): a pod whose container restarts all
    containers on an exit code (RestartAllContainersOnContainerExits, on by default) fits only
    nodes whose ``status.declaredFeatures`` lists that feature; the others say "node(s) didn't
    match Pod's required features". A pod that needs nothing goes anywhere."""
    restarts_all = {
        "restartPolicy": "Never",
        "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ],
    }

    def declaring(suffix: str, cpu: str, *features: str) -> dict[str, Any]:
        obj = make_node(suffix, cpu=cpu)
        obj["status"]["declaredFeatures"] = sorted(features)
        return obj

    scenario = Scenario(
        nodes=[
            make_node("plain", cpu="8"),
            declaring("declares", "4", RESTART_ALL, "UserNamespacesHostNetworkSupport"),
            declaring("other", "6", "UserNamespacesHostNetworkSupport"),
        ],
        steps=[
            # The roomier nodes lack the feature: only declares is feasible.
            Step(make_pod("restarter", cpu="1", container=restarts_all), "declares"),
            # A pod that needs no feature goes to the roomiest node.
            Step(make_pod("plain-pod", cpu="1"), "plain"),
            # declares has 3 cpu left: Insufficient cpu there, the feature missing elsewhere.
            Step(make_pod("too-big", cpu="4", container=restarts_all), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_in_place_resize_requests(cluster: Cluster, namespace: str, prefix: str) -> None:
    """A pod resizing in place counts on its node as the largest of its spec, what the kubelet
    allocated and what its containers run with (component-helpers' PodRequests with the
    status' resources, kube-scheduler's NodeInfo); a resize the kubelet found infeasible leaves
    the spec out. No kubelet runs here: the statuses are written as a kubelet would write them.

    a: spec 1 cpu, allocated and running with 3 (shrinking): counts 3, 1 free.
    b: spec 2 cpu, no resize: counts 2, 2 free.
    c: spec 3 cpu, allocated and running with 1, resize Infeasible: counts 1, 3 free.
    """

    def resized(allocated: str, running: str, infeasible: bool = False) -> dict[str, Any]:
        status: dict[str, Any] = {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "main",
                    "image": PAUSE,
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "allocatedResources": {"cpu": allocated, "memory": "128Mi"},
                    "resources": {"requests": {"cpu": running, "memory": "128Mi"}},
                }
            ],
        }
        if infeasible:
            status["conditions"] = [
                {
                    "type": "PodResizePending",
                    "status": "True",
                    "reason": "Infeasible",
                    "message": "Node didn't have enough capacity",
                }
            ]
        return status

    def write_resizes(cluster: Cluster, namespace: str) -> None:
        for name, status in (
            ("shrinking", resized("3", "3")),
            ("stuck", resized("1", "1", infeasible=True)),
        ):
            write_status(
                cluster, namespace, {"kind": "Pod", "metadata": {"name": name}, "status": status}
            )
        # kube-scheduler learns of the statuses through its informer.
        time.sleep(1.0)

    scenario = Scenario(
        nodes=[make_node("a"), make_node("b"), make_node("c")],
        existing=[
            ("a", make_pod("shrinking", cpu="1")),
            ("b", make_pod("steady", cpu="2")),
            ("c", make_pod("stuck", cpu="3")),
        ],
        steps=[
            # Counting specs, a (3 free) would take it; counted as kube counts, only c has room.
            Step(make_pod("p1", cpu="2500m"), "c", write_resizes),
            Step(make_pod("p2", cpu="1500m"), "b"),
            Step(make_pod("p3", cpu="1"), "a"),
            Step(make_pod("p4", cpu="600m"), UNSCHEDULABLE),
        ],
    )
    run(cluster, namespace, prefix, scenario)


def test_the_default_profiles_filters_are_kubes_in_its_order(
    cluster: Cluster, tmp_path: Path
) -> None:
    """default-profile.yaml's predicates are the filters of kube-scheduler's default profile that
    this scheduler has, in its order (NodeName before NodeUnschedulable, NodeDeclaredFeatures
    last, in v1.37), as the real binary completes its configuration (``--write-config-to``
    writes it and exits: kube-scheduler runs the multiPoint plugins that filter in their
    order)."""
    written = tmp_path / "config.yaml"
    subprocess.run(
        [
            str(cluster.bin / "kube-scheduler"),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--secure-port=0",
            "--write-config-to",
            str(written),
        ],
        check=True,
        capture_output=True,
    )
    (profile,) = yaml.safe_load(written.read_text())["profiles"]
    multi_point = [plugin["name"] for plugin in profile["plugins"]["multiPoint"]["enabled"]]
    ours = [p["name"] for p in read_policy_file(DEFAULT_PROFILE)[0]["spec"]["predicates"]]
    assert [name for name in multi_point if name in FILTERS] == ours
