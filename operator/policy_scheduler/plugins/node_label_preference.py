"""NodeLabelPreference: prefer nodes by one label (the legacy Policy API's NodeLabelPriority,
extended with values).

Args: ``{label: key, values: [...]}``. A node scores 100 when its value of ``label`` is one of
``values``, else 0; without ``values``, 100 when the node has the label at all. The scores are
already 0..100, so there is no normalization.
"""

from __future__ import annotations

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.interface import MAX_NODE_SCORE, Scorer
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.selectors import label_key_problem, label_value_problem

NAME = "NodeLabelPreference"


class _LabelPreferenceScorer(Scorer[None]):
    name = NAME

    def __init__(self, label: str, values: frozenset[str] | None) -> None:
        self._label = label
        self._values = values

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        labels = node.node.labels
        if self._label not in labels:
            return 0
        if self._values is None or labels[self._label] in self._values:
            return MAX_NODE_SCORE
        return 0


def _parse_values(raw: object, where: str, errors: list[FieldError]) -> frozenset[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        errors.append(
            FieldError(
                where, "must be a non-empty list of label values (omit it to prefer any value)"
            )
        )
        return None
    for i, value in enumerate(raw):
        problem = "must be a string" if not isinstance(value, str) else label_value_problem(value)
        if problem:
            errors.append(FieldError(f"{where}[{i}]", problem))
    return frozenset(str(value) for value in raw)


def new_scorer(args: Args, path: str) -> Scorer[None]:
    errors = unknown_fields(args, ("label", "values"), path)
    raw_label = args.get("label")
    label = raw_label if isinstance(raw_label, str) else ""
    if not label:
        errors.append(FieldError(f"{path}.label", "required: the label key to prefer nodes by"))
    elif problem := label_key_problem(label):
        errors.append(FieldError(f"{path}.label", problem))
    values = _parse_values(args.get("values"), f"{path}.values", errors)
    if errors:
        raise ArgsError(errors)
    return _LabelPreferenceScorer(label, values)
