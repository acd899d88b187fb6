"""The loop's write ports over the API, against a scripted API server: what a bind whose reply
was lost resolves to, and whose status a policy's write may land on (issue 11)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from policy_scheduler.kube import ports
from policy_scheduler.kube.client import ApiError, Kube
from policy_scheduler.kube.ports import KubeBinder, KubeStatusStore
from policy_scheduler.kube.refusals import Refusals
from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.ports import Outcome, PreemptedBy, WriteResult

Answer = Mapping[str, Any] | int
"""An object the server answers with, or the error status it fails with (0: no answer)."""


@dataclass
class Script:
    """Answers each request with the next answer for its method, and logs it."""

    answers: dict[str, list[Answer]]
    log: list[str] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    refusals: Refusals = field(default_factory=Refusals)

    async def request(self, method: str, url_path: str, *args: Any) -> Mapping[str, Any]:
        self.log.append(method)
        self.bodies.append(args[0] if args else None)
        answer = self.answers[method].pop(0)
        if isinstance(answer, int):
            raise ApiError(answer, f"answered {answer}")
        return answer


POD = PodView({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}, "spec": {}})


def on(node: str | None, uid: str = "u1") -> Mapping[str, Any]:
    return {"metadata": {"uid": uid}, "spec": {"nodeName": node} if node else {}}


@dataclass(frozen=True)
class BindCase:
    binding: Answer | list[Answer]
    """The answer to the bind, or to each bind in turn."""
    reads: list[Answer] = field(default_factory=list)
    outcome: Outcome = Outcome.BOUND

    @property
    def binds(self) -> list[Answer]:
        return self.binding if isinstance(self.binding, list) else [self.binding]


BINDS = {
    "bound": BindCase({}),
    # The API server answers 409 for every failure of the bind's storage write, an etcd
    # connection lost after its commit among them: a conflict is read as a lost reply is.
    "a conflict, and the pod shows the bind committed (etcd restarted)": BindCase(409, [on("n1")]),
    "a conflict, and the pod bound elsewhere": BindCase(409, [on("n2")], Outcome.TAKEN),
    "a conflict, and the pod still pending: not bound again": BindCase(
        409, [on(None)], Outcome.TAKEN
    ),
    "a refusal is not read": BindCase(403, outcome=Outcome.FAILED),
    "reply lost, and the pod shows the bind committed": BindCase(0, [on("n1")]),
    # v1.37 (kubernetes#138855): DefaultBinder binds again after an error client-go calls
    # retriable (500, 503, a refused connection), four binds in all, 10, 50 and 250 ms apart.
    "reply lost, and the pod still pending: bound again": BindCase([0, {}], [on(None)]),
    "the server failed four times, the pod still pending each time": BindCase(
        [500, 503, 0, 500], [on(None)] * 4, Outcome.FAILED
    ),
    "storage timed out (504, not retriable), the pod still pending": BindCase(
        504, [on(None)], Outcome.FAILED
    ),
    "reply lost, and the pod bound elsewhere meanwhile": BindCase(0, [on("n2")], Outcome.TAKEN),
    "reply lost, and the pod deleted": BindCase(0, [404], Outcome.GONE),
    "reply lost, and another pod under its name": BindCase(0, [on("n1", "u2")], Outcome.GONE),
    "storage timed out; reads fail until the server is back": BindCase(
        504, [0, 403, 503, on("n1")]
    ),
    "reply lost; the pod cannot be read for a minute": BindCase(0, [0] * 200, Outcome.FAILED),
}


@pytest.mark.parametrize("case", BINDS.values(), ids=BINDS.keys())
def test_a_bind_whose_reply_was_lost_is_resolved_by_reading_the_pod(
    case: BindCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]

    async def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(asyncio, "sleep", sleep)
    script = Script({"POST": list(case.binds), "GET": list(case.reads)})
    binder = KubeBinder(cast(Kube, script), clock=lambda: clock[0])
    result = asyncio.run(binder.bind(POD, "n1"))
    assert result.outcome is case.outcome
    assert script.log.count("POST") == len(case.binds)
    assert clock[0] <= ports.SETTLE_SECONDS + 1
    assert script.log.count("GET") == len(case.reads) - len(script.answers["GET"])


@dataclass(frozen=True)
class WriteCase:
    patch: Answer
    reads: list[Answer] = field(default_factory=list)
    result: WriteResult = WriteResult.WRITTEN


WRITES = {
    "written": WriteCase({}),
    "the policy is gone": WriteCase(404, result=WriteResult.NOT_FOUND),
    "the name is another object's now": WriteCase(
        422, [{"metadata": {"uid": "u2"}}], WriteResult.NOT_FOUND
    ),
    "the same object refused the status": WriteCase(
        422, [{"metadata": {"uid": "u1"}}], WriteResult.FAILED
    ),
    "the server is down": WriteCase(0, result=WriteResult.FAILED),
}


@pytest.mark.parametrize("case", WRITES.values(), ids=WRITES.keys())
def test_a_status_write_lands_only_on_the_object_it_was_made_for(case: WriteCase) -> None:
    script = Script({"PATCH": [case.patch], "GET": list(case.reads)})
    store = KubeStatusStore(cast(Kube, script))
    result = asyncio.run(store.write("p", "u1", {"status": {"scheduled": 1}}))
    assert result is case.result
    assert script.log == ["PATCH", *["GET"] * len(case.reads)]
    assert script.bodies[0] == [
        {"op": "test", "path": "/metadata/uid", "value": "u1"},
        {"op": "add", "path": "/status", "value": {"scheduled": 1}},
    ]


def test_the_disruption_budgets_are_watched_and_gate_the_decisions() -> None:
    """Issue 14: preemption reads PodDisruptionBudgets; no pod is decided before their watch
    has listed, as for every other watch."""
    from policy_scheduler.kube.kinds import collection  # noqa: PLC0415
    from policy_scheduler.kube.scheduler import KubeScheduler  # noqa: PLC0415
    from policy_scheduler.model import disruption  # noqa: PLC0415
    from policy_scheduler.scheduling.kinds import NAMED  # noqa: PLC0415

    DISRUPTION_BUDGETS = collection(NAMED[disruption.KIND])  # noqa: N806

    replica = KubeScheduler(cast(Kube, Script({})))
    watched = [informer.collection for informer in replica._informers.values()]
    assert DISRUPTION_BUDGETS == "/apis/policy/v1/poddisruptionbudgets"
    assert DISRUPTION_BUDGETS in watched
    assert "poddisruptionbudgets" in replica.scheduler._unconfirmed


PREEMPTOR = PodView(
    {"metadata": {"name": "high", "namespace": "ns", "uid": "u9"}, "spec": {"priority": 10}}
)
CONDITION = "test: preempting to accommodate a higher priority pod"


def _preempt(answers: dict[str, list[Answer]]) -> tuple[Script, bool]:
    """KubeEvictor.preempt(POD for PREEMPTOR on n1) against ``answers``, run to its end; what
    it says of the eviction."""
    from policy_scheduler.kube.events import Recorder  # noqa: PLC0415

    script = Script(answers)

    async def run() -> bool:
        kube = cast(Kube, script)
        recorder = Recorder(kube, "here")
        by = PreemptedBy("pod", PREEMPTOR.uid, "n1")
        evicted = await ports.KubeEvictor(kube, recorder).preempt(POD, PREEMPTOR, by, CONDITION)
        await recorder.drain()
        return evicted

    return script, asyncio.run(run())


def test_a_victim_gets_its_condition_then_is_deleted_then_told() -> None:
    """Issue 14: as kube-scheduler's PreemptPod: the DisruptionTarget condition on the status,
    a delete with the default grace period and the uid as precondition, a Preempted event."""
    script, evicted = _preempt({"PATCH": [{}], "DELETE": [{}], "POST": [{}]})
    assert evicted
    assert script.log == ["PATCH", "DELETE", "POST"]
    patch, deletion, event = script.bodies
    (condition,) = patch["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": CONDITION,
    }
    assert deletion == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u1"},
    }
    assert "gracePeriodSeconds" not in deletion
    assert (event["type"], event["reason"], event["message"], event["action"]) == (
        "Normal",
        "Preempted",
        "Preempted by pod u9 on node n1",
        "Preempting",
    )
    assert event["involvedObject"]["uid"] == "u1"
    # v1.37 names the preemptor in the message only: its recorder cannot make a reference of
    # the preemptor (a wrapper type its scheme does not know), so the event has no related.
    assert "related" not in event


@pytest.mark.parametrize(
    ("answers", "log", "gone"),
    [
        pytest.param({"PATCH": [403]}, ["PATCH"], False, id="a refused condition deletes nothing"),
        pytest.param(
            {"PATCH": [{}], "DELETE": [404]}, ["PATCH", "DELETE"], True, id="gone meanwhile"
        ),
        pytest.param(
            {"PATCH": [{}], "DELETE": [409]},
            ["PATCH", "DELETE"],
            True,
            id="another pod by that name",
        ),
        pytest.param(
            {"PATCH": [503, {}], "DELETE": [{}], "POST": [{}]},
            ["PATCH", "PATCH", "DELETE", "POST"],
            True,
            id="an unanswered step is tried again",
        ),
    ],
)
def test_a_victim_is_told_only_once_deleted(
    answers: dict[str, list[Answer]], log: list[str], gone: bool
) -> None:
    """And the loop learns whether the victim is gone (deleted by us or meanwhile)."""
    script, evicted = _preempt(answers)
    assert (script.log, evicted) == (log, gone)


def test_the_nomination_goes_with_the_pods_condition_or_alone() -> None:
    from policy_scheduler.kube.events import Recorder  # noqa: PLC0415

    script = Script({"PATCH": [{}] * 6})
    generation_3 = PodView({**POD.raw, "metadata": {**POD.raw["metadata"], "generation": 3}})

    async def run() -> None:
        recorder = Recorder(cast(Kube, script), "here")
        recorder.unschedulable(PREEMPTOR, "0/1 nodes are available", "n1")
        recorder.unschedulable(generation_3, "0/1 nodes are available")
        recorder.unschedulable(POD, "0/1 nodes are available", "")
        recorder.scheduler_error(POD, "binding rejected")
        recorder.nominate(POD, "n2")
        recorder.nominate(POD, "")
        await recorder.drain()

    asyncio.run(run())
    nominating, plain, clearing, error, before_pre_bind, cleared = script.bodies
    assert nominating["status"]["nominatedNodeName"] == "n1"
    assert nominating["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert "nominatedNodeName" not in plain["status"]
    # The generation the condition was written for (kube: PodObservedGenerationTracking, GA).
    assert plain["status"]["conditions"][0]["observedGeneration"] == 3
    assert "observedGeneration" not in nominating["status"]["conditions"][0]
    assert clearing["status"]["nominatedNodeName"] is None
    # An error is a SchedulerError, and it clears the nomination (kube's clearNominatedNode).
    assert error["status"]["conditions"][0]["reason"] == "SchedulerError"
    assert error["status"]["conditions"][0]["message"] == "binding rejected"
    assert error["status"]["nominatedNodeName"] is None
    assert before_pre_bind == {"status": {"nominatedNodeName": "n2"}}
    assert cleared == {"status": {"nominatedNodeName": None}}
