"""MostAllocated: pack pods onto the fullest nodes (kube-scheduler's NodeResourcesFit scoring
strategy MostAllocated), leaving whole nodes free for big pods or for scale-down.

Per resource ``min(requested, allocatable) * 100 // allocatable``, where ``requested`` includes
the pod (it can exceed allocatable because of the non-zero defaults); the node's score is the
weighted average of those, rounded down. The pod counts its containers' requests (with the
non-zero defaults), never its pod-level requests: kube-scheduler v1.37.2 scores so, as
:mod:`policy_scheduler.plugins.resource_allocation` explains. Args: ``resources: [{name,
weight}]`` (default cpu and memory, weight 1).
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

NAME = "MostAllocated"


def _used_share(requested: Array, allocatable: Array) -> Array:
    return np.minimum(requested, allocatable) * MAX_NODE_SCORE // allocatable


def new_scorer(args: Args, path: str) -> ResourceAllocationScorer:
    return ResourceAllocationScorer(
        NAME, parse_resources(args, path), weighted_average(_used_share)
    )
