"""PodDisruptionBudgets as preemption reads them (kube-scheduler v1.37's DefaultPreemption,
``filterPodsWithPDBViolation``): per namespace, each budget's ``spec.selector``,
``status.disruptionsAllowed`` and the names in ``status.disruptedPods``, and nothing else.

A budget protects the pods of its namespace that its selector matches; a null, empty or invalid
selector matches nothing (kube-scheduler skips such a budget). Evicting a pod that a budget
protects uses one of its allowed disruptions, unless the pod is already in ``disruptedPods`` (the
API server has counted it); a victim whose eviction takes some budget below zero violates it.

:class:`DisruptionBudgets` is the catalog the informer feeds (:meth:`~DisruptionBudgets.set`,
:meth:`~DisruptionBudgets.delete`, as :class:`~.workloads.Workloads`), and :func:`slim` is what an
informer needs to keep of an object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy_scheduler.model.objects import ObjectError, PodView, Raw
from policy_scheduler.model.selectors import LabelSelector, SelectorError

KIND = "PodDisruptionBudget"

_Key = tuple[str, str]  # namespace, name


def _mapping(value: object) -> Raw:
    return value if isinstance(value, Mapping) else {}


def slim(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`DisruptionBudgets` (and an informer, to resume and relist) reads of a
    PodDisruptionBudget: its name, namespace, uid, resourceVersion, ``spec.selector``,
    ``status.disruptionsAllowed`` and ``status.disruptedPods``."""
    metadata = _mapping(raw.get("metadata"))
    status = _mapping(raw.get("status"))
    kept = ("name", "namespace", "uid", "resourceVersion")
    return {
        "metadata": {key: metadata[key] for key in kept if key in metadata},
        "spec": {"selector": _mapping(raw.get("spec")).get("selector")},
        "status": {
            "disruptionsAllowed": status.get("disruptionsAllowed", 0),
            "disruptedPods": dict(_mapping(status.get("disruptedPods"))),
        },
    }


def _key(raw: Mapping[str, Any]) -> _Key:
    metadata = _mapping(raw.get("metadata"))
    return str(metadata.get("namespace") or "default"), str(metadata.get("name", ""))


def selector(raw: Mapping[str, Any]) -> LabelSelector:
    """A budget's ``spec.selector``; ObjectError, naming the budget and the field, for one the
    API server would refuse."""
    try:
        return LabelSelector.parse(_mapping(raw.get("spec")).get("selector"), "spec.selector")
    except SelectorError as error:
        namespace, name = _key(raw)
        raise ObjectError(f"poddisruptionbudget {namespace}/{name}: {error}") from None


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """One PodDisruptionBudget as preemption reads it."""

    namespace: str
    name: str
    selector: LabelSelector | None
    """None when the selector is null, empty or invalid: the budget then protects no pod."""
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> DisruptionBudget:
        status = _mapping(raw.get("status"))
        matches: LabelSelector | None
        try:
            matches = selector(raw)
        except ObjectError:
            matches = None
        if matches is not None and (matches.empty or matches.selects_nothing):
            # kube-scheduler: "A PDB with a nil or empty selector matches nothing."
            matches = None
        allowed = status.get("disruptionsAllowed")
        return cls(
            *_key(raw),
            matches,
            allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
            frozenset(map(str, _mapping(status.get("disruptedPods")))),
        )

    def protects(self, pod: PodView) -> bool:
        """Whether evicting ``pod`` counts against this budget: a pod of its namespace, with
        labels, that its selector matches, and not already counted as disrupted."""
        return (
            self.selector is not None
            and pod.namespace == self.namespace
            and bool(pod.labels)
            and self.selector.matches(pod.labels)
            and pod.name not in self.disrupted_pods
        )


class DisruptionBudgets:
    """The cluster's PodDisruptionBudgets, by namespace and name."""

    def __init__(self, budgets: Iterable[Mapping[str, Any]] = ()) -> None:
        self._budgets: dict[str, dict[str, DisruptionBudget]] = {}
        for raw in budgets:
            self.set(raw)

    def __repr__(self) -> str:
        return f"DisruptionBudgets({len(self)})"

    def __len__(self) -> int:
        return sum(map(len, self._budgets.values()))

    def __iter__(self) -> Iterator[DisruptionBudget]:
        for budgets in self._budgets.values():
            yield from budgets.values()

    def set(self, raw: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget was added or changed."""
        budget = DisruptionBudget.of(raw)
        self._budgets.setdefault(budget.namespace, {})[budget.name] = budget

    def delete(self, raw: Mapping[str, Any]) -> None:
        namespace, name = _key(raw)
        budgets = self._budgets.get(namespace, {})
        budgets.pop(name, None)
        if not budgets:
            self._budgets.pop(namespace, None)

    def in_namespace(self, namespace: str) -> Sequence[DisruptionBudget]:
        return tuple(self._budgets.get(namespace, {}).values())

    def split_violating(self, pods: Sequence[PodView]) -> tuple[list[PodView], list[PodView]]:
        """``pods`` (victims, most important first) split into those whose eviction would take
        some budget below its allowed disruptions and the others, each in the given order, as
        kube-scheduler's filterPodsWithPDBViolation: each budget's allowance is spent by the
        pods it protects in the order given."""
        allowed: dict[_Key, int] = {}
        violating: list[PodView] = []
        others: list[PodView] = []
        for pod in pods:
            violated = False
            for budget in self._budgets.get(pod.namespace, {}).values():
                if not budget.protects(pod):
                    continue
                key = (budget.namespace, budget.name)
                left = allowed.get(key, budget.disruptions_allowed) - 1
                allowed[key] = left
                if left < 0:
                    violated = True
            (violating if violated else others).append(pod)
        return violating, others
