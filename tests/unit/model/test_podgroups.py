"""The pod groups of the three APIs as one model (model/podgroups.py): the group a pod names, each
API's object read into a PodGroup, invalid objects kept with a message naming the field, the
store, and the status each API's own scheduler writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from policy_scheduler.model.objects import ObjectError, ObjectRef, PodView, slim_pod
from policy_scheduler.model.podgroups import (
    KIND_NAMES,
    NATIVE,
    POD_GROUP_KINDS,
    SCHEDULER_PLUGINS,
    VOLCANO,
    GroupKey,
    GroupOutcome,
    PodGroup,
    PodGroups,
    group_key,
    kind_of,
    parse,
    read,
    status_patch,
    status_ref,
)

NOW = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
STAMP = "2026-12-07T12:00:00Z"
EARLIER = "2026-12-07T11:00:00Z"


def pod(
    native: str | None = None,
    label: str | None = None,
    annotation: str | None = None,
) -> PodView:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if native is not None:
        spec["schedulingGroup"] = {"podGroupName": native}
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if label is not None:
        metadata["labels"] = {"scheduling.x-k8s.io/pod-group": label}
    if annotation is not None:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": annotation, "other": "x"}
    # As the watch keeps it: what names the group must survive the slimming.
    return PodView(slim_pod({"metadata": metadata, "spec": spec}))


@pytest.mark.parametrize(
    ("pod_", "key"),
    [
        (pod(), None),
        (pod(native="g"), GroupKey(NATIVE, "ns", "g")),
        (pod(label="g"), GroupKey(SCHEDULER_PLUGINS, "ns", "g")),
        (pod(annotation="g"), GroupKey(VOLCANO, "ns", "g")),
        (pod(native="a", label="b", annotation="c"), GroupKey(NATIVE, "ns", "a")),
        (pod(label="b", annotation="c"), GroupKey(SCHEDULER_PLUGINS, "ns", "b")),
        (pod(native="", label="", annotation="c"), GroupKey(VOLCANO, "ns", "c")),
    ],
    ids=[
        "no group",
        "native schedulingGroup",
        "scheduler-plugins label",
        "volcano annotation",
        "native first",
        "label before annotation",
        "empty names are no group",
    ],
)
def test_group_key(pod_: PodView, key: GroupKey | None) -> None:
    assert group_key(pod_) == key


def test_a_group_key_prints_as_namespace_and_name() -> None:
    assert str(GroupKey(VOLCANO, "ns", "g")) == "ns/g"


def obj(api: str, spec: Any, status: dict[str, Any] | None = None) -> dict[str, Any]:
    versions = {
        NATIVE: "scheduling.k8s.io/v1beta1",
        SCHEDULER_PLUGINS: "scheduling.x-k8s.io/v1alpha1",
        VOLCANO: "scheduling.volcano.sh/v1beta1",
    }
    return {
        "apiVersion": versions[api],
        "kind": "PodGroup",
        "metadata": {
            "name": "g",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "generation": 2,
        },
        "spec": spec,
        "status": status or {},
    }


@pytest.mark.parametrize(
    ("api", "spec", "read_as"),
    [
        (NATIVE, {"schedulingPolicy": {"gang": {"minCount": 3}}}, (3, True, None, {}, {})),
        (NATIVE, {"schedulingPolicy": {"basic": {}}}, (0, False, None, {}, {})),
        (
            SCHEDULER_PLUGINS,
            {
                "minMember": 8,
                "minResources": {"cpu": "2", "memory": "1Gi"},
                "scheduleTimeoutSeconds": 30,
            },
            (8, True, 30.0, {"cpu": 2000, "memory": 1 << 30}, {}),
        ),
        (SCHEDULER_PLUGINS, {}, (0, True, None, {}, {})),
        (
            VOLCANO,
            {
                "minMember": 4,
                "minTaskMember": {"worker": 3, "ps": 1},
                "minResources": {"nvidia.com/gpu": 4},
                "queue": "default",
                "priorityClassName": "high",
            },
            (4, True, None, {"nvidia.com/gpu": 4}, {"worker": 3, "ps": 1}),
        ),
        (VOLCANO, {"minMember": 0}, (0, True, None, {}, {})),
    ],
    ids=[
        "native gang",
        "native basic",
        "scheduler-plugins whole",
        "scheduler-plugins empty spec",
        "volcano whole",
        "volcano minMember 0",
    ],
)
def test_each_api_read(api: str, spec: dict[str, Any], read_as: tuple[Any, ...]) -> None:
    """``read_as``: min_member, gang, timeout, min_resources, min_task_member."""
    min_member, gang, timeout, min_resources, tasks = read_as
    group = read(api, obj(api, spec))
    assert group == PodGroup(
        GroupKey(api, "ns", "g"),
        "u1",
        "7",
        min_member,
        gang,
        timeout,
        min_resources,
        min_task_member=tasks,
        generation=2,
        status={},
    )


@pytest.mark.parametrize(
    ("api", "spec", "message"),
    [
        (
            SCHEDULER_PLUGINS,
            {"minMember": -1},
            "PodGroup ns/g: spec.minMember: must be a non-negative integer, got -1",
        ),
        (
            VOLCANO,
            {"minMember": "3"},
            "PodGroup ns/g: spec.minMember: must be a non-negative integer, got '3'",
        ),
        (
            VOLCANO,
            {"minMember": True},
            "PodGroup ns/g: spec.minMember: must be a non-negative integer, got True",
        ),
        (
            SCHEDULER_PLUGINS,
            {"minMember": 2, "scheduleTimeoutSeconds": -5},
            "PodGroup ns/g: spec.scheduleTimeoutSeconds: must be a non-negative integer, got -5",
        ),
        (
            SCHEDULER_PLUGINS,
            {"minMember": 2, "minResources": {"cpu": "lots"}},
            "PodGroup ns/g: spec.minResources.cpu: ",
        ),
        (
            VOLCANO,
            {"minResources": ["cpu"]},
            "PodGroup ns/g: spec.minResources: must be a map of quantities, got ['cpu']",
        ),
        (
            VOLCANO,
            {"minTaskMember": {"worker": -2}},
            "PodGroup ns/g: spec.minTaskMember.worker: must be a non-negative integer, got -2",
        ),
        (
            NATIVE,
            {"schedulingPolicy": {"gang": {}}},
            "PodGroup ns/g: spec.schedulingPolicy.gang.minCount: required",
        ),
        (
            NATIVE,
            {"schedulingPolicy": {"gang": {"minCount": 0}}},
            "PodGroup ns/g: spec.schedulingPolicy.gang.minCount: must be an integer of at least"
            " 1, got 0",
        ),
        (
            NATIVE,
            {"schedulingPolicy": {"gang": {"minCount": 2}, "basic": {}}},
            "PodGroup ns/g: spec.schedulingPolicy: must set exactly one of basic and gang, got"
            " ['basic', 'gang']",
        ),
        (
            NATIVE,
            {},
            "PodGroup ns/g: spec.schedulingPolicy: must be an object with gang or basic, got None",
        ),
    ],
    ids=[
        "negative minMember",
        "minMember a string",
        "minMember a boolean",
        "negative timeout",
        "broken quantity",
        "minResources not a map",
        "negative minTaskMember",
        "native minCount missing",
        "native minCount 0",
        "native both policies",
        "native no policy",
    ],
)
def test_an_invalid_object_is_kept_with_its_error(api: str, spec: Any, message: str) -> None:
    with pytest.raises(ObjectError) as raised:
        parse(api, obj(api, spec))
    assert str(raised.value).startswith(message)
    group = read(api, obj(api, spec))
    assert (group.key, group.error, group.gang) == (
        GroupKey(api, "ns", "g"),
        str(raised.value),
        True,
    )


def test_the_store_keeps_each_api_apart() -> None:
    groups = PodGroups()
    volcano, plugins = KIND_NAMES[VOLCANO], KIND_NAMES[SCHEDULER_PLUGINS]
    before, now = groups.set(volcano, obj(VOLCANO, {"minMember": 2}))
    assert before is None and now.min_member == 2
    groups.set(plugins, obj(SCHEDULER_PLUGINS, {"minMember": 5}))
    before, now = groups.set(volcano, obj(VOLCANO, {"minMember": 3}))
    assert (before and before.min_member, now.min_member) == (2, 3)
    assert len(groups) == 2
    assert sorted(g.key.api for g in groups) == [SCHEDULER_PLUGINS, VOLCANO]
    gone = groups.delete(volcano, obj(VOLCANO, {}))
    assert gone is not None and gone.min_member == 3
    assert groups.get(GroupKey(VOLCANO, "ns", "g")) is None
    assert groups.get(GroupKey(SCHEDULER_PLUGINS, "ns", "g")) is not None
    assert groups.delete(volcano, obj(VOLCANO, {})) is None
    with pytest.raises(ValueError, match="'PodGroup' is no pod group kind"):
        groups.set("PodGroup", obj(VOLCANO, {}))


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("scheduling.k8s.io/v1beta1", KIND_NAMES[NATIVE]),
        ("scheduling.x-k8s.io/v1alpha1", KIND_NAMES[SCHEDULER_PLUGINS]),
        ("scheduling.volcano.sh/v1beta1", KIND_NAMES[VOLCANO]),
        ("example.com/v1", None),
    ],
    ids=["native", "scheduler-plugins", "volcano", "another API"],
)
def test_a_dumps_pod_group_is_told_by_its_api_version(api_version: str, kind: str | None) -> None:
    assert kind_of({"apiVersion": api_version, "kind": "PodGroup"}) == kind
    assert kind is None or kind in POD_GROUP_KINDS


@pytest.mark.parametrize(
    ("api", "ref"),
    [
        (NATIVE, ObjectRef("scheduling.k8s.io/v1beta1", "podgroups", "g", "ns", "status")),
        (
            SCHEDULER_PLUGINS,
            ObjectRef("scheduling.x-k8s.io/v1alpha1", "podgroups", "g", "ns", "status"),
        ),
        (VOLCANO, ObjectRef("scheduling.volcano.sh/v1beta1", "podgroups", "g", "ns", "status")),
    ],
    ids=["native", "scheduler-plugins", "volcano"],
)
def test_status_ref(api: str, ref: ObjectRef) -> None:
    assert status_ref(read(api, obj(api, {"minMember": 1}))) == ref


SCHEDULED = GroupOutcome(scheduled=True, placed=3, members=3, message="")
UNSCHEDULABLE = GroupOutcome(
    scheduled=False,
    placed=1,
    members=3,
    message="minCount (3) cannot be satisfied: 1 scheduled, 2 remaining",
)
TIMED_OUT = GroupOutcome(
    scheduled=False, placed=2, members=3, message="timed out after 30s", timed_out=True
)
GANG3 = {"schedulingPolicy": {"gang": {"minCount": 3}}}


def native_condition(status: str, reason: str, message: str, when: str) -> dict[str, Any]:
    return {
        "type": "PodGroupInitiallyScheduled",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 2,
        "lastTransitionTime": when,
    }


OTHER = {"type": "DisruptionTarget", "status": "False", "reason": "X", "message": ""}
UNSCHEDULABLE_CONDITION = native_condition("False", "Unschedulable", UNSCHEDULABLE.message, EARLIER)


@pytest.mark.parametrize(
    ("status", "outcome", "patch"),
    [
        (
            {},
            SCHEDULED,
            {"conditions": [native_condition("True", "Scheduled", "", STAMP)]},
        ),
        (
            {},
            UNSCHEDULABLE,
            {
                "conditions": [
                    native_condition("False", "Unschedulable", UNSCHEDULABLE.message, STAMP)
                ]
            },
        ),
        (
            {"conditions": [OTHER, UNSCHEDULABLE_CONDITION]},
            TIMED_OUT,
            # The status stays False: its transition time stays too; the other condition is kept.
            {
                "conditions": [
                    OTHER,
                    native_condition("False", "Unschedulable", TIMED_OUT.message, EARLIER),
                ]
            },
        ),
        ({"conditions": [UNSCHEDULABLE_CONDITION]}, UNSCHEDULABLE, None),
        (
            {"conditions": [UNSCHEDULABLE_CONDITION]},
            SCHEDULED,
            {"conditions": [native_condition("True", "Scheduled", "", STAMP)]},
        ),
        (
            {"conditions": [native_condition("True", "Scheduled", "", EARLIER)]},
            UNSCHEDULABLE,
            None,
        ),
    ],
    ids=[
        "scheduled",
        "unschedulable",
        "timed out keeps the transition time",
        "unchanged writes nothing",
        "unschedulable then scheduled",
        "never back from scheduled",
    ],
)
def test_native_status(
    status: dict[str, Any], outcome: GroupOutcome, patch: dict[str, Any] | None
) -> None:
    written = status_patch(read(NATIVE, obj(NATIVE, GANG3, status)), outcome, NOW)
    assert written == (None if patch is None else {"status": patch})


def volcano_condition(type_: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": reason, "message": message}


VOLCANO_UNSCHEDULABLE = volcano_condition(
    "Unschedulable",
    "NotEnoughResources",
    f"2/3 tasks in gang unschedulable: {UNSCHEDULABLE.message}",
)
VOLCANO_SCHEDULED = volcano_condition("Scheduled", "tasks in gang are ready to be scheduled", "")


@pytest.mark.parametrize(
    ("status", "outcome", "phase", "conditions"),
    [
        ({}, SCHEDULED, "Running", [VOLCANO_SCHEDULED]),
        ({"phase": "Pending"}, UNSCHEDULABLE, "Pending", [VOLCANO_UNSCHEDULABLE]),
        (
            {"phase": "Inqueue"},
            TIMED_OUT,
            "Inqueue",
            [
                volcano_condition(
                    "Unschedulable",
                    "NotEnoughResources",
                    f"1/3 tasks in gang unschedulable: {TIMED_OUT.message}",
                )
            ],
        ),
        (
            {"phase": "Running", "conditions": [VOLCANO_SCHEDULED]},
            UNSCHEDULABLE,
            "Unknown",
            [VOLCANO_SCHEDULED, VOLCANO_UNSCHEDULABLE],
        ),
        (
            {
                "phase": "Pending",
                "conditions": [{**VOLCANO_UNSCHEDULABLE, "transitionID": "old"}],
            },
            UNSCHEDULABLE,
            None,
            [],
        ),
    ],
    ids=[
        "scheduled",
        "unschedulable",
        "timed out stays inqueue",
        "running members make it unknown",
        "unchanged but for time and id writes nothing",
    ],
)
def test_volcano_status(
    status: dict[str, Any],
    outcome: GroupOutcome,
    phase: str | None,
    conditions: list[dict[str, Any]],
) -> None:
    written = status_patch(read(VOLCANO, obj(VOLCANO, {"minMember": 3}, status)), outcome, NOW)
    if phase is None:
        assert written is None
        return
    assert written is not None
    assert written["status"]["phase"] == phase
    got = written["status"]["conditions"]
    # Each write gets a transition ID of its own, and the time of the write.
    assert [c for c in got if "transitionID" in c] == [got[-1]]
    assert got[-1]["lastTransitionTime"] == STAMP and got[-1]["transitionID"]
    trimmed = [
        {k: v for k, v in c.items() if k not in ("transitionID", "lastTransitionTime")} for c in got
    ]
    assert trimmed == conditions


@pytest.mark.parametrize(
    ("status", "outcome", "patch"),
    [
        ({}, SCHEDULED, {"phase": "Scheduling", "scheduleStartTime": STAMP}),
        ({}, UNSCHEDULABLE, {"phase": "Pending", "scheduleStartTime": STAMP}),
        ({"phase": "Pending", "scheduleStartTime": EARLIER}, UNSCHEDULABLE, None),
        ({"phase": "Pending", "scheduleStartTime": EARLIER}, SCHEDULED, {"phase": "Scheduling"}),
        (
            {"phase": "Scheduling", "scheduleStartTime": EARLIER},
            TIMED_OUT,
            {"scheduleStartTime": STAMP},
        ),
        ({"phase": "Running", "scheduleStartTime": EARLIER}, UNSCHEDULABLE, None),
    ],
    ids=[
        "scheduled",
        "unschedulable",
        "unchanged writes nothing",
        "pending then scheduled",
        "timed out restarts the wait",
        "the controller's running phase is left alone",
    ],
)
def test_scheduler_plugins_status(
    status: dict[str, Any], outcome: GroupOutcome, patch: dict[str, Any] | None
) -> None:
    group = read(SCHEDULER_PLUGINS, obj(SCHEDULER_PLUGINS, {"minMember": 3}, status))
    assert status_patch(group, outcome, NOW) == (None if patch is None else {"status": patch})


def test_a_native_group_without_generation_writes_no_observed_generation() -> None:
    """Kubernetes 1.37 gives a PodGroup no ``metadata.generation``: the condition then has no
    ``observedGeneration`` (kube's 0 is omitted), and the same condition read back is no change."""
    raw = obj(NATIVE, GANG3)
    del raw["metadata"]["generation"]
    patch = status_patch(read(NATIVE, raw), SCHEDULED, NOW)
    assert patch is not None
    (condition,) = patch["status"]["conditions"]
    assert "observedGeneration" not in condition
    raw["status"] = patch["status"]
    assert status_patch(read(NATIVE, raw), SCHEDULED, NOW) is None
