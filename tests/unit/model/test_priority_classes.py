"""A pod's priority resolved from the PriorityClasses as the API server's Priority admission plugin
resolves it (v1.34), and PriorityClasses the API server would refuse."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model.objects import ObjectError, PodView
from policy_scheduler.model.priority_classes import PriorityClass, PriorityClasses


def priority_class(
    name: str, value: Any, global_default: Any = None, policy: str | None = None
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if global_default is not None:
        raw["globalDefault"] = global_default
    if policy is not None:
        raw["preemptionPolicy"] = policy
    return raw


def pod(**spec: Any) -> PodView:
    return PodView({"metadata": {"name": "web", "namespace": "shop"}, "spec": spec})


HIGH = priority_class("high", 1000)
NEVER = priority_class("polite", 800, policy="Never")
LOW_DEFAULT = priority_class("low", 100, global_default=True)
LOWER_DEFAULT = priority_class("lower", 50, global_default=True)
PREEMPT = "PreemptLowerPriority"

ADMIT_CASES = {
    "a pod with spec.priority is as the API server stored it": (
        [HIGH],
        {"priority": 7, "priorityClassName": "high"},
        {"priority": 7, "priorityClassName": "high"},
    ),
    "even when its class is not listed": (
        [],
        {"priority": 7, "priorityClassName": "gone"},
        {"priority": 7, "priorityClassName": "gone"},
    ),
    "a pod naming a class gets its value and preemption policy": (
        [HIGH, LOW_DEFAULT],
        {"priorityClassName": "high"},
        {"priorityClassName": "high", "priority": 1000, "preemptionPolicy": PREEMPT},
    ),
    "a class that never preempts": (
        [NEVER],
        {"priorityClassName": "polite"},
        {"priorityClassName": "polite", "priority": 800, "preemptionPolicy": "Never"},
    ),
    "the pod's own preemption policy stays": (
        [HIGH],
        {"priorityClassName": "high", "preemptionPolicy": "Never"},
        {"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "Never"},
    ),
    "a pod naming no class gets the global default's": (
        [HIGH, LOW_DEFAULT],
        {},
        {"priorityClassName": "low", "priority": 100, "preemptionPolicy": PREEMPT},
    ),
    "of two global defaults, the lower": (
        [LOW_DEFAULT, LOWER_DEFAULT],
        {},
        {"priorityClassName": "lower", "priority": 50, "preemptionPolicy": PREEMPT},
    ),
    "without a global default, 0": (
        [HIGH],
        {},
        {"priority": 0, "preemptionPolicy": PREEMPT},
    ),
    "a system class exists without being listed": (
        [],
        {"priorityClassName": "system-node-critical"},
        {
            "priorityClassName": "system-node-critical",
            "priority": 2000001000,
            "preemptionPolicy": PREEMPT,
        },
    ),
    "the other one": (
        [],
        {"priorityClassName": "system-cluster-critical"},
        {
            "priorityClassName": "system-cluster-critical",
            "priority": 2000000000,
            "preemptionPolicy": PREEMPT,
        },
    ),
}


@pytest.mark.parametrize(("classes", "spec", "admitted"), ADMIT_CASES.values(), ids=ADMIT_CASES)
def test_admit(
    classes: list[dict[str, Any]], spec: dict[str, Any], admitted: dict[str, Any]
) -> None:
    found = PriorityClasses(map(PriorityClass.of, classes)).admit(pod(**spec))
    assert dict(found.spec) == admitted
    assert found.priority == admitted["priority"]
    assert found.key == "shop/web"


def test_a_pod_with_its_priority_is_left_untouched() -> None:
    admitted = pod(priority=7)
    assert PriorityClasses().admit(admitted) is admitted


def test_a_pod_naming_a_class_that_does_not_exist_is_refused() -> None:
    with pytest.raises(ObjectError) as raised:
        PriorityClasses(map(PriorityClass.of, [HIGH])).admit(pod(priorityClassName="gold"))
    assert str(raised.value) == (
        "pod shop/web: spec.priorityClassName: no PriorityClass 'gold', which the API server "
        "refuses; add the PriorityClass, or give the pod spec.priority"
    )


INVALID_CASES = {
    "no value": (priority_class("p", None), "value: must be an integer, got nothing"),
    "a value in quotes": (priority_class("p", "100"), "value: must be an integer, got '100'"),
    "a boolean value": (priority_class("p", True), "value: must be an integer, got True"),
    "globalDefault not a boolean": (
        priority_class("p", 1, global_default="yes"),
        "globalDefault: must be true or false, got 'yes'",
    ),
    "an unknown preemption policy": (
        priority_class("p", 1, policy="Sometimes"),
        "preemptionPolicy: must be PreemptLowerPriority or Never, got 'Sometimes'",
    ),
}


@pytest.mark.parametrize(("raw", "message"), INVALID_CASES.values(), ids=INVALID_CASES)
def test_invalid_priority_classes(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as raised:
        PriorityClass.of(raw)
    assert str(raised.value) == f"priorityclass p: {message}"
