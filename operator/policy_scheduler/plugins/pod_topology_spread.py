"""PodTopologySpread: spread a pod's group evenly over topology domains (kube-scheduler's
PodTopologySpread plugin, v1.34).

A constraint (``spec.topologySpreadConstraints[i]``) counts the pods of the pod's namespace that
match its ``labelSelector`` (plus ``key In (value)`` for each ``matchLabelKeys`` key the pod has;
terminating pods are not counted) in each domain, the set of nodes sharing one value of the
node label ``topologyKey``. Only nodes carrying every constraint's topology key count, and of
those only the ones the constraint's ``nodeAffinityPolicy`` (default Honor: the pod's nodeSelector
and required node affinity must match) and ``nodeTaintsPolicy`` (default Ignore; Honor: the pod
must tolerate the node's NoSchedule/NoExecute taints) admit. A selector without requirements
(``{}``) counts no pod, as in kube-scheduler v1.34.

Filter, over the ``DoNotSchedule`` constraints: a node without a constraint's topology label fails
with "node(s) didn't match pod topology spread constraints (missing required label)"; otherwise,
with ``count`` the matching pods in the node's domain, ``self`` 1 when the pod matches the
selector itself, and ``min`` the smallest count over the eligible domains (0 when there are fewer
than ``minDomains``, default 1), the node fails with "node(s) didn't match pod topology spread
constraints" when ``count + self - min > maxSkew``.

Score, over the ``ScheduleAnyway`` constraints: feasible nodes lacking a topology key score 0.
Each constraint weighs its domains by ``log(domains + 2)``, the domains being those of the
feasible nodes (for ``kubernetes.io/hostname``, the feasible nodes themselves, counted on the node
in Score). A node's raw score is ``round(sum(count * weight + maxSkew - 1))``; then, with ``min``
and ``max`` (at least 0) over the scored nodes, ``100 * (max + min - score) // max`` (100 for all
when max is 0), so the emptiest domains score highest.

When the pod has no constraints at all, kube-scheduler applies default constraints whose selector
comes from the Services, ReplicaSets, ReplicationControllers and StatefulSets selecting the pod.
This scheduler does not watch those objects, so its *system* defaults (maxSkew 3 on hostname,
5 on zone) are left out. The args ``{defaultingType: List, defaultConstraints: [...]}`` give
defaults like kube-scheduler's PodTopologySpreadArgs; their pods are those of the pod's own
controller (its ``controller`` ownerReference of kind ReplicaSet, ReplicationController or
StatefulSet), which is what that controller's selector selects. A pod without such a controller
gets no default constraints, as in kube-scheduler when no selector is found.

A pod without constraints (of the kind) skips the filter (the scorer), as in kube-scheduler.
Pods are counted per label group from the snapshot's index, except for default constraints,
whose controller is not part of a pod's label group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView, Raw
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.base import (
    FITS,
    MAX_NODE_SCORE,
    SKIP,
    Args,
    ArgsError,
    Cycle,
    FieldError,
    Filter,
    Scorer,
    Skip,
)
from policy_scheduler.plugins.inter_pod_affinity import merge_label_keys
from policy_scheduler.plugins.taint_toleration import (
    NO_EXECUTE,
    NO_SCHEDULE,
    parse_tolerations,
    tolerated,
)

NAME = "PodTopologySpread"

CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = f"{CONSTRAINTS_NOT_MATCH} (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
HOSTNAME = "kubernetes.io/hostname"

# Owners whose selector kube-scheduler's default spreading uses (besides Services).
_SPREAD_OWNER_KINDS = frozenset({"ReplicaSet", "ReplicationController", "StatefulSet"})
# Marks a feasible node without all topology labels, as kube-scheduler's invalidScore.
_IGNORED = -1


def _controller_uid(pod: PodView) -> str | None:
    """The uid of the pod's controller when its selector is one default spreading uses."""
    owner = pod.controller_ref
    if owner is None or owner.get("kind") not in _SPREAD_OWNER_KINDS:
        return None
    return str(owner.get("uid"))


@dataclass(frozen=True, slots=True)
class Constraint:
    """A spread constraint with its pod matcher resolved for the pod being scheduled."""

    max_skew: int
    topology_key: str
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool
    selects: Callable[[PodView], bool]
    # Whether ``selects`` reads only what PodView.label_group holds (a label selector, not the
    # controller of default constraints), so pods can be counted per label group.
    by_label_group: bool
    counts_pods: bool  # False for a selector without requirements: kube-scheduler counts none
    self_match: bool

    def _counts(self, pod: PodView, namespace: str) -> bool:
        return not pod.deleting and pod.namespace == namespace and self.selects(pod)

    def count(self, node: NodeInfo, namespace: str) -> int:
        """The matching pods on ``node``."""
        if not self.counts_pods:
            return 0
        if self.by_label_group:
            return sum(n for pod, n in node.label_groups.values() if self._counts(pod, namespace))
        return sum(1 for pod in node.pods.values() if self._counts(pod, namespace))

    def matching(self, snapshot: Snapshot, namespace: str) -> Iterable[tuple[NodeInfo, int]]:
        """Nodes holding matching pods, with how many (a node may come more than once)."""
        if not self.counts_pods:
            return ()
        if self.by_label_group:
            return snapshot.count_matching(lambda pod: self._counts(pod, namespace))
        return ((info, n) for info in snapshot if (n := self.count(info, namespace)))


def _pod_constraint(pod: PodView, raw: Raw, index: int) -> Constraint:
    selector_raw = merge_label_keys(
        raw.get("labelSelector"), pod.labels, raw.get("matchLabelKeys") or ()
    )
    selector = LabelSelector.parse(
        selector_raw, f"pod {pod.key}: spec.topologySpreadConstraints[{index}].labelSelector"
    )
    return Constraint(
        max_skew=int(raw.get("maxSkew") or 0),
        topology_key=str(raw.get("topologyKey") or ""),
        min_domains=int(raw.get("minDomains") or 1),
        honor_node_affinity=raw.get("nodeAffinityPolicy", HONOR) != IGNORE,
        honor_node_taints=raw.get("nodeTaintsPolicy", IGNORE) == HONOR,
        selects=lambda other: selector.matches(other.labels),
        by_label_group=True,
        counts_pods=not selector.empty,
        self_match=selector.matches(pod.labels),
    )


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    """One of the args' ``defaultConstraints``; its pods are those of the pod's controller."""

    max_skew: int
    topology_key: str
    action: str
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool

    def for_pod(self, controller: str) -> Constraint:
        return Constraint(
            self.max_skew,
            self.topology_key,
            self.min_domains,
            self.honor_node_affinity,
            self.honor_node_taints,
            selects=lambda other: _controller_uid(other) == controller,
            by_label_group=False,
            counts_pods=True,
            self_match=True,
        )


def _constraints(
    pod: PodView, defaults: Sequence[DefaultConstraint], action: str
) -> tuple[Constraint, ...]:
    """The pod's constraints with ``whenUnsatisfiable: action``; the defaults only for a pod
    that has no constraints at all."""
    if pod.topology_spread_constraints:
        return tuple(
            _pod_constraint(pod, raw, i)
            for i, raw in enumerate(pod.topology_spread_constraints)
            if raw.get("whenUnsatisfiable") == action
        )
    controller = _controller_uid(pod)
    if controller is None:
        return ()
    return tuple(d.for_pod(controller) for d in defaults if d.action == action)


class _Eligibility:
    """Whether a node's domain counts for a constraint (nodeAffinityPolicy, nodeTaintsPolicy)."""

    def __init__(self, pod: PodView, constraints: Sequence[Constraint]) -> None:
        self.keys = tuple({c.topology_key for c in constraints})
        affinity = pod.required_node_affinity
        # None also when the pod's affinity admits every node: no per-node check needed.
        self.affinity = (
            affinity
            if any(c.honor_node_affinity for c in constraints)
            and (affinity.node_selector or affinity.required is not None)
            else None
        )
        self.tolerations = parse_tolerations(pod.tolerations)
        # Whether every node with the keys is admitted, so the domains are the keys' values.
        self.everywhere = self.affinity is None and not any(
            c.honor_node_taints for c in constraints
        )

    def has_keys(self, node: NodeView) -> bool:
        labels = node.labels
        return all(key in labels for key in self.keys)

    def admits(self, constraint: Constraint, node: NodeView) -> bool:
        if (
            constraint.honor_node_affinity
            and self.affinity is not None
            and not self.affinity.matches(node.name, node.labels)
        ):
            return False
        return not constraint.honor_node_taints or all(
            tolerated(self.tolerations, t.key, t.value, t.effect)
            for t in node.taints
            if t.effect in (NO_SCHEDULE, NO_EXECUTE)
        )


@dataclass(frozen=True, slots=True)
class _FilterState:
    constraints: tuple[Constraint, ...]
    counts: tuple[Mapping[str, int], ...]  # per constraint: matching pods per domain
    minimums: tuple[int, ...]  # per constraint: the global minimum the skew is measured from


def _count_domains(
    snapshot: Snapshot, pod: PodView, constraints: Sequence[Constraint]
) -> tuple[dict[str, int], ...]:
    eligibility = _Eligibility(pod, constraints)
    counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
    # Every eligible domain counts, also without matching pods: the minimum may be 0.
    if eligibility.everywhere and len(eligibility.keys) == 1:
        values = snapshot.label_values.get(eligibility.keys[0], {})
        for domains in counts:
            domains.update(dict.fromkeys(values, 0))
    else:
        for info in snapshot:
            node = info.node
            if eligibility.has_keys(node):
                for constraint, domains in zip(constraints, counts, strict=True):
                    if eligibility.admits(constraint, node):
                        domains.setdefault(node.labels[constraint.topology_key], 0)
    for constraint, domains in zip(constraints, counts, strict=True):
        for info, count in constraint.matching(snapshot, pod.namespace):
            node = info.node
            if eligibility.has_keys(node) and eligibility.admits(constraint, node):
                domains[node.labels[constraint.topology_key]] += count
    return counts


class _SpreadFilter(Filter[_FilterState]):
    name = NAME

    def __init__(self, defaults: Sequence[DefaultConstraint]) -> None:
        self.defaults = defaults

    def pre_filter(self, cycle: Cycle) -> _FilterState | Skip:
        pod = cycle.pod
        constraints = _constraints(pod, self.defaults, DO_NOT_SCHEDULE)
        if not constraints:
            return SKIP  # as kube-scheduler's PreFilter
        counts = _count_domains(cycle.snapshot, pod, constraints)
        minimums = tuple(
            min(domains.values()) if len(domains) >= c.min_domains else 0
            for c, domains in zip(constraints, counts, strict=True)
        )
        return _FilterState(constraints, counts, minimums)

    def filter(self, state: _FilterState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        labels = node.node.labels
        for constraint, domains, minimum in zip(
            state.constraints, state.counts, state.minimums, strict=True
        ):
            value = labels.get(constraint.topology_key)
            if value is None:
                return (MISSING_LABEL,)
            skew = domains.get(value, 0) + constraint.self_match - minimum
            if skew > constraint.max_skew:
                return (CONSTRAINTS_NOT_MATCH,)
        return FITS


@dataclass(frozen=True, slots=True)
class _ScoreState:
    constraints: tuple[Constraint, ...]
    keys: tuple[str, ...]
    counts: tuple[Mapping[str, int], ...]  # per constraint, per domain (not for hostname)
    weights: tuple[float, ...]  # per constraint: log(domains + 2)
    namespace: str


def _round(value: float) -> int:
    """Go's math.Round for a non-negative value: halves go up."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


class _SpreadScorer(Scorer[_ScoreState]):
    name = NAME

    def __init__(self, defaults: Sequence[DefaultConstraint]) -> None:
        self.defaults = defaults

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> _ScoreState | Skip:
        pod = cycle.pod
        constraints = _constraints(pod, self.defaults, SCHEDULE_ANYWAY)
        if not constraints:
            return SKIP  # as kube-scheduler's PreScore
        eligibility = _Eligibility(pod, constraints)
        scored = [info.node for info in nodes if eligibility.has_keys(info.node)]
        # Domains come from the feasible nodes; pods are counted on every node of those domains.
        counts: tuple[dict[str, int], ...] = tuple(
            {} if c.topology_key == HOSTNAME else {n.labels[c.topology_key]: 0 for n in scored}
            for c in constraints
        )
        weights = tuple(
            math.log((len(scored) if c.topology_key == HOSTNAME else len(domains)) + 2)
            for c, domains in zip(constraints, counts, strict=True)
        )
        for constraint, domains in zip(constraints, counts, strict=True):
            if not domains:  # hostname (counted per node in score), or no feasible domain
                continue
            for info, count in constraint.matching(cycle.snapshot, pod.namespace):
                node = info.node
                value = node.labels.get(constraint.topology_key)
                if (
                    value in domains
                    and eligibility.has_keys(node)
                    and eligibility.admits(constraint, node)
                ):
                    domains[value] += count
        return _ScoreState(constraints, eligibility.keys, counts, weights, pod.namespace)

    def score(self, state: _ScoreState, pod: PodView, node: NodeInfo) -> int:
        labels = node.node.labels
        if not all(key in labels for key in state.keys):
            return _IGNORED
        total = 0.0
        for constraint, domains, weight in zip(
            state.constraints, state.counts, state.weights, strict=True
        ):
            if constraint.topology_key == HOSTNAME:
                count = constraint.count(node, state.namespace)
            else:
                count = domains[labels[constraint.topology_key]]
            total += count * weight + constraint.max_skew - 1
        return _round(total)

    def normalize(self, state: _ScoreState, scores: list[int]) -> None:
        valid = [s for s in scores if s != _IGNORED]
        if not valid:
            scores[:] = [0] * len(scores)
            return
        lowest, highest = min(valid), max(0, *valid)
        for i, score in enumerate(scores):
            if score == _IGNORED:
                scores[i] = 0
            elif highest == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (highest + lowest - score) // highest


def _parse_defaults(args: Args, path: str) -> tuple[DefaultConstraint, ...]:
    """kube-scheduler's PodTopologySpreadArgs validation, every problem reported."""
    errors = [
        FieldError(f"{path}.{key}", "unknown field")
        for key in sorted(args)
        if key not in ("defaultingType", "defaultConstraints")
    ]
    if args.get("defaultingType", "List") != "List":
        errors.append(
            FieldError(
                f"{path}.defaultingType",
                'must be "List": "System" defaulting needs Services and ReplicaSets, '
                "which this scheduler does not watch",
            )
        )
    raw_list = args.get("defaultConstraints", [])
    if not isinstance(raw_list, list):
        errors.append(FieldError(f"{path}.defaultConstraints", "must be a list"))
        raw_list = []
    defaults: list[DefaultConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(raw_list):
        where = f"{path}.defaultConstraints[{i}]"
        constraint = _parse_default(raw, where, errors)
        if constraint is None:
            continue
        pair = (constraint.topology_key, constraint.action)
        if pair in seen:
            errors.append(
                FieldError(f"{where}", f"duplicate {{topologyKey, whenUnsatisfiable}} pair {pair}")
            )
        seen.add(pair)
        defaults.append(constraint)
    if errors:
        raise ArgsError(errors)
    return tuple(defaults)


_DEFAULT_FIELDS = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "labelSelector",
    }
)


def _parse_default(raw: Any, where: str, errors: list[FieldError]) -> DefaultConstraint | None:
    if not isinstance(raw, Mapping):
        errors.append(FieldError(where, "must be an object"))
        return None
    before = len(errors)
    errors.extend(
        FieldError(f"{where}.{key}", "unknown field")
        for key in sorted(map(str, raw))
        if key not in _DEFAULT_FIELDS
    )

    def integer(key: str, default: int | None) -> int:
        value = raw.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            errors.append(FieldError(f"{where}.{key}", "must be an integer greater than zero"))
            return 0
        return value

    def choice(key: str, allowed: tuple[str, ...], default: str | None) -> str:
        value = raw.get(key, default)
        if value not in allowed:
            errors.append(FieldError(f"{where}.{key}", f"must be one of {list(allowed)}"))
            return ""
        return str(value)

    max_skew = integer("maxSkew", None)
    topology_key = raw.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        errors.append(FieldError(f"{where}.topologyKey", "must be a non-empty string"))
    action = choice("whenUnsatisfiable", (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY), None)
    min_domains = integer("minDomains", 1)
    if "minDomains" in raw and action != DO_NOT_SCHEDULE:
        errors.append(
            FieldError(
                f"{where}.minDomains", "can only be used with whenUnsatisfiable: DoNotSchedule"
            )
        )
    affinity_policy = choice("nodeAffinityPolicy", (HONOR, IGNORE), HONOR)
    taints_policy = choice("nodeTaintsPolicy", (HONOR, IGNORE), IGNORE)
    if "labelSelector" in raw:
        errors.append(
            FieldError(
                f"{where}.labelSelector",
                "must not be set: default constraints count the pods of the pod's own controller",
            )
        )
    if len(errors) > before:
        return None
    return DefaultConstraint(
        max_skew,
        str(topology_key),
        action,
        min_domains,
        affinity_policy == HONOR,
        taints_policy == HONOR,
    )


def new_filter(args: Args, path: str) -> Filter[_FilterState]:
    return _SpreadFilter(_parse_defaults(args, path))


def new_scorer(args: Args, path: str) -> Scorer[_ScoreState]:
    return _SpreadScorer(_parse_defaults(args, path))
