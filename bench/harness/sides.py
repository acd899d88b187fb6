"""The two sides of a parity test: one scenario built twice on one control plane, once for
kube-scheduler and once for a policy of ours, each in its own namespace with its own nodes, so
that both schedulers decide the same thing at the same time and their outcomes can be compared
once each side's names are taken out of them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from harness.e2e import Cluster

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Side:
    """One copy of a scenario: its scheduler, its namespace, and the names of its objects."""

    name: str  # "kube" or "ours"
    prefix: str
    scheduler: str

    @property
    def namespace(self) -> str:
        return f"{self.prefix}-{self.name}"

    def named(self, suffix: str) -> str:
        """A cluster-scoped object's name (a node, a class, a slice) on this side."""
        return f"{self.prefix}-{self.name}-{suffix}"

    def normal(self, text: str) -> str:
        """``text`` with this side's names replaced, to compare with the other side's."""
        text = text.replace(self.namespace + "/", "<ns>/")
        text = text.replace(f"{self.prefix}-{self.name}-", "")
        text = text.replace(self.namespace, "<ns>")
        text = text.replace(self.scheduler, "<scheduler>")
        return UID.sub("<uid>", text)


S = TypeVar("S", bound=Side)


@dataclass
class Sides(Generic[S]):
    """Both sides of a scenario on one cluster."""

    cluster: Cluster
    kube: S
    ours: S

    def both(self) -> tuple[S, S]:
        return self.kube, self.ours
