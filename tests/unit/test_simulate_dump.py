"""simulate on what ``kubectl get -A -o yaml`` prints for a whole cluster: the kinds it does not
use are skipped and counted, PodDisruptionBudgets weigh in preemption as in the operator, and
PriorityClasses give hand-written pods their priority as the API server's admission would."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.cli import EXIT_BAD_INPUT, main
from policy_scheduler.simulate import ClusterDump, InMemory, load_cluster, simulate, snapshot_of

DUMP = Path(__file__).parent / "dumps" / "kubectl-get-all.yaml"
POLICY = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: preempting}
spec:
  predicates: [{name: NodeResourcesFit}]
  priorities: [{name: LeastAllocated}]
  postFilters: [{name: DefaultPreemption}]
"""
SKIPPED = (
    "skipped 12 objects of kinds simulate does not use: ConfigMap (2), CronJob (1), "
    "DaemonSet (1), Deployment (1), Endpoints (1), Event (2), Job (1), Lease (1), Secret (1), "
    "ServiceAccount (1)"
)


def test_the_dump_is_read_with_the_kinds_simulate_does_not_use_counted() -> None:
    dump = load_cluster(DUMP)
    assert [n.name for n in dump.nodes] == ["n1", "n2"]
    assert [p.key for p in dump.pods] == [
        "kube-system/kube-proxy-4xk8p",
        "kube-system/kube-proxy-9m2vd",
        "shop/web-7d9f8-x2x9q",
        "batch/report-29148480-r7k2m",
        "shop/checkout",
    ]
    assert [kind for kind, _ in dump.workloads] == ["Service", "Service", "ReplicaSet"]
    assert len(dump.namespaces) == 4
    assert [b["metadata"]["name"] for b in dump.disruption_budgets] == ["web"]
    assert dump.skipped == (
        ("ConfigMap", 2),
        ("CronJob", 1),
        ("DaemonSet", 1),
        ("Deployment", 1),
        ("Endpoints", 1),
        ("Event", 2),
        ("Job", 1),
        ("Lease", 1),
        ("Secret", 1),
        ("ServiceAccount", 1),
    )


def test_the_hand_written_pod_gets_its_class_priority() -> None:
    (checkout,) = (p for p in load_cluster(DUMP).pods if p.name == "checkout")
    assert checkout.priority == 1000
    assert checkout.spec["preemptionPolicy"] == "PreemptLowerPriority"


def without_budgets(dump: ClusterDump) -> ClusterDump:
    return dataclasses.replace(dump, disruption_budgets=())


VICTIM_CASES = {
    "the budget spares web, so report is evicted from n2": (
        lambda dump: dump,
        [("batch/report-29148480-r7k2m", "shop/checkout", "n2")],
    ),
    "without the budget, web, of the lowest priority, is evicted from n1": (
        without_budgets,
        [("shop/web-7d9f8-x2x9q", "shop/checkout", "n1")],
    ),
}


@pytest.mark.parametrize(("edit", "evicted"), VICTIM_CASES.values(), ids=VICTIM_CASES)
def test_the_budget_changes_the_victim(edit: Any, evicted: list[tuple[str, str, str]]) -> None:
    memory = InMemory()
    (decision,) = simulate(yaml.safe_load(POLICY), edit(load_cluster(DUMP)), memory=memory)
    assert (decision.pod, decision.node) == ("shop/checkout", None)
    assert [(victim, preemptor, node) for victim, preemptor, node, _ in memory.preemptions] == (
        evicted
    )
    assert memory.nominations == [("shop/checkout", evicted[0][2])]


@pytest.mark.parametrize("output", ["table", "json"])
def test_simulate_says_what_it_skipped_in_one_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    argv = ["simulate", "--policy", str(policy), "--cluster", str(DUMP), "-o", output]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == f"{DUMP}: {SKIPPED}\n"
    unschedulable = "0/2 nodes are available: 2 Insufficient cpu."
    if output == "json":
        assert [(d["pod"], d["message"]) for d in json.loads(out)] == [
            ("shop/checkout", unschedulable)
        ]
    else:
        assert out == f"shop/checkout: unschedulable: {unschedulable}\n"


def write_list(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_one_object_skipped_is_said_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = {"kind": "Node", "metadata": {"name": "n1"}}
    cluster = write_list(tmp_path / "c.yaml", [node, {"kind": "Secret", "metadata": {"name": "s"}}])
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    assert main(["simulate", "--policy", str(policy), "--cluster", str(cluster)]) == 0
    assert capsys.readouterr().err == (
        f"{cluster}: skipped 1 object of a kind simulate does not use: Secret (1)\n"
    )


def pending(name: str, created: str, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": created},
        "spec": {
            "schedulerName": "preempting",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
    }


NODE = {
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "1", "pods": "10"}},
}
LOW = {"kind": "PriorityClass", "metadata": {"name": "low"}, "value": 100, "globalDefault": True}
HIGH = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
ORDER_CASES = {
    "the class's priority goes first, though younger": (
        [LOW, HIGH],
        [
            pending("old", "2026-01-01T00:00:00Z"),
            pending("young", "2026-01-02T00:00:00Z", priorityClassName="high"),
        ],
        "shop/young",
    ),
    "both of the global default class: the older first": (
        [LOW, HIGH],
        [pending("old", "2026-01-01T00:00:00Z"), pending("young", "2026-01-02T00:00:00Z")],
        "shop/old",
    ),
    "a spec.priority wins over a class, as the API server stored it": (
        [LOW, HIGH],
        [
            pending("old", "2026-01-01T00:00:00Z", priorityClassName="high"),
            pending("young", "2026-01-02T00:00:00Z", priorityClassName="high", priority=2000),
        ],
        "shop/young",
    ),
}


@pytest.mark.parametrize(("classes", "pods", "placed"), ORDER_CASES.values(), ids=ORDER_CASES)
def test_resolved_priorities_order_the_pending_pods(
    classes: list[dict[str, Any]], pods: list[dict[str, Any]], placed: str
) -> None:
    policy = yaml.safe_load(POLICY)
    decisions = simulate(policy, ClusterDump.of([NODE, *classes, *pods]))
    assert [d.pod for d in decisions if d.node] == [placed]


def test_a_pod_naming_a_missing_class_is_refused_with_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_list(
        tmp_path / "c.yaml",
        [
            NODE,
            pending("a", "2026-01-01T00:00:00Z", priorityClassName="gold"),
            pending("b", "2026-01-01T00:00:00Z", priorityClassName="gold", priority=5),
            pending("c", "2026-01-01T00:00:00Z", priorityClassName="silver"),
        ],
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    assert main(["simulate", "--policy", str(policy), "--cluster", str(cluster)]) == EXIT_BAD_INPUT
    refused = (
        "spec.priorityClassName: no PriorityClass {!r}, which the API server refuses; "
        "add the PriorityClass, or give the pod spec.priority"
    )
    assert capsys.readouterr() == (
        "",
        f"{cluster}: pod shop/a: {refused.format('gold')}\n"
        f"{cluster}: pod shop/c: {refused.format('silver')}\n",
    )


BROKEN_CASES = {
    "a budget's selector": (
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": "app=web"}},
        },
        "poddisruptionbudget shop/web: spec.selector.matchLabels: must be an object",
    ),
    "a class's value": (
        {"kind": "PriorityClass", "metadata": {"name": "gold"}, "value": "high"},
        "priorityclass gold: value: must be an integer, got 'high'",
    ),
}


@pytest.mark.parametrize(("broken", "message"), BROKEN_CASES.values(), ids=BROKEN_CASES)
def test_a_broken_object_of_a_used_kind_is_reported_with_its_place(
    tmp_path: Path, broken: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        load_cluster(write_list(tmp_path / "c.yaml", [NODE, broken]))
    assert str(raised.value) == f"{tmp_path / 'c.yaml'}: document 1, items[1]: {message}"


def pod_group(api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": spec,
    }


def test_the_pod_groups_of_each_api_are_told_apart_by_api_version() -> None:
    dump = ClusterDump.of(
        [
            pod_group("scheduling.k8s.io/v1beta1", {"schedulingPolicy": {"gang": {"minCount": 2}}}),
            pod_group("scheduling.x-k8s.io/v1alpha1", {"minMember": 3}),
            pod_group("scheduling.volcano.sh/v1beta1", {"minMember": 4}),
            pod_group("example.com/v1", {"size": 9}),
        ]
    )
    assert sorted(kind for kind, _ in dump.stored()) == [
        "PodGroup.scheduling.k8s.io",
        "PodGroup.scheduling.volcano.sh",
        "PodGroup.scheduling.x-k8s.io",
    ]
    assert dump.skipped == (("PodGroup", 1),)
    groups = snapshot_of(dump).pod_groups
    assert sorted((g.key.api, g.min_member) for g in groups) == [
        ("native", 2),
        ("scheduler-plugins", 3),
        ("volcano", 4),
    ]


def test_an_invalid_pod_group_in_a_dump_is_refused_naming_its_field() -> None:
    with pytest.raises(ValueError, match=r"PodGroup ml/train: spec.minMember: must be a non-neg"):
        ClusterDump.of([pod_group("scheduling.volcano.sh/v1beta1", {"minMember": -1})])
