"""hack/upstream-e2e's reading of ginkgo's JSON reports and the table it prints: which specs are
tests of the scheduling suite, each one's result and why, the tests it does not run, and the tests
policy-scheduler fails where kube-scheduler passes."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "upstream-e2e"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("upstream_e2e", str(SCRIPT))
    spec = importlib.util.spec_from_loader("upstream_e2e", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up there.
    sys.modules["upstream_e2e"] = module
    loader.exec_module(module)
    return module


script = load_script()

# (containers' texts, leaf text) of a few tests, and their full names.
NODE_SELECTOR_SPEC = (
    ["[sig-scheduling] SchedulerPredicates"],
    "validates that NodeSelector is respected if matching [Conformance] [Serial]",
)
TAINTS_SPEC = (
    ["[sig-scheduling] SchedulerPredicates"],
    "validates that taints-tolerations is respected if matching [Serial]",
)
MULTI_AZ_SPEC = (
    ["[sig-scheduling] Multi-AZ Clusters"],
    "should spread the pods of a service across zones [Serial]",
)
NODE_SELECTOR, TAINTS, MULTI_AZ = (
    " ".join([*texts, leaf]) for texts, leaf in (NODE_SELECTOR_SPEC, TAINTS_SPEC, MULTI_AZ_SPEC)
)
GANG = (
    "[sig-scheduling] GangScheduling [FeatureGate:GenericWorkload] should schedule pods only "
    "when quorum is reached [Beta] [Feature:OffByDefault]"
)


def spec(
    texts_and_leaf: tuple[list[str], str], state: str, message: str = "", leaf_type: str = "It"
) -> dict[str, Any]:
    """A spec report as ginkgo writes it."""
    texts, leaf = texts_and_leaf
    report: dict[str, Any] = {
        "ContainerHierarchyTexts": texts,
        "LeafNodeText": leaf,
        "LeafNodeType": leaf_type,
        "State": state,
    }
    if message:
        report["Failure"] = {"Message": message}
    return report


def report(*specs: dict[str, Any]) -> list[dict[str, Any]]:
    """A suite's report with ``specs``, the suite's setup, and a test of another suite (the
    binary holds the framework's other suites, which the focus skips)."""
    setup = spec(([], ""), "passed", leaf_type="SynchronizedBeforeSuite")
    other = spec((["[sig-storage] Secrets"], "should be consumable from pods in volume"), "skipped")
    return [{"SuiteDescription": "Kubernetes e2e suite", "SpecReports": [setup, other, *specs]}]


def test_results_keep_the_scheduling_tests_with_the_first_line_of_why() -> None:
    found = script.results(
        report(
            spec(NODE_SELECTOR_SPEC, "passed"),
            spec(TAINTS_SPEC, "failed", "timed out waiting for the condition\nstack trace"),
            spec(MULTI_AZ_SPEC, "skipped", "Schedulable zone count is 1, only multi-zone"),
        )
    )
    assert found == {
        NODE_SELECTOR: script.Result("passed"),
        TAINTS: script.Result("failed", "timed out waiting for the condition"),
        MULTI_AZ: script.Result("skipped", "Schedulable zone count is 1, only multi-zone"),
    }


def test_the_table_says_why_a_test_is_not_run_and_marks_a_missing_result() -> None:
    runs = {
        "kube-scheduler": {
            NODE_SELECTOR: script.Result("passed"),
            GANG: script.Result("skipped"),
        },
        "policy-scheduler": {GANG: script.Result("skipped")},
    }
    lines = script.table(runs).splitlines()
    assert lines[0] == "| test | kube-scheduler | policy-scheduler |"
    gang_row = next(line for line in lines if line.startswith(f"| {GANG} |"))
    assert gang_row.count("not run here: the GenericWorkload feature gate is off") == 2
    assert f"| {NODE_SELECTOR} | passed | (no result) |" in lines


def test_a_pipe_in_a_message_does_not_split_its_cell() -> None:
    runs = {"kube-scheduler": {TAINTS: script.Result("failed", "a | b")}}
    assert f"| {TAINTS} | failed: a \\| b | (no result) |" in script.table(runs).splitlines()


def test_regressions_are_the_tests_kube_passes_and_ours_does_not() -> None:
    runs = {
        "kube-scheduler": {
            NODE_SELECTOR: script.Result("passed"),
            TAINTS: script.Result("passed"),
            MULTI_AZ: script.Result("failed", "uneven"),
        },
        "policy-scheduler": {
            NODE_SELECTOR: script.Result("passed"),
            TAINTS: script.Result("failed", "no Scheduled event"),
            MULTI_AZ: script.Result("failed", "uneven"),
        },
    }
    assert script.regressions(runs) == [TAINTS]
    del runs["policy-scheduler"][NODE_SELECTOR]
    assert script.regressions(runs) == [NODE_SELECTOR, TAINTS]
