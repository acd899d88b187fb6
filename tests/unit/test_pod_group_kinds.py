"""The PodGroup kinds of the three APIs as the scheduler declares them (scheduling/kinds.py):
optional, each in a watch of its own, stored into the state's pod groups, a change raising
POD_GROUP_CHANGED and a deletion nothing, and watched while a plugin reads them."""

from __future__ import annotations

import pytest

from policy_scheduler.framework.events import EventKind
from policy_scheduler.model.nodeinfo import ClusterState
from policy_scheduler.model.podgroups import POD_GROUP_KINDS, GroupKey
from policy_scheduler.scheduling import kinds


def test_the_kinds_have_unique_names_and_watches() -> None:
    assert len(kinds.NAMED) == len(kinds.KINDS)
    assert len({kind.watch for kind in kinds.KINDS}) == len(kinds.KINDS)
    assert POD_GROUP_KINDS <= kinds.OPTIONAL


@pytest.mark.parametrize(
    ("name", "group", "version"),
    [
        ("PodGroup.scheduling.k8s.io", "scheduling.k8s.io", "v1beta1"),
        ("PodGroup.scheduling.x-k8s.io", "scheduling.x-k8s.io", "v1alpha1"),
        ("PodGroup.scheduling.volcano.sh", "scheduling.volcano.sh", "v1beta1"),
    ],
    ids=["native", "scheduler-plugins", "volcano"],
)
def test_each_api_is_an_optional_kind_feeding_the_pod_groups(
    name: str, group: str, version: str
) -> None:
    kind = kinds.NAMED[name]
    assert (kind.group, kind.version, kind.plural) == (group, version, "podgroups")
    assert kind.optional and not kind.always
    assert (kind.events, kind.deleted) == (EventKind.POD_GROUP_CHANGED, kinds.NO_EVENTS)
    assert kind.store is not None
    state = ClusterState()
    raw = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}
    kind.store.set(state, raw)
    assert [str(g.key) for g in state.pod_groups] == ["ns/g"]
    (stored,) = state.pod_groups
    assert state.pod_groups.get(GroupKey(stored.key.api, "ns", "g")) is stored
    assert kind.store.delete(state, raw) is None
    assert len(state.pod_groups) == 0
