"""The loop's write ports over the API: binding through ``pods/binding``, the policy status
subresource, and the objects pre-bind plugins write."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from policy_scheduler.kube.client import (
    GROUP,
    MERGE_PATCH,
    PLURAL,
    VERSION,
    ApiError,
    Kube,
    path,
    pod_path,
)
from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.ports import BindResult, ObjectRef, Outcome, WriteResult

logger = logging.getLogger(__name__)


class KubeBinder:
    """:class:`~policy_scheduler.scheduling.ports.Binder` by a POST to ``pods/binding``."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    async def bind(self, pod: PodView, node: str) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            # The uid makes the bind fail for a pod that was deleted and recreated under its name.
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self._kube.request("POST", pod_path(pod.namespace, pod.name, "binding"), body)
        except ApiError as error:
            if error.status == 409:
                return BindResult(Outcome.TAKEN, error.message)
            if error.status == 404:
                return BindResult(Outcome.GONE, error.message)
            return BindResult(Outcome.FAILED, error.message)
        return BindResult(Outcome.BOUND)


class KubeStatusStore:
    """:class:`~policy_scheduler.scheduling.ports.StatusStore` by a merge patch of the
    SchedulingPolicy's status subresource."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    async def write(self, name: str, body: Mapping[str, Any]) -> WriteResult:
        try:
            await self._kube.request(
                "PATCH", path("apis", GROUP, VERSION, PLURAL, name, "status"), body, MERGE_PATCH
            )
        except ApiError as error:
            if error.status == 404:
                return WriteResult.NOT_FOUND
            logger.warning("could not write the status of %s: %s", name, error.message)
            return WriteResult.FAILED
        return WriteResult.WRITTEN


class KubeObjects:
    """:class:`~policy_scheduler.scheduling.ports.ObjectWriter` by merge patches."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        group_version = ref.api_version.split("/")
        prefix = ("api", *group_version) if len(group_version) == 1 else ("apis", *group_version)
        scope = ("namespaces", ref.namespace) if ref.namespace else ()
        return await self._kube.request(
            "PATCH", path(*prefix, *scope, ref.resource, ref.name), patch, MERGE_PATCH
        )
