"""Binding a pod to a node through the ``pods/binding`` subresource."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from policy_scheduler.kube.client import ApiError, Kube, pod_path
from policy_scheduler.model.objects import PodView


class Outcome(Enum):
    BOUND = "bound"
    TAKEN = "taken"  # 409: the pod is assigned already (by us before a restart, or by another)
    GONE = "gone"  # 404: the pod was deleted meanwhile
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BindResult:
    outcome: Outcome
    message: str = ""


async def bind(kube: Kube, pod: PodView, node: str) -> BindResult:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        # The uid makes the bind fail for a pod that was deleted and recreated under its name.
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        await kube.request("POST", pod_path(pod.namespace, pod.name, "binding"), body)
    except ApiError as error:
        if error.status == 409:
            return BindResult(Outcome.TAKEN, error.message)
        if error.status == 404:
            return BindResult(Outcome.GONE, error.message)
        return BindResult(Outcome.FAILED, error.message)
    return BindResult(Outcome.BOUND)
