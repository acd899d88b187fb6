"""Offline scheduling: place a cluster dump's pending pods with a policy, no API server involved.

The cluster file is what ``kubectl get nodes,pods -A -o yaml`` prints (a ``List``) or multi-document
YAML of Nodes and Pods, as :mod:`policy_scheduler.manifests` reads them. Pods that have a node
already use its resources; pending pods for the policy's scheduler are placed one at a time in
scheduling order, each placement counting against its node for the next, exactly as the
operator's cache does with assumed pods.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policy_scheduler.manifests import ManifestError, read_objects, type_name
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.pipeline import Decision, Pipeline


class ClusterFileError(ManifestError):
    """A cluster file that cannot be read; ``problems`` name the file and each bad object."""


@dataclass(frozen=True)
class ClusterDump:
    nodes: tuple[NodeView, ...]
    pods: tuple[PodView, ...]


def _node_or_pod(obj: Any) -> NodeView | PodView:
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a Node or a Pod, got {type_name(obj)}")
    kind = obj.get("kind")
    if kind == "Node":
        return NodeView(obj)
    if kind == "Pod":
        pod = PodView(obj)
        # Parse the requests now, so a broken quantity is reported here, not mid-run.
        _ = pod.requests
        return pod
    raise ValueError(
        f"kind is {kind!r}, expected Node or Pod"
        if kind
        else "kind is missing, expected Node or Pod"
    )


def load_cluster(path: Path) -> ClusterDump:
    """Read a cluster dump; raises :class:`ClusterFileError` naming every bad object."""
    try:
        objects = read_objects(path, "Node or Pod", _node_or_pod)
    except ManifestError as error:
        raise ClusterFileError(error.problems) from None
    return ClusterDump(
        tuple(o for o in objects if isinstance(o, NodeView)),
        tuple(o for o in objects if isinstance(o, PodView)),
    )


def snapshot_of(cluster: ClusterDump) -> Snapshot:
    """Nodes with the pods already placed on them (finished pods hold nothing)."""
    snapshot = Snapshot(NodeInfo(node) for node in cluster.nodes)
    for pod in cluster.pods:
        info = snapshot.get(pod.node_name) if pod.node_name else None
        if info is not None and not pod.terminated:
            info.add_pod(pod)
    return snapshot


def simulate(
    pipeline: Pipeline, scheduler_name: str, cluster: ClusterDump, seed: int | None = None
) -> list[Decision]:
    """Decide every pending pod of ``scheduler_name``, in scheduling order."""
    rng = random.Random(seed)
    snapshot = snapshot_of(cluster)
    pending = sorted(
        (
            p
            for p in cluster.pods
            if not p.node_name and p.scheduler_name == scheduler_name and not p.terminated
        ),
        key=lambda p: p.scheduling_order,
    )
    decisions = []
    for pod in pending:
        decision = pipeline.decide(pod, snapshot, rng)
        if decision.node is not None:
            snapshot.nodes[decision.node].add_pod(pod)
        decisions.append(decision)
    return decisions
