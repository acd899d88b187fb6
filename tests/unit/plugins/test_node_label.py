"""NodeLabel: nodes must carry the present labels and lack the absent ones; args are validated
with full paths; the label-syntax helpers follow apimachinery."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import Change, filter_node, make_node, make_pod, wakes

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import FITS
from policy_scheduler.plugins import node_label

PATH = "spec.predicates[2].args"


def run_filter(args: dict[str, Any], labels: dict[str, str]) -> Sequence[str]:
    return filter_node(node_label.new_filter(args, PATH), make_pod(), make_node("n", labels))


@pytest.mark.parametrize(
    ("args", "labels", "reasons"),
    [
        pytest.param({"present": ["disk"]}, {"disk": "hdd"}, FITS, id="present key, any value"),
        pytest.param(
            {"present": ["disk"]}, {}, ("node(s) didn't have label disk",), id="missing key"
        ),
        pytest.param({"present": ["disk=ssd"]}, {"disk": "ssd"}, FITS, id="present key=value"),
        pytest.param(
            {"present": ["disk=ssd"]},
            {"disk": "hdd"},
            ("node(s) didn't have label disk=ssd",),
            id="other value",
        ),
        pytest.param({"present": ["disk="]}, {"disk": ""}, FITS, id="empty value"),
        pytest.param(
            {"present": ["disk="]},
            {},
            ("node(s) didn't have label disk=",),
            id="empty value needs the key",
        ),
        pytest.param(
            {"absent": ["maintenance"]},
            {"maintenance": "true"},
            ("node(s) had label maintenance",),
            id="forbidden key",
        ),
        pytest.param({"absent": ["maintenance"]}, {}, FITS, id="forbidden key missing"),
        pytest.param({"absent": ["zone=a"]}, {"zone": "b"}, FITS, id="forbidden value differs"),
        pytest.param(
            {"absent": ["zone=a"]},
            {"zone": "a"},
            ("node(s) had label zone=a",),
            id="forbidden value",
        ),
        pytest.param(
            {"present": ["disk=ssd", "gpu"], "absent": ["maintenance"]},
            {"maintenance": ""},
            (
                "node(s) didn't have label disk=ssd",
                "node(s) didn't have label gpu",
                "node(s) had label maintenance",
            ),
            id="every violation is a reason",
        ),
        pytest.param(
            {"present": ["example.com/tier=gold"]},
            {"example.com/tier": "gold"},
            FITS,
            id="prefixed key",
        ),
    ],
)
def test_filter(args: dict[str, Any], labels: dict[str, str], reasons: Sequence[str]) -> None:
    assert tuple(run_filter(args, labels)) == reasons


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param(
            {},
            [f"{PATH}: must name at least one label in present or absent"],
            id="nothing to check",
        ),
        pytest.param(
            {"present": [], "absent": []},
            [f"{PATH}: must name at least one label in present or absent"],
            id="empty lists",
        ),
        pytest.param(
            {"present": "disk"},
            [f'{PATH}.present: must be a list of "key" or "key=value" strings'],
            id="not a list",
        ),
        pytest.param(
            {"present": ["", 3], "absent": ["ok"]},
            [
                f'{PATH}.present[0]: must be a non-empty "key" or "key=value" string',
                f'{PATH}.present[1]: must be a non-empty "key" or "key=value" string',
            ],
            id="empty and non-string entries",
        ),
        pytest.param(
            {"present": ["disk=ssd", "bad key"], "absent": ["=x", "k=bad value"]},
            [
                f"{PATH}.present[1]: invalid label key 'bad key': the name must be at most "
                "63 alphanumeric characters, '-', '_' or '.', starting and ending with an "
                "alphanumeric character",
                f"{PATH}.absent[0]: invalid label key '': the name must not be empty",
                f"{PATH}.absent[1]: invalid label value 'bad value': must be at most 63 "
                "alphanumeric characters, '-', '_' or '.', starting and ending with an "
                "alphanumeric character",
            ],
            id="every syntax problem with its path",
        ),
        pytest.param(
            {"present": ["disk=ssd", "gpu"], "absent": ["disk", "gpu", "zone"]},
            [
                f"{PATH}.absent[0]: contradicts present[0] 'disk=ssd'",
                f"{PATH}.absent[1]: contradicts present[1] 'gpu'",
            ],
            id="absent entries that no node could satisfy",
        ),
        pytest.param(
            {"present": ["a"], "labels": ["b"]},
            [f"{PATH}.labels: unknown field; expected one of ['absent', 'present']"],
            id="unknown field",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], errors: list[str]) -> None:
    with pytest.raises(ArgsError) as caught:
        node_label.new_filter(args, PATH)
    assert [str(error) for error in caught.value.errors] == errors


def test_compatible_present_and_absent() -> None:
    assert run_filter({"present": ["disk"], "absent": ["disk=hdd"]}, {"disk": "ssd"}) == FITS


# The queueing hint: a node added that passes, or relabelled so that it passes now and did not.
ADDED, LABELS = EventKind.NODE_ADDED, EventKind.NODE_LABELS
SSD_ONLY = {"present": ["disk=ssd"], "absent": ["maintenance"]}
HINTS: dict[str, tuple[Change, bool]] = {
    "a node added that passes helps": (Change(ADDED, make_node("n", {"disk": "ssd"})), True),
    "a node added that does not pass does not": (Change(ADDED, make_node("n")), False),
    "a node added with a forbidden label does not": (
        Change(ADDED, make_node("n", {"disk": "ssd", "maintenance": "yes"})),
        False,
    ),
    "a node relabelled to pass helps": (
        Change(LABELS, make_node("n", {"disk": "ssd"}), make_node("n", {"disk": "hdd"})),
        True,
    ),
    "a node that passed, relabelled, does not": (
        Change(LABELS, make_node("n", {"disk": "ssd", "r": "2"}), make_node("n", {"disk": "ssd"})),
        False,
    ),
    "a node relabelled, its labels before unknown, is read as an addition": (
        Change(LABELS, make_node("n", {"disk": "ssd"})),
        True,
    ),
    "a taint change is not asked about": (
        Change(EventKind.NODE_TAINTS, make_node("n", {"disk": "ssd"})),
        False,
    ),
}


@pytest.mark.parametrize(("change", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(change: Change, helps: bool) -> None:
    assert wakes(node_label.new_filter(SSD_ONLY, PATH), make_pod(), change) is helps
