"""NodeUnschedulable keeps pods off cordoned nodes unless they tolerate the unschedulable taint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import Change, filter_node, make_node, make_pod, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import FITS
from policy_scheduler.plugins import node_unschedulable

CORDONED = ("node(s) were unschedulable",)
KEY = "node.kubernetes.io/unschedulable"


def run_filter(tolerations: list[dict[str, Any]], unschedulable: bool) -> Sequence[str]:
    pod = make_pod(tolerations=tolerations)
    info = make_node("n", spec={"unschedulable": unschedulable})
    return filter_node(node_unschedulable.new_filter({}, "args"), pod, info)


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "reasons"),
    [
        pytest.param([], False, FITS, id="schedulable node"),
        pytest.param([], True, CORDONED, id="cordoned node"),
        pytest.param(
            [{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}],
            True,
            FITS,
            id="tolerated with Exists",
        ),
        pytest.param(
            [{"key": KEY}], True, FITS, id="tolerated with the default Equal and empty value"
        ),
        pytest.param(
            [{"key": KEY, "operator": "Exists"}], True, FITS, id="tolerated for every effect"
        ),
        pytest.param([{"operator": "Exists"}], True, FITS, id="tolerates every taint"),
        pytest.param(
            [{"key": KEY, "operator": "Equal", "value": "true"}],
            True,
            CORDONED,
            id="a value the taint does not have",
        ),
        pytest.param(
            [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}],
            True,
            CORDONED,
            id="another effect",
        ),
        pytest.param([{"key": "other", "operator": "Exists"}], True, CORDONED, id="another key"),
    ],
)
def test_filter(
    tolerations: list[dict[str, Any]], unschedulable: bool, reasons: Sequence[str]
) -> None:
    assert tuple(run_filter(tolerations, unschedulable)) == reasons


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError):
        node_unschedulable.new_filter({"x": 1}, "args")


# kube-scheduler's NodeUnschedulable hint: a node added that is not cordoned, or a node uncordoned.
HINTS: dict[str, tuple[EventKind, bool, bool]] = {
    "a node added that is not cordoned helps": (EventKind.NODE_ADDED, False, True),
    "a cordoned node added does not": (EventKind.NODE_ADDED, True, False),
    "a node uncordoned helps": (EventKind.NODE_UNSCHEDULABLE, False, True),
    "a node cordoned does not": (EventKind.NODE_UNSCHEDULABLE, True, False),
    "a node uncordoned while its labels change helps": (
        EventKind.NODE_UNSCHEDULABLE | EventKind.NODE_LABELS,
        False,
        True,
    ),
    "a taint change alone is not asked about": (EventKind.NODE_TAINTS, False, False),
    "a label change alone is not asked about": (EventKind.NODE_LABELS, False, False),
    "a node deleted is not asked about": (EventKind.NODE_DELETED, False, False),
}


@pytest.mark.parametrize(("kind", "cordoned", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(kind: EventKind, cordoned: bool, helps: bool) -> None:
    # Whether the node was cordoned before does not matter: the event says whether that changed.
    change = Change(kind, make_node("n", spec={"unschedulable": cordoned}))
    assert wakes(node_unschedulable.new_filter({}, "args"), make_pod(), change) is helps
