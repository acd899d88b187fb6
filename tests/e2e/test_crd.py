"""The SchedulingPolicy CRD on the real API server: it accepts every example policy, rejects bad
ones naming the field, and documents the API for ``kubectl explain``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness.e2e import Cluster, wait_for

REPO = Path(__file__).resolve().parents[2]
POLICIES = sorted((REPO / "examples" / "policies").glob("*.yaml"))


def policy(**spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "policy-scheduler.dev/v1alpha1",
            "kind": "SchedulingPolicy",
            "metadata": {"name": "rejected"},
            "spec": spec,
        }
    )


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.stem)
def test_every_example_policy_is_accepted(cluster: Cluster, crd: None, path: Path) -> None:
    result = cluster.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert result.returncode == 0, result.stderr
    assert f"schedulingpolicy.policy-scheduler.dev/{path.stem} created (server dry run)" in (
        result.stdout
    )


@pytest.mark.parametrize(
    ("spec", "field", "complaint"),
    [
        pytest.param(
            {"priorities": [{"name": "LeastAllocated", "weight": 0}]},
            "spec.priorities[0].weight",
            "should be greater than or equal to 1",
            id="weight-0",
        ),
        pytest.param(
            {"predicates": [{"name": "NodeResourcesFit"}, {"name": "PodFitsEverything"}]},
            "spec.predicates[1].name",
            'Unsupported value: "PodFitsEverything"',
            id="unknown-plugin",
        ),
        pytest.param(
            {"plugins": {"reserve": [{"name": "BindRateLimit"}]}},
            "spec.plugins.reserve",
            "each plugin listed under reserve must implement Reserve",
            id="plugin-at-a-point-it-does-not-implement",
        ),
        pytest.param(
            {"plugins": {"permit": [{"name": "BindRateLimit"}, {"name": "BindRateLimit"}]}},
            "spec.plugins.permit",
            "each plugin may be listed only once at an extension point",
            id="plugin-twice-at-a-point",
        ),
    ],
)
def test_the_server_rejects_bad_policies_naming_the_field(
    cluster: Cluster, crd: None, spec: dict[str, Any], field: str, complaint: str
) -> None:
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=policy(**spec), check=False
    )
    assert result.returncode != 0
    assert field in result.stderr
    assert complaint in result.stderr


def test_kubectl_explain_shows_the_descriptions(cluster: Cluster, crd: None) -> None:
    # The API server publishes a new CRD's OpenAPI a moment after it is Established.
    explained = wait_for(
        "kubectl explain to know SchedulingPolicy",
        lambda: (
            result.stdout
            if (
                result := cluster.kubectl(
                    "explain", "schedulingpolicy.spec.priorities", check=False
                )
            ).returncode
            == 0
            else None
        ),
    )
    assert "The scorers. Each gives every feasible node a score of 0..100" in " ".join(
        explained.split()
    )
    for field in ("name", "weight", "args"):
        assert f"{field}\t" in explained or f"  {field} " in explained
    weight = cluster.kubectl("explain", "schedulingpolicy.spec.priorities.weight").stdout
    assert "sum(weight * score) / sum(weight)" in weight
    permit = cluster.kubectl("explain", "schedulingpolicy.spec.plugins.permit").stdout
    assert "Plugins with the last say before the pod goes to binding" in " ".join(permit.split())
