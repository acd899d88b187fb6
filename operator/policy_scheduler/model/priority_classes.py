"""PriorityClasses, and a pod's priority resolved from them as the API server's Priority admission
plugin resolves it when the pod is created (kube-apiserver v1.37, ``plugin/pkg/admission/
priority``), for cluster files whose pods were written by hand rather than read from a cluster.

A pod the API server has admitted carries ``spec.priority`` (and ``spec.preemptionPolicy``), which
the scheduler reads; :meth:`PriorityClasses.admit` leaves such a pod as it is. A pod without
``spec.priority`` gets the value of the PriorityClass its ``spec.priorityClassName`` names; a pod
that names none gets that of the ``globalDefault: true`` class (the lowest-valued one, should there
be several), else 0. It also gets the class's ``preemptionPolicy`` when it has none (without a
class, ``PreemptLowerPriority``). A pod naming a class that does not exist is refused, as the API
server refuses it. The two system classes every API server creates at its start
(``system-node-critical`` and ``system-cluster-critical``) exist without being listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.model.objects import ObjectError, PodView, _mapping

KIND = "PriorityClass"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
_POLICIES = (PREEMPT_LOWER_PRIORITY, "Never")
_SYSTEM_CRITICAL = 2_000_000_000
"""kube's SystemCriticalPriority: twice the highest priority a user may give a class."""


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """One PriorityClass as admission reads it."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    """The API server defaults a class's ``preemptionPolicy`` to PreemptLowerPriority."""

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> PriorityClass:
        """The class ``raw`` is; ObjectError, naming it and the field, for one the API server
        would refuse: a ``value`` that is no integer, a ``globalDefault`` that is no boolean, a
        ``preemptionPolicy`` other than PreemptLowerPriority or Never."""
        name = str(_mapping(raw.get("metadata")).get("name", ""))
        value = raw.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            got = "nothing" if value is None else repr(value)
            raise ObjectError(f"priorityclass {name}: value: must be an integer, got {got}")
        global_default = raw.get("globalDefault", False)
        if not isinstance(global_default, bool):
            raise ObjectError(
                f"priorityclass {name}: globalDefault: must be true or false, "
                f"got {global_default!r}"
            )
        policy = raw.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
        if policy not in _POLICIES:
            raise ObjectError(
                f"priorityclass {name}: preemptionPolicy: must be {' or '.join(_POLICIES)}, "
                f"got {policy!r}"
            )
        return cls(name, value, global_default, policy)


SYSTEM_CLASSES = (
    PriorityClass("system-node-critical", _SYSTEM_CRITICAL + 1000),
    PriorityClass("system-cluster-critical", _SYSTEM_CRITICAL),
)


class PriorityClasses:
    """The cluster's PriorityClasses by name, the system ones included."""

    def __init__(self, classes: Iterable[PriorityClass] = ()) -> None:
        self._classes = {c.name: c for c in (*SYSTEM_CLASSES, *classes)}
        defaults = [c for c in self._classes.values() if c.global_default]
        # As admission: should a race have made several classes the default, the lowest wins.
        self._default = min(defaults, key=lambda c: c.value, default=None)

    def admit(self, pod: PodView) -> PodView:
        """``pod`` with its priority resolved as admission resolves it (see the module's
        docstring): the same pod when it has ``spec.priority``, else one whose ``spec.priority``,
        ``spec.priorityClassName`` and ``spec.preemptionPolicy`` are set. ObjectError, naming the
        pod and the class, when it names a class that does not exist."""
        if pod.spec.get("priority") is not None:
            return pod
        named = pod.spec.get("priorityClassName")
        found = self._classes.get(str(named)) if named else self._default
        if named and found is None:
            raise ObjectError(
                f"pod {pod.key}: spec.priorityClassName: no PriorityClass {named!r}, which the "
                "API server refuses; add the PriorityClass, or give the pod spec.priority"
            )
        admitted = {
            "priority": found.value if found else 0,
            "preemptionPolicy": pod.spec.get("preemptionPolicy")
            or (found.preemption_policy if found else PREEMPT_LOWER_PRIORITY),
        }
        if found:
            admitted["priorityClassName"] = found.name
        return PodView({**pod.raw, "spec": {**pod.spec, **admitted}})
