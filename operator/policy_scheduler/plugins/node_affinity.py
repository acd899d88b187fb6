"""NodeAffinity: the pod's node selector and node affinity (kube-scheduler's NodeAffinity).

Filter: a node must carry every ``spec.nodeSelector`` label and match at least one term of
``requiredDuringSchedulingIgnoredDuringExecution`` (a term matches when all its expressions and
fields do; a term without any matches nothing). Otherwise: "node(s) didn't match Pod's node
affinity/selector". As kube-scheduler's PreFilter does, terms that all pin ``metadata.name``
with ``In`` narrow the candidates before any filter runs (:meth:`Filter.pre_filter_result
<policy_scheduler.framework.interface.Filter.pre_filter_result>`): the pipeline filters only
the pinned nodes and counts every other node as "node(s) didn't satisfy plugin(s)
[NodeAffinity]"; when the terms pin disjoint names, the pod is rejected before any node is
filtered, with "pod affinity terms conflict" (and no count).

Score: the sum of the weights of the ``preferredDuringSchedulingIgnoredDuringExecution`` terms the
node matches, then DefaultNormalizeScore: ``100 * sum // max(sum)`` (all 0 when no node matches).

Args (both, optional; kube-scheduler's NodeAffinityArgs): ``{addedAffinity: {required...: {...},
preferred...: [...]}}``, applied to every pod. A node outside the added required selector fails
with "node(s) didn't match scheduler-enforced node affinity"; the added preferred terms add to
every pod's score.

Selectors are parsed as component-helpers parses them, once per cycle: a term the parser rejects
(bad key or value syntax, a non-integer ``Gt``/``Lt`` value, ``matchFields`` other than
``In``/``NotIn`` with exactly one value) matches no node, and the other terms still count. When
no valid term is left, the pod can never be placed, so every node fails with
"node(s) didn't match Pod's invalid node affinity: <field>: <problem>". A pod whose preferred terms
are invalid scores as if it had none.

Queueing hint, as kube-scheduler's: a pod this filter rejected waits for a node added that matches
its nodeSelector and required node affinity (and the scheduler-enforced affinity), or a node whose
labels changed so that it matches them now and did not before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    ANY_NODE,
    FITS,
    SKIP,
    Filter,
    PreFilterResult,
    Rejections,
    Scorer,
    Scores,
    Skip,
    filter_each,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import REQUIRED_NODE_AFFINITY as REQUIRED
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import (
    NodeSelector,
    NodeSelectorTerm,
    RequiredNodeAffinity,
    SelectorError,
)
from policy_scheduler.plugins.helper import filter_alike, normalize_to_max, score_alike

NAME = "NodeAffinity"

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
REASON_INVALID = "node(s) didn't match Pod's invalid node affinity: "
# filter() returns these for every rejected node; built once, not per node.
_POD_REASONS = (REASON_POD,)
_ENFORCED_REASONS = (REASON_ENFORCED,)
_CONFLICT = PreFilterResult(rejection=REASON_CONFLICT)

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_POD_PATH = "spec.affinity.nodeAffinity"

_MAX_WEIGHT = 100

Weighted = tuple[tuple[NodeSelectorTerm, int], ...]


def _field_errors(errors: Iterable[SelectorError]) -> list[FieldError]:
    return [FieldError(error.path, error.message) for error in errors]


def _compile_preferred(raw: object, where: str) -> tuple[Weighted, list[FieldError]]:
    """The weighted terms; terms of weight 0 or without requirements are left out, as in kube."""
    if not isinstance(raw, list):
        return (), [FieldError(where, "must be a list")]
    errors: list[FieldError] = []
    terms = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            errors.append(FieldError(here, "must be an object"))
            continue
        weight = item.get("weight")
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int)
            or weight not in range(_MAX_WEIGHT + 1)
        ):
            # The API server allows 1..100 on pods; larger or negative weights would push the
            # normalized score out of 0..100.
            errors.append(
                FieldError(f"{here}.weight", f"must be an integer from 0 to {_MAX_WEIGHT}")
            )
            continue
        if weight == 0:
            continue
        term, term_errors = NodeSelectorTerm.parse_lenient(
            item.get("preference"), f"{here}.preference"
        )
        errors += _field_errors(term_errors)
        if term is not None:
            terms.append((term, weight))
    return tuple(terms), errors


def _pod_node_affinity(pod: PodView, field: str) -> object:
    node_affinity = pod.affinity.get("nodeAffinity")
    if node_affinity is None:
        return None
    # Anything but an object is kept, so that compiling it reports the problem.
    return node_affinity.get(field) if isinstance(node_affinity, Mapping) else node_affinity


def _pinned_node_names(raw_terms: Sequence[object]) -> frozenset[str] | None:
    """The node names that ``metadata.name In`` fields allow, as kube-scheduler's PreFilter
    computes them: None when some term does not pin names (so every node is a candidate)."""
    names: set[str] | None = None
    for term in raw_terms:
        pinned: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for requirement in fields if isinstance(fields, list) else ():
            if (
                isinstance(requirement, Mapping)
                and requirement.get("key") == "metadata.name"
                and requirement.get("operator") == "In"
            ):
                values = {str(v) for v in requirement.get("values") or ()}
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        names = pinned if names is None else names | pinned
    return None if names is None else frozenset(names)


@dataclass(frozen=True, slots=True)
class FilterState:
    """The pod's requirements, parsed once per cycle."""

    affinity: RequiredNodeAffinity
    pre_filter: PreFilterResult = ANY_NODE
    """The nodes the terms pin by name, or their conflict."""
    # Set when every node fails for the same reason after the scheduler-enforced affinity (an
    # affinity that cannot match anything).
    invalid: tuple[str, ...] = FITS


def _filter_state(pod: PodView) -> FilterState:
    affinity = pod.required_node_affinity
    if affinity.required is None:
        return FilterState(affinity)
    required = _pod_node_affinity(pod, REQUIRED)
    raw_terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    names = _pinned_node_names(raw_terms) if isinstance(raw_terms, list) else None
    errors = affinity.errors
    invalid = (REASON_INVALID + str(errors[0]),) if errors and not affinity.required.terms else FITS
    pre_filter = ANY_NODE if names is None else PreFilterResult(names) if names else _CONFLICT
    return FilterState(affinity, pre_filter, invalid)


class _AffinityFilter(Filter[FilterState]):
    name = NAME

    # Every rejection is UnschedulableAndUnresolvable in kube-scheduler: no eviction
    # changes a node's labels.
    resolvable_reasons = frozenset()

    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_LABELS

    def __init__(self, added: NodeSelector | None) -> None:
        self._added = added

    def pre_filter(self, cycle: Cycle) -> FilterState | Skip:
        affinity = cycle.pod.required_node_affinity
        # As kube-scheduler's PreFilter: nothing to check without a nodeSelector, a required
        # node affinity or a scheduler-enforced one.
        if affinity.required is None and not affinity.node_selector and self._added is None:
            return SKIP
        return _filter_state(cycle.pod)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """Only a node that now matches the pod (and the enforced selector), and did not match
        the pod before a change of its labels, can help, as kube-scheduler's hint says."""
        node, old = event.node, event.old_node
        if node is None:
            return True
        if self._added is not None and not self._added.matches(node.name, node.labels):
            return False
        affinity = pod.required_node_affinity
        return affinity.matches(node.name, node.labels) and (
            old is None or not affinity.matches(old.name, old.labels)
        )

    def pre_filter_result(self, state: FilterState) -> PreFilterResult:
        return state.pre_filter

    def filter(self, state: FilterState, pod: PodView, node: NodeInfo) -> Sequence[str]:
        # A node outside the pinned names fails the match below, as it does in kube-scheduler's
        # Filter; the pipeline does not ask about it (see pre_filter_result).
        name = node.name
        labels = node.node.labels
        if self._added is not None and not self._added.matches(name, labels):
            return _ENFORCED_REASONS
        if state.invalid:
            return state.invalid
        return FITS if state.affinity.matches(name, labels) else _POD_REASONS

    def filter_nodes(self, state: FilterState, pod: PodView, nodes: NodeBlock) -> Rejections:
        # Without matchFields (the node's name) only labels decide: nodes with the same values
        # of the labels the pod's and the enforced selectors read get the same verdict.
        keys = state.affinity.label_keys
        if keys is not None and self._added is not None:
            added = self._added.label_keys
            keys = None if added is None else keys | added
        if keys is not None:
            kinds = nodes.label_kinds(keys)
            if kinds is not None:
                return filter_alike(self, state, pod, nodes, kinds)
        return filter_each(self, state, pod, nodes)


class _AffinityScorer(Scorer[Weighted]):
    name = NAME

    def __init__(self, added: Weighted) -> None:
        self._added = added

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> Weighted | Skip:
        raw = _pod_node_affinity(cycle.pod, PREFERRED)
        terms: Weighted = ()
        if raw is not None:
            terms, errors = _compile_preferred(raw, f"{_POD_PATH}.{PREFERRED}")
            # kube-scheduler fails the whole cycle here; no preference at all is the gentler
            # reading.
            if errors:
                terms = ()
        # As kube-scheduler's PreScore, skipped without preferred terms: every node would score 0.
        return self._added + terms or SKIP

    def score(self, state: Weighted, pod: PodView, node: NodeInfo) -> int:
        name, labels = node.name, node.node.labels
        total = 0
        for term, weight in state:
            if term.matches(name, labels):
                total += weight
        return total

    def score_nodes(self, state: Weighted, pod: PodView, nodes: NodeBlock) -> Scores:
        keys = [term.label_keys for term, _ in state]
        # Terms on labels only: nodes with the same values of those labels score alike.
        if all(k is not None for k in keys):
            kinds = nodes.label_kinds(set().union(*(k for k in keys if k is not None)))
            if kinds is not None:
                return score_alike(self, state, pod, nodes, kinds)
        return super().score_nodes(state, pod, nodes)

    def normalize(self, state: Weighted, scores: Scores) -> None:
        normalize_to_max(scores)


def _parse_args(args: Args, path: str) -> tuple[NodeSelector | None, Weighted]:
    """kube-scheduler's NodeAffinityArgs: the enforced selector and the added preferred terms."""
    errors = unknown_fields(args, ("addedAffinity",), path)
    added = args.get("addedAffinity")
    where = f"{path}.addedAffinity"
    selector: NodeSelector | None = None
    preferred: Weighted = ()
    if added is not None and not isinstance(added, Mapping):
        errors.append(FieldError(where, "must be an object"))
    elif added is not None:
        errors += unknown_fields(added, (REQUIRED, PREFERRED), where)
        if added.get(REQUIRED) is not None:
            selector, required_errors = NodeSelector.parse_lenient(
                added[REQUIRED], f"{where}.{REQUIRED}"
            )
            errors += _field_errors(required_errors)
        if added.get(PREFERRED) is not None:
            preferred, preferred_errors = _compile_preferred(
                added[PREFERRED], f"{where}.{PREFERRED}"
            )
            errors += preferred_errors
    if errors:
        raise ArgsError(errors)
    return selector, preferred


def new_filter(args: Args, path: str) -> Filter[FilterState]:
    selector, _ = _parse_args(args, path)
    return _AffinityFilter(selector)


def new_scorer(args: Args, path: str) -> Scorer[Weighted]:
    _, preferred = _parse_args(args, path)
    return _AffinityScorer(preferred)
