"""The scheduling benchmark's phases after scheduler_perf's misc and volume cases
(bench/bench_scheduling.py): their default sizes (``misc_pods``), the room they take on the run's
nodes (``room``), the objects they create, and their checks."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from bench_scheduling import (
    CHURN_PRIORITY_CLASS,
    CSI_DRIVER,
    FINALIZER,
    GATED_PODS,
    MISC_MOST,
    Config,
    Listing,
    check_churn,
    check_gated,
    check_on_node,
    churn_objects,
    light_workload,
    misc_pods,
    phase_pods,
    pinned,
    prebound_volume,
    room,
)
from harness.workload import NAMESPACE, PHASE_LABEL
from provisioner import BIND_COMPLETED
from scheduling_report import MISC_PHASES

from policy_scheduler.model.objects import PodView


def config(**misc: int | None) -> Config:
    """The benchmark's settings with every phase before the misc ones off, and ``misc`` (phase ->
    pods, None: its default) for the misc phases."""
    return Config(
        nodes=(100,),
        pods=0,
        steady_rate=100.0,
        steady_seconds=0.0,
        storage_pods=0,
        preemption_pods=0,
        shaped_pods={"anti-affinity": 0, "spread": 0, "preferred-affinity": 0},
        parked_pods=5,
        unschedulable_pods=0,
        misc_pods={phase: misc.get(phase.replace("-", "_")) for phase in MISC_PHASES},
        schedulers=("policy-scheduler",),
        dra_nodes=0,
        dra_devices=10,
        dra_in_flight=10,
        dra_seconds=10.0,
        gang_nodes=0,
        gang_pods=0,
        repeats=1,
        concurrency=64,
        create_threads=32,
        kube_qps=5000,
        timeout=60.0,
        state_dir=Path("unused"),
        out=Path("unused"),
    )


# (nodes, pods given by phase, pods expected by phase)
DEFAULT_CASES: dict[str, tuple[int, Mapping[str, int | None], Mapping[str, int]]] = {
    "the suite's pods per node at 100 nodes": (
        100,
        {},
        {
            "secrets": 200,
            "in-tree-pvs": 40,
            "csi-pvs": 100,
            "daemonset": 200,
            "finalizers": 100,
            "gated": GATED_PODS,
            "mixed-churn": 200,
        },
    ),
    "at most MISC_MOST at 5,000 nodes": (
        5000,
        {},
        {
            "secrets": MISC_MOST,
            "in-tree-pvs": MISC_MOST,
            "csi-pvs": MISC_MOST,
            "daemonset": MISC_MOST,
            "finalizers": MISC_MOST,
            "gated": GATED_PODS,
            "mixed-churn": MISC_MOST,
        },
    ),
    "a count given is kept, past the cap too": (
        15000,
        {"daemonset": 30000, "secrets": 0},
        {"daemonset": 30000, "secrets": 0, "gated": GATED_PODS},
    ),
}


@pytest.mark.parametrize(
    ("nodes", "given", "expected"), DEFAULT_CASES.values(), ids=DEFAULT_CASES.keys()
)
def test_misc_pods(
    nodes: int, given: Mapping[str, int | None], expected: Mapping[str, int]
) -> None:
    counts = misc_pods(config(**{k.replace("-", "_"): v for k, v in given.items()}), nodes)
    assert {phase: counts[phase] for phase in expected} == expected


def test_misc_phases_run_after_the_shaped_ones_and_before_parked() -> None:
    counts = phase_pods(config(), "policy-scheduler", 100)
    assert list(counts) == [*MISC_PHASES, "parked"]


def test_the_raw_binders_run_no_misc_phase() -> None:
    assert phase_pods(config(), "raw", 100) == {}


ROOM_CASES = {
    "pods on the run's nodes": ("secrets", 30, 30),
    "the daemonset phase brings its own node": ("daemonset", 30, 0),
    "the gated phase brings its own node": ("gated", 30, 0),
    "the preemption phase brings its own nodes": ("preemption", 30, 0),
    "the finalizers phase's deleted pods hold room until its end": ("finalizers", 30, 60),
}


@pytest.mark.parametrize(("phase", "count", "expected"), ROOM_CASES.values(), ids=ROOM_CASES)
def test_room(phase: str, count: int, expected: int) -> None:
    assert room(phase, count) == expected


LIGHT_CASES = {"a light pod": False, "a pod with the finalizer": True}


@pytest.mark.parametrize("finalizer", LIGHT_CASES.values(), ids=LIGHT_CASES)
def test_light_workload(finalizer: bool) -> None:
    pods = light_workload(
        "daemonset", 3, "some-scheduler", phase="daemonset", extra=pinned("n"), finalizer=finalizer
    )
    assert [name for name, _ in pods] == ["daemonset-00000", "daemonset-00001", "daemonset-00002"]
    for _, body in pods:
        made = json.loads(body)
        assert made["metadata"]["labels"][PHASE_LABEL] == "daemonset"
        assert made["metadata"].get("finalizers", []) == ([FINALIZER] if finalizer else [])
        assert made["spec"]["terminationGracePeriodSeconds"] == 0
        assert PodView(made).requests == {}
        terms = made["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
        ]


# (the PV's source, the field of it naming the volume)
VOLUME_CASES = {
    "in-tree AWS EBS (pv-aws.yaml)": ({"awsElasticBlockStore": {}}, "volumeID"),
    "CSI (pv-csi.yaml)": ({"csi": {"driver": CSI_DRIVER}}, "volumeHandle"),
}


@pytest.mark.parametrize(("source", "id_field"), VOLUME_CASES.values(), ids=VOLUME_CASES)
def test_prebound_volume(source: Mapping[str, Any], id_field: str) -> None:
    pv, pvc = prebound_volume("csi-pvs-00007", source)
    kind = next(iter(source))
    assert pvc["metadata"]["name"] == "csi-pvs-00007-data"
    assert pvc["metadata"]["annotations"] == {BIND_COMPLETED: "true"}
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["claimRef"]["name"] == pvc["metadata"]["name"]
    assert pv["spec"]["claimRef"]["namespace"] == NAMESPACE
    assert pv["spec"][kind][id_field] == pv["metadata"]["name"]
    assert {**source[kind], id_field: pv["metadata"]["name"]} == pv["spec"][kind]
    assert "nodeAffinity" not in pv["spec"]


def test_churn_objects_fit_nowhere() -> None:
    objects = churn_objects("some-scheduler", 17000)(3)
    node = objects["/api/v1/nodes"]
    churn_pod = objects[f"/api/v1/namespaces/{NAMESPACE}/pods"]
    service = objects[f"/api/v1/namespaces/{NAMESPACE}/services"]
    assert node["metadata"]["name"] == churn_pod["metadata"]["name"] == "churn-00003"
    assert node["status"]["allocatable"]["pods"] == "0"
    assert churn_pod["spec"]["priorityClassName"] == CHURN_PRIORITY_CLASS
    assert PodView(churn_pod).requests["cpu"] == 17000
    assert service["metadata"]["name"] == "churn-00003"


def listing(placed: Mapping[str, str | None], nodes: Sequence[str] = ()) -> Listing:
    return Listing(
        {
            name: {"metadata": {"name": name}, "spec": {"nodeName": on}}
            for name, on in placed.items()
        },
        {name: {"metadata": {"name": name}} for name in nodes},
    )


# (where each pod is, whether the check passes)
ON_NODE_CASES: dict[str, tuple[Mapping[str, str | None], bool]] = {
    "all on the node": ({"a": "ds", "b": "ds"}, True),
    "one elsewhere": ({"a": "ds", "b": "other"}, False),
    "one not bound": ({"a": "ds", "b": None}, False),
}


@pytest.mark.parametrize(("placed", "ok"), ON_NODE_CASES.values(), ids=ON_NODE_CASES)
def test_check_on_node(placed: Mapping[str, str | None], ok: bool) -> None:
    assert check_on_node(listing(placed), list(placed), "ds")["ok"] is ok


GATED_CASES = {"none bound": ([], True), "one bound": (["held-1"], False)}


@pytest.mark.parametrize(("bound", "ok"), GATED_CASES.values(), ids=GATED_CASES)
def test_check_gated(bound: list[str], ok: bool) -> None:
    checked = check_gated(["held-0", "held-1"], bound)
    assert checked["ok"] is ok
    assert checked["bound_count"] == len(bound)


# (the pods left, the nodes left, the churn pods bound, whether the check passes)
CHURN_CASES: dict[str, tuple[Mapping[str, str | None], Sequence[str], list[str], bool]] = {
    "all gone, none bound": ({"mixed-churn-00000": "node-0"}, ["node-0"], [], True),
    "a churn pod left": ({"churn-00001": None}, ["node-0"], [], False),
    "a churn node left": ({}, ["node-0", "churn-00000"], [], False),
    "a churn pod bound": ({}, ["node-0"], ["churn-00000"], False),
}


@pytest.mark.parametrize(("pods", "nodes", "bound", "ok"), CHURN_CASES.values(), ids=CHURN_CASES)
def test_check_churn(
    pods: Mapping[str, str | None], nodes: Sequence[str], bound: list[str], ok: bool
) -> None:
    assert check_churn(listing(pods, nodes), ["churn-00000", "churn-00001"], bound)["ok"] is ok
