"""Label selectors and node selectors, parsed and matched as apimachinery and component-helpers do.

Two selector languages meet in scheduling: ``metav1.LabelSelector`` (pod affinity, topology
spread, a policy's node pool) and ``v1.NodeSelector`` (node affinity), which adds ``Gt``/``Lt``
and ``matchFields``. This module is the one place that parses both; everything else uses it.

Parsing follows apimachinery's ``labels.NewRequirement``: label keys must be qualified names
(``[prefix/]name``), values valid label values, ``Gt``/``Lt`` values integers as Go's
``strconv.ParseInt`` reads them; and component-helpers' ``nodeaffinity``: ``matchFields`` take only
``metadata.name`` with ``In``/``NotIn`` and exactly one value. A label selector or a strictly
parsed node selector raises :class:`SelectorError` with the first problem; the lenient node
selector parse keeps the valid terms and returns the errors of the invalid ones, which match
nothing (an invalid term costs the pod that term, not the whole selector).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

Labels = Mapping[str, str]
_LabelMatch = Callable[[Labels], bool]
# Field requirements can only name metadata.name, so they match on the node's name alone.
_FieldMatch = Callable[[str], bool]

_NAME_MAX = 63
_PREFIX_MAX = 253
_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_RULE = (
    "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
)
# strconv.ParseInt(s, 10, 64): an optional sign and ASCII digits, within int64. Python's int()
# also takes spaces, '_' and non-ASCII digits, which Go rejects.
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS = _LABEL_OPERATORS | {"Gt", "Lt"}
_FIELD_OPERATORS = ("In", "NotIn")
_NODE_NAME_FIELD = "metadata.name"


class SelectorError(ValueError):
    """A selector that the API server's own libraries would reject, at ``path``.

    Raised for the first problem; ``errors`` lists every problem found, that one first, so that a
    caller validating user input can report them all at once.
    """

    def __init__(self, path: str, message: str, also: Sequence[SelectorError] = ()) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
        self.errors: tuple[SelectorError, ...] = (self, *also)


def _raise(errors: Sequence[SelectorError]) -> None:
    if errors:
        first = errors[0]
        raise SelectorError(first.path, first.message, errors[1:])


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"invalid label key {key!r}: the prefix before '/' must not be empty"
    if slash and (len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN_RE.fullmatch(prefix)):
        return (
            f"invalid label key {key!r}: the prefix must be a DNS subdomain (lower case "
            f"alphanumerics, '-' and '.', at most {_PREFIX_MAX} characters)"
        )
    if not name:
        return f"invalid label key {key!r}: the name must not be empty"
    if len(name) > _NAME_MAX or not _NAME_RE.fullmatch(name):
        return f"invalid label key {key!r}: the name must be at most {_NAME_MAX} {_NAME_RULE}"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is (the empty value is)."""
    if value and (len(value) > _NAME_MAX or not _NAME_RE.fullmatch(value)):
        return f"invalid label value {value!r}: must be at most {_NAME_MAX} {_NAME_RULE}"
    return None


def parse_int64(text: str) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it, or None where that fails."""
    if not _INTEGER_RE.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def _entries(raw: object, path: str, errors: list[SelectorError]) -> list[object]:
    """The items of an optional list field; anything but a list is an error."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(SelectorError(path, "must be a list"))
        return []
    return raw


def _label_match(key: str, operator: str, values: Sequence[str]) -> _LabelMatch:
    """The matcher of a requirement that has passed validation."""
    if operator == "In":
        allowed = frozenset(values)
        return lambda labels: key in labels and labels[key] in allowed
    if operator == "NotIn":
        banned = frozenset(values)
        return lambda labels: key not in labels or labels[key] not in banned
    if operator == "Exists":
        return lambda labels: key in labels
    if operator == "DoesNotExist":
        return lambda labels: key not in labels
    bound = int(values[0])  # validated by parse_int64
    greater = operator == "Gt"

    def compare(labels: Labels) -> bool:
        # labels.Requirement.Matches: a node value that ParseInt rejects matches neither.
        value = parse_int64(labels[key]) if key in labels else None
        if value is None:
            return False
        return value > bound if greater else value < bound

    return compare


def _requirement(
    raw: object, path: str, operators: frozenset[str], errors: list[SelectorError]
) -> _LabelMatch | None:
    """A ``LabelSelectorRequirement`` or ``NodeSelectorRequirement`` on labels, checked as
    ``labels.NewRequirement`` does; every problem goes to ``errors``, and then None is returned."""
    if not isinstance(raw, Mapping):
        errors.append(SelectorError(path, "must be an object"))
        return None
    before = len(errors)
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        errors.append(SelectorError(f"{path}.key", "required"))
    elif problem := label_key_problem(key):
        errors.append(SelectorError(f"{path}.key", problem))
    operator = str(raw.get("operator", ""))
    values = [str(v) for v in _entries(raw.get("values"), f"{path}.values", errors)]
    if operator not in operators:
        errors.append(
            SelectorError(f"{path}.operator", f"{operator!r} is not one of {sorted(operators)}")
        )
    elif operator in ("In", "NotIn") and not values:
        errors.append(SelectorError(path, f"values must be non-empty for operator {operator}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(SelectorError(path, f"values must be empty for operator {operator}"))
    elif operator in ("Gt", "Lt") and len(values) != 1:
        errors.append(SelectorError(path, f"operator {operator} needs exactly one value"))
    numeric = operator in ("Gt", "Lt")
    for j, value in enumerate(values):
        if problem := label_value_problem(value):
            errors.append(SelectorError(f"{path}.values[{j}]", problem))
        elif numeric and parse_int64(value) is None:
            errors.append(SelectorError(f"{path}.values[{j}]", f"{value!r} is not an integer"))
    if len(errors) > before:
        return None
    return _label_match(str(key), operator, values)


def _field_requirement(raw: object, path: str, errors: list[SelectorError]) -> _FieldMatch | None:
    """A ``matchFields`` requirement, checked as component-helpers'
    ``nodeSelectorRequirementsAsFieldSelector`` does."""
    if not isinstance(raw, Mapping):
        errors.append(SelectorError(path, "must be an object"))
        return None
    key = raw.get("key")
    if key != _NODE_NAME_FIELD:
        errors.append(
            SelectorError(f"{path}.key", f"only {_NODE_NAME_FIELD} is supported, not {key!r}")
        )
        return None
    operator = raw.get("operator")
    if operator not in _FIELD_OPERATORS:
        errors.append(
            SelectorError(
                f"{path}.operator", f"{operator!r} is not one of {list(_FIELD_OPERATORS)}"
            )
        )
        return None
    values = _entries(raw.get("values"), f"{path}.values", errors)
    if len(values) != 1:
        errors.append(SelectorError(f"{path}.values", "must have exactly one element"))
        return None
    name = str(values[0])
    if operator == "In":
        return lambda node_name: node_name == name
    return lambda node_name: node_name != name


def _label_selector(raw: Mapping[str, object], where: str) -> tuple[_LabelMatch, ...]:
    errors: list[SelectorError] = []
    matchers: list[_LabelMatch | None] = []
    match_labels = raw.get("matchLabels")
    if match_labels is not None and not isinstance(match_labels, Mapping):
        errors.append(SelectorError(f"{where}.matchLabels", "must be an object"))
    for raw_key, raw_value in (match_labels if isinstance(match_labels, Mapping) else {}).items():
        # matchLabels {k: v} is the requirement ``k In (v)``.
        key, value = str(raw_key), str(raw_value)
        errors += [
            SelectorError(f"{where}.matchLabels", problem)
            for problem in (label_key_problem(key), label_value_problem(value))
            if problem
        ]
        matchers.append(_label_match(key, "In", [value]))
    path = f"{where}.matchExpressions"
    for i, expression in enumerate(_entries(raw.get("matchExpressions"), path, errors)):
        matchers.append(_requirement(expression, f"{path}[{i}]", _LABEL_OPERATORS, errors))
    _raise(errors)
    return tuple(m for m in matchers if m is not None)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``. ``None`` selects nothing; ``{}`` selects everything."""

    _matchers: tuple[_LabelMatch, ...]
    selects_nothing: bool = False

    @classmethod
    def parse(cls, raw: object, where: str = "selector") -> LabelSelector:
        """As ``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError`."""
        if raw is None:
            return cls((), selects_nothing=True)
        if not isinstance(raw, Mapping):
            raise SelectorError(where, "must be an object")
        return cls(_label_selector(raw, where))

    @property
    def empty(self) -> bool:
        """True for a selector without requirements, which selects everything (``{}``), as
        ``labels.Selector.Empty()``; the null selector, which selects nothing, is not empty."""
        return not self._matchers and not self.selects_nothing

    def matches(self, labels: Labels) -> bool:
        return not self.selects_nothing and all(match(labels) for match in self._matchers)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A parsed ``v1.NodeSelectorTerm``: all of its expressions and fields must match."""

    _labels: tuple[_LabelMatch, ...]
    _fields: tuple[_FieldMatch, ...]
    _keys: frozenset[str] = frozenset()

    @classmethod
    def parse_lenient(
        cls, raw: object, where: str
    ) -> tuple[NodeSelectorTerm | None, tuple[SelectorError, ...]]:
        """The term, or None for one that matches no node: null, without requirements (as in
        component-helpers) or invalid; with what is wrong with it."""
        if raw is None:
            return None, ()
        if not isinstance(raw, Mapping):
            return None, (SelectorError(where, "must be an object"),)
        if not raw.get("matchExpressions") and not raw.get("matchFields"):
            return None, ()
        errors: list[SelectorError] = []
        path = f"{where}.matchExpressions"
        labels = [
            _requirement(expression, f"{path}[{i}]", _NODE_OPERATORS, errors)
            for i, expression in enumerate(_entries(raw.get("matchExpressions"), path, errors))
        ]
        path = f"{where}.matchFields"
        fields = [
            _field_requirement(requirement, f"{path}[{i}]", errors)
            for i, requirement in enumerate(_entries(raw.get("matchFields"), path, errors))
        ]
        if errors:
            return None, tuple(errors)
        # Validated above: every expression is an object with a key.
        keys = frozenset(str(e["key"]) for e in raw.get("matchExpressions") or ())
        return cls(
            tuple(m for m in labels if m is not None),
            tuple(m for m in fields if m is not None),
            keys,
        ), ()

    def matches(self, node_name: str, labels: Labels) -> bool:
        return all(match(labels) for match in self._labels) and all(
            match(node_name) for match in self._fields
        )

    @property
    def label_keys(self) -> frozenset[str] | None:
        """The labels the term reads: nodes with equal values of them match it alike. None
        when it also reads the node's name (``matchFields``)."""
        return None if self._fields else self._keys


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A parsed ``v1.NodeSelector``: its terms are ORed; no terms match no node."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse_lenient(
        cls, raw: object, where: str
    ) -> tuple[NodeSelector, tuple[SelectorError, ...]]:
        """The selector of the valid terms, and the errors of the invalid ones, which component-
        helpers' node selector keeps as terms that never match."""
        if not isinstance(raw, Mapping):
            return cls(()), (SelectorError(where, "must be an object"),)
        errors: list[SelectorError] = []
        path = f"{where}.nodeSelectorTerms"
        terms = []
        for i, raw_term in enumerate(_entries(raw.get("nodeSelectorTerms"), path, errors)):
            term, term_errors = NodeSelectorTerm.parse_lenient(raw_term, f"{path}[{i}]")
            errors += term_errors
            if term is not None:
                terms.append(term)
        return cls(tuple(terms)), tuple(errors)

    @classmethod
    def parse(cls, raw: object, where: str) -> NodeSelector:
        """As :meth:`parse_lenient`, but raises :class:`SelectorError` for any invalid term."""
        selector, errors = cls.parse_lenient(raw, where)
        _raise(errors)
        return selector

    def matches(self, node_name: str, labels: Labels) -> bool:
        return any(term.matches(node_name, labels) for term in self.terms)

    @property
    def label_keys(self) -> frozenset[str] | None:
        """The labels its terms read (see :attr:`NodeSelectorTerm.label_keys`)."""
        return _union(term.label_keys for term in self.terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` AND its required node affinity, as component-helpers'
    ``GetRequiredNodeAffinity``: what NodeAffinity filters on and PodTopologySpread's
    ``nodeAffinityPolicy: Honor`` counts by."""

    node_selector: tuple[tuple[str, str], ...]
    # None: the pod has no required node affinity, so only the nodeSelector applies.
    required: NodeSelector | None
    errors: tuple[SelectorError, ...]  # of the invalid terms, which match no node

    @classmethod
    def parse(cls, node_selector: Labels, required: object, where: str) -> RequiredNodeAffinity:
        """``required`` is the raw ``requiredDuringSchedulingIgnoredDuringExecution`` at
        ``where``, None when the pod has none."""
        pairs = tuple(node_selector.items())
        if required is None:
            return cls(pairs, None, ())
        selector, errors = NodeSelector.parse_lenient(required, where)
        return cls(pairs, selector, errors)

    def matches(self, node_name: str, labels: Labels) -> bool:
        for key, value in self.node_selector:
            if key not in labels or labels[key] != value:
                return False
        return self.required is None or self.required.matches(node_name, labels)

    @property
    def label_keys(self) -> frozenset[str] | None:
        """The labels the nodeSelector and the required terms read; None when a term reads
        the node's name."""
        selected = frozenset(key for key, _ in self.node_selector)
        if self.required is None:
            return selected
        return _union([selected, self.required.label_keys])


def _union(keys: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """All the keys; None if any part is None (reads more than labels)."""
    every: set[str] = set()
    for part in keys:
        if part is None:
            return None
        every |= part
    return frozenset(every)
