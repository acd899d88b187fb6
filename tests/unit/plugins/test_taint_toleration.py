"""TaintToleration: untolerated NoSchedule/NoExecute taints reject a node, untolerated
PreferNoSchedule taints lower its score, and tolerations match as k8s.io/api's ToleratesTaint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import Change, filter_node, make_node, make_pod, raw_and_normalized, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import FITS
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import taint_toleration
from policy_scheduler.plugins.taint_toleration import Toleration, parse_tolerations, tolerated

Raw = dict[str, Any]


def taint(key: str, value: str | None = None, effect: str = "NoSchedule") -> Raw:
    raw: Raw = {"key": key, "effect": effect}
    if value is not None:
        raw["value"] = value
    return raw


def node(name: str, *taints: Raw) -> NodeInfo:
    return make_node(name, spec={"taints": list(taints)})


def pod(*tolerations: Raw) -> PodView:
    return make_pod(tolerations=list(tolerations))


@pytest.mark.parametrize(
    ("toleration", "taint_key", "taint_value", "effect", "expected"),
    [
        pytest.param(
            {"key": "k", "value": "v"},
            "k",
            "v",
            "NoSchedule",
            True,
            id="operator defaults to Equal",
        ),
        pytest.param(
            {"key": "k", "operator": "Equal", "value": "v"},
            "k",
            "w",
            "NoSchedule",
            False,
            id="Equal needs the same value",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists"},
            "k",
            "w",
            "NoSchedule",
            True,
            id="Exists matches every value",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists"},
            "j",
            "",
            "NoSchedule",
            False,
            id="Exists needs the same key",
        ),
        pytest.param(
            {"operator": "Exists"},
            "any",
            "thing",
            "NoExecute",
            True,
            id="empty key with Exists matches every taint",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
            "k",
            "",
            "NoExecute",
            False,
            id="effect must be the same",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": ""},
            "k",
            "",
            "NoExecute",
            True,
            id="empty effect matches every effect",
        ),
        pytest.param(
            {"key": "k"},
            "k",
            "",
            "NoSchedule",
            True,
            id="Equal with no value matches an empty value",
        ),
        pytest.param(
            {"key": "k", "operator": "Gt", "value": "1"},
            "k",
            "5",
            "NoSchedule",
            False,
            id="other operators match nothing in v1.37 (Gt and Lt gated off)",
        ),
    ],
)
def test_tolerated(
    toleration: Raw, taint_key: str, taint_value: str, effect: str, expected: bool
) -> None:
    assert tolerated(parse_tolerations([toleration]), taint_key, taint_value, effect) is expected


def test_parse_tolerations_fills_absent_fields() -> None:
    assert parse_tolerations([{"key": "k", "tolerationSeconds": 5}]) == (
        Toleration("k", "", "", ""),
    )


def run_filter(p: PodView, info: NodeInfo) -> Sequence[str]:
    return filter_node(taint_toleration.new_filter({}, "args"), p, info)


@pytest.mark.parametrize(
    ("tolerations", "taints", "reasons"),
    [
        pytest.param([], [], FITS, id="no taints"),
        pytest.param(
            [],
            [taint("dedicated", "gpu")],
            (taint_toleration.UNTOLERATED,),
            id="NoSchedule taint",
        ),
        pytest.param(
            [],
            [taint("node-role.kubernetes.io/control-plane")],
            (taint_toleration.UNTOLERATED,),
            id="taint without value",
        ),
        pytest.param(
            [],
            [taint("gone", "yes", "NoExecute")],
            (taint_toleration.UNTOLERATED,),
            id="NoExecute taint",
        ),
        pytest.param(
            [],
            [taint("soft", "x", "PreferNoSchedule")],
            FITS,
            id="PreferNoSchedule does not filter",
        ),
        pytest.param(
            [{"key": "a", "operator": "Exists"}],
            [taint("a", "1"), taint("b", "2"), taint("c", "3")],
            (taint_toleration.UNTOLERATED,),
            id="one reason for several untolerated taints",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            [taint("dedicated", "gpu")],
            FITS,
            id="tolerated",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}],
            [taint("dedicated", "gpu")],
            (taint_toleration.UNTOLERATED,),
            id="a toleration for another effect does not help",
        ),
        pytest.param(
            [{"operator": "Exists"}],
            [taint("a"), taint("b", "x", "NoExecute")],
            FITS,
            id="tolerates everything",
        ),
    ],
)
def test_filter(tolerations: list[Raw], taints: list[Raw], reasons: Sequence[str]) -> None:
    assert tuple(run_filter(pod(*tolerations), node("n", *taints))) == reasons


def test_reason_names_no_taint_as_kube_v1_37() -> None:
    # kube-scheduler v1.37 says "node(s) had untolerated taint(s)", whatever the taint; the
    # older "{key: value}" form differed from its FailedScheduling messages (tests/e2e parity).
    assert run_filter(pod(), node("n", taint("dedicated", "gpu"))) == (
        "node(s) had untolerated taint(s)",
    )


def run_scorer(p: PodView, nodes: list[NodeInfo]) -> tuple[list[int], list[int]]:
    """The raw and the normalized scores."""
    return raw_and_normalized(taint_toleration.new_scorer({}, "args"), p, nodes)


def soft(key: str, value: str = "") -> Raw:
    return taint(key, value, "PreferNoSchedule")


@pytest.mark.parametrize(
    ("tolerations", "taints", "raw", "scores"),
    [
        pytest.param(
            [],
            [[], [soft("a")], [soft("a"), soft("b")]],
            [0, 1, 2],
            [100, 50, 0],
            id="fewer untolerated taints score higher",
        ),
        pytest.param(
            [],
            [[soft("a")], [soft("a"), soft("b"), soft("c")]],
            [1, 3],
            [67, 0],
            id="integer division rounds the scaled count down",
        ),
        pytest.param(
            [],
            [[], [taint("hard")]],
            [0, 0],
            [100, 100],
            id="no PreferNoSchedule taints: every node scores 100",
        ),
        pytest.param(
            [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}],
            [[soft("a")], [soft("b")]],
            [0, 1],
            [100, 0],
            id="tolerated taint",
        ),
        pytest.param(
            [{"key": "a", "operator": "Exists"}],
            [[soft("a")], [soft("b")]],
            [0, 1],
            [100, 0],
            id="a toleration without effect counts",
        ),
        pytest.param(
            [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}],
            [[soft("a")], []],
            [1, 0],
            [0, 100],
            id="a NoSchedule toleration does not count for scoring",
        ),
        pytest.param(
            [{"key": "a", "value": "x"}],
            [[soft("a", "x")], [soft("a", "y")]],
            [0, 1],
            [100, 0],
            id="values must be equal",
        ),
    ],
)
def test_score(
    tolerations: list[Raw], taints: list[list[Raw]], raw: list[int], scores: list[int]
) -> None:
    nodes = [node(f"n{i}", *node_taints) for i, node_taints in enumerate(taints)]
    assert run_scorer(pod(*tolerations), nodes) == (raw, scores)


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="TaintToleration takes no args"):
        taint_toleration.new_filter({"x": 1}, "args")
    with pytest.raises(ArgsError, match="TaintToleration takes no args"):
        taint_toleration.new_scorer({"x": 1}, "args")


# kube-scheduler's TaintToleration hint: a node added, or whose taints changed, may help only when
# it has no untolerated NoSchedule/NoExecute taint now and had one before (an added node had none).
ADDED, TAINTS = EventKind.NODE_ADDED, EventKind.NODE_TAINTS
GPU = taint("gpu")
TOLERATES_GPU = {"key": "gpu", "operator": "Exists"}
HINTS: dict[str, tuple[PodView, Change, bool]] = {
    "a node added without taints helps": (pod(), Change(ADDED, node("n")), True),
    "a node added with an untolerated taint does not": (
        pod(),
        Change(ADDED, node("n", GPU)),
        False,
    ),
    "a node added with a tolerated taint helps": (
        pod(TOLERATES_GPU),
        Change(ADDED, node("n", GPU)),
        True,
    ),
    "a node added with only a PreferNoSchedule taint helps": (
        pod(),
        Change(ADDED, node("n", taint("gpu", effect="PreferNoSchedule"))),
        True,
    ),
    "an untolerated taint removed helps": (pod(), Change(TAINTS, node("n"), node("n", GPU)), True),
    "an untolerated taint replaced by another does not": (
        pod(),
        Change(TAINTS, node("n", taint("ssd")), node("n", GPU)),
        False,
    ),
    "a tolerated taint added where none was in the way does not": (
        pod(TOLERATES_GPU),
        Change(TAINTS, node("n", GPU), node("n")),
        False,
    ),
    "a taint change, the taints before unknown, is read as the node's addition": (
        pod(),
        Change(TAINTS, node("n")),
        True,
    ),
    "a label change is not asked about": (pod(), Change(EventKind.NODE_LABELS, node("n")), False),
    "a node deleted is not asked about": (pod(), Change(EventKind.NODE_DELETED, node("n")), False),
    "an assigned pod deleted is not asked about": (
        pod(),
        Change(EventKind.POD_DELETED, node("n"), pod=make_pod("x")),
        False,
    ),
}


@pytest.mark.parametrize(("p", "change", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(p: PodView, change: Change, helps: bool) -> None:
    assert wakes(taint_toleration.new_filter({}, "args"), p, change) is helps
