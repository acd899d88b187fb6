"""Binding a pod to a node through the ``pods/binding`` subresource.

The answer is not decoded (``Kube.send``): the server answers a binding with a ``Status`` object,
which the generated client would try, and fail, to read as a ``V1Binding``
(kubernetes-client/python#547).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kubernetes.client import ApiException

from policy_scheduler.kube.client import Kube, error_message
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
        await kube.send(kube.core.create_namespaced_pod_binding, pod.name, pod.namespace, body)
    except ApiException as error:
        if error.status == 409:
            return BindResult(Outcome.TAKEN, error_message(error))
        if error.status == 404:
            return BindResult(Outcome.GONE, error_message(error))
        return BindResult(Outcome.FAILED, error_message(error))
    return BindResult(Outcome.BOUND)
