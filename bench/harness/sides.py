"""The two sides of a parity test: one scenario built twice on one control plane, once for
kube-scheduler and once for a policy of ours, each in its own namespace with its own nodes, so
that both schedulers decide the same thing at the same time and their outcomes can be compared
once each side's names are taken out of them."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

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


def priority_classes(label: str, prefix: str, values: Mapping[str, int]) -> list[dict[str, Any]]:
    """A PriorityClass ``<prefix>-<name>`` of each of ``values``, labelled ``label=prefix`` for
    :func:`clean_up`."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{prefix}-{name}", "labels": {label: prefix}},
            "value": value,
        }
        for name, value in values.items()
    ]


def clean_up(cluster: Cluster, sides: Sequence[Side], label: str, prefix: str, policy: str) -> None:
    """What a parity test made, gone: each side's pods (at once: no kubelet runs) and
    namespace, the nodes and PriorityClasses labelled ``label=prefix``, and the ``policy``."""
    for side in sides:
        cluster.kubectl(
            "delete", "pods", "--all", "-n", side.namespace, "--grace-period=0", "--force"
        )
        cluster.kubectl("delete", "namespace", side.namespace, "--wait=false")
    selector = f"{label}={prefix}"
    cluster.kubectl("delete", "nodes,priorityclasses", "-l", selector, "--wait=false")
    cluster.kubectl("delete", "schedulingpolicies", policy, "--wait=false", check=False)


def kubelet(cluster: Cluster, side: Side, pods: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The bare control plane's stand-in for the kubelet: each of ``pods`` being deleted (a
    preemption's victim) recorded, with its node and grace period and its DisruptionTarget
    condition, by name, then its deletion finished."""
    victims: dict[str, str] = {}
    for p in pods:
        if not p["metadata"].get("deletionTimestamp"):
            continue
        name = p["metadata"]["name"]
        conditions = [
            f"{c.get('status')} {c.get('reason')} {side.normal(c.get('message', ''))!r}"
            for c in p.get("status", {}).get("conditions", ())
            if c["type"] == "DisruptionTarget"
        ]
        where = side.normal(p["spec"].get("nodeName", ""))
        grace = p["metadata"].get("deletionGracePeriodSeconds")
        victims[name] = f"on {where}, grace {grace}, DisruptionTarget {conditions}"
        cluster.kubectl(
            "delete", "pod", name, "-n", side.namespace, "--grace-period=0", "--force", check=False
        )
    return victims


class Watch(Protocol):
    """One side's watch of its pod: polled until it says the side has settled."""

    def poll(self) -> bool: ...


def settle_both(watches: Sequence[Watch], timeout: float) -> list[str]:
    """Poll the kube side's watch and ours until both have settled or ``timeout`` seconds have
    passed: which side did not settle."""
    deadline = time.monotonic() + timeout
    settled = [False] * len(watches)
    while not all(settled) and time.monotonic() < deadline:
        settled = [w.poll() for w in watches]
        time.sleep(0.3)
    who = ("kube-scheduler", "the operator")
    return [
        f"{who[i]} did not settle within {timeout:.0f} s" for i, s in enumerate(settled) if not s
    ]


def report(name: str, kube: Sequence[str], ours: Sequence[str]) -> str:
    """What each side did with the pod ``name``, one line per fact, to read beside each other."""
    return "\n".join(
        [
            f"{name}:",
            "  kube-scheduler:",
            *(f"    {line}" for line in kube),
            "  ours:",
            *(f"    {line}" for line in ours),
        ]
    )
