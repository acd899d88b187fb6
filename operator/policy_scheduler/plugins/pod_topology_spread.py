"""PodTopologySpread: spread a pod's group evenly over topology domains (kube-scheduler's
PodTopologySpread plugin, v1.37).

A constraint (``spec.topologySpreadConstraints[i]``) counts the pods of the pod's namespace that
match its ``labelSelector`` (plus ``key In (value)`` for each ``matchLabelKeys`` key the pod has;
terminating pods are not counted) in each domain, the set of nodes sharing one value of the
node label ``topologyKey``. Only nodes carrying every constraint's topology key count, and of
those only the ones the constraint's ``nodeAffinityPolicy`` (default Honor: the pod's nodeSelector
and required node affinity must match) and ``nodeTaintsPolicy`` (default Ignore; Honor: the pod
must tolerate the node's NoSchedule/NoExecute taints) admit. A selector without requirements
(``{}``) counts no pod, as in kube-scheduler v1.37.

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

Default constraints, for a pod that has no constraints at all, as kube-scheduler's
PodTopologySpreadArgs: ``defaultingType: System`` (the default) gives kube's system defaults,
maxSkew 3 on ``kubernetes.io/hostname`` and 5 on ``topology.kubernetes.io/zone``, both
ScheduleAnyway; ``{defaultingType: List, defaultConstraints: [...]}`` gives one's own (without
``labelSelector``). Their selector is the pod's default selector (helper.DefaultSelector, see
:meth:`~policy_scheduler.model.workloads.Workloads.default_selector`): the selectors of the
Services in the pod's namespace that select it, and of its ReplicationController, ReplicaSet or
StatefulSet; a pod none selects gets no default constraints. Under System defaulting, and only
there, the scorer does not leave out the feasible nodes that lack a topology key (so that nodes
without a zone label are still spread by hostname): such a node scores a constraint only if it has
that constraint's key, and, for a key other than hostname, the nodes without it make one domain,
the value "" (Go's ``node.Labels[key]``), which counts among the domains that weigh the counts.

A pod without constraints (of the kind) skips the filter (the scorer), as in kube-scheduler.

Queueing hint, for node events as kube-scheduler's (pod events have none here: any assigned pod
added, deleted or relabelled wakes a pod this filter rejected): a pod waits for a node added,
deleted or updated that has every topology key of its DoNotSchedule constraints (its own, or the
default ones, which it had when the filter rejected it), before or after the change; of an update,
only one that gave or took a key, or changed a key's value or the node's taints. Like
kube-scheduler, the filter registers for no Service or controller events.
Pods are counted per label group from the snapshot's index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args, ArgsError, FieldError
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SKIP,
    Filter,
    Reads,
    Rejections,
    Scorer,
    Scores,
    Skip,
    reasons_of_one,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model import workloads
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import (
    NO_LABEL,
    Array,
    Indices,
    LabelMap,
    NodeBlock,
    NodeCounts,
    NodeTable,
)
from policy_scheduler.model.objects import NodeView, PodView, Raw
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.model.workloads import Workloads
from policy_scheduler.plugins.helper import group_failures
from policy_scheduler.plugins.inter_pod_affinity import add_to_domain, merge_label_keys
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
ZONE = "topology.kubernetes.io/zone"
SYSTEM = "System"
LIST = "List"

# Marks a feasible node without all topology labels, as kube-scheduler's invalidScore.
_IGNORED = -1


@dataclass(frozen=True, slots=True)
class Constraint:
    """A spread constraint with its selector resolved for the pod being scheduled."""

    max_skew: int
    topology_key: str
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool
    selector: LabelSelector
    self_match: bool

    def _counts(self, pod: PodView, namespace: str) -> bool:
        return not pod.deleting and pod.namespace == namespace and self.selector.matches(pod.labels)

    def counts_pod(self, pod: PodView, namespace: str) -> bool:
        """Whether ``pod`` is one of the matching pods that :meth:`count` and :meth:`matching`
        count."""
        return not self.selector.empty and self._counts(pod, namespace)

    def count(self, node: NodeInfo, namespace: str) -> int:
        """The matching pods on ``node``."""
        if self.selector.empty:  # kube-scheduler counts no pod for a selector without requirements
            return 0
        return sum(n for pod, n in node.label_groups.values() if self._counts(pod, namespace))

    def matching(self, snapshot: Snapshot, namespace: str) -> Iterable[NodeCounts]:
        """The matching pods per node (parts that add up: a node may be in more than one)."""
        if self.selector.empty:
            return ()
        groups = snapshot.matching_groups(lambda pod: self._counts(pod, namespace))
        return map(snapshot.node_counts, groups)


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
        selector=selector,
        self_match=selector.matches(pod.labels),
    )


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    """A default constraint; its selector is the pod's default selector."""

    max_skew: int
    topology_key: str
    action: str
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def for_pod(self, pod: PodView, selector: LabelSelector) -> Constraint:
        return Constraint(
            self.max_skew,
            self.topology_key,
            self.min_domains,
            self.honor_node_affinity,
            self.honor_node_taints,
            selector,
            selector.matches(pod.labels),
        )


# kube-scheduler's systemDefaultConstraints (podtopologyspread/plugin.go).
SYSTEM_DEFAULTS = (
    DefaultConstraint(3, HOSTNAME, SCHEDULE_ANYWAY),
    DefaultConstraint(5, ZONE, SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class Defaults:
    """The args' default constraints, and whether they are the System ones."""

    constraints: tuple[DefaultConstraint, ...]
    system: bool

    def keys(self, pod: PodView, action: str) -> set[str]:
        """The topology keys of the pod's constraints with ``whenUnsatisfiable: action``,
        reading the defaults as applying to a pod without constraints (they did, if the pod
        was rejected by them)."""
        if pod.topology_spread_constraints:
            return {
                str(raw.get("topologyKey") or "")
                for raw in pod.topology_spread_constraints
                if raw.get("whenUnsatisfiable") == action
            }
        return {d.topology_key for d in self.constraints if d.action == action}

    def constraints_of(
        self, pod: PodView, action: str, workloads: Workloads
    ) -> tuple[Constraint, ...]:
        """The pod's constraints with ``whenUnsatisfiable: action``; the defaults only for a
        pod that has no constraints at all, and that something selects."""
        if pod.topology_spread_constraints:
            return tuple(
                _pod_constraint(pod, raw, i)
                for i, raw in enumerate(pod.topology_spread_constraints)
                if raw.get("whenUnsatisfiable") == action
            )
        defaults = [d for d in self.constraints if d.action == action]
        if not defaults:
            return ()
        selector = workloads.default_selector(pod)
        if selector is None:
            return ()
        return tuple(d.for_pod(pod, selector) for d in defaults)

    def every_node(self, pod: PodView) -> bool:
        """Whether the scorer keeps the feasible nodes lacking a topology key (kube's
        ``requireAllTopologies`` false): only for System defaults."""
        return self.system and not pod.topology_spread_constraints


class _Eligibility:
    """Whether a node's domain counts for a constraint: the node has every topology key (unless
    ``every_node``), and the constraint's nodeAffinityPolicy and nodeTaintsPolicy admit it."""

    def __init__(
        self,
        pod: PodView,
        constraints: Sequence[Constraint],
        table: NodeTable,
        every_node: bool = False,
    ) -> None:
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
        self.table = table
        self.keyed = np.ones(len(table), bool)
        """Whether each node of the table (by position) has every key, or need not."""
        for key in () if every_node else self.keys:
            self.keyed &= table.label_codes(key)[0] != NO_LABEL

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

    def counted(self, constraint: Constraint) -> Callable[[Indices], npt.NDArray[np.bool_]]:
        """Which nodes, given by position, count for ``constraint``."""

        def counted(positions: Indices) -> npt.NDArray[np.bool_]:
            marked = self.keyed[positions]
            if not self.everywhere:
                infos = self.table.infos
                for i in np.flatnonzero(marked).tolist():
                    marked[i] = self.admits(constraint, infos[int(positions[i])].node)
            return marked

        return counted


_MISSING = -1
"""What a domain count map gives a node without the constraint's topology key."""


def _present(
    table: NodeTable, key: str, positions: Indices, missing_as_empty: bool = False
) -> npt.NDArray[np.bool_]:
    """Per code of label ``key`` (and a last entry, False): whether a node at ``positions`` has
    that value. With ``missing_as_empty``, a node without the label has the value "" (see
    :meth:`NodeTable.domain_codes`), and the last entry is that domain when no node has ""."""
    codes, known = table.domain_codes(key) if missing_as_empty else table.label_codes(key)
    present = np.zeros(known + 1, bool)
    present[codes[positions]] = True
    if not missing_as_empty:
        present[NO_LABEL] = False
    return present


@dataclass(frozen=True, slots=True)
class _FilterState:
    constraints: tuple[Constraint, ...]
    # Per constraint: matching pods per domain (_MISSING for a node without the topology key).
    counts: tuple[LabelMap, ...]
    minimums: tuple[int, ...]  # per constraint: the global minimum the skew is measured from
    # What counts and minimums are made of, kept for add_pod and remove_pod: per constraint,
    # the matching pods per domain by the table's codes, and the eligible domains; the nodes
    # that count; the pod's namespace.
    totals: tuple[Array, ...]
    domains: tuple[npt.NDArray[np.bool_], ...]
    eligibility: _Eligibility
    namespace: str


def _minimum(constraint: Constraint, totals: Array, domains: npt.NDArray[np.bool_]) -> int:
    """The global minimum of the matching pods over the eligible domains; 0 when there are
    fewer of them than ``minDomains``."""
    enough = int(domains.sum()) >= constraint.min_domains
    return int(totals[domains].min()) if enough else 0


class _SpreadFilter(Filter[_FilterState], Reads):
    name = NAME
    # The default constraints select the pods of the Services and controllers that select it.
    reads = frozenset(workloads.KINDS)
    # A node without a constraint's topology key stays without it whatever is evicted
    # (UnschedulableAndUnresolvable in kube-scheduler); skew may change with the victims.
    unresolvable_reasons = frozenset({MISSING_LABEL})
    # The state counts matching pods per domain (kube's AddPod/RemovePod update it); whether
    # it skips depends on the pod's constraints alone.
    pre_filter_counts_pods = True
    wakes_on = (
        EventKind.NODE_ADDED
        | EventKind.NODE_DELETED
        | EventKind.NODE_LABELS
        | EventKind.NODE_TAINTS
        | EventKind.POD_ADDED
        | EventKind.POD_DELETED
        | EventKind.POD_LABELS
    )

    def __init__(self, defaults: Defaults) -> None:
        self.defaults = defaults

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """For a node event, whether the node counts (has every topology key of the pod's
        DoNotSchedule constraints) now or, deleted, did; of an update, whether that changed, or
        the node counts and its topology values or taints changed (kube-scheduler's hint). A pod
        event always may help."""
        node, old = event.node, event.old_node
        if node is None or event.pod is not None:
            return True
        keys = self.defaults.keys(pod, DO_NOT_SCHEDULE)
        counts = keys <= node.labels.keys()
        if old is None:
            return counts
        if counts != (keys <= old.labels.keys()):
            return True
        return counts and (
            any(old.labels.get(key) != node.labels.get(key) for key in keys)
            or old.taints != node.taints
        )

    def pre_filter(self, cycle: Cycle) -> _FilterState | Skip:
        pod, snapshot = cycle.pod, cycle.snapshot
        constraints = self.defaults.constraints_of(pod, DO_NOT_SCHEDULE, snapshot.workloads)
        if not constraints:
            return SKIP  # as kube-scheduler's PreFilter
        table = snapshot.table
        eligibility = _Eligibility(pod, constraints, table)
        everyone = np.arange(len(table))
        counts: list[LabelMap] = []
        minimums: list[int] = []
        all_totals: list[Array] = []
        all_domains: list[npt.NDArray[np.bool_]] = []
        for constraint in constraints:
            key = constraint.topology_key
            counted = eligibility.counted(constraint)
            # Every eligible domain counts, also without matching pods: the minimum may be 0.
            domains = _present(table, key, everyone[counted(everyone)])
            matching = constraint.matching(snapshot, pod.namespace)
            totals = table.per_domain(key, matching, counted)
            if totals is None:
                totals = np.zeros(len(domains), np.int64)
            minimums.append(_minimum(constraint, totals, domains))
            counts.append(LabelMap.of_codes(table, key, totals, missing=_MISSING))
            all_totals.append(totals)
            all_domains.append(domains)
        return _FilterState(
            constraints,
            tuple(counts),
            tuple(minimums),
            tuple(all_totals),
            tuple(all_domains),
            eligibility,
            pod.namespace,
        )

    def add_pod(
        self, state: _FilterState, cycle: Cycle, pod: PodView, node: NodeInfo
    ) -> _FilterState:
        return _with_pod(state, cycle.snapshot, pod, node, 1)

    def remove_pod(
        self, state: _FilterState, cycle: Cycle, pod: PodView, node: NodeInfo
    ) -> _FilterState:
        return _with_pod(state, cycle.snapshot, pod, node, -1)

    filter_builds_block = True

    def filter(self, state: _FilterState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return reasons_of_one(self.filter_nodes(state, pod, NodeBlock.of(node)))

    def filter_nodes(self, state: _FilterState, pod: PodView, nodes: NodeBlock) -> Rejections:
        # A node's first constraint that it lacks the key of or that it would skew too much.
        undecided = np.ones(len(nodes), bool)
        missing = np.zeros(len(nodes), bool)
        skewed = np.zeros(len(nodes), bool)
        for constraint, domains, minimum in zip(
            state.constraints, state.counts, state.minimums, strict=True
        ):
            counts = nodes.lookup(domains)
            lacks = undecided & (counts == _MISSING)
            over = (
                undecided
                & ~lacks
                & (counts + constraint.self_match - minimum > constraint.max_skew)
            )
            missing |= lacks
            skewed |= over
            undecided &= ~(lacks | over)
        return group_failures([missing, skewed], [MISSING_LABEL, CONSTRAINTS_NOT_MATCH])


def _with_pod(
    state: _FilterState, snapshot: Snapshot, pod: PodView, node: NodeInfo, delta: int
) -> _FilterState:
    """``state`` with ``pod`` counted ``delta`` more times on ``node``, for each constraint
    that counts it there, as pre_filter would (kube's updateWithPod): the pod matches the
    constraint and the node counts for it."""
    table = snapshot.table
    position = np.array([table.position(node)], np.intp)
    counts, minimums, all_totals = list(state.counts), list(state.minimums), list(state.totals)
    changed = False
    for i, constraint in enumerate(state.constraints):
        if not constraint.counts_pod(pod, state.namespace):
            continue
        if not state.eligibility.counted(constraint)(position)[0]:
            continue
        key = constraint.topology_key
        totals = add_to_domain(all_totals[i], snapshot, key, node, delta)
        assert totals is not None  # a node that counts has every topology key
        all_totals[i] = totals
        minimums[i] = _minimum(constraint, totals, state.domains[i])
        counts[i] = LabelMap.of_codes(table, key, totals, missing=_MISSING)
        changed = True
    if not changed:
        return state
    return replace(state, counts=tuple(counts), minimums=tuple(minimums), totals=tuple(all_totals))


def _has(key: str) -> LabelMap:
    """1 for a node with label ``key``, 0 for one without."""
    return LabelMap(key, {}, default=1, missing=0)


@dataclass(frozen=True, slots=True)
class _ScoreState:
    constraints: tuple[Constraint, ...]
    required: tuple[LabelMap, ...]  # per key a scored node must have (none: System defaults)
    has_key: tuple[LabelMap, ...]  # per constraint: whether a node has its key (else adds 0)
    counts: tuple[LabelMap | None, ...]  # per constraint, per domain (None for hostname)
    weights: tuple[float, ...]  # per constraint: log(domains + 2)
    namespace: str


class _SpreadScorer(Scorer[_ScoreState], Reads):
    name = NAME
    reads = frozenset(workloads.KINDS)

    def __init__(self, defaults: Defaults) -> None:
        self.defaults = defaults

    def pre_score(self, cycle: Cycle, nodes: NodeBlock) -> _ScoreState | Skip:
        pod, snapshot = cycle.pod, cycle.snapshot
        constraints = self.defaults.constraints_of(pod, SCHEDULE_ANYWAY, snapshot.workloads)
        if not constraints:
            return SKIP  # as kube-scheduler's PreScore
        table = snapshot.table
        every_node = self.defaults.every_node(pod)
        eligibility = _Eligibility(pod, constraints, table, every_node)
        scored = nodes.positions[eligibility.keyed[nodes.positions]]
        counts: list[LabelMap | None] = []
        weights: list[float] = []
        for constraint in constraints:
            key = constraint.topology_key
            if key == HOSTNAME:  # counted per node in score
                counts.append(None)
                weights.append(math.log(len(scored) + 2))
                continue
            # Domains come from the feasible nodes; pods are counted on every node of those
            # domains.
            domains = _present(table, key, scored, every_node)
            weights.append(math.log(int(domains.sum()) + 2))
            totals = None
            if domains.any():
                matching = constraint.matching(snapshot, pod.namespace)
                counted = eligibility.counted(constraint)
                totals = table.per_domain(key, matching, counted, every_node)
            in_domains = np.zeros(len(domains), np.int64) if totals is None else totals * domains
            counts.append(LabelMap.of_codes(table, key, in_domains))
        has = {key: _has(key) for key in eligibility.keys}
        return _ScoreState(
            constraints,
            () if every_node else tuple(has.values()),
            tuple(has[c.topology_key] for c in constraints),
            tuple(counts),
            tuple(weights),
            pod.namespace,
        )

    def score(self, state: _ScoreState, pod: PodView, node: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeBlock.of(node))[0])

    def score_nodes(self, state: _ScoreState, pod: PodView, nodes: NodeBlock) -> Scores:
        keyed = np.ones(len(nodes), bool)
        for key in state.required:
            keyed &= nodes.lookup(key) > 0
        # Go's float64 sum, in the same order, of the constraints whose key the node has; then
        # math.Round (halves up, as it is >= 0).
        total: npt.NDArray[np.float64] = np.zeros(len(nodes))
        for constraint, has_key, domains, weight in zip(
            state.constraints, state.has_key, state.counts, state.weights, strict=True
        ):
            if domains is None:
                counts = np.fromiter(
                    (constraint.count(node, state.namespace) for node in nodes),
                    np.int64,
                    len(nodes),
                )
            else:
                counts = nodes.lookup(domains)
            has = nodes.lookup(has_key) > 0
            total = total + np.where(has, counts * weight + constraint.max_skew - 1, 0.0)
        whole = np.floor(total)
        rounded = np.where(total - whole >= 0.5, whole + 1, whole).astype(np.int64)
        return np.where(keyed, rounded, _IGNORED)

    def normalize(self, state: _ScoreState, scores: Scores) -> None:
        ignored = scores == _IGNORED
        valid = scores[~ignored]
        if not len(valid):
            scores[:] = 0
            return
        lowest, highest = int(valid.min()), max(0, int(valid.max()))
        if highest == 0:
            scores[:] = MAX_NODE_SCORE
        else:
            scores[:] = MAX_NODE_SCORE * (highest + lowest - scores) // highest
        scores[ignored] = 0


def _parse_defaults(args: Args, path: str) -> Defaults:
    """kube-scheduler's PodTopologySpreadArgs, defaulted and validated as it does them, every
    problem reported."""
    errors = [
        FieldError(f"{path}.{key}", "unknown field")
        for key in sorted(args)
        if key not in ("defaultingType", "defaultConstraints")
    ]
    defaulting = args.get("defaultingType", SYSTEM)
    if defaulting not in (SYSTEM, LIST):
        errors.append(FieldError(f"{path}.defaultingType", f"must be one of {[LIST, SYSTEM]}"))
    elif defaulting == SYSTEM and args.get("defaultConstraints"):
        errors.append(
            FieldError(
                f"{path}.defaultingType",
                f'must be "{LIST}" when defaultConstraints are given ("{SYSTEM}", the default, '
                "is kube-scheduler's own constraints)",
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
    if defaulting == SYSTEM:
        return Defaults(SYSTEM_DEFAULTS, system=True)
    return Defaults(tuple(defaults), system=False)


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
                "must not be set: each pod's is taken from the Services and the controller "
                "selecting it",
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
