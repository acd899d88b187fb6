"""The project's corpus of malformed policies (tests/policies/invalid/): each is refused by
``policy-scheduler validate``, which names the field at fault, and by the API server at ``kubectl
apply`` (tests/e2e/test_deploy.py, through the admission webhook where the CRD's schema lets it
pass); and the warning of a policy that would overcommit nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.policy.compiler import OVERCOMMITS, check
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.scheduling.policies import PolicyTable

CORPUS = sorted((Path(__file__).parents[1] / "policies" / "invalid").glob("*.yaml"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_every_malformed_policy_is_refused_naming_its_field(path: Path) -> None:
    (policy,) = read_policy_file(path)
    verdict = check(policy)
    assert verdict.compiled is None
    assert verdict.errors
    for error in verdict.errors:
        name, field, message = error.split(": ", 2)
        assert name == path.stem
        assert field.startswith(("spec.", "metadata."))
        assert message


def test_the_corpus_covers_the_plugin_arguments_the_schema_leaves_to_the_plugins() -> None:
    assert {p.stem for p in CORPUS} >= {
        "random-probability-out-of-range",
        "node-label-present-not-a-list",
        "label-preference-without-label",
        "ratio-shape-out-of-range",
    }


POLICY: dict[str, Any] = {
    "apiVersion": "policy-scheduler.dev/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "loose", "uid": "u", "generation": 1},
    "spec": {"predicates": [{"name": "TaintToleration"}]},
}


def test_a_policy_without_node_resources_fit_is_valid_with_a_warning_and_a_condition() -> None:
    verdict = check(POLICY)
    assert verdict.compiled is not None
    assert verdict.warnings == (f"loose: warning: spec.predicates: {OVERCOMMITS}",)
    table = PolicyTable()
    entry, _ = table.apply(POLICY)
    (overcommit,) = (c for c in table.conditions(entry) if c.type == "Overcommit")
    assert (overcommit.status, overcommit.reason) == (True, "NoNodeResourcesFit")
    fitting = {**POLICY, "spec": {"predicates": [{"name": "NodeResourcesFit"}]}}
    fitting["metadata"] = {**POLICY["metadata"], "generation": 2}
    entry, _ = table.apply(fitting)
    assert check(fitting).warnings == ()
    assert "Overcommit" not in {c.type for c in table.conditions(entry)}
