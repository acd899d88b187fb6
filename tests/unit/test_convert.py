"""``policy-scheduler convert``: every legacy predicate and priority name, the argument mappings,
weight clamping, what is reported as not carried, and that every result compiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.cli import EXIT_BAD_INPUT, main
from policy_scheduler.plugins.registry import FILTER_ALIASES, SCORER_ALIASES
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.policy.convert import (
    DEFAULT_PREDICATES,
    PREDICATE_ORDER,
    Conversion,
    LegacyPolicyError,
    convert,
    default_name,
    parse_legacy,
)

MANDATORY = ["NodeUnschedulable", "TaintToleration"]


def legacy(**fields: Any) -> dict[str, Any]:
    return {"kind": "Policy", "apiVersion": "v1", **fields}


def converted(**fields: Any) -> Conversion:
    """The conversion, checked to compile as every conversion must."""
    result = convert(legacy(**fields), "converted")
    compile_policy(result.policy)
    return result


def predicate_names(result: Conversion) -> list[str]:
    return [p["name"] for p in result.policy["spec"]["predicates"]]


def priorities(result: Conversion) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in result.policy["spec"]["priorities"]}


@pytest.mark.parametrize(
    ("name", "plugins"),
    [
        ("CheckNodeUnschedulable", ["NodeUnschedulable"]),
        ("GeneralPredicates", ["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"]),
        ("HostName", ["NodeName"]),
        ("PodFitsHostPorts", ["NodePorts"]),
        ("PodFitsPorts", ["NodePorts"]),
        ("MatchNodeSelector", ["NodeAffinity"]),
        ("PodFitsResources", ["NodeResourcesFit"]),
        ("PodToleratesNodeTaints", ["TaintToleration"]),
        ("EvenPodsSpread", ["PodTopologySpread"]),
        ("MatchInterPodAffinity", ["InterPodAffinity"]),
        ("NoDiskConflict", ["VolumeRestrictions"]),
        ("NoVolumeZoneConflict", ["VolumeZone"]),
        ("CheckVolumeBinding", ["VolumeBinding"]),
        ("MaxCSIVolumeCountPred", ["NodeVolumeLimits"]),
        ("MaxEBSVolumeCount", ["NodeVolumeLimits"]),
        ("MaxGCEPDVolumeCount", ["NodeVolumeLimits"]),
        ("MaxAzureDiskVolumeCount", ["NodeVolumeLimits"]),
        ("MaxCinderVolumeCount", ["NodeVolumeLimits"]),
    ],
)
def test_each_predicate(name: str, plugins: list[str]) -> None:
    result = converted(predicates=[{"name": name}], priorities=[])
    # The mandatory predicates are always there, and everything runs in kube-scheduler's order.
    assert set(predicate_names(result)) == {*plugins, *MANDATORY}
    assert not [n for n in result.notes if "not carried" in n]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("CheckServiceAffinity", "ServiceAffinity"),
        ("CheckNodeCondition", "TaintToleration"),
        ("CheckNodeMemoryPressure", "TaintToleration"),
        ("CheckNodeDiskPressure", "TaintToleration"),
        ("CheckNodePIDPressure", "TaintToleration"),
        ("CheckNodeLabelPresence", "labelsPresence"),
        ("SomethingElse", "unknown predicate"),
    ],
)
def test_predicates_not_carried(name: str, reason: str) -> None:
    result = converted(predicates=[{"name": name}], priorities=[])
    assert predicate_names(result) == MANDATORY
    (note,) = [n for n in result.notes if "not carried" in n]
    assert note.startswith(f"predicates[0] {name}: not carried: ")
    assert reason in note


@pytest.mark.parametrize(
    ("name", "plugin"),
    [
        ("LeastRequestedPriority", "LeastAllocated"),
        ("MostRequestedPriority", "MostAllocated"),
        ("BalancedResourceAllocation", "BalancedAllocation"),
        ("NodeAffinityPriority", "NodeAffinity"),
        ("TaintTolerationPriority", "TaintToleration"),
        ("ImageLocalityPriority", "ImageLocality"),
        ("EvenPodsSpreadPriority", "PodTopologySpread"),
        ("InterPodAffinityPriority", "InterPodAffinity"),
    ],
)
def test_each_priority(name: str, plugin: str) -> None:
    result = converted(priorities=[{"name": name, "weight": 3}], predicates=[])
    assert result.policy["spec"]["priorities"] == [{"name": plugin, "weight": 3}]
    assert [n for n in result.notes if "priorities" in n] == []


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"name": "SelectorSpreadPriority"}, "spreads the pods of each Service"),
        ({"name": "ServiceSpreadingPriority"}, "spreads the pods of each Service"),
        ({"name": "EqualPriority"}, "changes nothing"),
        ({"name": "NodePreferAvoidPodsPriority"}, "preferAvoidPods"),
        ({"name": "ResourceLimitsPriority"}, "no equivalent"),
        ({"name": "RequestedToCapacityRatioPriority"}, "shape"),
        ({"name": "Mystery"}, "unknown priority"),
        ({"name": "spread", "argument": {"serviceAntiAffinity": {"label": "zone"}}}, "Service"),
        (
            {"name": "noSSD", "argument": {"labelPreference": {"label": "ssd", "presence": False}}},
            "lack a label",
        ),
    ],
)
def test_priorities_not_carried(entry: dict[str, Any], reason: str) -> None:
    result = converted(priorities=[{**entry, "weight": 1}], predicates=[])
    assert result.policy["spec"]["priorities"] == []
    (note,) = [n for n in result.notes if n.startswith("priorities")]
    assert note.startswith(f"priorities[0] {entry['name']}: not carried: ")
    assert reason in note


def test_every_legacy_alias_is_converted() -> None:
    """The registry's aliases are what convert maps from, so none may fall out of the order."""
    assert set(FILTER_ALIASES) <= set(PREDICATE_ORDER)
    for name, plugin in SCORER_ALIASES.items():
        if name in ("RequestedToCapacityRatioPriority", "NodeLabelPriority"):
            continue  # these need their argument; see the argument tests
        assert priorities(converted(priorities=[{"name": name, "weight": 1}])) == {
            plugin: {"name": plugin, "weight": 1}
        }


def test_predicates_run_in_kube_schedulers_order() -> None:
    result = converted(
        predicates=[
            {"name": "MatchInterPodAffinity"},
            {"name": "PodFitsResources"},
            {"name": "PodToleratesNodeTaints"},
            {"name": "HostName"},
            {"name": "GeneralPredicates"},  # NodeResourcesFit again: listed once
        ]
    )
    assert predicate_names(result) == [
        "NodeUnschedulable",
        "NodeResourcesFit",
        "NodeName",
        "NodePorts",
        "NodeAffinity",
        "TaintToleration",
        "InterPodAffinity",
    ]
    assert "NodeUnschedulable: added: kube-scheduler always ran CheckNodeUnschedulable" in (
        result.notes
    )


def test_labels_presence_merges_into_one_node_label_filter() -> None:
    result = converted(
        predicates=[
            {
                "name": "ssd",
                "argument": {"labelsPresence": {"labels": ["disk=ssd"], "presence": True}},
            },
            {
                "name": "zoned",
                "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
            },
            {
                "name": "calm",
                "argument": {"labelsPresence": {"labels": ["drain"], "presence": False}},
            },
        ]
    )
    (node_label,) = [p for p in result.policy["spec"]["predicates"] if p["name"] == "NodeLabel"]
    assert node_label["args"] == {"present": ["disk=ssd", "zone"], "absent": ["drain"]}


def test_service_affinity_argument_is_not_carried() -> None:
    result = converted(
        predicates=[{"name": "svc", "argument": {"serviceAffinity": {"labels": ["zone"]}}}]
    )
    assert predicate_names(result) == MANDATORY
    assert any(
        n.startswith("predicates[0] svc: not carried: ServiceAffinity") for n in result.notes
    )


def test_label_preference_and_requested_to_capacity_ratio_arguments() -> None:
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    resources = [{"name": "cpu", "weight": 2}]
    result = converted(
        predicates=[],
        priorities=[
            {
                "name": "zone",
                "weight": 4,
                "argument": {"labelPreference": {"label": "zone", "presence": True}},
            },
            {
                "name": "rack",
                "weight": 4,
                "argument": {"labelPreference": {"label": "rack", "presence": True}},
            },
            {
                "name": "RequestedToCapacityRatioPriority",
                "weight": 2,
                "argument": {
                    "requestedToCapacityRatioArguments": {"shape": shape, "resources": resources}
                },
            },
        ],
    )
    assert priorities(result) == {
        "NodeLabelPreference": {
            "name": "NodeLabelPreference",
            "weight": 4,
            "args": {"label": "zone"},
        },
        "RequestedToCapacityRatio": {
            "name": "RequestedToCapacityRatio",
            "weight": 2,
            "args": {"shape": shape, "resources": resources},
        },
    }
    # One NodeLabelPreference holds one label; the second preference is reported.
    assert result.notes[2:] == (
        "priorities[1] rack: not carried: NodeLabelPreference is already configured differently",
    )


def test_a_priority_listed_twice_keeps_the_larger_weight() -> None:
    result = converted(
        priorities=[
            {"name": "LeastRequestedPriority", "weight": 2},
            {"name": "LeastRequestedPriority", "weight": 5},
        ]
    )
    assert result.policy["spec"]["priorities"] == [{"name": "LeastAllocated", "weight": 5}]


@pytest.mark.parametrize(
    ("weight", "clamped"), [(None, 1), (0, 1), (-3, 1), (100, 100), (101, 100), (10000, 100)]
)
def test_weights_are_clamped_with_a_note(weight: int | None, clamped: int) -> None:
    result = converted(priorities=[{"name": "ImageLocalityPriority", "weight": weight}])
    assert result.policy["spec"]["priorities"] == [{"name": "ImageLocality", "weight": clamped}]
    notes = [n for n in result.notes if "clamped" in n]
    if weight == clamped:
        assert notes == []
    else:
        assert notes == [
            f"priorities[0] ImageLocalityPriority: weight {weight or 0} clamped to {clamped} "
            "(SchedulingPolicy weights are 1..100)"
        ]


def test_hard_pod_affinity_symmetric_weight() -> None:
    with_priority = converted(
        priorities=[{"name": "InterPodAffinityPriority", "weight": 1}],
        hardPodAffinitySymmetricWeight=7,
    )
    assert priorities(with_priority)["InterPodAffinity"]["args"] == {"hardPodAffinityWeight": 7}
    without = converted(predicates=[], priorities=[], hardPodAffinitySymmetricWeight=7)
    assert without.notes[2:] == (
        "hardPodAffinitySymmetricWeight: not carried: there is no InterPodAffinity priority",
    )


def test_extenders_and_always_check_all_predicates_are_not_carried() -> None:
    result = converted(
        predicates=[],
        priorities=[],
        extenders=[{"urlPrefix": "http://a/"}, {"urlPrefix": "http://b/"}],
        alwaysCheckAllPredicates=True,
    )
    assert result.notes == (
        "NodeUnschedulable: added: kube-scheduler always ran CheckNodeUnschedulable",
        "TaintToleration: added: kube-scheduler always ran PodToleratesNodeTaints",
        "extenders[0] http://a/: not carried: policy-scheduler calls no extenders",
        "extenders[1] http://b/: not carried: policy-scheduler calls no extenders",
        "alwaysCheckAllPredicates: not carried: a node's first failing predicate decides",
    )


def test_left_out_lists_mean_kube_schedulers_defaults() -> None:
    result = converted()
    assert predicate_names(result) == [
        "NodeUnschedulable",
        "NodeResourcesFit",
        "NodeName",
        "NodePorts",
        "NodeAffinity",
        "VolumeRestrictions",
        "TaintToleration",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert priorities(result) == {
        "InterPodAffinity": {"name": "InterPodAffinity", "weight": 1},
        "LeastAllocated": {"name": "LeastAllocated", "weight": 1},
        "BalancedAllocation": {"name": "BalancedAllocation", "weight": 1},
        "NodeAffinity": {"name": "NodeAffinity", "weight": 1},
        "TaintToleration": {"name": "TaintToleration", "weight": 1},
        "ImageLocality": {"name": "ImageLocality", "weight": 1},
        "PodTopologySpread": {"name": "PodTopologySpread", "weight": 2},
    }
    assert "predicates: not given, so kube-scheduler's default predicates are used" in result.notes
    assert "priorities: not given, so kube-scheduler's default priorities are used" in result.notes
    assert not [n for n in result.notes if "predicates[" in n]
    assert len(DEFAULT_PREDICATES) == 12


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"predicates": {"name": "x"}}, "predicates: must be a list"),
        ({"predicates": [{"argument": {}}]}, "predicates[0]: must be an object with a name"),
        (
            {"priorities": [{"name": "x", "argument": []}]},
            "priorities[0].argument: must be an object",
        ),
        (
            {"priorities": [{"name": "LeastRequestedPriority", "weight": "1"}]},
            "weight must be an integer",
        ),
        ({"predicates": [{"name": "x", "argument": {"labelsPresence": {}}}]}, "list of labels"),
    ],
)
def test_malformed_fields(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(LegacyPolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        convert(legacy(**fields), "x")


def test_parse_legacy_wants_a_v1_policy() -> None:
    assert parse_legacy(legacy()) == legacy()
    with pytest.raises(LegacyPolicyError, match="expected a kube-scheduler Policy"):
        parse_legacy({"kind": "KubeSchedulerConfiguration", "apiVersion": "v1"})


@pytest.mark.parametrize(
    ("stem", "name"),
    [("legacy-policy", "legacy-policy"), ("My_Policy.v1", "my-policy-v1"), ("__", "converted")],
)
def test_default_name(stem: str, name: str) -> None:
    assert default_name(stem) == name


LEGACY_YAML = """\
kind: Policy
apiVersion: v1
predicates: [{name: PodFitsResources}]
priorities: [{name: MostRequestedPriority, weight: 200}, {name: EqualPriority, weight: 1}]
"""


def test_cli_yaml_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(LEGACY_YAML)
    assert main(["convert", str(path)]) == 0
    out, err = capsys.readouterr()
    policy = yaml.safe_load(out)
    assert policy["metadata"] == {"name": "old"}
    assert policy["spec"]["priorities"] == [{"name": "MostAllocated", "weight": 100}]
    compile_policy(policy)
    assert err.splitlines() == [
        f"{path}: NodeUnschedulable: added: kube-scheduler always ran CheckNodeUnschedulable",
        f"{path}: TaintToleration: added: kube-scheduler always ran PodToleratesNodeTaints",
        f"{path}: priorities[0] MostRequestedPriority: weight 200 clamped to 100 "
        "(SchedulingPolicy weights are 1..100)",
        f"{path}: priorities[1] EqualPriority: not carried: it scores every node the same, so it "
        "changes nothing",
    ]
    assert main(["convert", str(path), "-o", "json", "--name", "renamed"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"] == {"name": "renamed"}


@pytest.mark.parametrize(
    ("text", "code", "error"),
    [
        (
            "kind: Policy\napiVersion: v1\npredicates: 3\n",
            EXIT_BAD_INPUT,
            "predicates: must be a list",
        ),
        ("kind: Pod\napiVersion: v1\n", EXIT_BAD_INPUT, "expected a kube-scheduler Policy"),
        (
            "kind: Policy\napiVersion: v1\n---\nkind: Policy\napiVersion: v1\n",
            EXIT_BAD_INPUT,
            "holds 2 Policies",
        ),
        ("{", EXIT_BAD_INPUT, "not valid YAML"),
        # Carried over as given, the label is refused by NodeLabel's own check.
        (
            "kind: Policy\napiVersion: v1\npredicates:\n"
            "- {name: l, argument: {labelsPresence: {labels: ['bad key'], presence: true}}}\n",
            1,
            "spec.predicates[2].args.present[0]",
        ),
    ],
)
def test_cli_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: int, error: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    assert main(["convert", str(path)]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert error in err
    assert "Traceback" not in err


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(tmp_path / "none.json")]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == f"{tmp_path / 'none.json'}: No such file or directory\n"
