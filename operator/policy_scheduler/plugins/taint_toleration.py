"""TaintToleration: the pod must tolerate a node's NoSchedule and NoExecute taints, and prefers
nodes with fewer PreferNoSchedule taints it does not tolerate (kube-scheduler's TaintToleration).

Filter: a NoSchedule/NoExecute taint that no toleration matches rejects the node with
"node(s) had untolerated taint(s)"; kube-scheduler v1.37 names no taint in the reason (it only
logs the taint), so one node's taints do not end up in every pod's events.

Score: the number of the node's PreferNoSchedule taints that none of the pod's PreferNoSchedule
(or effect-less) tolerations matches, then DefaultNormalizeScore reversed:
``100 - 100 * count // max(count)``, so the node with the most such taints scores 0 and, when no
node has any, every node scores 100.

A toleration matches a taint as k8s.io/api's ``Toleration.ToleratesTaint`` in v1.37: an empty
effect matches every effect, an empty key matches every key, operator ``Exists`` matches every
value and ``Equal`` (the default) only an equal one; any other operator matches nothing (``Lt``
and ``Gt`` compare numbers only under the TaintTolerationComparisonOperators gate, alpha and off).

Queueing hint, as kube-scheduler's: a pod this filter rejected waits for a node added, or a
node's taints changed, that leaves the node with no NoSchedule/NoExecute taint the pod does not
tolerate, where it had one before (an added node had none before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, Filter, Rejections, Scorer, Scores
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.plugins.helper import filter_alike, normalize_to_max, score_alike

NAME = "TaintToleration"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
_DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})

UNTOLERATED = "node(s) had untolerated taint(s)"


@dataclass(frozen=True, slots=True)
class Toleration:
    """One entry of a pod's ``spec.tolerations``; absent fields are empty strings."""

    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == value
        return self.operator == "Exists"


def parse_tolerations(raw: Iterable[Mapping[str, Any]]) -> tuple[Toleration, ...]:
    """The pod's tolerations (``PodView.tolerations``), parsed once per cycle."""
    return tuple(
        Toleration(
            str(t.get("key") or ""),
            str(t.get("operator") or ""),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in raw
    )


def tolerated(tolerations: Sequence[Toleration], key: str, value: str, effect: str) -> bool:
    """Whether any of ``tolerations`` tolerates the taint ``key=value:effect``."""
    return any(t.tolerates(key, value, effect) for t in tolerations)


def _untolerated(node: NodeView, tolerations: Sequence[Toleration]) -> bool:
    """Whether the node has a NoSchedule or NoExecute taint that no toleration matches."""
    return any(
        taint.effect in _DO_NOT_SCHEDULE
        and not tolerated(tolerations, taint.key, taint.value, taint.effect)
        for taint in node.taints
    )


class _TaintFilter(Filter[tuple[Toleration, ...]]):
    name = NAME
    # UnschedulableAndUnresolvable in kube-scheduler: no eviction removes a taint.
    unresolvable_reasons = frozenset({UNTOLERATED})
    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_TAINTS

    def pre_filter(self, cycle: Cycle) -> tuple[Toleration, ...]:
        return parse_tolerations(cycle.pod.tolerations)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        if event.node is None:
            return True
        tolerations = parse_tolerations(pod.tolerations)
        if _untolerated(event.node, tolerations):
            return False
        return event.old_node is None or _untolerated(event.old_node, tolerations)

    def filter(self, state: tuple[Toleration, ...], pod: PodView, node: NodeInfo) -> Sequence[str]:
        return (UNTOLERATED,) if _untolerated(node.node, state) else FITS

    def filter_nodes(
        self, state: tuple[Toleration, ...], pod: PodView, nodes: NodeBlock
    ) -> Rejections:
        return filter_alike(self, state, pod, nodes, nodes.taint_sets())


class _TaintScorer(Scorer[tuple[Toleration, ...]]):
    name = NAME

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> tuple[Toleration, ...]:
        # A toleration for NoSchedule only says nothing about the pod's preferences.
        return tuple(
            t
            for t in parse_tolerations(cycle.pod.tolerations)
            if t.effect in ("", PREFER_NO_SCHEDULE)
        )

    def score(self, state: tuple[Toleration, ...], pod: PodView, node: NodeInfo) -> int:
        return sum(
            1
            for taint in node.node.taints
            if taint.effect == PREFER_NO_SCHEDULE
            and not tolerated(state, taint.key, taint.value, taint.effect)
        )

    def score_nodes(self, state: tuple[Toleration, ...], pod: PodView, nodes: NodeBlock) -> Scores:
        return score_alike(self, state, pod, nodes, nodes.taint_sets())

    def normalize(self, state: tuple[Toleration, ...], scores: Scores) -> None:
        normalize_to_max(scores, reverse=True)


def new_filter(args: Args, path: str) -> Filter[tuple[Toleration, ...]]:
    no_args(NAME, args, path)
    return _TaintFilter()


def new_scorer(args: Args, path: str) -> Scorer[tuple[Toleration, ...]]:
    no_args(NAME, args, path)
    return _TaintScorer()
