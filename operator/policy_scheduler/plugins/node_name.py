"""NodeName: a pod that names its node in ``spec.nodeName`` fits only there (kube-scheduler's
NodeName); every other node rejects it with "node(s) didn't match the requested node name".
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins.base import FITS, Args, Filter, no_args

NAME = "NodeName"

_REASONS = ("node(s) didn't match the requested node name",)


class _NodeNameFilter(Filter[None]):
    name = NAME

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        if pod.node_name and pod.node_name != node.name:
            return _REASONS
        return FITS


def new_filter(args: Args, path: str) -> Filter[None]:
    no_args(NAME, args, path)
    return _NodeNameFilter()
