"""PodDisruptionBudgets as kube-scheduler's preemption reads them (filterPodsWithPDBViolation,
v1.34): which pods a budget protects, how allowances are spent, and the informer's catalog."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model.disruption import DisruptionBudget, DisruptionBudgets, slim
from policy_scheduler.model.objects import PodView

WEB = {"matchLabels": {"app": "web"}}


def pdb(
    name: str = "b",
    selector: Any = WEB,
    allowed: int = 0,
    disrupted: tuple[str, ...] = (),
    namespace: str = "ns",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"},
        "spec": {"selector": selector, "minAvailable": 1},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {pod: "2026-01-01T00:00:00Z" for pod in disrupted},
            "currentHealthy": 3,
        },
    }


def pod(name: str, labels: dict[str, str] | None = None, namespace: str = "ns") -> PodView:
    return PodView(
        {"metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "web"}}}
    )


@pytest.mark.parametrize(
    ("case", "budget", "victim", "protected"),
    [
        ("selector matches", pdb(), pod("a"), True),
        ("other labels", pdb(), pod("a", {"app": "db"}), False),
        ("other namespace", pdb(), pod("a", namespace="other"), False),
        ("pod without labels", pdb(selector={"matchLabels": {}}), PodView({}), False),
        ("null selector matches nothing", pdb(selector=None), pod("a"), False),
        ("empty selector matches nothing", pdb(selector={}), pod("a"), False),
        ("invalid selector matches nothing", pdb(selector={"matchLabels": "x"}), pod("a"), False),
        ("already disrupted", pdb(disrupted=("a",)), pod("a"), False),
    ],
)
def test_protects(case: str, budget: dict[str, Any], victim: PodView, protected: bool) -> None:
    assert DisruptionBudget.of(budget).protects(victim) is protected, case


@pytest.mark.parametrize(
    ("case", "budgets", "violating"),
    [
        ("no budgets", [], []),
        ("allowance of two spent by the first two", [pdb(allowed=2)], ["c"]),
        ("no allowance: every protected pod violates", [pdb(allowed=0)], ["a", "b", "c"]),
        ("a disrupted pod spends nothing", [pdb(allowed=1, disrupted=("a",))], ["c"]),
        (
            "two budgets: one below zero is enough",
            [pdb("b1", allowed=3), pdb("b2", {"matchLabels": {"tier": "x"}}, allowed=0)],
            ["b"],
        ),
    ],
)
def test_split_violating(case: str, budgets: list[dict[str, Any]], violating: list[str]) -> None:
    pods = [pod("a"), pod("b", {"app": "web", "tier": "x"}), pod("c"), pod("d", {"app": "db"})]
    bad, good = DisruptionBudgets(budgets).split_violating(pods)
    assert [p.name for p in bad] == violating, case
    assert [p.name for p in good] == [p.name for p in pods if p.name not in violating], case


def test_catalog_set_delete_and_slim() -> None:
    catalog = DisruptionBudgets()
    catalog.set(slim(pdb("b1", allowed=1)))
    catalog.set(pdb("b2", namespace="other"))
    catalog.set(pdb("b1", allowed=4))  # an update replaces
    assert len(catalog) == 2
    assert [b.disruptions_allowed for b in catalog.in_namespace("ns")] == [4]
    catalog.delete(pdb("b1"))
    catalog.delete(pdb("missing"))
    assert [b.name for b in catalog] == ["b2"]
    assert catalog.in_namespace("ns") == ()
    assert slim(pdb(disrupted=("a",))) == {
        "metadata": {"name": "b", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "disruptedPods": {"a": "2026-01-01T00:00:00Z"}},
    }
