"""The selectors of the objects that select pods: Services, ReplicationControllers, ReplicaSets and
StatefulSets, from which kube-scheduler's default topology spreading takes a pod's selector
(``helper.DefaultSelector``, v1.37).

:class:`Workloads` keeps, per namespace, each Service's ``spec.selector`` and each controller's,
and nothing else of these objects: a cluster has many ReplicaSets (ten old ones per Deployment by
default), each with a whole pod template the scheduler never reads. :func:`slim` is that much of
an object, for the informers to keep.

:meth:`Workloads.default_selector` is DefaultSelector: the label set merged from the selectors of
the pod's namespace's Services that select the pod (a Service without a selector selects
nothing); then, when the pod's controller (its ``controller: true`` ownerReference, by
apiVersion, kind and name in the pod's namespace) is a ReplicationController we know, its
selector merged into that set; a ReplicaSet or StatefulSet we know adds its selector's
requirements. A selector without requirements means no default spreading for the pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy_scheduler.model.objects import PodView, Raw
from policy_scheduler.model.selectors import LabelSelector, SelectorError

SERVICE = "Service"
REPLICATION_CONTROLLER = "ReplicationController"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
KINDS = (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)

# The controllers DefaultSelector follows, by their ownerReference's apiVersion and kind.
_CONTROLLERS = {
    ("v1", REPLICATION_CONTROLLER),
    ("apps/v1", REPLICA_SET),
    ("apps/v1", STATEFUL_SET),
}

_Key = tuple[str, str]  # namespace, name


def _mapping(value: object) -> Raw:
    return value if isinstance(value, Mapping) else {}


def _labels(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items()}


def _key(raw: Raw) -> _Key:
    metadata = _mapping(raw.get("metadata"))
    return str(metadata.get("namespace") or "default"), str(metadata.get("name", ""))


def slim(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`Workloads` (and an informer, to resume and relist) reads of a Service or a
    controller: its name, namespace, uid, resourceVersion and ``spec.selector``."""
    metadata = _mapping(raw.get("metadata"))
    kept = ("name", "namespace", "uid", "resourceVersion")
    return {
        "metadata": {key: metadata[key] for key in kept if key in metadata},
        "spec": {"selector": _mapping(raw.get("spec")).get("selector")},
    }


def _label_set(raw_selector: object) -> dict[str, str]:
    """A Service's or ReplicationController's selector (a label map); empty when it is not a
    valid one, which the API server never stores (a cluster file might hold one)."""
    labels = _labels(raw_selector)
    try:
        LabelSelector.parse({"matchLabels": labels})
    except SelectorError:
        return {}
    return labels


def _requirements(raw_selector: object) -> list[dict[str, Any]]:
    """A ReplicaSet's or StatefulSet's selector as requirements (matchLabels as ``In``), as
    LabelSelectorAsSelector reads it; none for a selector that is null, empty or invalid (kube
    then adds nothing to the pod's selector)."""
    selector = _mapping(raw_selector)
    try:
        LabelSelector.parse(raw_selector)
    except SelectorError:
        return []
    return [
        *(
            {"key": key, "operator": "In", "values": [value]}
            for key, value in _labels(selector.get("matchLabels")).items()
        ),
        *(dict(_mapping(e)) for e in selector.get("matchExpressions") or ()),
    ]


class Workloads:
    """Services' and controllers' selectors, by namespace and name."""

    def __init__(self) -> None:
        # namespace -> Service name -> its selector (only Services that have one).
        self._services: dict[str, dict[str, dict[str, str]]] = {}
        self._replication_controllers: dict[_Key, dict[str, str]] = {}
        # ReplicaSets and StatefulSets: (kind, namespace, name) -> the selector's requirements.
        self._sets: dict[tuple[str, str, str], list[dict[str, Any]]] = {}

    def __repr__(self) -> str:
        services = sum(map(len, self._services.values()))
        controllers = len(self._replication_controllers) + len(self._sets)
        return f"Workloads(services={services}, controllers={controllers})"

    def set(self, kind: str, raw: Raw) -> None:
        """A Service or controller of ``kind`` was added or changed."""
        namespace, name = _key(raw)
        selector = _mapping(raw.get("spec")).get("selector")
        if kind == SERVICE:
            labels = _label_set(selector)
            if labels:
                self._services.setdefault(namespace, {})[name] = labels
            else:
                # A Service without a selector selects nothing, not everything.
                self.delete(kind, raw)
        elif kind == REPLICATION_CONTROLLER:
            self._replication_controllers[namespace, name] = _label_set(selector)
        else:
            self._sets[kind, namespace, name] = _requirements(selector)

    def delete(self, kind: str, raw: Raw) -> None:
        namespace, name = _key(raw)
        if kind == SERVICE:
            services = self._services.get(namespace, {})
            services.pop(name, None)
            if not services:
                self._services.pop(namespace, None)
        elif kind == REPLICATION_CONTROLLER:
            self._replication_controllers.pop((namespace, name), None)
        else:
            self._sets.pop((kind, namespace, name), None)

    def default_selector(self, pod: PodView) -> LabelSelector | None:
        """The selector kube-scheduler's default spreading counts the pod's group with (see the
        module's docstring); None when it has no requirements."""
        labels = pod.labels
        matched: dict[str, str] = {}
        for selector in self._services.get(pod.namespace, {}).values():
            if all(labels.get(key) == value for key, value in selector.items()):
                matched.update(selector)
        requirements: list[dict[str, Any]] = []
        owner = pod.controller_ref
        if owner is not None and (owner.get("apiVersion"), owner.get("kind")) in _CONTROLLERS:
            kind, name = str(owner.get("kind")), str(owner.get("name"))
            if kind == REPLICATION_CONTROLLER:
                matched.update(self._replication_controllers.get((pod.namespace, name), {}))
            else:
                requirements = self._sets.get((kind, pod.namespace, name), [])
        if not matched and not requirements:
            return None
        # Valid parts (checked as they came) make a valid whole.
        return LabelSelector.parse({"matchLabels": matched, "matchExpressions": requirements})
