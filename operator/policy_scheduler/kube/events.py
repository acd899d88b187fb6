"""What users of kube-scheduler look for on a pod: events and the PodScheduled condition.

Posting never blocks the scheduling loop: each post is a task on the event loop. Posts in flight
are capped (``POST_CONCURRENCY``, as many as binds, each with its own connection in the client's
pool, so binds never wait for a post): one event follows every bind, and with fewer posts in
flight than binds the events fell behind in a burst, piling up in memory and loading the API
server after the burst was bound. A failure to post is logged, not retried: events are advisory,
and the next decision about the pod will say it again.

The API server refuses an event whose message is over 1,024 bytes, so a longer one is cut as
kube-scheduler cuts it (``truncateMessage`` in pkg/scheduler/schedule_one.go); the PodScheduled
condition keeps the whole message, as kube-scheduler's does, a pod having no such limit.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.kube.client import STRATEGIC_MERGE_PATCH, ApiError, Kube, path, pod_path
from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.ports import rfc3339
from policy_scheduler.scheduling.status import truncate

COMPONENT = "policy-scheduler"
POST_CONCURRENCY = 64

logger = logging.getLogger(__name__)


def now_rfc3339() -> str:
    return rfc3339(datetime.now(UTC))


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Recorder:
    """Posts core/v1 Events about pods and patches their PodScheduled condition: the loop's
    :class:`~policy_scheduler.scheduling.ports.EventRecorder` and
    :class:`~policy_scheduler.scheduling.ports.PodConditions` ports."""

    def __init__(self, kube: Kube, instance: str | None = None) -> None:
        self._kube = kube
        self._instance = instance or socket.gethostname()
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(POST_CONCURRENCY)

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        """Post an event about ``pod`` in the background."""
        stamp = now_rfc3339()
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            # kube-scheduler names its events the same way: the object, then a unique suffix.
            "metadata": {"name": f"{pod.name}.{time.time_ns():x}", "namespace": pod.namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.uid,
            },
            "type": type_,
            "reason": reason,
            "message": truncate(message),
            "action": action,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self._instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "eventTime": now_micro(),
            "count": 1,
        }
        self._spawn(
            self._kube.request(
                "POST", path("api", "v1", "namespaces", pod.namespace, "events"), body
            ),
            f"post {reason} event for {pod.key}",
        )

    def unschedulable(self, pod: PodView, message: str) -> None:
        """Set ``PodScheduled=False, reason=Unschedulable`` (what cluster autoscalers read)."""
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            }
        }
        self._spawn(
            self._kube.request(
                "PATCH", pod_path(pod.namespace, pod.name, "status"), patch, STRATEGIC_MERGE_PATCH
            ),
            f"set PodScheduled=False on {pod.key}",
        )

    def _spawn(self, call: Any, what: str) -> None:
        task = asyncio.get_running_loop().create_task(self._guard(call, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guard(self, call: Any, what: str) -> None:
        try:
            async with self._slots:
                await call
        except ApiError as error:
            # 404: the pod went away meanwhile, nothing left to tell.
            if error.status != 404:
                logger.warning("could not %s: %s", what, error.message)

    async def drain(self) -> None:
        """Wait for what is being posted (on shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
