"""The loop's write ports over the API: binding through ``pods/binding``, the policy status
subresource, the objects pre-bind plugins write, and the eviction of a preemption's victims."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from policy_scheduler.kube.client import (
    GROUP,
    JSON_PATCH,
    MERGE_PATCH,
    PLURAL,
    REQUEST_TIMEOUT,
    STRATEGIC_MERGE_PATCH,
    VERSION,
    ApiError,
    Kube,
    NotLeading,
    path,
    pod_path,
)
from policy_scheduler.kube.events import RETRY_SECONDS, Recorder, pod_condition
from policy_scheduler.kube.retry import retrying
from policy_scheduler.model.objects import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    PodView,
)
from policy_scheduler.scheduling.ports import (
    NORMAL,
    BindResult,
    ObjectRef,
    Outcome,
    PreemptedBy,
    WriteResult,
)

logger = logging.getLogger(__name__)

SETTLE_SECONDS = 2 * REQUEST_TIMEOUT
"""How long a bind whose reply was lost is resolved by reading the pod before it counts as
failed."""
UNANSWERED = frozenset({0, 500, 503, 504})
"""Statuses after which a bind may have been committed: no answer at all (the connection broke
or timed out), or the API server's own storage timed out."""
BIND_RETRIED = frozenset({0, 500, 503})
"""The errors after which kube-scheduler's DefaultBinder binds again (v1.37, its ``Retriable``:
an internal error, unavailable, a refused connection, for which a transport failure stands
here): once the pod shows the bind was not committed."""
BIND_RETRY_DELAYS = (0.010, 0.050, 0.250)
"""client-go's retry.DefaultBackoff before the second, third and fourth bind."""
BIND_RETRY_JITTER = 0.1


class KubeBinder:
    """:class:`~policy_scheduler.scheduling.ports.Binder` by a POST to ``pods/binding``.

    A bind whose reply was lost (the API server restarted, the connection broke), or that was
    refused with a conflict (which also covers etcd failing after the commit), may have been
    committed. Counting it failed would free its room in the cache while the pod holds it; so the
    binder reads the pod, for up to :data:`SETTLE_SECONDS`, to learn what became of it. A bind
    the pod shows uncommitted is sent again after the errors kube-scheduler's binder retries
    (:data:`BIND_RETRIED`), four binds in all."""

    def __init__(self, kube: Kube, clock: Callable[[], float] = time.monotonic) -> None:
        self._kube = kube
        self._clock = clock

    async def bind(self, pod: PodView, node: str) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            # The uid makes the bind fail for a pod that was deleted and recreated under its name.
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        for delay in (*BIND_RETRY_DELAYS, None):
            try:
                await self._kube.request("POST", pod_path(pod.namespace, pod.name, "binding"), body)
            except NotLeading as error:
                return BindResult(Outcome.FAILED, error.message)
            except ApiError as error:
                if error.status == 409:
                    # The API server answers 409 for any failure of the bind's storage write,
                    # etcd lost after the commit among them: only the pod tells.
                    conflict = await self._settle(pod, node, error.message)
                    return conflict or BindResult(Outcome.TAKEN, error.message)
                if error.status == 404:
                    return BindResult(Outcome.GONE, error.message)
                if error.status not in UNANSWERED:
                    return BindResult(Outcome.FAILED, error.message)
                settled = await self._settle(pod, node, error.message)
                if settled is not None:
                    return settled
                # Not committed: bound again after an error kube-scheduler's binder retries.
                if delay is None or error.status not in BIND_RETRIED:
                    return BindResult(Outcome.FAILED, error.message)
                await asyncio.sleep(delay * random.uniform(1.0, 1.0 + BIND_RETRY_JITTER))
                continue
            return BindResult(Outcome.BOUND)
        raise AssertionError("unreachable: the last attempt returns")

    async def _settle(self, pod: PodView, node: str, lost: str) -> BindResult | None:
        """What became of a bind whose reply was ``lost``, as the pod now says; None when the
        pod is still pending, the bind not committed."""
        try:
            raw = await retrying(
                lambda: self._kube.request("GET", pod_path(pod.namespace, pod.name)),
                lambda error: error.status != 404,
                SETTLE_SECONDS,
                self._clock,
            )
        except ApiError as error:
            if error.status == 404:
                return BindResult(Outcome.GONE, error.message)
            return BindResult(
                Outcome.FAILED,
                f"{lost}; and whether the bind was committed is unknown: {error.message}",
            )
        if (raw.get("metadata") or {}).get("uid") != pod.uid:
            return BindResult(Outcome.GONE, f"{lost}; {pod.key} was deleted meanwhile")
        assigned = (raw.get("spec") or {}).get("nodeName")
        logger.info(
            "bind of %s to %s: reply lost (%s); the pod is %s",
            pod.key,
            node,
            lost,
            f"on {assigned}" if assigned else "not bound",
        )
        if assigned == node:
            return BindResult(Outcome.BOUND)
        if assigned:
            return BindResult(Outcome.TAKEN, f"{lost}; {pod.key} was bound to {assigned} meanwhile")
        return None


class KubeStatusStore:
    """:class:`~policy_scheduler.scheduling.ports.StatusStore` by a JSON patch of the
    SchedulingPolicy's status subresource that first tests the object's uid: the API server
    ignores a uid in a merge patch, and would let the status of a deleted policy land on one
    created again under its name."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult:
        operations: list[dict[str, Any]] = [
            {"op": "add", "path": "/status", "value": body["status"]}
        ]
        if uid:
            operations.insert(0, {"op": "test", "path": "/metadata/uid", "value": uid})
        policy = path("apis", GROUP, VERSION, PLURAL, name)
        try:
            await self._kube.request("PATCH", f"{policy}/status", operations, JSON_PATCH)
        except ApiError as error:
            if error.status == 404 or (error.status == 422 and not await self._is(policy, uid)):
                return WriteResult.NOT_FOUND
            logger.warning("could not write the status of %s: %s", name, error.message)
            return WriteResult.FAILED
        return WriteResult.WRITTEN

    async def _is(self, policy: str, uid: str) -> bool:
        """Whether ``policy`` is still the object ``uid``: a failed test answers 422, as does a
        status the schema refuses, and only a read tells them apart."""
        try:
            found = await self._kube.request("GET", policy)
        except ApiError as error:
            return error.status != 404
        return bool((found.get("metadata") or {}).get("uid") == uid)


class KubeObjects:
    """:class:`~policy_scheduler.scheduling.ports.ObjectWriter` by merge patches; its events go
    through the loop's recorder."""

    def __init__(self, kube: Kube, recorder: Recorder) -> None:
        self._kube = kube
        self._recorder = recorder

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        self._recorder.event(pod, type_, reason, message, action)

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._kube.request("PATCH", self._path(ref), patch, MERGE_PATCH)

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        return await self._kube.request("GET", self._path(ref))

    async def create(self, ref: ObjectRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._kube.request("POST", self._path(ref), body)

    async def delete(self, ref: ObjectRef) -> None:
        try:
            await self._kube.request("DELETE", self._path(ref))
        except ApiError as error:
            if error.status != 404:
                raise

    @staticmethod
    def _path(ref: ObjectRef) -> str:
        group_version = ref.api_version.split("/")
        prefix = ("api", *group_version) if len(group_version) == 1 else ("apis", *group_version)
        scope = ("namespaces", ref.namespace) if ref.namespace else ()
        name = (ref.name,) if ref.name else ()
        part = (ref.subresource,) if ref.subresource else ()
        return path(*prefix, *scope, ref.resource, *name, *part)


def _answerless(error: ApiError) -> bool:
    """The API server could not answer, and may later: an eviction's step worth trying again."""
    return error.status in UNANSWERED and not isinstance(error, NotLeading)


class KubeEvictor:
    """:class:`~policy_scheduler.scheduling.ports.Evictor` as kube-scheduler's ``PreemptPod``:
    a ``DisruptionTarget`` condition by a strategic merge patch of ``pods/status`` (what the
    victim's controllers and a PodDisruptionBudget's status read as a disruption), then a
    DELETE with the pod's default grace period and its uid as a precondition (so that a pod
    created again under the name is not the one deleted), then a ``Preempted`` event on the
    victim naming the preemptor's uid (in its message only, as kube-scheduler v1.37's). A step
    the API server could not answer is tried again for up to a minute; a refused condition
    evicts nothing (kube-scheduler gives up then too), and a victim gone meanwhile is told
    nothing."""

    def __init__(self, kube: Kube, recorder: Recorder) -> None:
        self._kube = kube
        self._recorder = recorder

    async def preempt(
        self, victim: PodView, preemptor: PodView, by: PreemptedBy, condition_message: str
    ) -> bool:
        condition = pod_condition(
            victim, DISRUPTION_TARGET, "True", PREEMPTION_BY_SCHEDULER, condition_message
        )
        status_path = pod_path(victim.namespace, victim.name, "status")
        deletion = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": victim.uid},
        }
        try:
            await retrying(
                lambda: self._kube.request(
                    "PATCH",
                    status_path,
                    {"status": {"conditions": [condition]}},
                    STRATEGIC_MERGE_PATCH,
                ),
                _answerless,
                RETRY_SECONDS,
            )
            await retrying(
                lambda: self._kube.request(
                    "DELETE", pod_path(victim.namespace, victim.name), deletion
                ),
                _answerless,
                RETRY_SECONDS,
            )
        except ApiError as error:
            # 404: deleted meanwhile; 409: the name is another pod's now. Either way the victim
            # is gone, which its watch event tells the loop.
            if error.status in (404, 409):
                return True
            logger.warning(
                "could not preempt %s for %s: %s", victim.key, preemptor.key, error.message
            )
            return False
        logger.info("preempted %s on %s for %s", victim.key, by.where, preemptor.key)
        self._recorder.event(victim, NORMAL, "Preempted", by.event, "Preempting")
        return True
