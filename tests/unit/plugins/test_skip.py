"""Which plugins skip which pods: exactly where kube-scheduler v1.34's PreFilter or PreScore
returns Skip, and nowhere else."""

from __future__ import annotations

from typing import Any

import pytest
from plugin_harness import make_node, make_pod

from policy_scheduler.framework.interface import SKIP
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.registry import FILTERS, SCORERS

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REQUESTS = {"resources": {"requests": {"cpu": "1"}}}


def _pod(labels: dict[str, str] | None = None, **spec: Any) -> PodView:
    spec.setdefault("containers", [{"name": "c", "image": "web:1", **REQUESTS}])
    return make_pod("p", "default", labels or {"app": "web"}, **spec)


def _anti_affinity(kind: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}
    if kind == "required":
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": term}
            ]
        }
    }


def _cycle(pod: PodView, *existing: PodView) -> Cycle:
    return Cycle(pod, Snapshot([make_node("n", {HOST: "n", ZONE: "a"}, *existing)]))


def _skips_filter(name: str, pod: PodView, *existing: PodView) -> bool:
    return FILTERS[name]({}, "args").pre_filter(_cycle(pod, *existing)) is SKIP


def _skips_scorer(name: str, pod: PodView, *existing: PodView, args: Any = None) -> bool:
    cycle = _cycle(pod, *existing)
    return SCORERS[name](args or {}, "args").pre_score(cycle, cycle.snapshot.table.all()) is SKIP


SPREAD = {"maxSkew": 1, "topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}


@pytest.mark.parametrize(
    ("name", "pod", "skipped"),
    [
        pytest.param("NodeAffinity", _pod(), True, id="NodeAffinity: no selector, no affinity"),
        pytest.param(
            "NodeAffinity", _pod(nodeSelector={"disk": "ssd"}), False, id="NodeAffinity: selector"
        ),
        pytest.param("NodePorts", _pod(), True, id="NodePorts: no host ports"),
        pytest.param(
            "NodePorts",
            _pod(containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]),
            False,
            id="NodePorts: a host port",
        ),
        pytest.param("PodTopologySpread", _pod(), True, id="PodTopologySpread: no constraints"),
        pytest.param(
            "PodTopologySpread",
            _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}]),
            True,
            id="PodTopologySpread: only soft constraints",
        ),
        pytest.param(
            "PodTopologySpread",
            _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "DoNotSchedule"}]),
            False,
            id="PodTopologySpread: a hard constraint",
        ),
        pytest.param("InterPodAffinity", _pod(), True, id="InterPodAffinity: no terms anywhere"),
        pytest.param(
            "InterPodAffinity",
            _pod(affinity=_anti_affinity("required")),
            False,
            id="InterPodAffinity: own required term",
        ),
        pytest.param(
            "InterPodAffinity",
            _pod(affinity=_anti_affinity("preferred")),
            True,
            id="InterPodAffinity: preferred terms do not filter",
        ),
        pytest.param("NodeResourcesFit", _pod(), False, id="NodeResourcesFit never skips"),
        pytest.param("TaintToleration", _pod(), False, id="TaintToleration never skips"),
        pytest.param("NodeUnschedulable", _pod(), False, id="NodeUnschedulable never skips"),
    ],
)
def test_pre_filter_skips(name: str, pod: PodView, skipped: bool) -> None:
    assert _skips_filter(name, pod) is skipped


def test_inter_pod_affinity_filter_runs_for_an_existing_pods_required_anti_affinity() -> None:
    existing = make_pod("e", "default", {"app": "db"}, affinity=_anti_affinity("required"))
    assert not _skips_filter("InterPodAffinity", _pod(), existing)
    # An existing term that does not select the pod leaves nothing to check.
    assert _skips_filter("InterPodAffinity", _pod({"app": "other"}), existing)


@pytest.mark.parametrize(
    ("name", "pod", "skipped"),
    [
        pytest.param("NodeAffinity", _pod(), True, id="NodeAffinity: no preferred terms"),
        pytest.param(
            "NodeAffinity",
            _pod(
                affinity={
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 5,
                                "preference": {
                                    "matchExpressions": [{"key": "disk", "operator": "Exists"}]
                                },
                            }
                        ]
                    }
                }
            ),
            False,
            id="NodeAffinity: a preferred term",
        ),
        pytest.param("PodTopologySpread", _pod(), True, id="PodTopologySpread: no constraints"),
        pytest.param(
            "PodTopologySpread",
            _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}]),
            False,
            id="PodTopologySpread: a soft constraint",
        ),
        pytest.param("InterPodAffinity", _pod(), True, id="InterPodAffinity: no term applies"),
        pytest.param(
            "InterPodAffinity",
            _pod(affinity=_anti_affinity("preferred")),
            True,
            id="InterPodAffinity: own preferred term matching no pod",
        ),
        pytest.param(
            "BalancedAllocation",
            _pod(containers=[{"name": "c"}]),
            True,
            id="BalancedAllocation: best effort",
        ),
        pytest.param("BalancedAllocation", _pod(), False, id="BalancedAllocation: requests"),
        pytest.param("TaintToleration", _pod(), False, id="TaintToleration never skips"),
        pytest.param("ImageLocality", _pod(), False, id="ImageLocality never skips"),
        pytest.param(
            "LeastAllocated",
            _pod(containers=[{"name": "c"}]),
            False,
            id="LeastAllocated never skips",
        ),
    ],
)
def test_pre_score_skips(name: str, pod: PodView, skipped: bool) -> None:
    assert _skips_scorer(name, pod) is skipped


def test_inter_pod_affinity_scorer_runs_when_a_term_applies() -> None:
    existing = make_pod("e", "default", {"app": "web"})
    assert not _skips_scorer(
        "InterPodAffinity", _pod(affinity=_anti_affinity("preferred")), existing
    )
    theirs = make_pod("t", "default", {"app": "db"}, affinity=_anti_affinity("preferred"))
    assert not _skips_scorer("InterPodAffinity", _pod(), theirs)


def test_inter_pod_affinity_scorer_skips_when_told_to_ignore_existing_preferred_terms() -> None:
    theirs = make_pod("t", "default", {"app": "db"}, affinity=_anti_affinity("preferred"))
    args = {"ignorePreferredTermsOfExistingPods": True}
    assert _skips_scorer("InterPodAffinity", _pod(), theirs, args=args)
