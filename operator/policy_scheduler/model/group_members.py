"""Which pods name each pod group: what a gang's PreEnqueue counts (kube-scheduler's
``PodGroupState.AllPodsCount``: the group's pods pending, assumed and bound) and whom a group pass
takes from the queue.

:class:`GroupMembers` is kept by the scheduling loop from the pod watch, for every pod whatever
its scheduler: the members of a group are all the pods that name it (a pod of another scheduler
counts too, as in kube, whose count does not look at scheduler names). A pod that has finished or
is being deleted no longer counts: it will not run with the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from policy_scheduler.model.objects import PodView
from policy_scheduler.model.podgroups import GroupKey, group_key


class GroupMembers:
    """The pods of each pod group, by group and uid."""

    def __init__(self) -> None:
        self._groups: dict[GroupKey, dict[str, PodView]] = {}
        self._group_of: dict[str, GroupKey] = {}

    def set(self, pod: PodView) -> GroupKey | None:
        """Count ``pod`` (as it is now) in the group it names; the group when the pod is new to
        it (an event for the group's held members), else None. A pod that finished or is being
        deleted is taken out."""
        key = None if pod.deleting or pod.terminated else group_key(pod)
        before = self._group_of.get(pod.uid)
        if before is not None and before != key:
            self.delete(pod.uid)
        if key is None:
            return None
        members = self._groups.setdefault(key, {})
        new = pod.uid not in members
        members[pod.uid] = pod
        self._group_of[pod.uid] = key
        return key if new else None

    def delete(self, uid: str) -> None:
        """The pod is gone: it counts no more."""
        key = self._group_of.pop(uid, None)
        if key is None:
            return
        members = self._groups[key]
        del members[uid]
        if not members:
            del self._groups[key]

    def count(self, key: GroupKey) -> int:
        """How many pods are members of the group."""
        return len(self._groups.get(key, ()))

    def of(self, key: GroupKey) -> Mapping[str, PodView]:
        """The group's members, by uid, as last seen."""
        return self._groups.get(key, {})
