"""What the plugin tests share: Pod and Node builders and the framework's call sequence.

A plugin is run as the pipeline runs it: ``pre_filter`` once per pod, then ``filter_nodes`` over
the nodes as one block; ``pre_score`` once over the feasible nodes, ``score_nodes`` over them, then
``normalize``. Each run is repeated node by node (``filter``, ``score``, with the same random
draws), and the two must agree, so every table of the plugin tests also checks that a plugin's
block answers equal its per-node ones. A ``pre_*`` that returns SKIP is honoured as the pipeline
honours it: every node passes the filter, every node scores 0. The snapshot holds every node
given, so that per-cycle counting sees the whole cluster even when only some nodes are feasible,
and the Services' and controllers' selectors and the Namespaces' labels a test gives (``around``).
(pyproject.toml puts this folder on pytest's and mypy's paths.)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, Filter, Scorer, Scores
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.namespaces import Namespaces
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.workloads import Workloads


def make_pod(
    name: str = "p",
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> PodView:
    """A pod with this ``spec``; a namespace also sets the uid to ``namespace/name``."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata.update(namespace=namespace, uid=f"{namespace}/{name}")
    if labels is not None:
        metadata["labels"] = dict(labels)
    return PodView({"metadata": metadata, "spec": spec})


def make_node(
    name: str = "n",
    labels: Mapping[str, str] | None = None,
    *pods: PodView,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> NodeInfo:
    """A node with these labels, spec and status, running ``pods``."""
    raw: dict[str, Any] = {"metadata": {"name": name, "labels": dict(labels or {})}}
    if spec is not None:
        raw["spec"] = spec
    if status is not None:
        raw["status"] = status
    return NodeInfo(NodeView(raw), pods)


@dataclass(frozen=True)
class Change:
    """A cluster event as a test writes it: ``node`` as it is (or was, deleted), ``old`` the node
    before an update, ``pod`` the assigned pod of a pod event."""

    kind: EventKind
    node: NodeInfo | None = None
    old: NodeInfo | None = None
    pod: PodView | None = None


def wakes(plugin: Filter[Any], pod: PodView, change: Change) -> bool:
    """Whether a pod the filter rejected is tried again after ``change``, as the scheduling loop
    asks: the filter registered for its kind and its queueing hint does not rule it out."""
    node, old = (None if info is None else info.node for info in (change.node, change.old))
    event = ClusterEvent(change.kind, node, change.pod, old)
    return bool(change.kind & plugin.wakes_on) and plugin.queueing_hint(pod, event)


@dataclass(frozen=True)
class Around:
    """What a snapshot holds beside the nodes: ``workloads`` as ``(kind, object)`` (Services,
    ReplicationControllers, ReplicaSets, StatefulSets) and ``namespaces`` (Namespace objects)."""

    workloads: Sequence[tuple[str, Mapping[str, Any]]] = ()
    namespaces: Sequence[Mapping[str, Any]] = ()

    def snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        workloads, namespaces = Workloads(), Namespaces()
        for kind, raw in self.workloads:
            workloads.set(kind, raw)
        for raw in self.namespaces:
            namespaces.set(raw)
        return Snapshot(nodes, workloads, namespaces)


def _cycles(
    pod: PodView, nodes: Sequence[NodeInfo], rng: random.Random | None, around: Around
) -> tuple[Cycle, Cycle]:
    """Two cycles over the same cluster whose random sources draw the same numbers: one for the
    block run, one for the node-by-node run."""
    first = rng or random.Random()
    second = random.Random()
    second.setstate(first.getstate())
    return Cycle(pod, around.snapshot(nodes), second), Cycle(pod, around.snapshot(nodes), first)


def _block(cycle: Cycle, nodes: Sequence[NodeInfo]) -> NodeBlock:
    """``nodes`` as a block of the cycle's snapshot, as the pipeline hands them to plugins."""
    table = cycle.snapshot.table
    return table.block(np.array([table.position(info) for info in nodes], np.intp))


def filter_nodes(
    plugin: Filter[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    rng: random.Random | None = None,
    *,
    around: Around = Around(),
) -> list[tuple[str, ...]]:
    """Each node's reasons (``FITS`` when it passes), after one ``pre_filter``."""
    by_node, by_block = _cycles(pod, nodes, rng, around)
    state = plugin.pre_filter(by_node)
    if state is SKIP:
        assert plugin.pre_filter(by_block) is SKIP
        return [FITS for _ in nodes]
    each = [tuple(plugin.filter(state, pod, info)) for info in nodes]
    verdicts = [FITS for _ in nodes]
    for reasons, indices in plugin.filter_nodes(
        plugin.pre_filter(by_block), pod, _block(by_block, nodes)
    ).items():
        assert reasons and list(indices) == sorted(indices), (reasons, indices)
        for i in indices:
            verdicts[i] = reasons
    assert verdicts == each, "filter_nodes differs from filter per node"
    return verdicts


def filter_node(plugin: Filter[Any], pod: PodView, info: NodeInfo) -> tuple[str, ...]:
    """The reasons of a one-node cluster."""
    return filter_nodes(plugin, pod, [info])[0]


def raw_scores(
    plugin: Scorer[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    feasible: Sequence[NodeInfo] | None = None,
    rng: random.Random | None = None,
    *,
    around: Around = Around(),
) -> tuple[Any, Scores]:
    """The pre-score state and the scores before ``normalize``, over the feasible nodes
    (default: all); SKIP and zeros when the plugin skips the pod."""
    chosen = nodes if feasible is None else feasible
    by_node, by_block = _cycles(pod, nodes, rng, around)
    state = plugin.pre_score(by_node, _block(by_node, chosen))
    if state is SKIP:
        assert plugin.pre_score(by_block, _block(by_block, chosen)) is SKIP
        return state, np.zeros(len(chosen), np.int64)
    each = [plugin.score(state, pod, info) for info in chosen]
    block = _block(by_block, chosen)
    state = plugin.pre_score(by_block, block)
    scores = plugin.score_nodes(state, pod, block)
    assert scores.dtype == np.int64 and scores.tolist() == each, (scores, each)
    return state, scores


def score_nodes(
    plugin: Scorer[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    feasible: Sequence[NodeInfo] | None = None,
    rng: random.Random | None = None,
    *,
    around: Around = Around(),
) -> list[int]:
    """The normalized scores of the feasible nodes (default: all)."""
    return raw_and_normalized(plugin, pod, nodes, feasible, rng, around=around)[1]


def raw_and_normalized(
    plugin: Scorer[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    feasible: Sequence[NodeInfo] | None = None,
    rng: random.Random | None = None,
    *,
    around: Around = Around(),
) -> tuple[list[int], list[int]]:
    """The raw and the normalized scores of the feasible nodes (default: all)."""
    state, raw = raw_scores(plugin, pod, nodes, feasible, rng, around=around)
    scores = raw.copy()
    if state is not SKIP:
        plugin.normalize(state, scores)
    return raw.tolist(), scores.tolist()
