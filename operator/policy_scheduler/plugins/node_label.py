"""NodeLabel: a node must carry some labels and lack others (the legacy Policy API's
CheckNodeLabelPresence / kube-scheduler's removed NodeLabel filter, extended with values).

Args: ``{present: [...], absent: [...]}``, each entry ``key`` (the label, any value) or
``key=value`` (the label with exactly that value). A node fails with one reason per entry it
violates: "node(s) didn't have label disk=ssd" for a missing one, "node(s) had label maintenance"
for a forbidden one.

Keys and values are checked with apimachinery's label syntax (model/selectors.py).

Queueing hint (as NodeAffinity's): a pod this filter rejected waits for a node added that passes
it, or a node whose labels changed so that it passes now and did not before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, Filter
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import label_key_problem, label_value_problem

NAME = "NodeLabel"


@dataclass(frozen=True, slots=True)
class _Entry:
    key: str
    value: str | None
    text: str

    def on(self, labels: Mapping[str, str]) -> bool:
        if self.value is None:
            return self.key in labels
        return self.key in labels and labels[self.key] == self.value


def _parse_entries(raw: object, where: str, errors: list[FieldError]) -> list[_Entry]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(FieldError(where, 'must be a list of "key" or "key=value" strings'))
        return []
    entries = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, str) or not item:
            errors.append(FieldError(here, 'must be a non-empty "key" or "key=value" string'))
            continue
        key, equals, value = item.partition("=")
        problems = [label_key_problem(key), label_value_problem(value) if equals else None]
        found = [p for p in problems if p]
        errors.extend(FieldError(here, problem) for problem in found)
        if not found:
            entries.append(_Entry(key, value if equals else None, item))
    return entries


def _conflicts(present: Sequence[_Entry], absent: Sequence[_Entry], path: str) -> list[FieldError]:
    """Absent entries that rule out a present one: no node could ever pass."""
    return [
        FieldError(f"{path}.absent[{i}]", f"contradicts present[{j}] {wanted.text!r}")
        for i, banned in enumerate(absent)
        for j, wanted in enumerate(present)
        if banned.key == wanted.key and banned.value in (None, wanted.value)
    ]


class _NodeLabelFilter(Filter[None]):
    name = NAME

    # No eviction changes a node's labels.
    resolvable_reasons = frozenset()

    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_LABELS

    def __init__(self, present: Sequence[_Entry], absent: Sequence[_Entry]) -> None:
        # (entry, whether the node must have it, reason): the reasons are built once, so filter()
        # allocates nothing for a node that passes.
        self._checks = (
            *((e, True, f"node(s) didn't have label {e.text}") for e in present),
            *((e, False, f"node(s) had label {e.text}") for e in absent),
        )

    def _passes(self, labels: Mapping[str, str]) -> bool:
        return all(entry.on(labels) is wanted for entry, wanted, _ in self._checks)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        node, old = event.node, event.old_node
        if node is None:
            return True
        return self._passes(node.labels) and (old is None or not self._passes(old.labels))

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        labels = node.node.labels
        reasons = FITS
        for entry, wanted, reason in self._checks:
            if entry.on(labels) is not wanted:
                reasons += (reason,)
        return reasons


def new_filter(args: Args, path: str) -> Filter[None]:
    errors = unknown_fields(args, ("present", "absent"), path)
    present = _parse_entries(args.get("present"), f"{path}.present", errors)
    absent = _parse_entries(args.get("absent"), f"{path}.absent", errors)
    errors += _conflicts(present, absent, path)
    if not errors and not present and not absent:
        errors.append(FieldError(path, "must name at least one label in present or absent"))
    if errors:
        raise ArgsError(errors)
    return _NodeLabelFilter(present, absent)
