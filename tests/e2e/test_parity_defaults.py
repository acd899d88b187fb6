"""Parity with kube-scheduler where its decisions read objects other than nodes and pods (issue 12,
items 1 and 2): default topology spreading, whose selector comes from the Services,
ReplicationControllers, ReplicaSets and StatefulSets selecting the pod, and pod affinity terms
whose ``namespaceSelector`` reads Namespace labels; checked to the number.

As in test_parity.py, every pending pod is gated while we decide it offline from the cluster as the
API server has it, with examples/policies/default-profile.yaml, then kube-scheduler decides. Here
it is test_parity_conformance.py's kube-scheduler (its LeastAllocated profile is kube's default
profile), whose -v=10 log gives every plugin's weighted score for every feasible node: each of
ours, times its weight, must equal kube's, on the same feasible nodes (kube logs no score when one
node is feasible: then that node must be ours), and kube's node must be among our best. A pod kube
leaves unschedulable must fit nowhere for us, for the same reasons. Each step also names the node
kube-scheduler is expected to choose, worked out by hand from kube's formulas, which checks that
the scenario exercises what it claims to.

Default spreading (``defaultingType: System``): hostname with maxSkew 3 and zone with maxSkew 5,
both ScheduleAnyway, over the pods that match the selector merged from the pod's Services and its
controller's; a constraint whose key has ``d`` domains weighs ``log(d + 2)``; a node's raw score
is ``sum(count * weight + maxSkew - 1)`` over the constraints whose key it has; a node without a
zone label still counts (its zone term is left out), and all such nodes make one zone domain,
"". The existing pods here request nothing, so the resource scorers score the scenario's alike
nodes alike and spreading decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import test_parity
import test_parity_conformance
from harness.e2e import Cluster
from test_parity import (
    ANY,
    HOSTNAME,
    UNSCHEDULABLE,
    ZONE,
    Scenario,
    Step,
    make_node,
    make_pod,
    pod_affinity,
    pod_term,
    run,
)
from test_parity_conformance import kube_scores, score_differences

from policy_scheduler.runtime.decision import Decision
from policy_scheduler.runtime.schedule_one import Pipeline

# The fixtures naming a scenario (its nodes and pods are deleted after the test) and running the
# kube-scheduler whose log has the scores.
prefix = test_parity.prefix
verbose_log = test_parity_conformance.verbose_log
SCHEDULER = test_parity_conformance.scheduler_name("least")


def run_scored(
    cluster: Cluster, namespace: str, prefix: str, scenario: Scenario, log: Path
) -> None:
    """Set the scenario up, then compare both schedulers' verdicts and every plugin's score (from
    kube-scheduler's ``log``) on each step; all failures at the end."""

    def scores(name: str, pipeline: Pipeline, ours: Decision) -> list[str]:
        return score_differences(pipeline, ours, kube_scores(log, f"{namespace}/{name}"))

    run(cluster, namespace, prefix, scenario, scheduler=SCHEDULER, scores=scores)


def create(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Create ``obj`` in ``namespace``; the object as the API server has it (with its uid)."""
    created: dict[str, Any] = json.loads(
        cluster.kubectl(
            "create", "-n", namespace, "-f", "-", "-o", "json", stdin=json.dumps(obj)
        ).stdout
    )
    return created


def service(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector, "ports": [{"port": 80}]},
    }


def workload(
    kind: str, name: str, selector: dict[str, Any], labels: dict[str, str]
) -> dict[str, Any]:
    """A ReplicaSet, StatefulSet (``selector`` a LabelSelector) or ReplicationController (a map)
    with no replicas: nothing here runs controllers, the tests create its pods."""
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }
    spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec}


def owned(pod: dict[str, Any], owner: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` controlled by ``owner`` (an object as created)."""
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return pod


def idle(name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    """An existing pod that requests nothing, so that the resource scorers score the scenario's
    nodes alike."""
    return make_pod(name, labels=labels, cpu="0", memory="0", **extra)


def test_pods_behind_services_spread_over_nodes_and_zones(
    cluster: Cluster, namespace: str, prefix: str, verbose_log: Path
) -> None:
    """A bare pod behind a Service is spread by the Service's selector; with two Services, by
    both selectors at once; a pod no Service selects is not spread."""
    create(cluster, namespace, service("web", {"app": "web"}))
    create(cluster, namespace, service("front", {"tier": "front"}))
    web = {"app": "web"}
    scenario = Scenario(
        nodes=[
            make_node("a1", labels={ZONE: f"{prefix}-a"}),
            make_node("a2", labels={ZONE: f"{prefix}-a"}),
            make_node("b1", labels={ZONE: f"{prefix}-b"}),
        ],
        existing=[
            ("a1", idle("web-0", web)),
            ("a1", idle("web-1", web)),
            ("a2", idle("web-2", web)),
        ],
        steps=[
            # hostname log(5) = 1.609 per pod + 2, zone log(4) = 1.386 per pod + 4: raw a1 13,
            # a2 12, b1 6; 100 * (max + min - raw) // max: 46, 53, 100, times 2.
            Step(make_pod("web-a", labels=web), "b1"),
            # b1 now holds one: raw 13, 12, 9: 69, 76, 100.
            Step(make_pod("web-b", labels=web), "b1"),
            # app=web and tier=front: no pod has both, every node scores 100; b1 is busier.
            Step(make_pod("web-front", labels={**web, "tier": "front"}), ANY),
            # No Service selects it: PodTopologySpread skips it.
            Step(make_pod("lonely", labels={"app": "lonely"}), ANY),
        ],
    )
    run_scored(cluster, namespace, prefix, scenario, verbose_log)


def test_replica_set_pods_spread_by_hostname_on_nodes_without_zones(
    cluster: Cluster, namespace: str, prefix: str, verbose_log: Path
) -> None:
    """No node has a zone label (bare metal, kind): the pods of a ReplicaSet are still spread
    over the nodes, counted by the ReplicaSet's selector (matchExpressions too)."""
    api = create(
        cluster,
        namespace,
        workload(
            "ReplicaSet",
            "api",
            {
                "matchLabels": {"app": "api"},
                "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
            },
            {"app": "api"},
        ),
    )
    app = {"app": "api"}
    canary = {"app": "api", "track": "canary"}
    scenario = Scenario(
        nodes=[make_node("h1"), make_node("h2"), make_node("h3", cpu="2")],
        existing=[
            ("h1", owned(idle("api-0", app), api)),
            ("h1", owned(idle("api-1", app), api)),
            ("h2", owned(idle("api-2", app), api)),
            ("h3", owned(idle("canary-0", canary), api)),
            ("h3", owned(idle("canary-1", canary), api)),
        ],
        steps=[
            # Hostname only (every node's zone term is left out): log(5) per pod + 2, raw 5, 4,
            # 2: 40, 60, 100, times 2; the canaries do not count. h3's fewer cpus cost it 2.
            Step(owned(make_pod("api-a", labels=app), api), "h3"),
            # Raw 5, 4, 4: 80, 100, 100; h3 holds api-a's requests, h2 none.
            Step(owned(make_pod("api-b", labels=app), api), "h2"),
            # A canary is counted by its ReplicaSet's selector, which leaves canaries out.
            Step(owned(make_pod("canary-a", labels=canary), api), "h3"),
        ],
    )
    run_scored(cluster, namespace, prefix, scenario, verbose_log)


def test_nodes_without_a_zone_beside_zoned_nodes(
    cluster: Cluster, namespace: str, prefix: str, verbose_log: Path
) -> None:
    """A node without a zone label is scored on hostname alone, while the nodes without one
    make a zone of their own ("") for the zone's weight. StatefulSet and ReplicationController
    selectors; a Service and a ReplicaSet selecting the same pod count only pods both select."""
    db = create(
        cluster,
        namespace,
        workload("StatefulSet", "db", {"matchLabels": {"app": "db"}}, {"app": "db"}),
    )
    legacy = create(
        cluster,
        namespace,
        workload("ReplicationController", "legacy", {"app": "legacy"}, {"app": "legacy"}),
    )
    cart = create(
        cluster,
        namespace,
        workload("ReplicaSet", "cart", {"matchLabels": {"app": "cart"}}, {"app": "cart"}),
    )
    create(cluster, namespace, service("shop", {"tier": "front"}))
    scenario = Scenario(
        nodes=[
            make_node("a1", labels={ZONE: f"{prefix}-a"}),
            make_node("b1", labels={ZONE: f"{prefix}-b"}),
            make_node("n1"),
        ],
        existing=[
            ("a1", owned(idle("db-0", {"app": "db"}), db)),
            ("b1", owned(idle("db-1", {"app": "db"}), db)),
            ("n1", owned(idle("db-2", {"app": "db"}), db)),
            ("a1", owned(idle("legacy-0", {"app": "legacy"}), legacy)),
            ("a1", owned(idle("legacy-1", {"app": "legacy"}), legacy)),
            ("b1", owned(idle("legacy-2", {"app": "legacy"}), legacy)),
            ("a1", idle("front-0", {"app": "other", "tier": "front"})),
            ("a1", idle("front-1", {"app": "other", "tier": "front"})),
            ("b1", owned(idle("cart-0", {"app": "cart", "tier": "front"}), cart)),
            ("n1", owned(idle("cart-1", {"app": "cart", "tier": "back"}), cart)),
        ],
        steps=[
            # Zones a, b and "" weigh log(5) = 1.609, as does hostname: raw a1 = b1 = 1.609 + 2
            # + 1.609 + 4 = 9, n1 = 1.609 + 2 = 4 (no zone term): 44, 44, 100.
            Step(owned(make_pod("db-3", labels={"app": "db"}), db), "n1"),
            # Raw a1 = 2 * 1.609 + 2 + 2 * 1.609 + 4 = 12, b1 9, n1 2: 16, 41, 100.
            Step(owned(make_pod("legacy-3", labels={"app": "legacy"}), legacy), "n1"),
            # tier=front (the Service) and app=cart (the ReplicaSet): only cart-0 counts.
            # Raw a1 6, b1 9, n1 2: 55, 22, 100.
            Step(owned(make_pod("cart-2", labels={"app": "cart", "tier": "front"}), cart), "n1"),
        ],
    )
    run_scored(cluster, namespace, prefix, scenario, verbose_log)


@pytest.fixture
def teams(cluster: Cluster, namespace: str, prefix: str) -> Iterator[dict[str, str]]:
    """Two more namespaces, labelled team=<prefix>-x and team=<prefix>-y, and the test's own
    labelled team=<prefix>-t: team name -> namespace. Their pods are gone afterwards."""
    made = {team: f"{prefix}-{team}" for team in ("x", "y")}
    for team, name in made.items():
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"team": f"{prefix}-{team}"}},
            }
        )
    cluster.kubectl("label", "namespace", namespace, f"team={prefix}-t")
    yield {**made, "t": namespace}
    for name in made.values():
        cluster.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force")
        cluster.kubectl("delete", "namespace", name, "--wait=false")


def in_namespace(namespace: str, node_name: str, pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["namespace"] = namespace
    pod["spec"]["nodeName"] = node_name
    return pod


def team(prefix: str, *names: str) -> dict[str, Any]:
    """A namespaceSelector for the namespaces of these teams."""
    return {
        "matchExpressions": [
            {"key": "team", "operator": "In", "values": [f"{prefix}-{n}" for n in names]}
        ]
    }


def term(labels: dict[str, str], topology: str, namespaces: dict[str, Any]) -> dict[str, Any]:
    return {**pod_term(labels, topology), "namespaceSelector": namespaces}


def test_pod_affinity_namespace_selector_on_namespace_labels(
    cluster: Cluster,
    namespace: str,
    prefix: str,
    teams: dict[str, str],
    verbose_log: Path,
) -> None:
    """``namespaceSelector`` matches the Namespaces' labels: in the pod's own terms (required
    affinity and anti-affinity, preferred affinity) and in the existing pods' terms, which read
    the incoming pod's namespace labels."""
    guard = pod_affinity(
        "podAntiAffinity", [term({"role": "intruder"}, HOSTNAME, team(prefix, "t"))]
    )
    fan = pod_affinity(
        "podAffinity", preferred=[(30, term({"role": "fan"}, ZONE, team(prefix, "t")))]
    )
    cluster.apply(
        in_namespace(teams["x"], f"{prefix}-a1", idle("db", {"app": "db"})),
        in_namespace(teams["y"], f"{prefix}-b1", idle("db", {"app": "db"})),
        in_namespace(teams["y"], f"{prefix}-a2", idle("guard", {}, spec={"affinity": guard})),
        in_namespace(teams["y"], f"{prefix}-b1", idle("fan", {}, spec={"affinity": fan})),
    )

    def pod(name: str, labels: dict[str, str] | None = None, **affinity: Any) -> dict[str, Any]:
        return make_pod(name, labels=labels, spec={"affinity": affinity} if affinity else None)

    scenario = Scenario(
        nodes=[
            make_node("a1", labels={ZONE: f"{prefix}-a"}),
            make_node("a2", labels={ZONE: f"{prefix}-a"}),
            make_node("b1", cpu="16", memory="32Gi", labels={ZONE: f"{prefix}-b"}),
        ],
        steps=[
            # Beside team x's db: a1 only.
            Step(
                pod(
                    "near-x",
                    **pod_affinity(
                        "podAffinity", [term({"app": "db"}, HOSTNAME, team(prefix, "x"))]
                    ),
                ),
                "a1",
            ),
            # Not beside team x's db: a2 or b1, the roomier.
            Step(
                pod(
                    "away-x",
                    **pod_affinity(
                        "podAntiAffinity", [term({"app": "db"}, HOSTNAME, team(prefix, "x"))]
                    ),
                ),
                "b1",
            ),
            # Prefers team y's db's zone (b): 100 there.
            Step(
                pod(
                    "zone-y",
                    **pod_affinity(
                        "podAffinity",
                        preferred=[(50, term({"app": "db"}, ZONE, team(prefix, "y")))],
                    ),
                ),
                "b1",
            ),
            # guard (team y) keeps role=intruder pods of team t's namespace off a2; b1 has the
            # most room left (16 cpus and 32Gi against a1's 4 and 8Gi).
            Step(pod("intruder", {"role": "intruder"}), "b1"),
            # fan (team y, zone b) prefers role=fan pods of team t: +30 for zone b.
            Step(pod("fan", {"role": "fan"}), "b1"),
            # No team z: no namespace, no db to be beside.
            Step(
                pod(
                    "near-z",
                    **pod_affinity(
                        "podAffinity", [term({"app": "db"}, HOSTNAME, team(prefix, "z"))]
                    ),
                ),
                UNSCHEDULABLE,
            ),
            # {} selects every namespace: both dbs repel, a2 is left.
            Step(
                pod(
                    "away-all",
                    **pod_affinity("podAntiAffinity", [term({"app": "db"}, HOSTNAME, {})]),
                ),
                "a2",
            ),
        ],
    )
    run_scored(cluster, namespace, prefix, scenario, verbose_log)
