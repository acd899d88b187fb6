"""The what-if a post-filter asks while it looks for victims: the policy's filters on one node of
the snapshot as pods are taken out and put back, the pre-filters run once and kept up to date
by the filters' ``add_pod``/``remove_pod`` (kube-scheduler's preemption dry run with the
PreFilterExtensions, pkg/scheduler/framework/preemption/preemption.go).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from policy_scheduler.framework.interface import (
    Filter,
    WhatIf,
)
from policy_scheduler.framework.types import Cycle, NominatedPods
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.runtime.framework import (
    NodePool,
    PreFilterOutcome,
    filter_node,
    pre_filter_outcome,
    run_pre_filter,
    with_nominated,
)


class PipelineWhatIf(WhatIf):
    """The pipeline's :class:`~.framework.interface.WhatIf`: every pre-filter runs once, on the
    snapshot as it is when the what-if starts; the states that count pods
    (:attr:`~.framework.interface.Filter.pre_filter_counts_pods`) then follow each pod taken out or
    put back through their filter's ``remove_pod`` and ``add_pod``, as kube-scheduler's
    SelectVictimsOnNode runs the PreFilterExtensions, and what the pre-filters say of the
    cluster is merged anew after such a change. A verdict filters the one node; the rotating
    start index of the pipeline is left alone."""

    __slots__ = (
        "_changed",
        "_counting",
        "_cycle",
        "_nominated",
        "_outcome",
        "_positions",
        "_rejecting",
        "_states",
    )

    def __init__(
        self,
        pool: NodePool | None,
        filters: Sequence[Filter[Any]],
        cycle: Cycle,
        nominated: NominatedPods,
    ) -> None:
        self._cycle = cycle
        self._nominated = nominated
        self._states, _ = run_pre_filter(pool, filters, cycle)
        # The indices into _states of those that count pods (a filter that skipped the pod
        # has none, and stays skipped).
        self._counting = [
            i for i, (plugin, _) in enumerate(self._states) if plugin.pre_filter_counts_pods
        ]
        # Those whose filter may tell a rejection beforehand: the default never does, and a
        # reprieve asks of every victim on every node.
        self._rejecting = [
            i
            for i, (plugin, _) in enumerate(self._states)
            if type(plugin).rejects_with is not Filter.rejects_with
        ]
        self._changed = True
        self._outcome = PreFilterOutcome()
        self._positions: frozenset[int] | None = None

    def removed(self, node: NodeInfo, pod: PodView) -> None:
        for i in self._counting:
            plugin, state = self._states[i]
            self._states[i] = (plugin, plugin.remove_pod(state, self._cycle, pod, node))
            self._changed = True

    def added(self, node: NodeInfo, pod: PodView) -> None:
        for i in self._counting:
            plugin, state = self._states[i]
            self._states[i] = (plugin, plugin.add_pod(state, self._cycle, pod, node))
            self._changed = True

    def rejects_with(self, node: NodeInfo, pod: PodView) -> bool:
        """Whether a filter would surely reject the cycle's pod with ``pod`` also on ``node``:
        any filter's own answer, the pre-filters' states being those of the snapshot now."""
        incoming, states = self._cycle.pod, self._states
        for i in self._rejecting:
            plugin, state = states[i]
            if plugin.rejects_with(state, incoming, node, pod):
                return True
        return False

    def verdict(self, node: NodeInfo) -> tuple[str, ...]:
        """FITS, or the first failing filter's reasons (a pre-filter's rejection, or its
        leaving the node out, gives its reason); on a node with nominated pods, those of the
        filters with them counted, if one fails then."""
        snapshot = self._cycle.snapshot
        if self._changed:
            self._changed = False
            self._outcome = pre_filter_outcome(self._states, snapshot)
            positions = self._outcome.positions
            self._positions = None if positions is None else frozenset(positions.tolist())
        outcome = self._outcome
        if outcome.rejection:
            return (outcome.rejection,)
        position = snapshot.table.position(node)
        if self._positions is not None and position not in self._positions:
            return (outcome.left_out,)
        failing = with_nominated(self._states, self._cycle, node, self._nominated)
        if failing is not None:
            return failing[1]
        block = snapshot.table.block(np.array([position], np.intp))
        return filter_node(self._states, self._cycle.pod, block)
