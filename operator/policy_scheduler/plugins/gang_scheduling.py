"""GangScheduling: all or nothing for the pods of a pod group (kube-scheduler v1.37's
GangScheduling plugin, behind its GenericWorkload gate there), for the three APIs people write
groups in: Kubernetes' own PodGroup (``scheduling.k8s.io/v1beta1``, pods'
``spec.schedulingGroup``), scheduler-plugins' (``scheduling.x-k8s.io/v1alpha1``, the pod label
``scheduling.x-k8s.io/pod-group``) and Volcano's (``scheduling.volcano.sh/v1beta1``, the pod
annotation ``scheduling.k8s.io/group-name``), read into one model
(:mod:`~policy_scheduler.model.podgroups`).

**PreEnqueue** holds a member, without an attempt, until its group exists and at least its
minimum count of members do (pending, assumed or bound), in kube's words: ``waiting for pods's pod
group "<name>" to appear in scheduling queue``, ``waiting for minCount pods from a gang to appear
in scheduling queue``. A member's arrival, or the group's change, asks again (kube's pod and
PodGroup events). A group whose object is invalid holds its members, each told once what is
wrong (an event and its PodScheduled condition: bad input its owner must fix). A native
group with the ``basic`` policy is not a gang: its pods are scheduled one by one.

The group is then placed by the loop in one pass (:mod:`~policy_scheduler.scheduling.
group_cycle`), which this plugin only enables and configures: ``scheduleTimeoutSeconds`` is how
long a group may keep failing to be placed before it is told it timed out (a scheduler-plugins
group's own ``scheduleTimeoutSeconds`` wins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import BadInput, PreEnqueue, Reads
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.podgroups import POD_GROUP_KINDS, PodGroup, group_key

NAME = "GangScheduling"

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 300
"""How long a group may fail to be placed before it is told so: kube's gang plugin lets members
wait at Permit this long (its ``permitTimeoutDuration``)."""

NONE_FIT = "no member left to place fits"
"""Why a pass failed that placed no member although the group's minimum was met before it."""

WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"


def cannot_be_satisfied(min_count: int, scheduled: int, remaining: int) -> str:
    """kube's PlacementFeasible verdict on a group that cannot reach its minimum: ``scheduled``
    members placed, ``remaining`` left to try."""
    return (
        f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
    )


def place_in_turn(
    members: Iterable[T], min_member: int, placed_before: int, place: Callable[[T], bool]
) -> str:
    """A group's pass, as kube's pod group cycle runs it with the gang's PlacementFeasible:
    ``place`` each member in turn (True when it was placed) until the group cannot reach
    ``min_member`` any more, counting ``placed_before`` members placed already; that verdict,
    or "" when the minimum is reached or may still be."""
    pending = list(members)
    scheduled, remaining = placed_before, len(pending)
    if scheduled + remaining < min_member:
        return cannot_be_satisfied(min_member, scheduled, remaining)
    for member in pending:
        remaining -= 1
        scheduled += place(member)
        if scheduled + remaining < min_member:
            return cannot_be_satisfied(min_member, scheduled, remaining)
    return ""


def waiting_for_group(name: str) -> str:
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling(PreEnqueue, Reads):
    """Holds a gang's members until enough exist; the loop places the group in one pass."""

    name = NAME
    asks_again_on = EventKind.POD_GROUP_CHANGED
    reads = POD_GROUP_KINDS

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout

    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        group = gang_of(pod, cluster)
        if group is None:
            return None
        if isinstance(group, str):
            return group
        if cluster.group_members.count(group.key) < group.min_member:
            return WAITING_FOR_MEMBERS
        return None

    def pre_enqueue_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """kube's hints: a new member of the pod's group; its group added, or its minimum
        lowered (here also: the group made valid, or made invalid, which its members are
        told). A held member and one a pass rejected are asked alike."""
        key = group_key(pod)
        if event.pod is not None:
            return group_key(event.pod) == key
        group, before = event.storage, event.old_storage
        if not isinstance(group, PodGroup) or group.key != key:
            return False
        if not isinstance(before, PodGroup) or bool(before.error) != bool(group.error):
            return True
        return before.gang != group.gang or group.min_member < before.min_member

    def timeout_of(self, group: PodGroup) -> float:
        """How long ``group`` may fail to be placed before it is told it timed out."""
        return self.timeout if group.timeout is None else group.timeout


def gang_of(pod: PodView, cluster: Snapshot) -> PodGroup | str | None:
    """The gang ``pod`` is a member of; why it must wait when its group is not known or is
    invalid; None for a pod of no group, or of a group that is not a gang."""
    key = group_key(pod)
    if key is None:
        return None
    group = cluster.pod_groups.get(key)
    if group is None:
        return waiting_for_group(key.name)
    if group.error:
        return BadInput(group.error)
    return group if group.gang else None


def new_plugin(args: Args, path: str) -> GangScheduling:
    errors = unknown_fields(args, ("scheduleTimeoutSeconds",), path)
    timeout = args.get("scheduleTimeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        errors.append(FieldError(f"{path}.scheduleTimeoutSeconds", "must be an integer >= 1"))
    if errors:
        raise ArgsError(errors)
    return GangScheduling(float(timeout))
