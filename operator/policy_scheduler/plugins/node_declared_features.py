"""NodeDeclaredFeatures: a pod that needs a node feature fits only nodes that declare it
(kube-scheduler's NodeDeclaredFeatures, GA in v1.37 and in its default profile).

What the pod needs is what component-helpers' nodedeclaredfeatures infers for scheduling
(:attr:`~policy_scheduler.model.objects.PodView.required_node_features`): restart rules that
restart all containers, a host-network pod in a user namespace, volume mounts with
``bindMountOptions``. A node fits when its ``status.declaredFeatures`` lists every one of them;
otherwise "node(s) didn't match Pod's required features", UnschedulableAndUnresolvable (evicting
pods declares no feature). A pod that needs none skips the plugin.

Queueing hint, as kube-scheduler's: a pod this filter rejected waits for a node added, or a
node whose declared features changed. (kube-scheduler also requeues it when its own update
changes what it needs; here any change of a pending pod's spec requeues it.)
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.events import ClusterEvent, EventKind
from policy_scheduler.framework.interface import FITS, SKIP, Filter, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView

NAME = "NodeDeclaredFeatures"

_REASONS = ("node(s) didn't match Pod's required features",)


class _NodeDeclaredFeaturesFilter(Filter[frozenset[str]]):
    """The state is the features the pod needs (never empty: without any it skips)."""

    name = NAME
    wakes_on = EventKind.NODE_ADDED | EventKind.NODE_DECLARED_FEATURES
    # UnschedulableAndUnresolvable in kube-scheduler: no eviction adds a feature to a node.
    unresolvable_reasons = frozenset(_REASONS)

    def pre_filter(self, cycle: Cycle) -> frozenset[str] | Skip:
        return cycle.pod.required_node_features or SKIP

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        # Of an update, only a change of the declared features is asked about.
        node, old = event.node, event.old_node
        return node is None or old is None or node.declared_features != old.declared_features

    def filter(self, state: frozenset[str], pod: PodView, node: NodeInfo) -> Sequence[str]:
        return FITS if state <= node.node.declared_features else _REASONS


def new_filter(args: Args, path: str) -> Filter[frozenset[str]]:
    no_args(NAME, args, path)
    return _NodeDeclaredFeaturesFilter()
