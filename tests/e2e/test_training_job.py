"""examples/gang/training-job.yaml among the real controllers (``real_cluster``): the Job
controller makes the eight workers of the Indexed Job, the policy of examples/policies/gang.yaml
places them all at once on the nodes kwok runs, and the Job completes. With room for seven, no
worker is bound; the eighth worker's room added, all eight are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, add_nodes, items, wait_for
from harness.objects import node

pytestmark = pytest.mark.real_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GENEROUS = 90.0


@pytest.fixture
def gang_policy(real_cluster: Cluster, pool: str) -> dict[str, Any]:
    """examples/policies/gang.yaml, kept to the pool's nodes (so that the workers' room is the
    test's to give) and labelled with the pool (so that ``pool`` deletes it afterwards)."""
    policy: dict[str, Any] = yaml.safe_load((EXAMPLES / "policies/gang.yaml").read_text())
    policy["metadata"]["labels"] = {"pool": pool}
    policy["spec"]["nodeSelector"] = {"matchLabels": {"pool": pool}}
    real_cluster.apply(policy)
    return policy


def workers(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return items(cluster, "pods", "-n", namespace, "-l", "app=training")


@pytest.mark.usefixtures("volcano_crd")
def test_the_training_job_is_placed_whole(
    real_cluster: Cluster,
    namespace: str,
    pool: str,
    gang_policy: dict[str, Any],
    operator: Operator,
) -> None:
    cluster = real_cluster
    # Room for seven workers of 1 cpu (and their 1Gi each).
    add_nodes(
        cluster,
        node(f"{pool}-0", cpu="4", memory="8Gi", labels={"pool": pool}),
        node(f"{pool}-1", cpu="3", memory="8Gi", labels={"pool": pool}),
    )
    operator.start()
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "gang/training-job.yaml"))
    wait_for("the eight workers made", lambda: len(workers(cluster, namespace)) == 8)
    wait_for(
        "the workers told they do not all fit",
        lambda: all(
            any(
                c["type"] == "PodScheduled" and c["status"] == "False"
                for c in w.get("status", {}).get("conditions", ())
            )
            for w in workers(cluster, namespace)
        ),
        GENEROUS,
    )
    assert not [w for w in workers(cluster, namespace) if w["spec"].get("nodeName")]

    add_nodes(cluster, node(f"{pool}-2", cpu="1", memory="8Gi", labels={"pool": pool}))
    wait_for(
        "all eight workers bound",
        lambda: sum(bool(w["spec"].get("nodeName")) for w in workers(cluster, namespace)) == 8,
        GENEROUS,
    )
    placed = [w["spec"]["nodeName"] for w in workers(cluster, namespace)]
    assert sorted(placed) == sorted([f"{pool}-0"] * 4 + [f"{pool}-1"] * 3 + [f"{pool}-2"]), placed
    wait_for(
        "the Job complete",
        lambda: any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in items(cluster, "jobs", "-n", namespace)[0]
            .get("status", {})
            .get("conditions", ())
        ),
        GENEROUS,
    )
