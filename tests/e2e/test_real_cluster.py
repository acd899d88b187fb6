"""The operator among the real controllers (``real_cluster``: kube-controller-manager, kwok's
simulated kubelets, kube-scheduler): the pods of Deployments, StatefulSets, Jobs and DaemonSets are
bound by a policy and run; claims that wait for their first consumer are bound by the real PV
controller to the PV the policy chose, and a pod made again goes back to its PV; preemption's
victims are deleted gracefully and removed by their kubelet, and a victim's controller making it
again does not take the preemptor's room; PodDisruptionBudgets whose status the disruption
controller writes are honoured; both as by kube-scheduler; pods whose ResourceClaims the
resourceclaim controller makes from a ResourceClaimTemplate get devices allocated, beside
kube-scheduler's pods, and a pod's claim deleted with it frees its device. Nothing here stands in
for a controller or a kubelet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from harness.e2e import Cluster, Operator, add_nodes, events, items, wait_for
from harness.objects import (
    device,
    device_class,
    exactly,
    node,
    pod,
    policy,
    resource_claim_template,
    resource_slice,
)
from test_parity_volumes import storage_class, volume

pytestmark = pytest.mark.real_cluster

# Far longer than any of these takes; a timeout only says something never happened.
GENEROUS = 90.0


def template(
    scheduler: str, labels: dict[str, str], cpu: str = "100m", **spec: Any
) -> dict[str, Any]:
    """A pod template for ``scheduler``: the pod of harness.objects.pod with ``labels``,
    requesting ``cpu``."""
    made = pod("unused", scheduler, cpu=cpu, labels=labels, extra=spec)
    return {"metadata": {"labels": labels}, "spec": made["spec"]}


def pods_of(cluster: Cluster, namespace: str, app: str) -> list[dict[str, Any]]:
    return items(cluster, "pods", "-n", namespace, "-l", f"app={app}")


def assert_bound_by(cluster: Cluster, namespace: str, pods: list[dict[str, Any]], by: str) -> None:
    """Each pod was told bound by SchedulingPolicy ``by``, to the node it is on."""
    told = {
        e["involvedObject"]["name"]: e["message"] for e in events(cluster, namespace, "Scheduled")
    }
    for p in pods:
        name, node_name = p["metadata"]["name"], p["spec"]["nodeName"]
        assert told[name].startswith(
            f"Successfully assigned {namespace}/{name} to {node_name} (SchedulingPolicy {by},"
        ), told[name]


def running(pods: list[dict[str, Any]]) -> bool:
    return all(p["status"].get("phase") == "Running" and p["status"].get("podIP") for p in pods)


def named(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The pod ``name`` of ``namespace``, or none."""
    return items(cluster, "pods", "-n", namespace, "--field-selector", f"metadata.name={name}")


def wait_running(
    cluster: Cluster, namespace: str, name: str, replacing: str = ""
) -> dict[str, Any]:
    """The pod ``name`` once it runs; with ``replacing``, one made again in place of the pod of
    that uid."""
    return wait_for(
        f"{name} Running",
        lambda: next(
            (
                p
                for p in named(cluster, namespace, name)
                if p["metadata"]["uid"] != replacing and running([p])
            ),
            None,
        ),
        timeout=GENEROUS,
    )


def wait_settled(
    cluster: Cluster, namespace: str, resource: str, app: str, *, counted: str, count: int
) -> list[dict[str, Any]]:
    """The pods of the workload ``app`` (the namespace's one object of ``resource``) once its
    controller counts ``count`` of them in ``status.<counted>`` and all ``count`` run."""

    def settled() -> list[dict[str, Any]] | None:
        status = items(cluster, resource, "-n", namespace)[0]["status"]
        pods = pods_of(cluster, namespace, app)
        done = status.get(counted) == count and len(pods) == count and running(pods)
        return pods if done else None

    return wait_for(f"the {resource} {app} settled, its pods Running", settled, timeout=GENEROUS)


def test_a_deployments_pods_are_bound_by_the_policy_and_run(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    add_nodes(real_cluster, *(node(f"{pool}-{i}", cpu="2", labels={"pool": pool}) for i in (0, 1)))
    real_cluster.apply(policy(pool, pool))
    operator.start()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(pool, {"app": "web"}),
        },
    }
    real_cluster.apply(deployment, namespace=namespace)

    pods = wait_settled(
        real_cluster, namespace, "deployments", "web", counted="availableReplicas", count=3
    )
    assert {p["spec"]["nodeName"] for p in pods} <= {f"{pool}-0", f"{pool}-1"}
    assert_bound_by(real_cluster, namespace, pods, pool)


def test_a_statefulsets_claims_are_bound_by_the_pv_controller_to_the_pvs_the_policy_chose(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """Claims that wait for their first consumer, no provisioner: VolumeBinding puts each pod on
    the node of a local PV that fits its claim and reserves the PV at PreBind (its claimRef), and
    kube-controller-manager's PV controller completes the binding; the pods then run there."""
    names = [f"{pool}-{i}" for i in range(3)]
    add_nodes(real_cluster, *(node(n, labels={"pool": pool}) for n in names))
    labels = {"pool": pool}
    # The third node has no PV: no pod may go there.
    volumes = [volume(f"{n}-pv", storage_class=pool, nodes=[n], labels=labels) for n in names[:2]]
    real_cluster.apply({**storage_class(pool), "metadata": {"name": pool, "labels": labels}})
    try:
        real_cluster.apply(*volumes)
        predicates = [{"name": n} for n in ("NodeResourcesFit", "TaintToleration", "VolumeBinding")]
        real_cluster.apply(policy(pool, pool, predicates=predicates))
        operator.start()
        claim = {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": pool,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        db = template(pool, {"app": "db"})
        db["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        stateful_set = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": db,
                "volumeClaimTemplates": [claim],
            },
        }
        real_cluster.apply(stateful_set, namespace=namespace)

        pods = wait_settled(
            real_cluster, namespace, "statefulsets", "db", counted="readyReplicas", count=2
        )
        assert_bound_by(real_cluster, namespace, pods, pool)
        claims = {c["metadata"]["name"]: c for c in items(real_cluster, "pvc", "-n", namespace)}
        pvs = {v["metadata"]["name"]: v for v in items(real_cluster, "pv", "-l", f"pool={pool}")}
        for p in pods:
            pvc = claims[f"data-{p['metadata']['name']}"]
            assert pvc["status"]["phase"] == "Bound"
            pv = pvs[pvc["spec"]["volumeName"]]
            assert pv["status"]["phase"] == "Bound"
            assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
            # The PV's node is the pod's: the name says it, and so does its affinity.
            assert pv["metadata"]["name"] == f"{p['spec']['nodeName']}-pv"

        # Made again, a pod keeps its claim, bound now: it goes back to the node of its PV.
        (gone,) = (p for p in pods if p["metadata"]["name"] == "db-0")
        real_cluster.kubectl("delete", "pod", "db-0", "-n", namespace, "--wait=false")
        again = wait_running(real_cluster, namespace, "db-0", replacing=gone["metadata"]["uid"])
        assert again["spec"]["nodeName"] == gone["spec"]["nodeName"]
    finally:
        real_cluster.kubectl("delete", "pv,storageclasses", "-l", f"pool={pool}", "--wait=false")


def test_a_jobs_pods_are_bound_by_the_policy_and_the_job_completes(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """Two of the Job's pods at a time, on a node with room for one: each waits for the one
    before it to succeed, which frees its room (a finished pod holds none)."""
    add_nodes(real_cluster, node(f"{pool}-0", cpu="1", labels={"pool": pool}))
    real_cluster.apply(policy(pool, pool))
    operator.start()
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "report"},
        "spec": {
            "completions": 3,
            "parallelism": 2,
            "template": template(pool, {"app": "report"}, cpu="600m", restartPolicy="Never"),
        },
    }
    real_cluster.apply(job, namespace=namespace)

    def complete() -> bool:
        done = items(real_cluster, "jobs", "-n", namespace)[0]["status"].get("conditions") or ()
        return any(c["type"] == "Complete" and c["status"] == "True" for c in done)

    wait_for("the Job complete", complete, timeout=GENEROUS)
    pods = pods_of(real_cluster, namespace, "report")
    assert len(pods) == 3
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert_bound_by(real_cluster, namespace, pods, pool)


def test_a_daemonsets_pods_are_bound_each_to_its_node_and_run(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """The DaemonSet controller pins each pod to its node by a required node affinity on the
    node's name (matchFields metadata.name), which NodeAffinity honours."""
    names = [f"{pool}-{i}" for i in range(3)]
    add_nodes(real_cluster, *(node(n, labels={"pool": pool}) for n in names))
    predicates = [{"name": n} for n in ("NodeResourcesFit", "TaintToleration", "NodeAffinity")]
    real_cluster.apply(policy(pool, pool, predicates=predicates))
    operator.start()
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": template(pool, {"app": "agent"}, nodeSelector={"pool": pool}),
        },
    }
    real_cluster.apply(daemon_set, namespace=namespace)

    pods = wait_settled(
        real_cluster, namespace, "daemonsets", "agent", counted="numberReady", count=3
    )
    assert sorted(p["spec"]["nodeName"] for p in pods) == names
    assert_bound_by(real_cluster, namespace, pods, pool)


def priority_class(name: str, value: int, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"pool": pool}},
        "value": value,
    }


@pytest.fixture
def preempting(real_cluster: Cluster, pool: str, operator: Operator) -> Iterator[tuple[str, str]]:
    """The pool's policy with DefaultPreemption, served by the started operator, and two
    PriorityClasses of the pool: their names, low and high; deleted afterwards."""
    low, high = f"{pool}-low", f"{pool}-high"
    real_cluster.apply(priority_class(low, 10, pool), priority_class(high, 1000, pool))
    real_cluster.apply(policy(pool, pool, postFilters=[{"name": "DefaultPreemption"}]))
    operator.start()
    yield low, high
    real_cluster.kubectl("delete", "priorityclasses", "-l", f"pool={pool}", "--wait=false")


def test_a_preemption_victim_is_deleted_gracefully_and_its_kubelet_removes_it(
    real_cluster: Cluster, namespace: str, pool: str, preempting: tuple[str, str]
) -> None:
    """DefaultPreemption marks the victim (DisruptionTarget) and deletes it with its grace
    period; kwok, its kubelet, removes it; the preemptor is then bound where it was."""
    low, high = preempting
    target = f"{pool}-0"
    add_nodes(real_cluster, node(target, cpu="2", labels={"pool": pool}))
    real_cluster.apply(
        pod("victim", pool, cpu="2", extra={"priorityClassName": low}), namespace=namespace
    )
    victim_uid = wait_running(real_cluster, namespace, "victim")["metadata"]["uid"]

    real_cluster.apply(
        pod("preemptor", pool, cpu="2", extra={"priorityClassName": high}), namespace=namespace
    )
    preemptor = wait_running(real_cluster, namespace, "preemptor")
    assert preemptor["spec"]["nodeName"] == target
    assert not named(real_cluster, namespace, "victim")
    preempted = events(real_cluster, namespace, "Preempted")
    assert [e["involvedObject"]["uid"] for e in preempted] == [victim_uid]
    assert preempted[0]["message"] == (
        f"Preempted by pod {preemptor['metadata']['uid']} on node {target}"
    )


@pytest.mark.parametrize("scheduler", ["ours", "kube-scheduler"])
def test_a_preempted_replica_made_again_leaves_the_room_to_the_preemptor(
    real_cluster: Cluster, namespace: str, pool: str, preempting: tuple[str, str], scheduler: str
) -> None:
    """The victim is a ReplicaSet's pod: its controller makes it again at once, while the
    preemptor waits for the room it is nominated to. The new replica, of lower priority, must
    not take that room: one eviction only, with our DefaultPreemption as with kube-scheduler's."""
    low, high = preempting
    name = pool if scheduler == "ours" else "default-scheduler"
    target = f"{pool}-0"
    add_nodes(real_cluster, node(target, cpu="2", labels={"pool": pool}))
    on_pool = {"nodeSelector": {"pool": pool}}
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "low"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "low"}},
            "template": template(name, {"app": "low"}, cpu="2", priorityClassName=low, **on_pool),
        },
    }
    real_cluster.apply(replica_set, namespace=namespace)
    wait_for(
        "the replica Running",
        lambda: (found := pods_of(real_cluster, namespace, "low")) and running(found),
        timeout=GENEROUS,
    )
    real_cluster.apply(
        pod("preemptor", name, cpu="2", extra={"priorityClassName": high, **on_pool}),
        namespace=namespace,
    )
    assert wait_running(real_cluster, namespace, "preemptor")["spec"]["nodeName"] == target

    def replaced() -> list[dict[str, Any]]:
        return [
            e
            for e in events(real_cluster, namespace, "FailedScheduling")
            if e["involvedObject"]["name"].startswith("low-")
        ]

    wait_for("the new replica told it does not fit", replaced, timeout=GENEROUS)
    (replica,) = pods_of(real_cluster, namespace, "low")
    assert not replica["spec"].get("nodeName")
    assert len(events(real_cluster, namespace, "Preempted")) == 1


@pytest.mark.parametrize("scheduler", ["ours", "kube-scheduler"])
def test_preemption_spares_the_pod_a_budget_guards_as_its_controller_counts(
    real_cluster: Cluster, namespace: str, pool: str, preempting: tuple[str, str], scheduler: str
) -> None:
    """Two nodes, each full with one pod: on a a pod of priority 0 that a PodDisruptionBudget
    guards (minAvailable 1: no disruption allowed, as the disruption controller counts it), on b
    one of a low priority. A high-priority pod needs a whole node: it preempts the pod on b,
    though a's is the cheaper victim (fewest budget violations weigh first), with our
    DefaultPreemption as with kube-scheduler's."""
    low, high = preempting
    name = pool if scheduler == "ours" else "default-scheduler"
    add_nodes(real_cluster, *(node(f"{pool}-{n}", cpu="2", labels={"pool": pool}) for n in "ab"))
    on_pool = {"nodeSelector": {"pool": pool}}
    real_cluster.apply(
        pod("guarded", name, cpu="2", labels={"app": "guarded"},
            extra={**on_pool, "nodeName": f"{pool}-a"}),
        pod("free", name, cpu="2",
            extra={**on_pool, "nodeName": f"{pool}-b", "priorityClassName": low}),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        },
        namespace=namespace,
    )  # fmt: skip

    def guarding() -> bool:
        budget = items(real_cluster, "pdb", "-n", namespace)[0].get("status") or {}
        return budget.get("currentHealthy") == 1 and budget.get("disruptionsAllowed") == 0

    wait_for("the disruption controller to count the guarded pod", guarding, timeout=GENEROUS)
    real_cluster.apply(
        pod("preemptor", name, cpu="2", extra={**on_pool, "priorityClassName": high}),
        namespace=namespace,
    )
    preemptor = wait_running(real_cluster, namespace, "preemptor")
    assert preemptor["spec"]["nodeName"] == f"{pool}-b"
    assert not named(real_cluster, namespace, "free")
    assert running(named(real_cluster, namespace, "guarded"))
    preempted = events(real_cluster, namespace, "Preempted")
    assert [e["involvedObject"]["name"] for e in preempted] == ["free"]


def claim_of(cluster: Cluster, namespace: str, found: dict[str, Any]) -> dict[str, Any]:
    """The ResourceClaim the resourceclaim controller made for the pod ``found`` from its
    template (the pod's status names it)."""
    (status,) = found["status"]["resourceClaimStatuses"]
    (claim,) = items(
        cluster,
        "resourceclaims.resource.k8s.io",
        "-n",
        namespace,
        "--field-selector",
        f"metadata.name={status['resourceClaimName']}",
    )
    return claim


def devices_of(claim: dict[str, Any]) -> list[str]:
    results = claim["status"]["allocation"]["devices"]["results"]
    return [f"{r['pool']}/{r['device']}" for r in results]


def test_claims_made_from_a_template_are_allocated_beside_kube_schedulers(
    real_cluster: Cluster, namespace: str, pool: str, operator: Operator
) -> None:
    """Two nodes of two devices each. kube-scheduler places two pods whose claims come from a
    ResourceClaimTemplate, then the policy two more: each claim is made by the resourceclaim
    controller, owned by its pod, allocated one device on its pod's node and reserved for it,
    and no device twice (ours counts kube-scheduler's allocations). A pod deleted takes its
    claim with it; its device goes to the next pod."""
    driver = f"{pool}.example.com"
    add_nodes(real_cluster, *(node(f"{pool}-{n}", cpu="2", labels={"pool": pool}) for n in "ab"))
    objects = [
        device_class(f"{pool}-gpu", selectors=[f'device.driver == "{driver}"']),
        *(
            resource_slice(
                f"{pool}-{n}", driver, f"{pool}-{n}", node=f"{pool}-{n}",
                devices=[device("gpu-0"), device("gpu-1")],
            )
            for n in "ab"
        ),
    ]  # fmt: skip
    real_cluster.apply(*objects)
    try:
        real_cluster.apply(
            resource_claim_template("gpu", [exactly("gpu", f"{pool}-gpu")]), namespace=namespace
        )
        predicates = [
            {"name": n} for n in ("NodeResourcesFit", "TaintToleration", "DynamicResources")
        ]
        real_cluster.apply(policy(pool, pool, predicates=predicates))
        operator.start()
        on_pool = {"nodeSelector": {"pool": pool}}
        kube = [
            pod(f"kube-{i}", "default-scheduler", templates={"gpu": "gpu"}, extra=on_pool)
            for i in range(2)
        ]
        real_cluster.apply(*kube, namespace=namespace)
        for made in kube:
            wait_running(real_cluster, namespace, made["metadata"]["name"])
        ours = [pod(f"ours-{i}", pool, templates={"gpu": "gpu"}) for i in range(2)]
        real_cluster.apply(*ours, namespace=namespace)
        placed = [
            wait_running(real_cluster, namespace, p["metadata"]["name"]) for p in (*kube, *ours)
        ]
        assert_bound_by(real_cluster, namespace, placed[2:], pool)
        held: list[str] = []
        for found in placed:
            claim = claim_of(real_cluster, namespace, found)
            assert claim["metadata"]["ownerReferences"][0]["uid"] == found["metadata"]["uid"]
            terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
            assert terms[0]["matchFields"][0]["values"] == [found["spec"]["nodeName"]]
            assert [r["name"] for r in claim["status"]["reservedFor"]] == [
                found["metadata"]["name"]
            ]
            assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
            held += devices_of(claim)
        assert sorted(held) == sorted(f"{pool}-{n}/gpu-{d}" for n in "ab" for d in (0, 1))

        # Every device is taken: the one of a pod deleted goes, with its claim, to the next.
        freed = devices_of(claim_of(real_cluster, namespace, placed[2]))
        gone = claim_of(real_cluster, namespace, placed[2])["metadata"]["name"]
        real_cluster.kubectl("delete", "pod", "ours-0", "-n", namespace)
        wait_for(
            "the resourceclaim controller to delete ours-0's claim",
            lambda: not items(
                real_cluster, "resourceclaims.resource.k8s.io", "-n", namespace,
                "--field-selector", f"metadata.name={gone}",
            ),
            timeout=GENEROUS,
        )  # fmt: skip
        real_cluster.apply(pod("ours-2", pool, templates={"gpu": "gpu"}), namespace=namespace)
        again = wait_running(real_cluster, namespace, "ours-2")
        assert devices_of(claim_of(real_cluster, namespace, again)) == freed
    finally:
        real_cluster.kubectl(
            "delete", "deviceclasses.resource.k8s.io", f"{pool}-gpu", "--wait=false", check=False
        )
        real_cluster.kubectl(
            "delete", "resourceslices.resource.k8s.io", f"{pool}-a", f"{pool}-b",
            "--wait=false", check=False,
        )  # fmt: skip
