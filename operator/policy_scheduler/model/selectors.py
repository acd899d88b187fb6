"""Label selectors and node selector terms, matched as apimachinery and component-helpers do.

Two selector languages meet in scheduling: ``metav1.LabelSelector`` (pod affinity, topology
spread, a policy's node pool) and ``v1.NodeSelectorTerm`` (node affinity), which adds ``Gt``/``Lt``
and ``matchFields``. Both are compiled once into matchers; invalid selectors raise
:class:`SelectorError` with the problem named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Labels = Mapping[str, str]
_Match = Callable[[Labels], bool]


class SelectorError(ValueError):
    """A selector that the API server's own validation would reject."""


def _requirement(key: str, operator: str, values: Sequence[str], where: str) -> _Match:
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"{where}: values must be non-empty for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{where}: values must be empty for operator {operator}")
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
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"{where}: operator {operator} needs exactly one value")
        try:
            bound = int(values[0])
        except ValueError:
            raise SelectorError(f"{where}: {values[0]!r} is not an integer") from None
        greater = operator == "Gt"

        def compare(labels: Labels) -> bool:
            try:
                value = int(labels[key])
            except (KeyError, ValueError):
                return False
            return value > bound if greater else value < bound

        return compare
    raise SelectorError(f"{where}: {operator!r} is not a valid operator")


def _expressions(raw: object, where: str, operators: frozenset[str]) -> list[_Match]:
    matchers = []
    for i, expression in enumerate(raw if isinstance(raw, list) else ()):
        here = f"{where}[{i}]"
        if not isinstance(expression, Mapping) or not expression.get("key"):
            raise SelectorError(f"{here}.key: required")
        operator = str(expression.get("operator", ""))
        if operator not in operators:
            raise SelectorError(f"{here}.operator: {operator!r} is not one of {sorted(operators)}")
        values = [str(v) for v in expression.get("values") or ()]
        matchers.append(_requirement(str(expression["key"]), operator, values, here))
    return matchers


_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS = _LABEL_OPERATORS | {"Gt", "Lt"}


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A compiled ``metav1.LabelSelector``. ``None`` selects nothing; ``{}`` selects everything."""

    _matchers: tuple[_Match, ...]
    selects_nothing: bool = False

    @classmethod
    def parse(cls, raw: object, where: str = "selector") -> LabelSelector:
        if raw is None:
            return cls((), selects_nothing=True)
        if not isinstance(raw, Mapping):
            raise SelectorError(f"{where}: must be an object")
        matchers: list[_Match] = [
            _requirement(str(k), "In", [str(v)], f"{where}.matchLabels")
            for k, v in (raw.get("matchLabels") or {}).items()
        ]
        matchers += _expressions(
            raw.get("matchExpressions"), f"{where}.matchExpressions", _LABEL_OPERATORS
        )
        return cls(tuple(matchers))

    def matches(self, labels: Labels) -> bool:
        return not self.selects_nothing and all(match(labels) for match in self._matchers)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A compiled ``v1.NodeSelectorTerm``: all of its expressions and fields must match.

    A term with no requirements matches no node, as in component-helpers.
    """

    _labels: tuple[_Match, ...]
    _fields: tuple[_Match, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> NodeSelectorTerm:
        labels = _expressions(
            raw.get("matchExpressions"), f"{where}.matchExpressions", _NODE_OPERATORS
        )
        fields = _expressions(raw.get("matchFields"), f"{where}.matchFields", _NODE_OPERATORS)
        for i, field in enumerate(raw.get("matchFields") or ()):
            if field.get("key") != "metadata.name":
                raise SelectorError(
                    f"{where}.matchFields[{i}].key: only metadata.name is supported, "
                    f"not {field.get('key')!r}"
                )
        return cls(tuple(labels), tuple(fields))

    def matches(self, node_name: str, labels: Labels) -> bool:
        if not self._labels and not self._fields:
            return False
        fields = {"metadata.name": node_name}
        return all(m(labels) for m in self._labels) and all(m(fields) for m in self._fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A compiled ``v1.NodeSelector``: its terms are ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> NodeSelector:
        terms = raw.get("nodeSelectorTerms") or ()
        return cls(
            tuple(
                NodeSelectorTerm.parse(term, f"{where}.nodeSelectorTerms[{i}]")
                for i, term in enumerate(terms)
            )
        )

    def matches(self, node_name: str, labels: Labels) -> bool:
        return any(term.matches(node_name, labels) for term in self.terms)
