"""InterPodAffinity: place a pod near, or away from, pods with given labels (kube-scheduler's
InterPodAffinity plugin, v1.37).

A pod affinity term selects pods (``labelSelector`` within ``namespaces``/``namespaceSelector``)
and names a node label, ``topologyKey``; the nodes sharing that label's value form a topology
domain. Pods are counted once per cycle over the whole snapshot, per ``(topologyKey, value)``;
each node is then checked with a few dictionary look-ups.

Filter, in kube-scheduler's order, with its reasons:

- the pod's required affinity: on the node, every term's domain must hold a pod matching *all*
  terms, else "node(s) didn't match pod affinity rules". A node lacking a term's topology label
  never fits. The first pod of a group may land anywhere that has the labels when no pod anywhere
  matches the terms and the pod matches all of them itself;
- the pod's required anti-affinity: no term's domain on the node may hold a matching pod, else
  "node(s) didn't match pod anti-affinity rules";
- existing pods' required anti-affinity: no pod whose term matches the incoming pod may run in
  the same domain of that term, else "node(s) didn't satisfy existing pods anti-affinity rules".

Score: for each existing pod, on its node's domain of each term, add the weight of the incoming
pod's preferred affinity terms it matches and subtract those of anti-affinity terms; add the
weights of the existing pod's preferred affinity terms the incoming pod matches (subtract for
anti-affinity) and ``hardPodAffinityWeight`` (default 1) for each of its required affinity terms
the incoming pod matches. A node's raw score sums its domains' values; then
``int(100 * (score - min) / (max - min))`` over the feasible nodes (all 0 when max == min).
With ``ignorePreferredTermsOfExistingPods`` and no preferred terms on the incoming pod, every node
scores 0.

As in kube-scheduler, the filter is skipped when the pod has no required terms and no existing
pod's required anti-affinity matches it, and the scorer when that option applies or no term
matches anywhere. Existing pods are read per ``PodView.affinity_group`` (pods with the same terms,
as the snapshot indexes them), so each of their terms is matched once per decision.

Namespaces: a term without ``namespaces`` and ``namespaceSelector`` means the owning pod's
namespace. A term matches a pod of a namespace it lists, or whose Namespace's labels (the
snapshot's :class:`~policy_scheduler.model.namespaces.Namespaces`) its ``namespaceSelector``
matches; ``{}`` selects every namespace, a null selector none. The pod being scheduled's terms are
matched against each existing pod's namespace, existing pods' terms against the incoming pod's.

``matchLabelKeys``/``mismatchLabelKeys`` become ``key In (value)``/``key NotIn (value)`` with the
owning pod's label values, as kube-apiserver writes them into the selector when a pod is created;
doing it again is a no-op for such pods and gives raw pods the same meaning.

Queueing hint, for node events as kube-scheduler's (pod events have none here: any assigned pod
added, deleted or relabelled wakes a pod this filter rejected): a pod waits for a node added that
has the topology key of one of its required affinity terms, or whose value of such a key changed
(it had none before, or another); with required anti-affinity, for any node added, or a node whose
value of such a term's key changed or went away. Unlike kube-scheduler's, the hint takes any node
event for one that may help a pod without required terms of its own (kept off by existing pods'
anti-affinity): kube's never queues such a pod, which then waits for the queue's timeout.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from policy_scheduler.framework.args import Args, ArgsError, FieldError, no_args
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
from policy_scheduler.model import namespaces
from policy_scheduler.model.namespaces import Namespaces
from policy_scheduler.model.nodeinfo import NodeInfo, PodGroup, Snapshot
from policy_scheduler.model.nodetable import NO_LABEL, Array, LabelMap, NodeBlock
from policy_scheduler.model.objects import PodView, Raw
from policy_scheduler.model.selectors import LabelSelector
from policy_scheduler.plugins.helper import group_failures

NAME = "InterPodAffinity"

AFFINITY_NOT_MATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def merge_label_keys(
    raw_selector: object,
    labels: Mapping[str, str],
    match_keys: Iterable[object],
    mismatch_keys: Iterable[object] = (),
) -> object:
    """``raw_selector`` plus ``key In (labels[key])`` per match key and ``key NotIn (...)`` per
    mismatch key the pod has; keys the pod lacks are skipped. A null selector stays null (it
    selects nothing either way)."""
    if not isinstance(raw_selector, Mapping):
        return raw_selector
    extra = [
        {"key": key, "operator": operator, "values": [labels[key]]}
        for keys, operator in ((match_keys, "In"), (mismatch_keys, "NotIn"))
        for key in map(str, keys)
        if key in labels
    ]
    if not extra:
        return raw_selector
    merged = dict(raw_selector)
    merged["matchExpressions"] = [*(raw_selector.get("matchExpressions") or ()), *extra]
    return merged


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm`` of some pod (its owner, for the default namespace)."""

    topology_key: str
    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector

    def matches(self, pod: PodView, namespaces: Namespaces) -> bool:
        """Whether ``pod`` is of the term's namespaces and matches its label selector."""
        if pod.namespace not in self.namespaces and not self.namespace_selector.matches(
            namespaces.labels(pod.namespace)
        ):
            return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    """All (anti-)affinity terms of one pod; preferred ones carry their weight."""

    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[tuple[AffinityTerm, int], ...]
    preferred_anti_affinity: tuple[tuple[AffinityTerm, int], ...]


def _mapping(value: object) -> Raw:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _parse_term(pod: PodView, raw: Raw, where: str) -> AffinityTerm:
    raw_namespaces = [str(n) for n in _list(raw.get("namespaces"))]
    raw_namespace_selector = raw.get("namespaceSelector")
    if not raw_namespaces and raw_namespace_selector is None:
        raw_namespaces = [pod.namespace]
    selector = merge_label_keys(
        raw.get("labelSelector"),
        pod.labels,
        _list(raw.get("matchLabelKeys")),
        _list(raw.get("mismatchLabelKeys")),
    )
    return AffinityTerm(
        str(raw.get("topologyKey") or ""),
        LabelSelector.parse(selector, f"{where}.labelSelector"),
        frozenset(raw_namespaces),
        LabelSelector.parse(raw_namespace_selector, f"{where}.namespaceSelector"),
    )


def _parse_pod_terms(pod: PodView) -> PodTerms:
    where = f"pod {pod.key}: spec.affinity"
    required: dict[str, tuple[AffinityTerm, ...]] = {}
    preferred: dict[str, tuple[tuple[AffinityTerm, int], ...]] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = _mapping(pod.affinity.get(kind))
        key = "requiredDuringSchedulingIgnoredDuringExecution"
        required[kind] = tuple(
            _parse_term(pod, _mapping(term), f"{where}.{kind}.{key}[{i}]")
            for i, term in enumerate(_list(section.get(key)))
        )
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        terms = []
        for i, weighted in enumerate(map(_mapping, _list(section.get(key)))):
            term = _parse_term(
                pod,
                _mapping(weighted.get("podAffinityTerm")),
                f"{where}.{kind}.{key}[{i}].podAffinityTerm",
            )
            weight = weighted.get("weight")
            terms.append((term, weight if isinstance(weight, int) else 0))
        preferred[kind] = tuple(terms)
    return PodTerms(
        required["podAffinity"],
        required["podAntiAffinity"],
        preferred["podAffinity"],
        preferred["podAntiAffinity"],
    )


# Parsed terms per pod view. Views are immutable and live as long as the cache holds the pod, so
# keying weakly by the view object needs no invalidation; it spares re-parsing every existing
# pod's terms (selector compilation dominates PreFilter otherwise) on every decision.
_TERMS: weakref.WeakKeyDictionary[PodView, PodTerms] = weakref.WeakKeyDictionary()
_NO_TERMS = PodTerms((), (), (), ())


def pod_terms(pod: PodView) -> PodTerms:
    """The pod's parsed affinity terms; raises SelectorError naming the pod and field."""
    if not pod.affinity:
        return _NO_TERMS
    terms = _TERMS.get(pod)
    if terms is None:
        terms = _TERMS[pod] = _parse_pod_terms(pod)
    return terms


_NO_DOMAIN = -1
"""What a domain count map gives a node without the topology key."""

_ScoreState = tuple[LabelMap, ...]
"""Per topology key, the summed weight of each domain: a node's raw score is the sum of its
domains' weights."""


def _add_domains(
    totals: dict[str, Array],
    snapshot: Snapshot,
    key: str,
    groups: Iterable[PodGroup],
    weight: int = 1,
) -> None:
    """Add ``weight`` per pod of ``groups`` to the domain (value of ``key``, by the table's
    codes) of its node; a key appears in ``totals`` once some such node has the label."""
    counts = snapshot.table.per_domain(key, map(snapshot.node_counts, groups))
    if counts is not None:
        previous = totals.get(key)
        totals[key] = weight * counts if previous is None else previous + weight * counts


def add_to_domain(
    totals: Array | None, snapshot: Snapshot, key: str, node: NodeInfo, delta: int
) -> Array | None:
    """``totals`` (a number per code of label ``key``, as :meth:`NodeTable.per_domain` counts
    them; None: 0 everywhere) with ``delta`` added to ``node``'s domain, as a new array; the
    same ``totals`` when the node lacks the label (it is in no domain)."""
    codes, known = snapshot.table.label_codes(key)
    code = int(codes[snapshot.table.position(node)])
    if code == NO_LABEL:
        return totals
    changed = np.zeros(known + 1, np.int64) if totals is None else totals.copy()
    changed[code] += delta
    return changed


def _maps(snapshot: Snapshot, totals: Mapping[str, Array]) -> tuple[LabelMap, ...]:
    return tuple(LabelMap.of_codes(snapshot.table, key, counts) for key, counts in totals.items())


@dataclass(frozen=True, slots=True)
class _Counts:
    """What a :class:`_FilterState`'s maps are made of, kept for ``add_pod`` and
    ``remove_pod``: per topology key, the pods counted in each domain (by the table's codes; a
    key is missing where no such pod is on a node with the label)."""

    affinity_keys: tuple[str, ...]
    """The topology key of each required affinity term of the pod, in order."""
    matches_itself: bool
    """The pod matches all its required affinity terms."""
    affinity: Mapping[str, Array]
    """Per key, for each term with that key: the pods matching all the terms."""
    anti_affinity: Mapping[str, Array]
    """Per key, for each required anti-affinity term with that key: the pods it matches."""
    existing: Mapping[str, Array]
    """Per key, for each required anti-affinity term with that key of an existing pod: that
    pod, if the term matches the pod being scheduled."""


@dataclass(frozen=True, slots=True)
class _FilterState:
    # Per required affinity term of the pod: how many pods match all of them in each domain of
    # the term's key (_NO_DOMAIN for a node without the key).
    affinity: tuple[LabelMap, ...]
    # The first pod of a self-affine group: nothing matches yet, but the pod matches itself.
    first_of_group: bool
    # Per topology key: pods matching an anti-affinity term of the pod in each domain.
    anti_affinity: tuple[LabelMap, ...]
    # Per topology key: existing pods whose required anti-affinity matches the pod, per domain.
    existing_anti_affinity: tuple[LabelMap, ...]
    counts: _Counts


def _filter_state(snapshot: Snapshot, counts: _Counts) -> _FilterState:
    """The filter's state for these counts."""
    table = snapshot.table
    affinity = counts.affinity
    return _FilterState(
        tuple(
            LabelMap.of_codes(table, key, affinity[key], missing=_NO_DOMAIN)
            if key in affinity
            else LabelMap(key, {}, missing=_NO_DOMAIN)
            for key in counts.affinity_keys
        ),
        bool(counts.affinity_keys)
        and counts.matches_itself
        # A count may be back at 0 after add_pod and remove_pod: the key then counts no pod.
        and not any(totals.any() for totals in affinity.values()),
        _maps(snapshot, counts.anti_affinity),
        _maps(snapshot, counts.existing),
        counts,
    )


class _InterPodAffinityFilter(Filter[_FilterState], Reads):
    name = NAME
    # A term's namespaceSelector matches the Namespaces' labels.
    reads = frozenset({namespaces.KIND})
    # Only the pod's own affinity is unresolvable in kube-scheduler (evicting pods never
    # brings a matching pod); anti-affinity conflicts may go with the victims.
    unresolvable_reasons = frozenset({AFFINITY_NOT_MATCH})
    # The state counts matching pods per domain (kube's AddPod/RemovePod update it); it skips
    # only when no existing pod's anti-affinity matches, which fewer pods cannot change.
    pre_filter_counts_pods = True
    wakes_on = (
        EventKind.NODE_ADDED
        | EventKind.NODE_LABELS
        | EventKind.POD_ADDED
        | EventKind.POD_DELETED
        | EventKind.POD_LABELS
    )

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """Whether a node event changed a topology domain the pod's required terms read (see
        the module docstring); a pod event always may help."""
        node, old = event.node, event.old_node
        if node is None or event.pod is not None:
            return True
        terms = pod_terms(pod)
        if not terms.required_affinity and not terms.required_anti_affinity:
            return True
        for term in terms.required_affinity:
            key = term.topology_key
            if key in node.labels and (old is None or old.labels.get(key) != node.labels[key]):
                return True
        return any(
            old is None or (key in old.labels and old.labels[key] != node.labels.get(key))
            for key in (term.topology_key for term in terms.required_anti_affinity)
        )

    def pre_filter(self, cycle: Cycle) -> _FilterState | Skip:
        incoming = cycle.pod
        own = pod_terms(incoming)
        affinity, anti_affinity = own.required_affinity, own.required_anti_affinity
        snapshot = cycle.snapshot
        namespaces = snapshot.namespaces
        existing: dict[str, Array] = {}
        # Pods of one affinity group have the same terms: each term is matched once per group.
        for group in snapshot.affinity_groups.values():
            for term in pod_terms(group.pod).required_anti_affinity:
                if term.matches(incoming, namespaces):
                    _add_domains(existing, snapshot, term.topology_key, [group])
        # As kube-scheduler's PreFilter: nothing to check when neither the pod nor any existing
        # pod's required anti-affinity constrains where it goes.
        if not existing and not affinity and not anti_affinity:
            return SKIP
        # The pod's own terms select pods by labels and namespace only: counted per label group.
        affinity_counts: dict[str, Array] = {}
        if affinity:
            matching = list(
                snapshot.matching_groups(
                    lambda pod: all(term.matches(pod, namespaces) for term in affinity)
                )
            )
            for term in affinity:
                _add_domains(affinity_counts, snapshot, term.topology_key, matching)
        anti_affinity_counts: dict[str, Array] = {}
        for term in anti_affinity:
            groups = snapshot.matching_groups(
                functools.partial(term.matches, namespaces=namespaces)
            )
            _add_domains(anti_affinity_counts, snapshot, term.topology_key, groups)
        counts = _Counts(
            tuple(term.topology_key for term in affinity),
            all(term.matches(incoming, namespaces) for term in affinity),
            affinity_counts,
            anti_affinity_counts,
            existing,
        )
        return _filter_state(snapshot, counts)

    def add_pod(
        self, state: _FilterState, cycle: Cycle, pod: PodView, node: NodeInfo
    ) -> _FilterState:
        return self._with_pod(state, cycle, pod, node, 1)

    def remove_pod(
        self, state: _FilterState, cycle: Cycle, pod: PodView, node: NodeInfo
    ) -> _FilterState:
        return self._with_pod(state, cycle, pod, node, -1)

    def _with_pod(
        self, state: _FilterState, cycle: Cycle, pod: PodView, node: NodeInfo, delta: int
    ) -> _FilterState:
        """``state`` with ``pod`` counted ``delta`` more times on ``node``, in each count
        where pre_filter would count it (kube's updateWithPod)."""
        incoming, snapshot = cycle.pod, cycle.snapshot
        namespaces = snapshot.namespaces
        own = pod_terms(incoming)
        counts = state.counts
        affinity_counts = dict(counts.affinity)
        anti_affinity_counts = dict(counts.anti_affinity)
        existing = dict(counts.existing)
        changed = False

        def count(totals: dict[str, Array], key: str) -> None:
            nonlocal changed
            counted = add_to_domain(totals.get(key), snapshot, key, node, delta)
            if counted is not None:
                totals[key] = counted
                changed = True

        for term in pod_terms(pod).required_anti_affinity:
            if term.matches(incoming, namespaces):
                count(existing, term.topology_key)
        for term in own.required_anti_affinity:
            if term.matches(pod, namespaces):
                count(anti_affinity_counts, term.topology_key)
        affinity = own.required_affinity
        if affinity and all(term.matches(pod, namespaces) for term in affinity):
            for term in affinity:
                count(affinity_counts, term.topology_key)
        if not changed:
            return state
        return _filter_state(
            snapshot,
            replace(
                counts,
                affinity=affinity_counts,
                anti_affinity=anti_affinity_counts,
                existing=existing,
            ),
        )

    filter_builds_block = True

    def filter(self, state: _FilterState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        return reasons_of_one(self.filter_nodes(state, pod, NodeBlock.of(node)))

    def filter_nodes(self, state: _FilterState, pod: PodView, nodes: NodeBlock) -> Rejections:
        # A node fails the affinity when it lacks a term's key, or (unless the pod is the first
        # of its group) a term's domain holds no matching pod; else the pod's anti-affinity when
        # its domain holds pods the pod repels; else the existing pods' anti-affinity.
        lacking = np.zeros(len(nodes), bool)
        unmatched = np.zeros(len(nodes), bool)
        for counts in state.affinity:
            found = nodes.lookup(counts)
            lacking |= found == _NO_DOMAIN
            unmatched |= found == 0
        affinity = lacking if state.first_of_group else lacking | unmatched
        anti_affinity = np.zeros(len(nodes), bool)
        for counts in state.anti_affinity:
            anti_affinity |= nodes.lookup(counts) > 0
        existing = np.zeros(len(nodes), bool)
        for counts in state.existing_anti_affinity:
            existing |= nodes.lookup(counts) > 0
        anti_affinity &= ~affinity
        existing &= ~(affinity | anti_affinity)
        return group_failures(
            [affinity, anti_affinity, existing],
            [AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, EXISTING_ANTI_AFFINITY_NOT_MATCH],
        )


class _InterPodAffinityScorer(Scorer[_ScoreState], Reads):
    name = NAME
    reads = frozenset({namespaces.KIND})

    def __init__(self, hard_pod_affinity_weight: int, ignore_existing_preferred: bool) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_existing_preferred = ignore_existing_preferred

    def _existing_terms(self, pod: PodView) -> Iterator[tuple[AffinityTerm, int]]:
        """An existing pod's terms that score the incoming pod, with their signed weights."""
        theirs = pod_terms(pod)
        if self.hard_pod_affinity_weight > 0:
            for term in theirs.required_affinity:
                yield term, self.hard_pod_affinity_weight
        yield from theirs.preferred_affinity
        for term, weight in theirs.preferred_anti_affinity:
            yield term, -weight

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> _ScoreState | Skip:
        incoming = cycle.pod
        own = pod_terms(incoming)
        has_preferred = bool(own.preferred_affinity or own.preferred_anti_affinity)
        if self.ignore_existing_preferred and not has_preferred:
            return SKIP
        # Per topology key, the summed weight of each domain.
        weights: dict[str, Array] = {}
        snapshot = cycle.snapshot
        namespaces = snapshot.namespaces
        # The pod's own terms select pods by labels and namespace only: counted per label group.
        for terms, sign in ((own.preferred_affinity, 1), (own.preferred_anti_affinity, -1)):
            for term, weight in terms:
                groups = snapshot.matching_groups(
                    functools.partial(term.matches, namespaces=namespaces)
                )
                _add_domains(weights, snapshot, term.topology_key, groups, sign * weight)
        # Pods of one affinity group have the same terms: each term is matched once per group.
        for group in snapshot.affinity_groups.values():
            for term, weight in self._existing_terms(group.pod):
                if term.matches(incoming, namespaces):
                    _add_domains(weights, snapshot, term.topology_key, [group], weight)
        # As kube-scheduler's PreScore: no term applies anywhere, so every node would score 0.
        if not weights:
            return SKIP
        return _maps(snapshot, weights)

    def score(self, state: _ScoreState, pod: PodView, node: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeBlock.of(node))[0])

    def score_nodes(self, state: _ScoreState, pod: PodView, nodes: NodeBlock) -> Scores:
        scores: Scores = np.zeros(len(nodes), np.int64)
        for weights in state:
            scores += nodes.lookup(weights)
        return scores

    def normalize(self, state: _ScoreState, scores: Scores) -> None:
        lowest = int(scores.min()) if len(scores) else 0
        spread = int(scores.max()) - lowest if len(scores) else 0
        if spread > 0:
            # As Go: float64 division, then truncation toward zero.
            scores[:] = (MAX_NODE_SCORE * ((scores - lowest) / spread)).astype(np.int64)
        else:
            scores[:] = 0


def new_filter(args: Args, path: str) -> Filter[_FilterState]:
    no_args(NAME, args, path)
    return _InterPodAffinityFilter()


def new_scorer(args: Args, path: str) -> Scorer[_ScoreState]:
    errors = [
        FieldError(f"{path}.{key}", "unknown field")
        for key in sorted(args)
        if key not in ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")
    ]
    weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if (
        not isinstance(weight, int)
        or isinstance(weight, bool)
        or not 0 <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT
    ):
        errors.append(
            FieldError(
                f"{path}.hardPodAffinityWeight",
                f"must be an integer between 0 and {MAX_HARD_POD_AFFINITY_WEIGHT}",
            )
        )
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        errors.append(FieldError(f"{path}.ignorePreferredTermsOfExistingPods", "must be a boolean"))
    if errors:
        raise ArgsError(errors)
    return _InterPodAffinityScorer(weight, ignore)
