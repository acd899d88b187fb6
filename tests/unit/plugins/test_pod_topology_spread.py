"""PodTopologySpread filters and scores as kube-scheduler v1.37 does."""

from __future__ import annotations

from typing import Any

import plugin_harness
import pytest
from plugin_harness import Around, Change, filter_nodes, score_nodes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import pod_topology_spread as pts

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APP_FOO = {"matchLabels": {"app": "foo"}}
NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
Workload = tuple[str, dict[str, Any]]
RS_OWNER = {
    "kind": "ReplicaSet",
    "uid": "rs-1",
    "controller": True,
    "name": "rs",
    "apiVersion": "apps/v1",
}


def make_pod(
    name: str = "incoming",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> PodView:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}/{name}",
        "labels": {"app": "foo"} if labels is None else labels,
    }
    metadata.update(spec.pop("metadata", {}))
    return PodView({"metadata": metadata, "spec": spec})


def constraint(
    key: str = ZONE, skew: int = 1, action: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": action,
        "labelSelector": APP_FOO,
        **extra,
    }


def make_node(
    name: str, zone: str | None, *pods: PodView, taints: list[dict[str, str]] | None = None
) -> NodeInfo:
    labels = {HOST: name} if zone is None else {HOST: name, ZONE: zone}
    return plugin_harness.make_node(name, labels, *pods, spec={"taints": taints or []})


def matching(count: int, node: str, **overrides: Any) -> list[PodView]:
    return [make_pod(f"{node}-{i}", **overrides) for i in range(count)]


def filter_all(
    incoming: PodView, nodes: list[NodeInfo], args: dict[str, Any] | None = None
) -> dict[str, tuple[str, ...]]:
    reasons = filter_nodes(pts.new_filter(args or {}, "args"), incoming, nodes)
    return {n.name: r for n, r in zip(nodes, reasons, strict=True)}


def score_all(
    incoming: PodView,
    nodes: list[NodeInfo],
    feasible: list[str] | None = None,
    args: dict[str, Any] | None = None,
) -> list[int]:
    chosen = [n for n in nodes if feasible is None or n.name in feasible]
    return score_nodes(pts.new_scorer(args or {}, "args"), incoming, nodes, chosen)


def two_zones(a_pods: int, b_pods: int, **overrides: Any) -> list[NodeInfo]:
    """n1, n2 in zone a (the matching pods on n1), n3, n4 in zone b (on n3)."""
    return [
        make_node("n1", "a", *matching(a_pods, "n1", **overrides)),
        make_node("n2", "a"),
        make_node("n3", "b", *matching(b_pods, "n3", **overrides)),
        make_node("n4", "b"),
    ]


OK: tuple[str, ...] = ()


@pytest.mark.parametrize(
    ("incoming", "nodes", "expected"),
    [
        pytest.param(
            make_pod(),
            two_zones(3, 3),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="pod without constraints fits everywhere",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            two_zones(5, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="ScheduleAnyway constraints do not filter",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            two_zones(1, 0),
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK},
            id="skew 2 over maxSkew 1 fails, skew 1 fits",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(skew=2)]),
            two_zones(1, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="skew exactly maxSkew fits",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(skew=2)]),
            two_zones(2, 0),
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK},
            id="skew one over maxSkew fails",
        ),
        pytest.param(
            make_pod(labels={"app": "bar"}, topologySpreadConstraints=[constraint()]),
            two_zones(1, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="a pod outside its own selector adds no skew",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(minDomains=3)]),
            two_zones(1, 1),
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": (NOT_MATCH,), "n4": (NOT_MATCH,)},
            id="fewer domains than minDomains make the global minimum 0",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(minDomains=2)]),
            two_zones(1, 1),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="enough domains for minDomains keep the real minimum",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            [*two_zones(1, 0), make_node("n5", None)],
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK, "n5": (MISSING,)},
            id="node without the topology label",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(), constraint(HOST, 5)]),
            [*two_zones(1, 0), make_node("n5", None)],
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK, "n5": (MISSING,)},
            id="first failing constraint decides the reason",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            two_zones(2, 0, namespace="other"),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="pods of other namespaces are not counted",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            two_zones(2, 0, metadata={"deletionTimestamp": "2025-01-01T00:00:00Z"}),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="terminating pods are not counted",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(labelSelector={})]),
            two_zones(4, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="a selector without requirements counts no pod",
        ),
        pytest.param(
            make_pod(
                labels={"app": "foo", "rev": "2"},
                topologySpreadConstraints=[constraint(matchLabelKeys=["rev", "absent"])],
            ),
            two_zones(2, 0, labels={"app": "foo", "rev": "1"}),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="matchLabelKeys restrict the count to the pod's own revision",
        ),
        pytest.param(
            make_pod(
                labels={"app": "foo", "rev": "1"},
                topologySpreadConstraints=[constraint(matchLabelKeys=["rev"])],
            ),
            two_zones(2, 0, labels={"app": "foo", "rev": "1"}),
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK},
            id="matchLabelKeys with the same revision count",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()], nodeSelector={ZONE: "a"}),
            two_zones(2, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="nodeAffinityPolicy Honor leaves out domains the pod cannot use",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[constraint()],
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            ),
            two_zones(2, 0),
            {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
            id="required node affinity counts as the nodeSelector does",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[constraint(nodeAffinityPolicy="Ignore")],
                nodeSelector={ZONE: "a"},
            ),
            two_zones(2, 0),
            {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK},
            id="nodeAffinityPolicy Ignore keeps every domain",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(nodeTaintsPolicy="Honor")]),
            [
                make_node("n1", "a", *matching(2, "n1")),
                make_node("n3", "b", taints=[{"key": "k", "effect": "NoSchedule"}]),
                make_node("n4", "b", taints=[{"key": "k", "effect": "NoExecute"}]),
            ],
            {"n1": OK, "n3": OK, "n4": OK},
            id="nodeTaintsPolicy Honor leaves out untolerated tainted domains",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[constraint(nodeTaintsPolicy="Honor")],
                tolerations=[{"key": "k", "operator": "Exists"}],
            ),
            [
                make_node("n1", "a", *matching(2, "n1")),
                make_node("n3", "b", taints=[{"key": "k", "effect": "NoSchedule"}]),
            ],
            {"n1": (NOT_MATCH,), "n3": OK},
            id="nodeTaintsPolicy Honor keeps tolerated tainted domains",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(nodeTaintsPolicy="Honor")]),
            [
                make_node("n1", "a", *matching(2, "n1")),
                make_node("n3", "b", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            ],
            {"n1": (NOT_MATCH,), "n3": OK},
            id="PreferNoSchedule taints never exclude a domain",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            [
                make_node("n1", "a", *matching(2, "n1")),
                make_node("n3", "b"),
                make_node("n5", None, *matching(9, "n5")),
            ],
            {"n1": (NOT_MATCH,), "n3": OK, "n5": (MISSING,)},
            id="pods on unlabelled nodes are not counted",
        ),
    ],
)
def test_filter(
    incoming: PodView, nodes: list[NodeInfo], expected: dict[str, tuple[str, ...]]
) -> None:
    assert filter_all(incoming, nodes) == expected


DEFAULTS = {
    "defaultingType": "List",
    "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
    ],
}
OWNED: dict[str, Any] = {"metadata": {"ownerReferences": [RS_OWNER]}}


def service(name: str, selector: dict[str, str] | None, namespace: str = "default") -> Workload:
    spec = {} if selector is None else {"selector": selector}
    return "Service", {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def controller(kind: str, name: str, selector: Any) -> Workload:
    return kind, {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


APP_FOO_SERVICE = Around([service("foo", {"app": "foo"})])
FOO_RS = Around([controller("ReplicaSet", "rs", APP_FOO)])


def owned_by(kind: str, name: str, api_version: str = "apps/v1") -> dict[str, Any]:
    owner = {"kind": kind, "name": name, "apiVersion": api_version, "uid": "u", "controller": True}
    return {"metadata": {"ownerReferences": [owner]}}


# Default constraints (zone, maxSkew 1, DoNotSchedule) count the pods their default selector
# selects: two app=foo pods in zone a, none in b, so zone a's nodes fail when they count.
SKEWED = {"n1": (NOT_MATCH,), "n2": (NOT_MATCH,), "n3": OK, "n4": OK}
EVEN = {"n1": OK, "n2": OK, "n3": OK, "n4": OK}


@pytest.mark.parametrize(
    ("incoming", "around", "expected"),
    [
        pytest.param(make_pod(), APP_FOO_SERVICE, SKEWED, id="a Service's selector"),
        pytest.param(make_pod(**OWNED), FOO_RS, SKEWED, id="the ReplicaSet's selector"),
        pytest.param(
            make_pod(**owned_by("StatefulSet", "db")),
            Around([controller("StatefulSet", "db", APP_FOO)]),
            SKEWED,
            id="the StatefulSet's selector",
        ),
        pytest.param(
            make_pod(**owned_by("ReplicationController", "rc", "v1")),
            Around([controller("ReplicationController", "rc", {"app": "foo"})]),
            SKEWED,
            id="the ReplicationController's selector",
        ),
        pytest.param(make_pod(), Around(), EVEN, id="nothing selects the pod"),
        pytest.param(make_pod(**OWNED), Around(), EVEN, id="its ReplicaSet is not known"),
        pytest.param(
            make_pod(**owned_by("ReplicaSet", "rs", "extensions/v1beta1")),
            FOO_RS,
            EVEN,
            id="an owner of another apiVersion is not followed",
        ),
        pytest.param(
            make_pod(**owned_by("Job", "rs", "batch/v1")),
            Around([controller("Job", "rs", APP_FOO)]),
            EVEN,
            id="a Job's selector is not read",
        ),
        pytest.param(
            make_pod(),
            Around([service("foo", {"app": "foo"}, namespace="other")]),
            EVEN,
            id="a Service of another namespace",
        ),
        pytest.param(
            make_pod(),
            Around([service("bar", {"app": "bar"})]),
            EVEN,
            id="a Service not selecting it",
        ),
        pytest.param(
            make_pod(), Around([service("all", None)]), EVEN, id="a Service without a selector"
        ),
        pytest.param(
            make_pod(labels={"app": "foo", "tier": "web"}),
            Around([service("foo", {"app": "foo"}), service("web", {"tier": "web"})]),
            EVEN,
            id="two Services: only pods both select count",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            APP_FOO_SERVICE,
            EVEN,
            id="a pod with constraints of its own",
        ),
    ],
)
def test_filter_default_constraints(
    incoming: PodView, around: Around, expected: dict[str, tuple[str, ...]]
) -> None:
    nodes = two_zones(2, 0)
    reasons = filter_nodes(pts.new_filter(DEFAULTS, "args"), incoming, nodes, around=around)
    assert {n.name: r for n, r in zip(nodes, reasons, strict=True)} == expected


# With d domains, a domain's count weighs log(d + 2): log(4) = 1.386, log(5) = 1.609.
@pytest.mark.parametrize(
    ("incoming", "nodes", "feasible", "expected"),
    [
        pytest.param(
            make_pod(),
            two_zones(2, 0),
            None,
            [0, 0, 0, 0],
            id="pod without constraints scores 0",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint()]),
            two_zones(2, 0),
            None,
            [0, 0, 0, 0],
            id="DoNotSchedule constraints do not score",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            two_zones(2, 0),
            None,
            # raw round(2 * 1.386) = 3 in zone a, 0 in zone b
            [0, 0, 100, 100],
            id="zone with pods scores 0, empty zone 100",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            two_zones(2, 1),
            None,
            # raw 3 and round(1.386) = 1: 100 * (3 + 1 - 1) // 3 = 100, 100 * 1 // 3 = 33
            [33, 33, 100, 100],
            id="min is added back in the reverse formula",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway", skew=3)]),
            two_zones(2, 1),
            None,
            # raw 3 + 2 = 5 and 1 + 2 = 3: 100 * 3 // 5 = 60, 100 * 5 // 5 = 100
            [60, 60, 100, 100],
            id="maxSkew - 1 waters the differences down",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            two_zones(0, 0),
            None,
            [100, 100, 100, 100],
            id="no matching pods anywhere scores 100 everywhere",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(HOST, 2, "ScheduleAnyway")]),
            [
                make_node("n1", "a", *matching(1, "n1")),
                make_node("n2", "a"),
                make_node("n3", "b", *matching(2, "n3")),
            ],
            None,
            # log(5) = 1.609: raw round(2.609) = 3, 1, round(4.219) = 4;
            # 100 * (4 + 1 - s) // 4
            [50, 100, 25],
            id="hostname counts on the node, weighted by the number of nodes",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            [*two_zones(2, 0), make_node("n5", None)],
            None,
            [0, 0, 100, 100, 0],
            id="node without the topology label scores 0 and is left out of min and max",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            [make_node("n5", None), make_node("n6", None)],
            None,
            [0, 0],
            id="no node with the topology label",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            [*two_zones(0, 1), make_node("n5", "c", *matching(5, "n5"))],
            ["n1", "n3"],
            # 2 feasible domains: log(4); zone c is not a domain, zone b counts n3's pod
            [100, 0],
            id="domains come from the feasible nodes only",
        ),
        pytest.param(
            make_pod(topologySpreadConstraints=[constraint(action="ScheduleAnyway")]),
            [*two_zones(0, 0), make_node("n5", "b", *matching(3, "n5"))],
            ["n1", "n3"],
            # zone b holds n5's 3 pods although n5 is not feasible: raw round(3 * 1.386) = 4
            [100, 0],
            id="pods on infeasible nodes of a feasible domain count",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[
                    constraint(action="ScheduleAnyway"),
                    constraint(HOST, 1, "ScheduleAnyway"),
                ]
            ),
            [
                make_node("n1", "a", *matching(1, "n1")),
                make_node("n2", "a", *matching(1, "n2")),
                make_node("n3", "b", *matching(1, "n3")),
            ],
            None,
            # zone: log(4) * (2, 2, 1); host: log(5) * 1 each;
            # raw round(2.773 + 1.609) = 4, 4, round(1.386 + 1.609) = 3
            [75, 75, 100],
            id="constraints add up",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[
                    constraint(action="ScheduleAnyway", nodeAffinityPolicy="Ignore")
                ],
                nodeSelector={ZONE: "a"},
            ),
            two_zones(0, 2),
            ["n1", "n2", "n3"],
            [100, 100, 0],
            id="nodeAffinityPolicy Ignore counts pods outside the pod's node affinity",
        ),
        pytest.param(
            make_pod(
                topologySpreadConstraints=[constraint(action="ScheduleAnyway")],
                nodeSelector={ZONE: "a"},
            ),
            two_zones(0, 2),
            ["n1", "n2", "n3"],
            [100, 100, 100],
            id="nodeAffinityPolicy Honor does not count pods outside the pod's node affinity",
        ),
    ],
)
def test_score(
    incoming: PodView, nodes: list[NodeInfo], feasible: list[str] | None, expected: list[int]
) -> None:
    assert score_all(incoming, nodes, feasible) == expected


def test_score_list_default_constraints() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    }
    nodes = [
        make_node("n1", "a", *matching(2, "n1")),
        make_node("n2", "a", *matching(1, "n2")),
        make_node("n3", "b", *matching(4, "n3", labels={"app": "bar"})),
        make_node("n4", None),
    ]
    scores = score_nodes(pts.new_scorer(args, "args"), make_pod(**OWNED), nodes, around=FOO_RS)
    # The ReplicaSet's selector counts 3 app=foo pods in zone a: raw round(3 * log(4)) = 4, 4,
    # 0; n4, without a zone, is left out as for a pod's own constraints (only System defaults
    # keep it).
    assert scores == [0, 0, 100, 0]


def system(
    *nodes: NodeInfo, feasible: list[str] | None = None, around: Around = APP_FOO_SERVICE
) -> list[int]:
    """The scores under System defaulting (the default args)."""
    chosen = [n for n in nodes if feasible is None or n.name in feasible]
    return score_nodes(pts.new_scorer({}, "args"), make_pod(), nodes, chosen, around=around)


def test_system_defaults_by_hostname_and_zone() -> None:
    # hostname (maxSkew 3) log(3 + 2) = 1.609 per pod + 2, zone (maxSkew 5) log(2 + 2) = 1.386
    # per pod + 4: raw n1 = 2 * 1.609 + 2 + 3 * 1.386 + 4 = 13, n2 = 12, n3 = 6;
    # 100 * (13 + 6 - raw) // 13.
    nodes = (
        make_node("n1", "a", *matching(2, "n1")),
        make_node("n2", "a", *matching(1, "n2")),
        make_node("n3", "b"),
    )
    assert system(*nodes) == [46, 53, 100]


@pytest.mark.parametrize(
    ("nodes", "feasible", "expected"),
    [
        pytest.param(
            (
                make_node("n1", "a", *matching(1, "n1")),
                make_node("n2", "b", *matching(1, "n2")),
                make_node("n3", None, *matching(1, "n3")),
            ),
            None,
            # Zones a, b and "": log(5) like hostname. raw n1 = n2 = 1.609 + 2 + 1.609 + 4 = 9,
            # n3 = 1.609 + 2 = 4 (no zone term): 100 * (13 - raw) // 9.
            [44, 44, 100],
            id="a node without a zone scores on hostname alone, and its zone counts",
        ),
        pytest.param(
            (
                make_node("n1", None, *matching(2, "n1")),
                make_node("n2", None, *matching(1, "n2")),
                make_node("n3", None),
            ),
            None,
            # Hostname only: raw 5, 4, 2.
            [40, 60, 100],
            id="no node has a zone: spread by hostname",
        ),
        pytest.param(
            (
                make_node("n1", "a", *matching(1, "n1")),
                make_node("n2", None, *matching(3, "n2")),
                make_node("n3", None),
            ),
            ["n1", "n3"],
            # Zone domains a and "" (n3): log(4); "" counts n2's pods although n2 is not
            # feasible, but n3 has no zone term to read them. Hostname log(4): raw
            # n1 = 1.386 + 2 + 1.386 + 4 = 9, n3 = 2.
            [22, 100],
            id="the unlabelled domain counts pods only for the weight",
        ),
        pytest.param(
            (
                make_node("n1", "a", *matching(1, "n1")),
                plugin_harness.make_node("n2", {HOST: "n2", ZONE: ""}),
                make_node("n3", None, *matching(3, "n3")),
            ),
            None,
            # Zone "" holds n2 (labelled "") and n3 (unlabelled): its 3 pods count on n2.
            # Domains a and "": log(4); hostname log(5): raw n1 = 1.609 + 2 + 1.386 + 4 = 9,
            # n2 = 2 + 3 * 1.386 + 4 = 10, n3 = 3 * 1.609 + 2 = 7.
            [80, 70, 100],
            id="an empty zone value shares the unlabelled nodes' domain",
        ),
    ],
)
def test_system_defaults_on_nodes_without_zones(
    nodes: tuple[NodeInfo, ...], feasible: list[str] | None, expected: list[int]
) -> None:
    assert system(*nodes, feasible=feasible) == expected


def test_system_defaults_skip_a_pod_nothing_selects() -> None:
    assert system(
        make_node("n1", "a", *matching(2, "n1")), make_node("n2", "b"), around=Around()
    ) == [0, 0]


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param({}, [], id="System by default"),
        pytest.param({"defaultingType": "List"}, [], id="List without constraints"),
        pytest.param(
            {"defaultingType": "Sometimes", "extra": 1},
            ["a.extra: unknown field", "a.defaultingType: must be one of ['List', 'System']"],
            id="unknown defaulting and unknown fields",
        ),
        pytest.param(
            {"defaultConstraints": DEFAULTS["defaultConstraints"]},
            [
                'a.defaultingType: must be "List" when defaultConstraints are given ("System", '
                "the default, is kube-scheduler's own constraints)"
            ],
            id="constraints with System defaulting",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": {"maxSkew": 1}},
            ["a.defaultConstraints: must be a list"],
            id="constraints not a list",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 0,
                        "topologyKey": "",
                        "whenUnsatisfiable": "Maybe",
                        "labelSelector": {},
                        "nodeTaintsPolicy": "Sometimes",
                        "matchLabelKeys": [],
                    },
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "minDomains": 2,
                    },
                    {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"},
                    "zone",
                ],
            },
            [
                "a.defaultConstraints[0].matchLabelKeys: unknown field",
                "a.defaultConstraints[0].maxSkew: must be an integer greater than zero",
                "a.defaultConstraints[0].topologyKey: must be a non-empty string",
                "a.defaultConstraints[0].whenUnsatisfiable: must be one of "
                "['DoNotSchedule', 'ScheduleAnyway']",
                "a.defaultConstraints[0].nodeTaintsPolicy: must be one of ['Honor', 'Ignore']",
                "a.defaultConstraints[0].labelSelector: must not be set: each pod's is taken "
                "from the Services and the controller selecting it",
                "a.defaultConstraints[1].minDomains: can only be used with "
                "whenUnsatisfiable: DoNotSchedule",
                "a.defaultConstraints[3]: duplicate {topologyKey, whenUnsatisfiable} pair "
                "('kubernetes.io/hostname', 'DoNotSchedule')",
                "a.defaultConstraints[4]: must be an object",
            ],
            id="every constraint problem reported",
        ),
    ],
)
def test_args(args: dict[str, Any], errors: list[str]) -> None:
    for factory in (pts.new_filter, pts.new_scorer):
        if not errors:
            factory(args, "a")
            continue
        with pytest.raises(ArgsError) as raised:
            factory(args, "a")
        assert [str(e) for e in raised.value.errors] == errors


# The queueing hint for node events (kube-scheduler's): a node counts when it has every topology
# key of the pod's DoNotSchedule constraints. A node added or deleted helps when it counts; an
# update when it starts or stops counting, or counts and changed a key's value or its taints.
ADDED, DELETED = EventKind.NODE_ADDED, EventKind.NODE_DELETED
LABELS, TAINTS = EventKind.NODE_LABELS, EventKind.NODE_TAINTS
SPREAD = make_pod(topologySpreadConstraints=[constraint()])
GPU = [{"key": "gpu", "effect": "NoSchedule"}]
HINTS: dict[str, tuple[PodView, Change, dict[str, Any], bool]] = {
    "a node added with the topology key helps": (
        SPREAD,
        Change(ADDED, make_node("n", "a")),
        {},
        True,
    ),
    "a node added without it does not": (SPREAD, Change(ADDED, make_node("n", None)), {}, False),
    "a node deleted with the topology key helps": (
        SPREAD,
        Change(DELETED, make_node("n", "a")),
        {},
        True,
    ),
    "a node deleted without it does not": (
        SPREAD,
        Change(DELETED, make_node("n", None)),
        {},
        False,
    ),
    "a node given the topology key helps": (
        SPREAD,
        Change(LABELS, make_node("n", "a"), make_node("n", None)),
        {},
        True,
    ),
    "a node that lost the topology key helps": (
        SPREAD,
        Change(LABELS, make_node("n", None), make_node("n", "a")),
        {},
        True,
    ),
    "a node moved to another domain helps": (
        SPREAD,
        Change(LABELS, make_node("n", "b"), make_node("n", "a")),
        {},
        True,
    ),
    "a node's other labels changed does not": (
        SPREAD,
        Change(LABELS, make_node("n", "a"), plugin_harness.make_node("n", {ZONE: "a"})),
        {},
        False,
    ),
    "a node with the topology key whose taints changed helps": (
        SPREAD,
        Change(TAINTS, make_node("n", "a"), make_node("n", "a", taints=GPU)),
        {},
        True,
    ),
    "a node without it whose taints changed does not": (
        SPREAD,
        Change(TAINTS, make_node("n", None), make_node("n", None, taints=GPU)),
        {},
        False,
    ),
    "a node relabelled, its labels before unknown, is read as an addition": (
        SPREAD,
        Change(LABELS, make_node("n", "a")),
        {},
        True,
    ),
    "a node added without a default constraint's key does not help a pod without constraints": (
        make_pod(),
        Change(ADDED, make_node("n", None)),
        DEFAULTS,
        False,
    ),
    "a node added with it helps": (make_pod(), Change(ADDED, make_node("n", "a")), DEFAULTS, True),
    "an assigned pod deleted helps (no hint for pod events)": (
        SPREAD,
        Change(EventKind.POD_DELETED, make_node("n", None), pod=make_pod("other")),
        {},
        True,
    ),
}


@pytest.mark.parametrize(("pod", "change", "args", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(pod: PodView, change: Change, args: dict[str, Any], helps: bool) -> None:
    assert plugin_harness.wakes(pts.new_filter(args, "args"), pod, change) is helps
