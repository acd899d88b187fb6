"""deploy/rbac.yaml grants the list and watch of exactly the kinds the operator declares it reads
(:data:`~policy_scheduler.scheduling.kinds.KINDS`): a kind declared without its rule would never
list under deploy/'s account, and a rule no declaration needs is more than least privilege.
(tests/e2e/test_deploy.py checks the rules themselves against a real API server.)"""

from __future__ import annotations

from pathlib import Path

import yaml

from policy_scheduler.scheduling.kinds import KINDS

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac.yaml"


def granted(verb: str) -> set[tuple[str, str]]:
    """(API group, resource) of each resource the ClusterRole grants ``verb`` on, cluster-wide."""
    (role,) = (d for d in yaml.safe_load_all(RBAC.read_text()) if d["kind"] == "ClusterRole")
    return {
        (group, resource)
        for rule in role["rules"]
        if verb in rule["verbs"] and "resourceNames" not in rule
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_the_cluster_role_lists_and_watches_exactly_the_declared_kinds() -> None:
    declared = {(kind.group, kind.plural) for kind in KINDS}
    assert granted("list") == declared
    assert granted("watch") == declared
