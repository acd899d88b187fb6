"""Offline scheduling: place a cluster dump's pending pods with a policy, no API server involved.

The cluster file is what ``kubectl get nodes,pods -A -o yaml`` prints (a ``List``) or multi-document
YAML of Nodes and Pods. Pods that have a node already use its resources; pending pods for the
policy's scheduler are placed one at a time in scheduling order, each placement counting against
its node for the next, exactly as the operator's cache does with assumed pods.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, ObjectError, PodView
from policy_scheduler.pipeline import Decision, Pipeline


class ClusterFileError(ValueError):
    """A cluster file that cannot be read; the message names the file and the object."""


@dataclass(frozen=True)
class ClusterDump:
    nodes: tuple[NodeView, ...]
    pods: tuple[PodView, ...]


def _objects(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object of the file with a short description of where it is, for errors."""
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except OSError as error:
        raise ClusterFileError(f"{path}: cannot read: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ClusterFileError(f"{path}: not valid YAML: {error}".splitlines()[0]) from None
    for d, document in enumerate(documents):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            raise ClusterFileError(f"{path}: document {d + 1} is not a Kubernetes object")
        if document.get("kind") == "List" or str(document.get("kind", "")).endswith("List"):
            for i, item in enumerate(document.get("items") or ()):
                if not isinstance(item, Mapping):
                    raise ClusterFileError(f"{path}: items[{i}] is not a Kubernetes object")
                yield f"items[{i}]", item
        else:
            yield f"document {d + 1}", document


def load_cluster(path: Path) -> ClusterDump:
    """Read a cluster dump; raises :class:`ClusterFileError` naming the first bad object."""
    nodes: list[NodeView] = []
    pods: list[PodView] = []
    for where, obj in _objects(path):
        kind = obj.get("kind")
        name = (obj.get("metadata") or {}).get("name", "?")
        try:
            if kind == "Node":
                nodes.append(NodeView(obj))
            elif kind == "Pod":
                pod = PodView(obj)
                # Parse the requests now, so a broken quantity is reported here, not mid-run.
                _ = pod.requests
                pods.append(pod)
            else:
                raise ClusterFileError(
                    f"{path}: {where} is a {kind or 'object without kind'} ({name}); "
                    "a cluster file holds only Nodes and Pods"
                )
        except ObjectError as error:
            raise ClusterFileError(f"{path}: {where}: {error}") from None
    return ClusterDump(tuple(nodes), tuple(pods))


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
