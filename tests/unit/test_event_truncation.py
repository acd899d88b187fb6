"""Events carry at most the API server's 1,024 bytes of message, cut as kube-scheduler cuts them;
the PodScheduled condition keeps the whole message, as kube-scheduler's does (issue 11, item 5)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.events import Recorder
from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.status import MESSAGE_LIMIT

LONG = "0/1 nodes are available: " + ", ".join(
    f"1 Insufficient example.com/r-{i}" for i in range(50)
)


class _Api:
    """Keeps the bodies it is sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    async def request(
        self, method: str, url_path: str, body: dict[str, Any], *args: Any
    ) -> dict[str, Any]:
        self.sent.append((method, url_path, body))
        return {}


def _post(call: str, message: str) -> dict[str, Any]:
    api = _Api()
    pod = PodView({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {}})

    async def run() -> None:
        recorder = Recorder(cast(Kube, api), instance="test")
        if call == "event":
            recorder.event(pod, "Warning", "FailedScheduling", message, "Scheduling")
        else:
            recorder.unschedulable(pod, message)
        await recorder.drain()

    asyncio.run(run())
    ((_, _, body),) = api.sent
    return body


def test_a_long_event_message_is_cut_to_the_api_servers_limit_as_kube_scheduler_cuts_it() -> None:
    assert len(LONG) > MESSAGE_LIMIT
    message = _post("event", LONG)["message"]
    assert message == LONG[: MESSAGE_LIMIT - 4] + " ..."


def test_a_short_event_message_is_posted_as_it_is() -> None:
    assert _post("event", "0/1 nodes are available: 1 Insufficient cpu.")["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu."
    )


def test_the_pod_scheduled_condition_keeps_the_whole_message() -> None:
    (condition,) = _post("condition", LONG)["status"]["conditions"]
    assert condition["message"] == LONG
