"""The loop fed storage and device objects (``Scheduler.changed``/``deleted``), as
the PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
VolumeAttachment and ResourceClaim informers feed it: the snapshot has them from the next decision
on, and a pod parked by a filter that registered for that kind of object's change (or, for a
VolumeAttachment, its deletion), and whose hint, told the object as it is and as it was, does not
rule it out, is tried again.

The filters are the test's own, :class:`ClaimBound`, registered for claims only, and
:class:`Attached`, for VolumeAttachments' deletions only, so that which events move a pod says
what the loop does, not what a volume plugin decides. Further tests hold binding cycles in a
PreBind of their own, as VolumeBinding holds them while it waits for the PVs.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from test_loop import Run, Step, changed, later, node, pod, policy, settle, watch

from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import (
    Filter,
    ObjectWriter,
    PostFilter,
    PostFilterResult,
    PreBind,
    Preemption,
)
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model import volumes
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.volumes import ClaimView
from policy_scheduler.policy.compiler import CompiledPolicy, compile_policy
from policy_scheduler.scheduling import policies
from policy_scheduler.scheduling.core import BIND_CONCURRENCY
from policy_scheduler.scheduling.queue import Where

Raw = dict[str, Any]
UNBOUND = "pod has unbound immediate PersistentVolumeClaims"


class ClaimBound(Filter[bool]):
    """Rejects every node while one of the pod's claims is unknown or unbound; registered for
    claims only, with a hint that rules out claims of other namespaces. Records the events its
    hint was asked about."""

    name = "ClaimBound"
    wakes_on: ClassVar[EventKind] = EventKind.PVC_CHANGED

    def __init__(self) -> None:
        self.hinted: list[str] = []
        self.before: list[str | None] = []
        """The volume each hinted claim named before the change (None: the claim was new)."""

    def pre_filter(self, cycle: Cycle) -> bool:
        pod = cycle.pod
        claims = [cycle.snapshot.volumes.claim(pod.namespace, c) for c in pod.claim_names]
        return all(claim is not None and claim.bound for claim in claims)

    def filter(self, state: bool, pod: PodView, node: NodeInfo) -> tuple[str, ...]:
        return () if state else (UNBOUND,)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        claim = event.storage
        assert isinstance(claim, ClaimView)  # only claims were registered for
        self.hinted.append(claim.key)
        old = event.old_storage
        self.before.append(old.volume_name if isinstance(old, ClaimView) else None)
        return claim.namespace == pod.namespace


def claim(name: str, namespace: str = "ns", volume: str = "pv-1") -> Raw:
    """A PersistentVolumeClaim, bound to ``volume`` unless that is empty."""
    spec: Raw = {"volumeName": volume} if volume else {}
    return {"metadata": {"name": name, "namespace": namespace, "uid": name}, "spec": spec}


PV: Raw = {"metadata": {"name": "pv-1", "uid": "pv-1"}, "spec": {"capacity": {"storage": "1Gi"}}}
SC: Raw = {"metadata": {"name": "fast", "uid": "fast"}, "provisioner": "p"}
CSI: Raw = {"metadata": {"name": "n1", "uid": "csi"}, "spec": {"drivers": []}}
DRIVER: Raw = {"metadata": {"name": "d", "uid": "d"}, "spec": {"storageCapacity": True}}
CAPACITY: Raw = {"metadata": {"name": "c", "namespace": "ns"}, "storageClassName": "fast"}
RC: Raw = {"metadata": {"name": "gpu", "namespace": "ns", "uid": "rc"}, "spec": {}}
USES_DATA = changed(
    pod("a"), spec__volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
)


def storage(kind: str, raw: Raw, deleted: bool = False) -> Step:
    """A watch event of a storage or device object."""
    if deleted:
        return lambda run: run.scheduler.deleted(kind, raw)
    return lambda run: run.scheduler.changed(kind, raw)


def parked() -> list[Step]:
    """Pod a, whose claim data is not known yet, tried and parked by ClaimBound; its backoff
    over, so that a pod moved goes to the active queue."""
    return [
        node_step(),
        lambda run: run.scheduler.policy_changed(policy()),
        feed_a(),
        settle(),
        later(20),
    ]


def node_step() -> Step:
    return lambda run: run.scheduler.node_changed(node("n1"))


def feed_a() -> Step:
    return lambda run: run.scheduler.pod_changed(USES_DATA)


@dataclass(frozen=True)
class Case:
    steps: list[Step]
    where: Where | None
    """Where pod a is afterwards (None: not queued, it was bound)."""
    binds: list[tuple[str, str]] = field(default_factory=list)
    hinted: list[str] = field(default_factory=list)
    """The claims ClaimBound's hint was asked about."""


CASES = {
    "parked by the filter, the pod waits": Case(parked(), Where.UNSCHEDULABLE),
    "its claim moves it to the active queue": Case(
        [*parked(), storage(volumes.PVC, claim("data"))], Where.ACTIVE, hinted=["ns/data"]
    ),
    "its claim bound moves it, and it binds": Case(
        [*parked(), storage(volumes.PVC, claim("data")), settle()],
        None,
        binds=[("ns/a", "n1")],
        hinted=["ns/data"],
    ),
    "its claim still unbound moves it, and the filter parks it again": Case(
        [*parked(), storage(volumes.PVC, claim("data", volume="")), settle()],
        Where.UNSCHEDULABLE,
        hinted=["ns/data"],
    ),
    "a claim of another namespace: the hint rules it out": Case(
        [*parked(), storage(volumes.PVC, claim("data", namespace="other"))],
        Where.UNSCHEDULABLE,
        hinted=["other/data"],
    ),
    "any other storage object moves nobody: the filter registered for claims": (
        Case(
            [
                *parked(),
                storage(volumes.PV, PV),
                storage(volumes.STORAGE_CLASS, SC),
                storage(volumes.CSI_NODE, CSI),
                storage(volumes.CSI_DRIVER, DRIVER),
                storage(volumes.CSI_STORAGE_CAPACITY, CAPACITY),
                storage(volumes.RESOURCE_CLAIM, RC),
            ],
            Where.UNSCHEDULABLE,
        )
    ),
    "a deleted claim moves nobody": Case(
        [*parked(), storage(volumes.PVC, claim("data"), deleted=True)], Where.UNSCHEDULABLE
    ),
    "a claim known before the pod: the first decision reads it": Case(
        [storage(volumes.PVC, claim("data")), *parked()], None, binds=[("ns/a", "n1")]
    ),
    "a claim deleted before the pod: the first decision does not see it": Case(
        [
            storage(volumes.PVC, claim("data")),
            storage(volumes.PVC, claim("data"), deleted=True),
            *parked(),
        ],
        Where.UNSCHEDULABLE,
    ),
    "nothing is decided while a storage watch is not confirmed": Case(
        [
            watch("persistentvolumeclaims", False),
            storage(volumes.PVC, claim("data")),
            *parked(),
        ],
        Where.ACTIVE,
    ),
    "and the pod is decided once it is": Case(
        [
            watch("resourceclaims", False),
            storage(volumes.PVC, claim("data")),
            *parked(),
            watch("resourceclaims", True),
            settle(),
        ],
        None,
        binds=[("ns/a", "n1")],
    ),
}


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaimBound]:
    """ClaimBound, added to the filters of every policy the loop compiles."""
    added = ClaimBound()

    def with_plugin(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        compiled.pipeline.filters = [*compiled.pipeline.filters, added]
        return compiled

    monkeypatch.setattr(policies, "compile_policy", with_plugin)  # as the table compiles
    yield added


def run_steps(steps: list[Callable[[Run], object]]) -> Run:
    run = Run()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        for step in steps:
            step(run)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return run


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_storage_feed(case: Case, plugin: ClaimBound) -> None:
    run = run_steps(case.steps)
    assert run.where("a") == case.where
    assert run.memory.binds == case.binds
    assert plugin.hinted == case.hinted


def test_a_hint_is_told_the_object_as_it_was(plugin: ClaimBound) -> None:
    """The claim's addition comes without a previous version; its update with the one the
    informer brought before."""
    run_steps(
        [
            *parked(),
            storage(volumes.PVC, claim("data", volume="")),
            settle(),
            later(20),
            storage(volumes.PVC, claim("data")),
        ]
    )
    assert plugin.before == [None, ""]


def test_a_bad_storage_object_fails_the_pods_that_read_it_and_no_other() -> None:
    """A CSIStorageCapacity the API server would not hold (a capacity that is no quantity):
    VolumeBinding fails the cycle of the pod whose claim it reads, with an error naming the
    object and the field; the pod without claims is bound, and the loop goes on."""
    with_binding = policy()
    with_binding["spec"]["predicates"] = [{"name": "VolumeBinding"}]
    storage_class = {**SC, "provisioner": "d", "volumeBindingMode": "WaitForFirstConsumer"}
    requests = {"requests": {"storage": "1Gi"}}
    fast: Raw = {
        "metadata": {"name": "data", "namespace": "ns", "uid": "data"},
        "spec": {"storageClassName": "fast", "resources": requests},
    }
    run = run_steps(
        [
            node_step(),
            lambda run: run.scheduler.policy_changed(with_binding),
            storage(volumes.STORAGE_CLASS, storage_class),
            storage(volumes.CSI_DRIVER, DRIVER),
            storage(volumes.CSI_STORAGE_CAPACITY, {**CAPACITY, "capacity": "lots"}),
            storage(volumes.PVC, fast),
            feed_a(),
            lambda run: run.scheduler.pod_changed(pod("b")),
            settle(),
        ]
    )
    assert run.memory.binds == [("ns/b", "n1")]
    (told,) = [message for key, _, _, message in run.memory.events if key == "ns/a"]
    assert "csistoragecapacity ns/c: capacity: 'lots' is not a quantity" in told, told
    assert run.where("a") == Where.BACKOFF


def test_a_rejection_names_the_filter() -> None:
    """Without the test's filter (a plain policy), pod a binds: ClaimBound's parking above is
    the filter's, not the claim's."""
    run = run_steps(parked())
    assert run.memory.binds == [("ns/a", "n1")]


class HoldsSlowPods(PreBind[None]):
    """A PreBind that, as VolumeBinding waiting for the PV controller, holds the binding cycle
    of every pod named ``slow-*`` until released; makes no API request."""

    name = "HoldsSlowPods"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    def pre_flight(self, state: None, pod: PodView, node: str) -> bool:
        return pod.name.startswith("slow-")

    async def pre_bind(
        self, state: None, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        if pod.name.startswith("slow-"):
            await self.release.wait()
        return None


async def settle_binds(run: Run) -> None:
    """Decide every pod ready, and let the binding cycles run as far as they can."""
    while run.scheduler.schedule_next():
        await asyncio.sleep(0)
    for _ in range(10):
        await asyncio.sleep(0)


def test_binding_cycles_waiting_in_pre_bind_do_not_hold_back_other_binds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As kube-scheduler's, whose binding cycles each run on their own: pods whose PreBind waits
    (for their volumes) hold no slot that a bind request of another pod needs."""
    holds = HoldsSlowPods()

    def with_plugin(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        pre_bind = (*compiled.extensions.pre_bind, holds)
        extensions = dataclasses.replace(compiled.extensions, pre_bind=pre_bind)
        return dataclasses.replace(compiled, extensions=extensions)

    monkeypatch.setattr(policies, "compile_policy", with_plugin)
    run = Run()
    roomy = {
        "metadata": {"name": "n1", "labels": {}},
        "status": {"allocatable": {"cpu": "100", "memory": "64Gi", "pods": "500"}},
    }

    async def scenario() -> None:
        run.scheduler.node_changed(roomy)
        run.scheduler.policy_changed(policy())
        for i in range(BIND_CONCURRENCY):
            run.scheduler.pod_changed(pod(f"slow-{i}", "10m"))
        await settle_binds(run)
        run.scheduler.pod_changed(pod("fast", "10m"))
        await settle_binds(run)
        assert run.memory.binds == [("ns/fast", "n1")]
        holds.release.set()
        await run.scheduler.run_until_idle()
        assert len(run.memory.binds) == BIND_CONCURRENCY + 1

    asyncio.run(scenario())


class PreemptsSlowVictim(PostFilter[None]):
    """Makes room for ``high`` on n1 by evicting ``slow-victim``, once."""

    name = "Preempting"

    def __init__(self) -> None:
        self.times = 1

    def post_filter(self, state: None, cycle: Cycle, statuses: Any) -> PostFilterResult:
        if cycle.pod.name != "high" or not self.times:
            return PostFilterResult("preemption: no victims.")
        self.times -= 1
        victim = PodView(changed(pod("slow-victim"), spec__nodeName="n1"))
        return PostFilterResult("preemption: found n1", Preemption("n1", (victim,), 0))


def test_a_victim_waiting_in_pre_bind_is_preempted_in_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube-scheduler v1.36+ (kubernetes#135502): a victim still in its PreBind is not deleted;
    its binding cycle is cancelled ("running PreBind plugin ...: preempted by <plugin>", an
    error: it backs off), its Preempted event says "(in kube-scheduler memory).", and the
    preemptor, waiting for no deletion, takes the room at once."""
    holds = HoldsSlowPods()
    preempting = PreemptsSlowVictim()

    def with_plugins(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        extensions = dataclasses.replace(
            compiled.extensions, pre_bind=(holds,), post_filter=(preempting,)
        )
        return dataclasses.replace(compiled, extensions=extensions)

    monkeypatch.setattr(policies, "compile_policy", with_plugins)
    run = Run()

    async def scenario() -> None:
        run.scheduler.node_changed(node("n1", "1"))
        run.scheduler.policy_changed(policy())
        run.scheduler.pod_changed(pod("slow-victim"))
        await settle_binds(run)
        run.scheduler.pod_changed(pod("high", priority=10))
        await settle_binds(run)
        await run.scheduler.drain()  # the victim's cycle, cancelled, frees its room
        await settle_binds(run)
        await run.scheduler.drain()

    asyncio.run(scenario())
    assert run.memory.preemptions == []  # nothing deleted
    assert run.memory.errors == [
        ("ns/slow-victim", 'running PreBind plugin "HoldsSlowPods": preempted by Preempting')
    ]
    assert ("ns/slow-victim", "Normal", "Preempted", "Preempted by pod high on node n1 (in "
            "kube-scheduler memory).") in run.memory.events  # fmt: skip
    assert run.where("slow-victim") is Where.BACKOFF
    assert run.memory.binds == [("ns/high", "n1")]


class Attached(Filter[None]):
    """Rejects every node; registered for VolumeAttachments' deletions only. Records the
    attacher of each deletion its hint was asked about."""

    name = "Attached"
    wakes_on: ClassVar[EventKind] = EventKind.VOLUME_ATTACHMENT_DELETED

    def __init__(self) -> None:
        self.hinted: list[str] = []

    def pre_filter(self, cycle: Cycle) -> None:
        return None

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> tuple[str, ...]:
        return ("attached",)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        gone = event.old_storage
        assert event.storage is None and isinstance(gone, volumes.VolumeAttachmentView)
        self.hinted.append(gone.attacher)
        return True


def attachment(name: str) -> Raw:
    spec = {"attacher": "d", "nodeName": "n1", "source": {"persistentVolumeName": "pv-1"}}
    return {"metadata": {"name": name, "uid": name}, "spec": spec}


DETACHED_CASES = {
    "a VolumeAttachment added moves nobody: the filter registered for deletions": (
        [storage(volumes.VOLUME_ATTACHMENT, attachment("va"))],
        Where.UNSCHEDULABLE,
        [],
    ),
    "its deletion moves the pod, its hint told the object as it was": (
        [
            storage(volumes.VOLUME_ATTACHMENT, attachment("va")),
            storage(volumes.VOLUME_ATTACHMENT, attachment("va"), deleted=True),
        ],
        Where.ACTIVE,
        ["d"],
    ),
    "the deletion of one the cache never had raises nothing": (
        [storage(volumes.VOLUME_ATTACHMENT, attachment("va"), deleted=True)],
        Where.UNSCHEDULABLE,
        [],
    ),
}


@pytest.mark.parametrize(
    ("steps", "where", "hinted"), DETACHED_CASES.values(), ids=DETACHED_CASES.keys()
)
def test_a_deletion_moves_the_pods_of_the_filters_registered_for_it(
    monkeypatch: pytest.MonkeyPatch, steps: list[Step], where: Where, hinted: list[str]
) -> None:
    """A kind whose deletion raises an event (:attr:`~policy_scheduler.scheduling.kinds.Kind.
    deleted`): the parked pods of the filters registered for it are moved, as for a change."""
    added = Attached()

    def with_plugin(obj: Any) -> CompiledPolicy:
        compiled = compile_policy(obj)
        compiled.pipeline.filters = [*compiled.pipeline.filters, added]
        return compiled

    monkeypatch.setattr(policies, "compile_policy", with_plugin)
    run = run_steps([*parked(), *steps])
    assert (run.where("a"), added.hinted) == (where, hinted)


def csi_volume(name: str) -> Raw:
    spec = {"csi": {"driver": "d", "volumeHandle": name}}
    return {"metadata": {"name": name, "uid": name}, "spec": spec}


def test_node_volume_limits_tries_a_pod_again_once_an_attachment_is_deleted() -> None:
    """n1 may attach one volume of driver d, and has one attached (a VolumeAttachment no pod
    uses): NodeVolumeLimits parks pod a, whose claim is another volume of d, until the
    attachment is deleted; a is then tried again, and bound."""
    limited = policy()
    limited["spec"]["predicates"] = [{"name": "NodeVolumeLimits"}]
    one_d: Raw = {
        "metadata": {"name": "n1", "uid": "csi"},
        "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 1}}]},
    }
    attached = attachment("va")
    attached["spec"]["source"]["persistentVolumeName"] = "pv-other"
    before: list[tuple[Where | None, list[tuple[str, str]]]] = []
    steps: list[Step] = [
        storage(volumes.CSI_NODE, one_d),
        storage(volumes.PV, csi_volume("pv-1")),
        storage(volumes.PV, csi_volume("pv-other")),
        storage(volumes.PVC, claim("data")),
        storage(volumes.VOLUME_ATTACHMENT, attached),
        node_step(),
        lambda run: run.scheduler.policy_changed(limited),
        feed_a(),
        settle(),
        later(20),
        lambda run: before.append((run.where("a"), list(run.memory.binds))),
        storage(volumes.VOLUME_ATTACHMENT, attached, deleted=True),
        settle(),
    ]
    run = run_steps(steps)
    assert before == [(Where.UNSCHEDULABLE, [])]
    assert run.memory.binds == [("ns/a", "n1")]
