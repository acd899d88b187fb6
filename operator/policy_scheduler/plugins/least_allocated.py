"""LeastAllocated: prefer the node with the most room left (kube-scheduler's NodeResourcesFit
scoring strategy LeastAllocated, the default profile's resource scorer).

Per resource ``(allocatable - requested) * 100 // allocatable`` (0 when the node is overcommitted),
where ``requested`` includes the pod; the node's score is the weighted average of those, rounded
down. The pod counts its containers' requests (100m CPU and 200Mi memory for a container that
requests none), never its pod-level requests: kube-scheduler v1.37.2 scores so, as
:mod:`policy_scheduler.plugins.resource_allocation` explains with the rest of which requests
count. Args: ``resources: [{name, weight}]`` (default cpu and memory, weight 1).
"""

from __future__ import annotations

import numpy as np

from policy_scheduler.framework.args import Args
from policy_scheduler.framework.interface import MAX_NODE_SCORE
from policy_scheduler.model.nodetable import Array
from policy_scheduler.plugins.resource_allocation import (
    ResourceAllocationScorer,
    parse_resources,
    weighted_average,
)

NAME = "LeastAllocated"


def _free_share(requested: Array, allocatable: Array) -> Array:
    free = (allocatable - requested) * MAX_NODE_SCORE // allocatable
    return np.where(requested > allocatable, 0, free)


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    return ResourceAllocationScorer(
        NAME, parse_resources(args, path), weighted_average(_free_share)
    )
