"""What users of kube-scheduler look for on a pod: events, the PodScheduled condition and the
node a preemption nominated it to.

Posting never blocks the scheduling loop: each post is a task on the event loop. Posts in flight
are capped (``POST_CONCURRENCY``, as many as binds, each with its own connection in the client's
pool, so binds never wait for a post): one event follows every bind, and with fewer posts in
flight than binds the events fell behind in a burst, piling up in memory and loading the API
server after the burst was bound. A post the API server could not answer (a refused connection,
a 429 or a 5xx; a 403 while a restarted authorizer warms up) is tried again for up to a minute,
with a backoff (:func:`~policy_scheduler.kube.retry.retrying`), as client-go's event broadcaster
tries again after transport errors: otherwise a restart of kube-apiserver mid-burst leaves bound
pods without their ``Scheduled`` event. Any other refusal is logged, not retried.

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

from policy_scheduler.kube.client import (
    JSON,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    Kube,
    NotLeading,
    path,
    pod_path,
)
from policy_scheduler.kube.retry import retrying
from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.ports import rfc3339
from policy_scheduler.scheduling.status import truncate

COMPONENT = "policy-scheduler"
POST_CONCURRENCY = 64
RETRY_SECONDS = 60.0
"""How long a post that found the API server unable to answer is tried again."""
UNAVAILABLE = frozenset({0, 403, 429, 500, 502, 503, 504})
"""Answers worth trying again. 403 among them: a kube-apiserver that has just restarted refuses
requests until its RBAC authorizer has read the roles (for a fraction of a second after it
starts); a real lack of permission costs a minute of tries per event, and is logged when they
end."""

logger = logging.getLogger(__name__)


def _unavailable(error: ApiError) -> bool:
    """The API server could not answer, and may later: worth trying again."""
    return error.status in UNAVAILABLE and not isinstance(error, NotLeading)


def now_rfc3339() -> str:
    return rfc3339(datetime.now(UTC))


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pod_ref(pod: PodView) -> dict[str, str]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod.name,
        "namespace": pod.namespace,
        "uid": pod.uid,
    }


def pod_condition(
    pod: PodView, type_: str, status: str, reason: str, message: str
) -> dict[str, Any]:
    """A condition of ``pod`` as kube-scheduler writes one, with the pod's generation as the one
    observed (PodObservedGenerationTracking, GA since v1.35; none when the pod has none)."""
    condition: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": now_rfc3339(),
    }
    if pod.generation:
        condition["observedGeneration"] = pod.generation
    return condition


class Recorder:
    """Posts core/v1 Events about pods and patches their PodScheduled condition and
    ``nominatedNodeName``: the loop's :class:`~policy_scheduler.scheduling.ports.EventRecorder`
    and :class:`~policy_scheduler.scheduling.ports.PodConditions` ports."""

    def __init__(self, kube: Kube, instance: str | None = None) -> None:
        self._kube = kube
        self._instance = instance or socket.gethostname()
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(POST_CONCURRENCY)

    def event(
        self,
        pod: PodView,
        type_: str,
        reason: str,
        message: str,
        action: str,
    ) -> None:
        """Post an event about ``pod`` in the background."""
        stamp = now_rfc3339()
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            # kube-scheduler names its events the same way: the object, then a unique suffix.
            "metadata": {"name": f"{pod.name}.{time.time_ns():x}", "namespace": pod.namespace},
            "involvedObject": _pod_ref(pod),
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
            "POST",
            path("api", "v1", "namespaces", pod.namespace, "events"),
            body,
            f"post {reason} event for {pod.key}",
        )

    def unschedulable(self, pod: PodView, message: str, nominated_node: str | None = None) -> None:
        """Set ``PodScheduled=False, reason=Unschedulable`` (what cluster autoscalers read), and
        the pod's ``nominatedNodeName`` in the same patch unless ``nominated_node`` is None ("":
        cleared), as kube-scheduler's ``updatePod``."""
        self._not_scheduled(pod, "Unschedulable", message, nominated_node)

    def scheduler_error(self, pod: PodView, message: str) -> None:
        """Set ``PodScheduled=False, reason=SchedulerError`` and clear the nomination: what
        kube-scheduler writes when an attempt ends in an error rather than a verdict."""
        self._not_scheduled(pod, "SchedulerError", message, "")

    def nominate(self, pod: PodView, node: str) -> None:
        """Set the pod's ``nominatedNodeName`` alone ("": clear it; a null deletes the field in
        a merge patch)."""
        self._spawn(
            "PATCH",
            pod_path(pod.namespace, pod.name, "status"),
            {"status": {"nominatedNodeName": node or None}},
            f"nominate {pod.key} to {node}" if node else f"clear the nominated node of {pod.key}",
            STRATEGIC_MERGE_PATCH,
        )

    def _not_scheduled(
        self, pod: PodView, reason: str, message: str, nominated_node: str | None
    ) -> None:
        patch: dict[str, Any] = {
            "status": {"conditions": [pod_condition(pod, "PodScheduled", "False", reason, message)]}
        }
        what = f"set PodScheduled=False on {pod.key}"
        if nominated_node is not None:
            patch["status"]["nominatedNodeName"] = nominated_node or None
            what += f" and nominate it to {nominated_node}" if nominated_node else ""
        self._spawn(
            "PATCH", pod_path(pod.namespace, pod.name, "status"), patch, what, STRATEGIC_MERGE_PATCH
        )

    def _spawn(
        self, method: str, url_path: str, body: dict[str, Any], what: str, content_type: str = JSON
    ) -> None:
        task = asyncio.get_running_loop().create_task(
            self._send(method, url_path, body, what, content_type)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(
        self, method: str, url_path: str, body: dict[str, Any], what: str, content_type: str
    ) -> None:
        async def attempt() -> None:
            # A slot per attempt, not held while waiting to try again: the other posts go on.
            async with self._slots:
                await self._kube.request(method, url_path, body, content_type)

        try:
            await retrying(attempt, _unavailable, RETRY_SECONDS)
        except ApiError as error:
            # 404: the pod went away meanwhile, nothing left to tell; 409: a try whose answer
            # was lost had posted the event after all (its name is the same in every try).
            if error.status not in (404, 409):
                logger.warning("could not %s: %s", what, error.message)

    async def drain(self) -> None:
        """Wait for what is being posted (on shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
