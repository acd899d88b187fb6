"""What every scheduler must get right, read from the cluster's objects: no node holds pods
requesting more than it can allocate, and no pod is told Scheduled twice or onto another node."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any, NamedTuple

from policy_scheduler.model.objects import NodeView, PodView

ASSIGNED = re.compile(r"Successfully assigned [^/\s]+/(\S+) to (\S+)")
PODS = "pods"


class Overcommit(NamedTuple):
    node: str
    resource: str
    requested: int
    allocatable: int


def overcommitted(
    nodes: Iterable[dict[str, Any]],
    pods: Iterable[dict[str, Any]],
    resources: Collection[str] | None = None,
) -> list[Overcommit]:
    """Each resource of each node of ``nodes`` whose bound ``pods`` request more of it than it
    can allocate (the pod count counts as the resource ``pods``), as the scheduler counts
    requests (model.objects.PodView); of the resources the node has allocatable, and of
    ``resources`` only, if given. Sorted by node."""
    views = {view.name: view for view in map(NodeView, nodes)}
    requested: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for view in map(PodView, pods):
        if view.node_name in views:
            used = requested[view.node_name]
            used[PODS] += 1
            for resource, amount in view.requests.items():
                used[resource] += amount
    return sorted(
        Overcommit(name, resource, amount, allocatable)
        for name, used in requested.items()
        for resource, amount in used.items()
        if resources is None or resource in resources
        if (allocatable := views[name].allocatable.get(resource)) is not None
        and amount > allocatable
    )


def told(events: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Pod -> the node each of its ``Scheduled`` ``events`` names (an event repeated as often as
    its ``count``; "?" for a message that names none)."""
    nodes: dict[str, list[str]] = {}
    for event in events:
        found = ASSIGNED.match(event.get("message") or "")
        nodes.setdefault(event["involvedObject"]["name"], []).extend(
            [found[2] if found else "?"] * (event.get("count") or 1)
        )
    return nodes


def told_wrongly(told_nodes: Mapping[str, list[str]], placed: Mapping[str, str]) -> list[str]:
    """The pods told Scheduled more than once, or onto a node other than the one ``placed``
    says, sorted."""
    return sorted(
        name for name, nodes in told_nodes.items() if len(nodes) > 1 or nodes[0] != placed.get(name)
    )
