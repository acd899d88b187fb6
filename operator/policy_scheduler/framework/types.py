"""What a scheduling cycle hands its plugins besides their own state (kube-scheduler's
pkg/scheduler/framework/types.go): the cycle (pod, snapshot, random source), the pods
nominated to nodes that hold their room, and the FitError text an unschedulable pod is told.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView


@dataclass(slots=True)
class Cycle:
    """One pod's scheduling cycle: the pod, the snapshot it is decided on, the random source, and
    what a plugin's parts share within the cycle (``shared``, by plugin name: a filter's state
    that the scorer of the same name reads, as kube-scheduler's Score reads its PreFilter's and
    Filter's state from the CycleState)."""

    pod: PodView
    snapshot: Snapshot
    rng: random.Random = field(default_factory=random.Random)
    shared: dict[str, Any] = field(default_factory=dict)


def _nothing_counted(pods: Iterable[tuple[str, PodView]]) -> AbstractContextManager[object]:
    return contextlib.nullcontext()


@dataclass(frozen=True, slots=True)
class NominatedPods:
    """Pending pods that a preemption nominated to a node and that hold its room against the
    cycle's pod (those of at least its priority), by node name; and ``counted(pods)``, a context
    manager that counts each (node name, pod) of ``pods`` on that node of the snapshot while it
    is entered (:meth:`~policy_scheduler.scheduling.cache.SchedulerCache.nominated`).

    As kube-scheduler's RunFilterPluginsWithNominatedPods, a node with such pods fits only if
    the filters pass it both with them counted there (the pre-filter states that count pods
    updated for them alone, by ``add_pod``) and without them; the first pass's failure is the
    one told. Pods nominated to other nodes count for nothing: a topology spread or an affinity
    counts them no more than it counts pending pods."""

    by_node: Mapping[str, Sequence[PodView]] = field(default_factory=dict)
    counted: Callable[[Iterable[tuple[str, PodView]]], AbstractContextManager[object]] = (
        _nothing_counted
    )


NO_NOMINATED = NominatedPods()
"""No pod nominated anywhere: what a decision counts when it is told of none."""


def reason_counts(reasons: Mapping[str, int]) -> str:
    """The "<count> <reason>" strings ("2 Insufficient cpu"), sorted as strings as kube-scheduler
    sorts them, joined with commas."""
    return ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))


def failure_message(
    total_nodes: int, reasons: Mapping[str, int], pre_filter_rejection: str = ""
) -> str:
    """kube-scheduler's FitError text: "0/5 nodes are available: 2 Insufficient cpu, ...", or,
    for a pod a pre-filter rejected, its reason alone: "0/5 nodes are available: pod affinity
    terms conflict." (kube-scheduler does not count the nodes then)."""
    message = f"0/{total_nodes} nodes are available:"
    if pre_filter_rejection:
        return f"{message} {pre_filter_rejection}."
    return f"{message} {reason_counts(reasons)}." if reasons else message
