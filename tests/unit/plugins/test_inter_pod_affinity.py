"""InterPodAffinity filters and scores as kube-scheduler v1.37 does."""

from __future__ import annotations

from typing import Any

import plugin_harness
import pytest
from plugin_harness import Around, Change, filter_nodes, score_nodes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.model.namespaces import NAME_LABEL
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import inter_pod_affinity as ipa

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
OK: tuple[str, ...] = ()
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def term(key: str = ZONE, selector: Any = None, **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm; ``selector`` is matchLabels, default ``app: db``."""
    labels = {"app": "db"} if selector is None else selector
    return {"topologyKey": key, "labelSelector": {"matchLabels": labels}, **extra}


def weighted(weight: int, *args: Any, **extra: Any) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(*args, **extra)}


def affinity(
    required: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    preferred_anti: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "podAffinity": {REQUIRED: required or [], PREFERRED: preferred or []},
        "podAntiAffinity": {REQUIRED: anti or [], PREFERRED: preferred_anti or []},
    }


def make_pod(
    app: str = "web",
    namespace: str = "default",
    name: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> PodView:
    name = name or f"{app}-{namespace}"
    metadata = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}/{name}",
        "labels": {"app": app, **(labels or {})},
    }
    metadata.update(spec.pop("metadata", {}))
    return PodView({"metadata": metadata, "spec": spec})


def make_node(name: str, zone: str | None, *pods: PodView) -> NodeInfo:
    labels = {HOST: name} if zone is None else {HOST: name, ZONE: zone}
    return plugin_harness.make_node(name, labels, *pods)


def cluster(
    n1: tuple[PodView, ...] = (),
    n3: tuple[PodView, ...] = (),
    n4: tuple[PodView, ...] = (),
) -> list[NodeInfo]:
    """n1, n2 in zone a, n3 in zone b, n4 without a zone label."""
    return [
        make_node("n1", "a", *n1),
        make_node("n2", "a"),
        make_node("n3", "b", *n3),
        make_node("n4", None, *n4),
    ]


def filter_all(incoming: PodView, nodes: list[NodeInfo]) -> list[tuple[str, ...]]:
    return filter_nodes(ipa.new_filter({}, "args"), incoming, nodes)


DB = make_pod("db")


@pytest.mark.parametrize(
    ("incoming", "nodes", "expected"),
    [
        pytest.param(make_pod(), cluster((DB,)), [OK, OK, OK, OK], id="no affinity fits"),
        pytest.param(
            make_pod(affinity=affinity(required=[term()])),
            cluster((DB,)),
            [OK, OK, AFFINITY, AFFINITY],
            id="affinity to the zone of a matching pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term(HOST)])),
            cluster((DB,)),
            [OK, AFFINITY, AFFINITY, AFFINITY],
            id="affinity to the node of a matching pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term(selector={"app": "web"})])),
            cluster(),
            [OK, OK, OK, AFFINITY],
            id="first pod of a self-affine group lands where the topology label is",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term()])),
            cluster(),
            [AFFINITY, AFFINITY, AFFINITY, AFFINITY],
            id="no first-pod exception for a pod that does not match its own terms",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term(selector={"app": "web"})])),
            cluster(n3=(make_pod(name="other-web"),)),
            [AFFINITY, AFFINITY, OK, AFFINITY],
            id="no first-pod exception once a matching pod exists",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term(), term(HOST, {"tier": "backend"})])),
            cluster((DB,), (make_pod("db", labels={"tier": "backend"}),)),
            [AFFINITY, AFFINITY, OK, AFFINITY],
            id="a pod must match all affinity terms to count",
        ),
        pytest.param(
            make_pod(affinity=affinity(anti=[term()])),
            cluster((DB,), n4=(DB,)),
            [ANTI, ANTI, OK, OK],
            id="anti-affinity to the zone of a matching pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term()], anti=[term()])),
            cluster((DB,)),
            [ANTI, ANTI, AFFINITY, AFFINITY],
            id="affinity is checked before anti-affinity",
        ),
        pytest.param(
            make_pod(),
            cluster((make_pod("db", affinity=affinity(anti=[term(selector={"app": "web"})])),)),
            [EXISTING, EXISTING, OK, OK],
            id="existing pod's anti-affinity keeps the pod out of its zone",
        ),
        pytest.param(
            make_pod("api"),
            cluster((make_pod("db", affinity=affinity(anti=[term(selector={"app": "web"})])),)),
            [OK, OK, OK, OK],
            id="existing pod's anti-affinity not matching the pod",
        ),
        pytest.param(
            make_pod(),
            cluster(
                (
                    make_pod(
                        "db",
                        affinity=affinity(anti=[term(HOST, {"app": "web"})]),
                        metadata={"deletionTimestamp": "2025-01-01T00:00:00Z"},
                    ),
                )
            ),
            [EXISTING, OK, OK, OK],
            id="terminating pods still count",
        ),
        pytest.param(
            make_pod(affinity=affinity(anti=[term()])),
            cluster((make_pod("db", affinity=affinity(anti=[term(selector={"app": "web"})])),)),
            [ANTI, ANTI, OK, OK],
            id="the pod's own anti-affinity is reported before existing pods'",
        ),
        pytest.param(
            make_pod(),
            cluster(
                (make_pod("db", "other", affinity=affinity(anti=[term(selector={"app": "web"})])),)
            ),
            [OK, OK, OK, OK],
            id="existing pod's term defaults to its own namespace",
        ),
        pytest.param(
            make_pod(),
            cluster(
                (
                    make_pod(
                        "db",
                        "other",
                        affinity=affinity(
                            anti=[term(selector={"app": "web"}, namespaces=["default"])]
                        ),
                    ),
                )
            ),
            [EXISTING, EXISTING, OK, OK],
            id="existing pod's term names the pod's namespace",
        ),
        pytest.param(
            make_pod(),
            cluster(
                (
                    make_pod(
                        "db",
                        "other",
                        affinity=affinity(
                            anti=[term(selector={"app": "web"}, namespaceSelector={})]
                        ),
                    ),
                )
            ),
            [EXISTING, EXISTING, OK, OK],
            id="existing pod's empty namespaceSelector selects every namespace",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[term(namespaces=["other"])])),
            cluster((DB,), (make_pod("db", "other"),)),
            [AFFINITY, AFFINITY, OK, AFFINITY],
            id="affinity term with namespaces ignores pods of the pod's namespace",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(
                    required=[
                        term(
                            namespaceSelector={
                                "matchLabels": {"kubernetes.io/metadata.name": "other"}
                            }
                        )
                    ]
                )
            ),
            cluster((DB,), (make_pod("db", "other"),)),
            [AFFINITY, AFFINITY, OK, AFFINITY],
            id="namespaceSelector on the namespace name label",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(
                    required=[
                        term(
                            namespaceSelector={
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/metadata.name",
                                        "operator": "NotIn",
                                        "values": ["other"],
                                    }
                                ]
                            }
                        )
                    ]
                )
            ),
            cluster((DB,), (make_pod("db", "other"),)),
            [OK, OK, AFFINITY, AFFINITY],
            id="namespaceSelector NotIn on the namespace name label",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(required=[term(namespaceSelector={"matchLabels": {"team": "x"}})])
            ),
            cluster((DB,), (make_pod("db", "other"),)),
            [AFFINITY, AFFINITY, AFFINITY, AFFINITY],
            id="namespaceSelector on labels of a namespace not known: only its name label",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(required=[term(namespaces=["other"], namespaceSelector={})])
            ),
            cluster((DB,), (make_pod("db", "other"),)),
            [OK, OK, OK, AFFINITY],
            id="namespaces and an empty namespaceSelector: every namespace",
        ),
        pytest.param(
            make_pod(
                labels={"rev": "2"},
                affinity=affinity(anti=[term(HOST, {"app": "web"}, matchLabelKeys=["rev"])]),
            ),
            cluster(
                (make_pod(name="web-1", labels={"rev": "1"}),),
                (make_pod(name="web-2", labels={"rev": "2"}),),
            ),
            [OK, OK, ANTI, OK],
            id="matchLabelKeys narrow the selector to the pod's value",
        ),
        pytest.param(
            make_pod(
                labels={"tenant": "t1"},
                affinity=affinity(
                    anti=[
                        {
                            "topologyKey": HOST,
                            "labelSelector": {
                                "matchExpressions": [{"key": "tenant", "operator": "Exists"}]
                            },
                            "mismatchLabelKeys": ["tenant"],
                        }
                    ]
                ),
            ),
            cluster(
                (make_pod("db", labels={"tenant": "t2"}),),
                (make_pod("db", labels={"tenant": "t1"}),),
            ),
            [ANTI, OK, OK, OK],
            id="mismatchLabelKeys keep the pod away from other tenants",
        ),
        pytest.param(
            make_pod(affinity=affinity(required=[{"topologyKey": ZONE}])),
            cluster((DB,)),
            [AFFINITY, AFFINITY, AFFINITY, AFFINITY],
            id="a term without labelSelector matches no pod",
        ),
    ],
)
def test_filter(incoming: PodView, nodes: list[NodeInfo], expected: list[Any]) -> None:
    assert filter_all(incoming, nodes) == [() if r == OK else (r,) for r in expected]


def namespace(name: str, **labels: str) -> dict[str, Any]:
    """A Namespace with the API server's name label and ``labels``."""
    return {"metadata": {"name": name, "labels": {NAME_LABEL: name, **labels}}}


# Namespace "other" belongs to team x, "default" (the incoming pods') to team y.
TEAMS = Around(namespaces=[namespace("other", team="x"), namespace("default", team="y")])
TEAM_X = {"matchLabels": {"team": "x"}}


@pytest.mark.parametrize(
    ("incoming", "nodes", "expected"),
    [
        pytest.param(
            make_pod(affinity=affinity(required=[term(namespaceSelector=TEAM_X)])),
            cluster((DB,), (make_pod("db", "other"),)),
            [AFFINITY, AFFINITY, OK, AFFINITY],
            id="affinity to pods of namespaces labelled team=x",
        ),
        pytest.param(
            make_pod(affinity=affinity(anti=[term(HOST, namespaceSelector=TEAM_X)])),
            cluster((DB,), (make_pod("db", "other"),)),
            [OK, OK, ANTI, OK],
            id="anti-affinity to them",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(required=[term(namespaceSelector={"matchLabels": {"team": "y"}})])
            ),
            cluster((DB,), (make_pod("db", "other"),)),
            [OK, OK, AFFINITY, AFFINITY],
            id="the pod's own namespace by its label",
        ),
        pytest.param(
            make_pod(),
            cluster(
                (
                    make_pod(
                        "guard",
                        "other",
                        affinity=affinity(
                            anti=[
                                term(
                                    HOST,
                                    {"app": "web"},
                                    namespaceSelector={"matchLabels": {"team": "y"}},
                                )
                            ]
                        ),
                    ),
                )
            ),
            [EXISTING, OK, OK, OK],
            id="an existing pod's term matches the incoming pod's namespace labels",
        ),
    ],
)
def test_filter_namespace_labels(
    incoming: PodView, nodes: list[NodeInfo], expected: list[Any]
) -> None:
    reasons = filter_nodes(ipa.new_filter({}, "args"), incoming, nodes, around=TEAMS)
    assert reasons == [() if r == OK else (r,) for r in expected]


def test_score_namespace_labels() -> None:
    incoming = make_pod(affinity=affinity(preferred=[weighted(10, namespaceSelector=TEAM_X)]))
    nodes = cluster((DB,), (make_pod("db", "other"),))
    scorer = ipa.new_scorer({}, "args")
    # Only the db of team x's namespace counts: zone b.
    assert score_nodes(scorer, incoming, nodes, around=TEAMS) == [0, 0, 100, 0]


def score_all(
    incoming: PodView,
    nodes: list[NodeInfo],
    args: dict[str, Any] | None = None,
    feasible: int | None = None,
) -> list[int]:
    return score_nodes(ipa.new_scorer(args or {}, "args"), incoming, nodes, nodes[:feasible])


# Existing pods whose own terms point at the incoming pod (app: web).
WANTS_WEB_REQUIRED = make_pod("a", affinity=affinity(required=[term(selector={"app": "web"})]))
WANTS_WEB_PREFERRED = make_pod(
    "b", affinity=affinity(preferred=[weighted(7, HOST, {"app": "web"})])
)
AVOIDS_WEB_PREFERRED = make_pod(
    "c", affinity=affinity(preferred_anti=[weighted(4, ZONE, {"app": "web"})])
)


@pytest.mark.parametrize(
    ("incoming", "nodes", "args", "expected"),
    [
        pytest.param(make_pod(), cluster((DB,)), {}, [0, 0, 0, 0], id="no terms anywhere"),
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(10)])),
            cluster((DB,)),
            {},
            [100, 100, 0, 0],
            id="preferred affinity to the zone of a matching pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred_anti=[weighted(5)])),
            cluster((DB,)),
            {},
            [0, 0, 100, 100],
            id="preferred anti-affinity gives negative raw scores",
        ),
        pytest.param(
            make_pod(
                affinity=affinity(
                    preferred=[weighted(8, HOST)],
                    preferred_anti=[weighted(5, ZONE, {"app": "cache"})],
                )
            ),
            cluster((make_pod("cache"),), (DB,)),
            {},
            # raw -5, -5, 8, 0: int(100 * (s + 5) / 13)
            [0, 0, 100, 38],
            id="min-max scaling across negative and positive scores",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(3), weighted(2, HOST)])),
            cluster((make_pod("db", name="db-1"), make_pod("db", name="db-2")), (DB,)),
            {},
            # each matching pod adds each term's weight: zone a 2*3, n1 2*2, zone b 3, n3 2
            [100, 60, 50, 0],
            id="weights add up per matching pod and term",
        ),
        pytest.param(
            make_pod(),
            cluster((WANTS_WEB_REQUIRED,)),
            {},
            [100, 100, 0, 0],
            id="existing pod's required affinity counts with hardPodAffinityWeight 1",
        ),
        pytest.param(
            make_pod(),
            cluster((WANTS_WEB_REQUIRED,)),
            {"hardPodAffinityWeight": 0},
            [0, 0, 0, 0],
            id="hardPodAffinityWeight 0 ignores existing pods' required affinity",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred_anti=[weighted(2)])),
            cluster((WANTS_WEB_REQUIRED,), (DB,)),
            {"hardPodAffinityWeight": 3},
            # raw 3, 3, -2, 0: int(100 * (s + 2) / 5)
            [100, 100, 0, 40],
            id="hardPodAffinityWeight scales existing pods' required affinity",
        ),
        pytest.param(
            make_pod(),
            cluster(n3=(WANTS_WEB_PREFERRED,)),
            {},
            [0, 0, 100, 0],
            id="existing pod's preferred affinity to the pod",
        ),
        pytest.param(
            make_pod(),
            cluster((AVOIDS_WEB_PREFERRED,)),
            {},
            [0, 0, 100, 100],
            id="existing pod's preferred anti-affinity to the pod",
        ),
        pytest.param(
            make_pod(),
            cluster(n3=(WANTS_WEB_PREFERRED,)),
            {"ignorePreferredTermsOfExistingPods": True},
            [0, 0, 0, 0],
            id="ignorePreferredTermsOfExistingPods without preferred terms of the pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(1)])),
            cluster((AVOIDS_WEB_PREFERRED,), (DB,)),
            {"ignorePreferredTermsOfExistingPods": True},
            # raw -4, -4, 1, 0: int(100 * (s + 4) / 5)
            [0, 0, 100, 80],
            id="ignorePreferredTermsOfExistingPods with preferred terms of the pod",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(10)])),
            cluster((make_pod("db", "other"),)),
            {},
            [0, 0, 0, 0],
            id="preferred term ignores pods of other namespaces",
        ),
    ],
)
def test_score(
    incoming: PodView, nodes: list[NodeInfo], args: dict[str, Any], expected: list[int]
) -> None:
    assert score_all(incoming, nodes, args) == expected


@pytest.mark.parametrize(
    ("incoming", "nodes", "feasible", "expected"),
    [
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(10)])),
            cluster((DB,)),
            2,
            [0, 0],
            id="equal raw scores all become 0",
        ),
        pytest.param(
            make_pod(affinity=affinity(preferred=[weighted(10), weighted(4, ZONE, {"app": "c"})])),
            cluster((DB,), (make_pod("c"),)),
            3,
            # raw 10, 10, 4: the lowest positive score becomes 0
            [100, 100, 0],
            id="scaling starts at the lowest feasible score, not at 0",
        ),
    ],
)
def test_score_feasible_subset(
    incoming: PodView, nodes: list[NodeInfo], feasible: int, expected: list[int]
) -> None:
    assert score_all(incoming, nodes, feasible=feasible) == expected


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param(
            {"hardPodAffinityWeight": 101, "ignorePreferredTermsOfExistingPods": "yes"},
            [
                "a.hardPodAffinityWeight: must be an integer between 0 and 100",
                "a.ignorePreferredTermsOfExistingPods: must be a boolean",
            ],
            id="out of range and not a boolean",
        ),
        pytest.param(
            {"hardPodAffinityWeight": True, "weight": 1},
            [
                "a.weight: unknown field",
                "a.hardPodAffinityWeight: must be an integer between 0 and 100",
            ],
            id="boolean weight and unknown field",
        ),
        pytest.param(
            {"hardPodAffinityWeight": -1},
            ["a.hardPodAffinityWeight: must be an integer between 0 and 100"],
            id="negative weight",
        ),
    ],
)
def test_scorer_args(args: dict[str, Any], errors: list[str]) -> None:
    with pytest.raises(ArgsError) as raised:
        ipa.new_scorer(args, "a")
    assert [str(e) for e in raised.value.errors] == errors


def test_scorer_args_bounds_accepted() -> None:
    ipa.new_scorer({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": False}, "a")
    ipa.new_scorer({"hardPodAffinityWeight": 0}, "a")


def test_filter_takes_no_args() -> None:
    with pytest.raises(ArgsError) as raised:
        ipa.new_filter({"hardPodAffinityWeight": 1}, "a")
    assert [str(e) for e in raised.value.errors] == [
        "a: InterPodAffinity takes no args, got ['hardPodAffinityWeight']"
    ]


# The queueing hint for node events (kube-scheduler's): a node added with the topology key of a
# required affinity term, or whose value of it changed; with required anti-affinity, any node
# added, or one whose value of a term's key changed or went away.
ADDED, LABELS = EventKind.NODE_ADDED, EventKind.NODE_LABELS
NEAR = make_pod(affinity=affinity(required=[term()]))
APART = make_pod(affinity=affinity(anti=[term()]))
NO_TERMS = make_pod()
HINTS: dict[str, tuple[PodView, Change, bool]] = {
    "a node added with the affinity's topology key helps": (
        NEAR,
        Change(ADDED, make_node("n", "a")),
        True,
    ),
    "a node added without it does not": (NEAR, Change(ADDED, make_node("n", None)), False),
    "a node given the affinity's topology key helps": (
        NEAR,
        Change(LABELS, make_node("n", "a"), make_node("n", None)),
        True,
    ),
    "a node moved to another domain of the affinity's key helps": (
        NEAR,
        Change(LABELS, make_node("n", "b"), make_node("n", "a")),
        True,
    ),
    "a node's other labels changed does not help the affinity": (
        NEAR,
        Change(LABELS, make_node("n", "a"), plugin_harness.make_node("n", {ZONE: "a"})),
        False,
    ),
    "a node added helps a pod with anti-affinity, whatever its labels": (
        APART,
        Change(ADDED, make_node("n", None)),
        True,
    ),
    "a node that lost the anti-affinity's topology key helps": (
        APART,
        Change(LABELS, make_node("n", None), make_node("n", "a")),
        True,
    ),
    "a node moved to another domain of the anti-affinity's key helps": (
        APART,
        Change(LABELS, make_node("n", "b"), make_node("n", "a")),
        True,
    ),
    "a node given the anti-affinity's topology key does not": (
        APART,
        Change(LABELS, make_node("n", "a"), make_node("n", None)),
        False,
    ),
    "a node relabelled, its labels before unknown, is read as an addition": (
        NEAR,
        Change(LABELS, make_node("n", "a")),
        True,
    ),
    # kube-scheduler's hint never queues this pod (it has no terms to look at).
    "a node added helps a pod kept off by existing pods' anti-affinity": (
        NO_TERMS,
        Change(ADDED, make_node("n", None)),
        True,
    ),
    "an assigned pod deleted helps (no hint for pod events)": (
        NEAR,
        Change(EventKind.POD_DELETED, make_node("n", None), pod=make_pod("db")),
        True,
    ),
    "a taint change is not asked about": (
        NEAR,
        Change(EventKind.NODE_TAINTS, make_node("n", "a"), make_node("n", None)),
        False,
    ),
}


@pytest.mark.parametrize(("pod", "change", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(pod: PodView, change: Change, helps: bool) -> None:
    assert plugin_harness.wakes(ipa.new_filter({}, "args"), pod, change) is helps
