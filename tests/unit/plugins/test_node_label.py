"""NodeLabel: nodes must carry the present labels and lack the absent ones; args are validated
with full paths; the label-syntax helpers follow apimachinery."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.plugins import node_label
from policy_scheduler.plugins.base import FITS, ArgsError, Cycle
from policy_scheduler.plugins.node_label import label_key_problem, label_value_problem

PATH = "spec.predicates[2].args"


def run_filter(args: dict[str, Any], labels: dict[str, str]) -> Sequence[str]:
    pod = PodView({"metadata": {"name": "p"}})
    info = NodeInfo(NodeView({"metadata": {"name": "n", "labels": labels}}))
    plugin = node_label.new_filter(args, PATH)
    return plugin.filter(plugin.pre_filter(Cycle(pod, Snapshot([info]))), pod, info)


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


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        pytest.param("disk", True, id="plain"),
        pytest.param("topology.kubernetes.io/zone", True, id="prefixed"),
        pytest.param("a" * 63, True, id="63 characters"),
        pytest.param("a" * 64, False, id="64 characters"),
        pytest.param("Disk_Type.v1", True, id="upper case, underscore and dot inside"),
        pytest.param("-disk", False, id="starts with a dash"),
        pytest.param("disk.", False, id="ends with a dot"),
        pytest.param("/disk", False, id="empty prefix"),
        pytest.param("example.com/", False, id="empty name"),
        pytest.param("Example.com/disk", False, id="upper-case prefix"),
        pytest.param("a/b/c", False, id="two slashes"),
        pytest.param(("a" * 63 + ".") * 4 + "a/x", False, id="prefix over 253 characters"),
    ],
)
def test_label_key_problem(key: str, valid: bool) -> None:
    assert (label_key_problem(key) is None) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("ssd", True, id="plain"),
        pytest.param("1.2_3-4", True, id="punctuation inside"),
        pytest.param("-5", False, id="leading dash"),
        pytest.param("a/b", False, id="slash"),
        pytest.param("a" * 64, False, id="too long"),
    ],
)
def test_label_value_problem(value: str, valid: bool) -> None:
    assert (label_value_problem(value) is None) is valid
