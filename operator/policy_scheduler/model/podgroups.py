"""Pod groups, read from the three APIs that declare them, as one model: the group a pod belongs
to, the least number of its members that may be placed (all or nothing), its timeout and minimum
resources, and the status each API's own scheduler writes when a group is placed or not.

- **native**: Kubernetes' ``scheduling.k8s.io/v1beta1`` PodGroup (served with the GenericWorkload
  gate): ``spec.schedulingPolicy`` is exactly one of ``gang: {minCount}`` (all or nothing) and
  ``basic: {}`` (each pod alone); a pod names its group in ``spec.schedulingGroup.podGroupName``.
  kube-scheduler writes the ``PodGroupInitiallyScheduled`` condition (``updatePodGroupCondition``
  of ``schedule_one_podgroup.go``, v1.37), which never goes back from True.
- **scheduler-plugins**: ``scheduling.x-k8s.io/v1alpha1`` PodGroup (``spec.minMember``,
  ``spec.minResources``, ``spec.scheduleTimeoutSeconds``); a pod carries the label
  ``scheduling.x-k8s.io/pod-group``. Its Coscheduling plugin writes no status; its controller
  writes ``status.phase`` from the members' count and phases. Written here is the part of that a
  scheduler knows: ``Pending`` for a group not yet placed, ``Scheduling`` (the API's "at least
  minMember scheduled, not yet running") once placed, and ``scheduleStartTime``, which a timeout
  restarts; the phases that come from running pods (Running, Finished, Failed) are the
  controller's, and a group in one of them is not written.
- **volcano**: ``scheduling.volcano.sh/v1beta1`` PodGroup (``spec.minMember``,
  ``spec.minTaskMember``, ``spec.minResources``); a pod carries the annotation
  ``scheduling.k8s.io/group-name``. Volcano's gang plugin sets the condition ``Unschedulable``
  (reason ``NotEnoughResources``, "<n>/<members> tasks in gang unschedulable: <why>") or
  ``Scheduled``, each with a transition ID and time, and its session the phase (``Running`` once
  minMember are scheduled; ``Pending``, or ``Unknown`` when members already run, otherwise); it
  writes only when something but the condition's time and ID changed.

A pod naming a group in more than one way belongs to the first of the above: the native field,
then the label, then the annotation.

The API server validates the native object; the CRDs' schemas are looser (and a cluster file is
not validated at all): an object the model cannot read is kept, with :attr:`PodGroup.error`
naming the field and what is wrong, so that its members wait with that message instead of being
placed one by one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from policy_scheduler.model.objects import (
    VOLCANO_GROUP_ANNOTATION,
    ObjectError,
    ObjectRef,
    PodView,
    Raw,
    _mapping,
    _sequence,
    parse_resources,
    rfc3339,
)

NATIVE: Final = "native"
SCHEDULER_PLUGINS: Final = "scheduler-plugins"
VOLCANO: Final = "volcano"
APIS: Final = (NATIVE, SCHEDULER_PLUGINS, VOLCANO)

KIND: Final = "PodGroup"
"""The objects' ``kind`` in all three APIs."""
PLURAL: Final = "podgroups"
API_VERSIONS: Final[Mapping[str, str]] = {
    NATIVE: "scheduling.k8s.io/v1beta1",
    SCHEDULER_PLUGINS: "scheduling.x-k8s.io/v1alpha1",
    VOLCANO: "scheduling.volcano.sh/v1beta1",
}
KIND_NAMES: Final[Mapping[str, str]] = {
    api: f"{KIND}.{version.split('/')[0]}" for api, version in API_VERSIONS.items()
}
"""Each API's watched kind, by the name the scheduler's kinds (and RBAC's resources) give it:
``PodGroup.<API group>``, as kubectl names a kind of several groups."""
POD_GROUP_KINDS: Final = frozenset(KIND_NAMES.values())
"""The kinds a plugin that reads pod groups names in its ``reads``."""
_API_OF_KIND: Final = {name: api for api, name in KIND_NAMES.items()}

SCHEDULER_PLUGINS_LABEL: Final = "scheduling.x-k8s.io/pod-group"

# kube's PodGroupInitiallyScheduled condition and its reasons (scheduling/v1beta1, v1.37).
INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
# Volcano's condition types and reason (scheduling/v1beta1, and its gang plugin's).
VOLCANO_SCHEDULED: Final = "Scheduled"
VOLCANO_UNSCHEDULABLE: Final = "Unschedulable"
_VOLCANO_READY_REASON: Final = "tasks in gang are ready to be scheduled"
_VOLCANO_NOT_ENOUGH: Final = "NotEnoughResources"
# The phases of scheduler-plugins' controller that follow from the members' own phases.
_RUNNING_PHASES: Final = frozenset({"Running", "Finished", "Failed"})


@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    """A pod group: its API (one of :data:`APIS`), namespace and name."""

    api: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def group_key(pod: PodView) -> GroupKey | None:
    """The group a pod names: ``spec.schedulingGroup.podGroupName`` first, then the
    scheduler-plugins label, then Volcano's annotation; None for a pod of no group."""
    native = _mapping(pod.spec.get("schedulingGroup")).get("podGroupName")
    if isinstance(native, str) and native:
        return GroupKey(NATIVE, pod.namespace, native)
    labelled = pod.labels.get(SCHEDULER_PLUGINS_LABEL)
    if isinstance(labelled, str) and labelled:
        return GroupKey(SCHEDULER_PLUGINS, pod.namespace, labelled)
    annotated = _mapping(pod.metadata.get("annotations")).get(VOLCANO_GROUP_ANNOTATION)
    if isinstance(annotated, str) and annotated:
        return GroupKey(VOLCANO, pod.namespace, annotated)
    return None


@dataclass(frozen=True, slots=True)
class PodGroup:
    """One pod group as the scheduler reads it, whatever its API."""

    key: GroupKey
    uid: str
    resource_version: str
    min_member: int
    """Native ``gang.minCount`` (0 for ``basic``); ``spec.minMember`` of the other two (unset:
    0)."""
    gang: bool
    """False: the native ``basic`` policy (no all or nothing)."""
    timeout: float | None
    """``spec.scheduleTimeoutSeconds`` (scheduler-plugins); None elsewhere and when unset."""
    min_resources: Mapping[str, int]
    """``spec.minResources`` as :mod:`~policy_scheduler.model.quantity` parses requests (cpu in
    millis, ...); empty when unset (and for the native API, which has none)."""
    error: str = ""
    """Non-empty: the object is invalid, saying which field and why; its members are held with
    this message."""
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    """Volcano's ``spec.minTaskMember``: the least members per task (a pod's
    ``volcano.sh/task-spec`` annotation); empty elsewhere."""
    generation: int = 0
    """``metadata.generation``, which the native condition's ``observedGeneration`` records."""
    status: Mapping[str, Any] = field(default_factory=dict)
    """The object's status as last read, from which :func:`status_patch` writes only what
    changes."""


class PodGroups:
    """The pod groups of every API, as the cache keeps them (``ClusterState.pod_groups``)."""

    def __init__(self) -> None:
        self._groups: dict[GroupKey, PodGroup] = {}

    def __repr__(self) -> str:
        return f"PodGroups({len(self)})"

    def set(self, kind: str, raw: Raw) -> tuple[PodGroup | None, PodGroup]:
        """A PodGroup of ``kind`` (one of :data:`POD_GROUP_KINDS`) was added or changed: the
        group as it was (None: new) and as kept now."""
        group = read(api_of(kind), raw)
        before = self._groups.get(group.key)
        self._groups[group.key] = group
        return before, group

    def delete(self, kind: str, raw: Raw) -> PodGroup | None:
        """A PodGroup of ``kind`` was deleted: the group as it was kept (None: not known)."""
        namespace, name = _name(raw)
        return self._groups.pop(GroupKey(api_of(kind), namespace, name), None)

    def get(self, key: GroupKey) -> PodGroup | None:
        return self._groups.get(key)

    def __iter__(self) -> Iterator[PodGroup]:
        return iter(self._groups.values())

    def __len__(self) -> int:
        return len(self._groups)


def api_of(kind: str) -> str:
    """The API (one of :data:`APIS`) of a kind of :data:`POD_GROUP_KINDS`."""
    api = _API_OF_KIND.get(kind)
    if api is None:
        raise ValueError(f"{kind!r} is no pod group kind: expected one of {sorted(_API_OF_KIND)}")
    return api


def kind_of(raw: Raw) -> str | None:
    """The kind of :data:`POD_GROUP_KINDS` that an object of ``kind: PodGroup`` is, by its
    ``apiVersion`` (any version of the API's group); None for another API's PodGroup."""
    group = str(raw.get("apiVersion") or "").rpartition("/")[0]
    return next(
        (
            KIND_NAMES[api]
            for api, version in API_VERSIONS.items()
            if version.rpartition("/")[0] == group
        ),
        None,
    )


def _name(raw: Raw) -> tuple[str, str]:
    metadata = _mapping(raw.get("metadata"))
    return str(metadata.get("namespace") or "default"), str(metadata.get("name", ""))


def read(api: str, raw: Raw) -> PodGroup:
    """The group ``raw`` (a PodGroup of ``api``) is; one the model cannot read is kept with its
    :attr:`~PodGroup.error`."""
    try:
        return parse(api, raw)
    except ObjectError as error:
        namespace, name = _name(raw)
        metadata = _mapping(raw.get("metadata"))
        return PodGroup(
            GroupKey(api, namespace, name),
            str(metadata.get("uid", "")),
            str(metadata.get("resourceVersion", "")),
            min_member=0,
            gang=True,
            timeout=None,
            min_resources={},
            error=str(error),
            status=_mapping(raw.get("status")),
        )


def parse(api: str, raw: Raw) -> PodGroup:
    """The group ``raw`` (a PodGroup of ``api``) is; ObjectError naming the object and the field
    for one the model cannot read (what a cluster file's object must pass)."""
    namespace, name = _name(raw)
    where = f"{KIND} {namespace}/{name}"
    metadata = _mapping(raw.get("metadata"))
    spec = _mapping(raw.get("spec"))
    generation = metadata.get("generation")
    common: dict[str, Any] = {
        "key": GroupKey(api, namespace, name),
        "uid": str(metadata.get("uid", "")),
        "resource_version": str(metadata.get("resourceVersion", "")),
        "generation": generation if _is_int(generation) else 0,
        "status": _mapping(raw.get("status")),
    }
    if api == NATIVE:
        gang, min_count = _native_policy(where, spec.get("schedulingPolicy"))
        return PodGroup(**common, min_member=min_count, gang=gang, timeout=None, min_resources={})
    min_member = _count(where, "spec.minMember", spec.get("minMember", 0))
    min_resources = _resources(where, spec.get("minResources"))
    if api == SCHEDULER_PLUGINS:
        seconds = spec.get("scheduleTimeoutSeconds")
        timeout = (
            None
            if seconds is None
            else float(_count(where, "spec.scheduleTimeoutSeconds", seconds))
        )
        return PodGroup(
            **common, min_member=min_member, gang=True, timeout=timeout, min_resources=min_resources
        )
    if api != VOLCANO:
        raise ValueError(f"{api!r} is no pod group API: expected one of {list(APIS)}")
    return PodGroup(
        **common,
        min_member=min_member,
        gang=True,
        timeout=None,
        min_resources=min_resources,
        min_task_member=_task_members(where, spec.get("minTaskMember")),
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(where: str, path: str, value: object, least: int = 0) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return value
    what = "a non-negative integer" if least == 0 else f"an integer of at least {least}"
    raise ObjectError(f"{where}: {path}: must be {what}, got {value!r}")


def _native_policy(where: str, policy: object) -> tuple[bool, int]:
    """Whether ``spec.schedulingPolicy`` is ``gang``, and its ``minCount`` (0 for ``basic``)."""
    path = "spec.schedulingPolicy"
    if not isinstance(policy, Mapping):
        raise ObjectError(f"{where}: {path}: must be an object with gang or basic, got {policy!r}")
    chosen = [name for name in ("basic", "gang") if policy.get(name) is not None]
    if len(chosen) != 1:
        raise ObjectError(
            f"{where}: {path}: must set exactly one of basic and gang, got {chosen or 'none'}"
        )
    if chosen == ["basic"]:
        return False, 0
    gang = policy["gang"]
    if not isinstance(gang, Mapping) or "minCount" not in gang:
        raise ObjectError(f"{where}: {path}.gang.minCount: required")
    return True, _count(where, f"{path}.gang.minCount", gang["minCount"], least=1)


def _resources(where: str, raw: object) -> Mapping[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ObjectError(f"{where}: spec.minResources: must be a map of quantities, got {raw!r}")
    try:
        return parse_resources(raw, "spec.minResources")
    except ObjectError as error:
        raise ObjectError(f"{where}: {error}") from None


def _task_members(where: str, raw: object) -> Mapping[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ObjectError(f"{where}: spec.minTaskMember: must be a map of counts, got {raw!r}")
    return {
        str(task): _count(where, f"spec.minTaskMember.{task}", count) for task, count in raw.items()
    }


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """What a group pass ended with, for the group's status."""

    scheduled: bool
    """At least ``min_member`` members are bound or placed."""
    placed: int
    """Members placed by this pass plus those already assigned."""
    members: int
    """Members that exist."""
    message: str
    """Why not (as the pods are told); "" when scheduled."""
    timed_out: bool = False


def status_ref(group: PodGroup) -> ObjectRef:
    """The group's status subresource, to merge-patch."""
    key = group.key
    return ObjectRef(API_VERSIONS[key.api], PLURAL, key.name, key.namespace, "status")


def status_patch(group: PodGroup, outcome: GroupOutcome, now: datetime) -> Mapping[str, Any] | None:
    """The merge patch of the group's status as its own scheduler writes it (see the module's
    docstring); None: nothing to write (nothing would change)."""
    if group.key.api == NATIVE:
        return _native_patch(group, outcome, now)
    if group.key.api == VOLCANO:
        return _volcano_patch(group, outcome, now)
    return _scheduler_plugins_patch(group, outcome, now)


def _conditions(group: PodGroup) -> list[dict[str, Any]]:
    return [dict(_mapping(c)) for c in _sequence(group.status.get("conditions"))]


def _with_condition(
    conditions: list[dict[str, Any]], condition: dict[str, Any]
) -> list[dict[str, Any]]:
    """``conditions`` with ``condition`` in the place of the one of its type, or added: a merge
    patch replaces the whole list."""
    if any(c.get("type") == condition["type"] for c in conditions):
        return [condition if c.get("type") == condition["type"] else c for c in conditions]
    return [*conditions, condition]


def _native_patch(
    group: PodGroup, outcome: GroupOutcome, now: datetime
) -> Mapping[str, Any] | None:
    conditions = _conditions(group)
    existing = next((c for c in conditions if c.get("type") == INITIALLY_SCHEDULED), None)
    status = "True" if outcome.scheduled else "False"
    if existing is not None and existing.get("status") == "True" and status != "True":
        # kube: once scheduled, the group does not go back (extra members failing later).
        return None
    condition: dict[str, Any] = {
        "type": INITIALLY_SCHEDULED,
        "status": status,
        "reason": "Scheduled" if outcome.scheduled else "Unschedulable",
        "message": "" if outcome.scheduled else outcome.message,
    }
    if (
        existing is not None
        and all(existing.get(name, "") == value for name, value in condition.items())
        and existing.get("observedGeneration", 0) == group.generation
    ):
        return None
    if group.generation:
        # Omitted when 0, as the API writes it (a native PodGroup has no generation in 1.37).
        condition["observedGeneration"] = group.generation
    # As SetStatusCondition: the transition time moves only when the status does.
    kept = (
        existing.get("lastTransitionTime")
        if existing and existing.get("status") == status
        else None
    )
    condition["lastTransitionTime"] = kept or rfc3339(now)
    return {"status": {"conditions": _with_condition(conditions, condition)}}


def _volcano_patch(
    group: PodGroup, outcome: GroupOutcome, now: datetime
) -> Mapping[str, Any] | None:
    phase = str(group.status.get("phase") or "")
    if outcome.scheduled:
        condition = {
            "type": VOLCANO_SCHEDULED,
            "status": "True",
            "reason": _VOLCANO_READY_REASON,
            "message": "",
        }
        new_phase = "Running"
    else:
        unready = max(group.min_member - outcome.placed, 0)
        condition = {
            "type": VOLCANO_UNSCHEDULABLE,
            "status": "True",
            "reason": _VOLCANO_NOT_ENOUGH,
            "message": f"{unready}/{outcome.members} tasks in gang unschedulable: "
            f"{outcome.message}",
        }
        # Volcano's session: members already running make the phase Unknown; a group its
        # enqueue action admitted stays Inqueue.
        new_phase = {"Running": "Unknown", "Unknown": "Unknown", "Inqueue": "Inqueue"}.get(
            phase, "Pending"
        )
    conditions = _conditions(group)
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    # Volcano compares the conditions without their time and transition ID.
    if (
        phase == new_phase
        and existing is not None
        and all(existing.get(name, "") == value for name, value in condition.items())
    ):
        return None
    condition["transitionID"] = str(uuid.uuid4())
    condition["lastTransitionTime"] = rfc3339(now)
    return {"status": {"phase": new_phase, "conditions": _with_condition(conditions, condition)}}


def _scheduler_plugins_patch(
    group: PodGroup, outcome: GroupOutcome, now: datetime
) -> Mapping[str, Any] | None:
    phase = str(group.status.get("phase") or "")
    if phase in _RUNNING_PHASES:
        return None
    patch: dict[str, Any] = {}
    if outcome.scheduled and phase in ("", "Pending"):
        patch["phase"] = "Scheduling"
    elif not outcome.scheduled and not phase:
        patch["phase"] = "Pending"
    if not group.status.get("scheduleStartTime") or outcome.timed_out:
        patch["scheduleStartTime"] = rfc3339(now)
    return {"status": patch} if patch else None
