"""What a filter that explains itself (:class:`~policy_scheduler.framework.interface.Explains`,
as DynamicResources: the allocator's reason per rejected node, the devices chosen per claim)
adds to a decision, to ``simulate``'s table, and to ``explain``'s verdicts and report.

The filter is the test's own, so that what is shown says what the pipeline and the reports do
with any such filter."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from plugin_harness import make_node, make_pod

from policy_scheduler.cli import table
from policy_scheduler.explain import Report
from policy_scheduler.framework.interface import FITS, Explains, Filter
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.runtime.explanation import explain
from policy_scheduler.runtime.schedule_one import Pipeline

NO_GPU = "claim gpu, request g: no device of class gpu-class has 80Gi of memory"


class Devices(Filter[dict[str, str]], Explains[dict[str, str]]):
    """Rejects every node but ``a``, telling why in detail; chooses a device on ``a``."""

    name = "Devices"

    def pre_filter(self, cycle: object) -> dict[str, str]:
        return {}

    def filter(self, state: dict[str, str], pod: PodView, node: NodeInfo) -> Sequence[str]:
        if node.name == "a":
            return FITS
        state[node.name] = NO_GPU
        return ("cannot allocate all claims",)

    def details(self, state: dict[str, str]) -> Mapping[str, str]:
        return state

    def chosen(self, state: dict[str, str], node: str) -> Mapping[str, tuple[str, ...]]:
        return {"gpu": ("g: gpu.example.com/a/gpu-0",)} if node == "a" else {}


NODES = [make_node(name, status={"allocatable": {"cpu": "4", "pods": "10"}}) for name in "abc"]
POD = make_pod("p", "ns", containers=[{"name": "c"}])


def test_a_decision_counts_the_details_and_names_the_devices_chosen() -> None:
    decision = Pipeline([Devices()], []).decide(POD, Snapshot(NODES), random.Random(1))
    assert decision.node == "a"
    assert decision.details == {NO_GPU: 2}
    assert decision.chosen == {"gpu": ("g: gpu.example.com/a/gpu-0",)}
    record = decision.to_dict()
    assert record["details"] == {NO_GPU: 2}
    assert record["devices"] == {"gpu": ["g: gpu.example.com/a/gpu-0"]}
    assert table(decision, {})[-3:] == [
        "  claim gpu: g: gpu.example.com/a/gpu-0",
        "  did not fit: 2 cannot allocate all claims",
        f"  on 2 node(s): {NO_GPU}",
    ]


def test_a_decision_without_such_a_filter_keeps_its_keys() -> None:
    decision = Pipeline([], []).decide(POD, Snapshot(NODES), random.Random(1))
    assert "details" not in decision.to_dict() and "devices" not in decision.to_dict()


def test_explain_shows_each_nodes_detail_and_the_best_nodes_devices() -> None:
    pipeline = Pipeline([Devices()], [])
    explanation = explain(pipeline, POD, Snapshot(NODES))
    by_node = {v.node: v for v in explanation.verdicts}
    assert by_node["b"].detail == NO_GPU and by_node["a"].detail == ""
    assert by_node["a"].chosen == {"gpu": ("g: gpu.example.com/a/gpu-0",)}
    policy = compile_policy(
        {"metadata": {"name": "devices"}, "spec": {"predicates": [{"name": "NodeName"}]}}
    )
    lines = Report(POD, policy, explanation, None, None).lines()
    assert "devices on a: claim gpu: g: gpu.example.com/a/gpu-0" in lines
    assert f"  b  Devices: cannot allocate all claims ({NO_GPU})" in lines
    nodes = Report(POD, policy, explanation, None, None).to_dict()["nodes"]
    assert {"detail": NO_GPU}.items() <= next(n for n in nodes if n["node"] == "b").items()
    assert next(n for n in nodes if n["node"] == "a")["devices"] == {
        "gpu": ["g: gpu.example.com/a/gpu-0"]
    }
