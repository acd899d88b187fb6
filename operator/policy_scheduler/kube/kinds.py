"""Where each kind the scheduler reads (:mod:`~policy_scheduler.scheduling.kinds`) is listed on
the API server: the operator's watches (:mod:`~policy_scheduler.kube.scheduler`) and
``explain``'s one-off reads use the same paths, so the two read the same kinds."""

from __future__ import annotations

from policy_scheduler.kube.client import path
from policy_scheduler.scheduling.kinds import Kind


def collection(kind: Kind) -> str:
    """The path that lists and watches ``kind``'s objects of every namespace."""
    if kind.group:
        return path("apis", kind.group, kind.version, kind.plural)
    return path("api", kind.version, kind.plural)
