"""What the plugin tests share: Pod and Node builders and the framework's call sequence.

A plugin is run as the pipeline runs it: ``pre_filter`` once per pod, then ``filter`` per node;
``pre_score`` once over the feasible nodes, ``score`` per node, then ``normalize``. A ``pre_*`` that
returns SKIP is honoured as the pipeline honours it: every node passes the filter, every node
scores 0. The snapshot
holds every node given, so that per-cycle counting sees the whole cluster even when only some
nodes are feasible. (pyproject.toml puts this folder on pytest's and mypy's paths.)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.plugins.base import FITS, SKIP, Cycle, Filter, Scorer


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


def _cycle(pod: PodView, nodes: Sequence[NodeInfo], rng: random.Random | None) -> Cycle:
    # Without a seed, the cycle keeps Cycle's own default random source.
    return Cycle(pod, Snapshot(nodes)) if rng is None else Cycle(pod, Snapshot(nodes), rng)


def filter_nodes(
    plugin: Filter[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    rng: random.Random | None = None,
) -> list[tuple[str, ...]]:
    """Each node's reasons (``FITS`` when it passes), after one ``pre_filter``."""
    state = plugin.pre_filter(_cycle(pod, nodes, rng))
    if state is SKIP:
        return [FITS for _ in nodes]
    return [tuple(plugin.filter(state, pod, info)) for info in nodes]


def filter_node(plugin: Filter[Any], pod: PodView, info: NodeInfo) -> tuple[str, ...]:
    """The reasons of a one-node cluster."""
    return filter_nodes(plugin, pod, [info])[0]


def raw_scores(
    plugin: Scorer[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    feasible: Sequence[NodeInfo] | None = None,
    rng: random.Random | None = None,
) -> tuple[Any, list[int]]:
    """The pre-score state and the scores before ``normalize``, over the feasible nodes
    (default: all); SKIP and zeros when the plugin skips the pod."""
    chosen = nodes if feasible is None else feasible
    state = plugin.pre_score(_cycle(pod, nodes, rng), chosen)
    if state is SKIP:
        return state, [0 for _ in chosen]
    return state, [plugin.score(state, pod, info) for info in chosen]


def score_nodes(
    plugin: Scorer[Any],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    feasible: Sequence[NodeInfo] | None = None,
    rng: random.Random | None = None,
) -> list[int]:
    """The normalized scores of the feasible nodes (default: all)."""
    state, scores = raw_scores(plugin, pod, nodes, feasible, rng)
    if state is not SKIP:
        plugin.normalize(state, scores)
    return scores


def raw_and_normalized(
    plugin: Scorer[Any], pod: PodView, nodes: Sequence[NodeInfo]
) -> tuple[list[int], list[int]]:
    """The raw and the normalized scores of every node."""
    state, raw = raw_scores(plugin, pod, nodes)
    scores = list(raw)
    if state is not SKIP:
        plugin.normalize(state, scores)
    return raw, scores
