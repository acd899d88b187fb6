"""The labels of the cluster's Namespaces, which a pod affinity term's ``namespaceSelector``
matches (kube-scheduler's InterPodAffinity reads them through its namespace lister).

Only the labels are kept (:func:`slim` is what the informer keeps of a Namespace). A namespace not
known here is taken to have the one label the API server gives every namespace,
``kubernetes.io/metadata.name: <name>``: a cluster file without Namespaces, or a pod seen before
its Namespace, then reads as the cluster has it, as far as that label goes. (kube-scheduler's
lister gives such a namespace no labels; its pods exist, so the Namespace does.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy_scheduler.model.objects import Raw

KIND = "Namespace"
NAME_LABEL = "kubernetes.io/metadata.name"


def _metadata(raw: Raw) -> Raw:
    metadata = raw.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def slim(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`Namespaces` (and an informer, to resume and relist) reads of a Namespace:
    its name, uid, resourceVersion and labels."""
    metadata = _metadata(raw)
    kept = ("name", "uid", "resourceVersion", "labels")
    return {"metadata": {key: metadata[key] for key in kept if key in metadata}}


class Namespaces:
    """Each known namespace's labels, by name."""

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}

    def __repr__(self) -> str:
        return f"Namespaces({len(self._labels)})"

    def set(self, raw: Raw) -> None:
        """A Namespace was added or changed."""
        metadata = _metadata(raw)
        labels = metadata.get("labels")
        self._labels[str(metadata.get("name", ""))] = (
            {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
        )

    def delete(self, raw: Raw) -> None:
        self._labels.pop(str(_metadata(raw).get("name", "")), None)

    def labels(self, name: str) -> Mapping[str, str]:
        """The labels of namespace ``name`` (see the module's docstring for one not known)."""
        labels = self._labels.get(name)
        return {NAME_LABEL: name} if labels is None else labels
