"""ImageLocality: prefer nodes that already hold the pod's images, so it starts without pulling
(kube-scheduler v1.37's ImageLocality).

Each image of the pod's init containers, containers and image volumes that the node lists in
``status.images`` adds ``int(size * nodes_with_image / total_nodes)``: an image present on only a
few nodes counts little, so image locality does not pile pods onto them. The sum is clamped to
``[23 MiB, 1000 MiB * images]``, where images counts the init containers, containers and image
volumes (v1.34 counted image volumes in neither the sum nor the threshold), and scaled linearly
to 0..100 (integer division). Image names are compared as written, only ``:latest`` is added
when the name has no tag or digest ("nginx" -> "nginx:latest", which does not match
"docker.io/library/nginx:latest"; kube-scheduler does the same). An image's size is the one
reported by the first node (in snapshot order) that lists it, as kube-scheduler's image state
keeps the first size it sees. No args.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from policy_scheduler.framework.args import Args, no_args
from policy_scheduler.framework.interface import MAX_NODE_SCORE, Scorer, Scores
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import PodView

NAME = "ImageLocality"

_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


def normalized_image_name(name: str) -> str:
    """The name as nodes report it when the tag is implicit: "nginx" -> "nginx:latest"."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_images(pod: PodView) -> list[str]:
    """Normalized images of the init containers, containers and image volumes, repeats kept."""
    images = [str(c.get("image") or "") for c in (*pod.init_containers, *pod.containers)]
    for volume in pod.spec.get("volumes") or ():
        image = volume.get("image") if isinstance(volume, Mapping) else None
        if isinstance(image, Mapping):
            images.append(str(image.get("reference") or ""))
    return [normalized_image_name(image) for image in images]


@dataclass(frozen=True, slots=True)
class _State:
    scaled: Mapping[str, int]
    """Per image of the pod that some node lists: its size scaled by the share of such nodes."""
    images: tuple[str, ...]
    """The pod's normalized images, repeats kept (each adds to the sum)."""
    max_threshold: int


class _ImageLocalityScorer(Scorer[_State]):
    name = NAME

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> _State:
        snapshot = cycle.snapshot
        total = len(snapshot)
        # The snapshot indexes the nodes listing each image, so this is per image, not per node.
        images = tuple(pod_images(cycle.pod))
        scaled: dict[str, int] = {}
        for image in set(images):
            holders = snapshot.images.get(image)
            if holders:
                spread = len(holders) / total
                scaled[image] = int(float(snapshot.image_size(image)) * spread)
        # Every image counts towards the threshold, image volumes too (v1.37; v1.34 counted
        # only the containers').
        return _State(scaled, images, MAX_CONTAINER_THRESHOLD * len(images))

    def score(self, state: _State, pod: PodView, node: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeBlock.of(node))[0])

    def score_nodes(self, state: _State, pod: PodView, nodes: NodeBlock) -> Scores:
        total: Scores = np.zeros(len(nodes), np.int64)
        for image in state.images:
            if image in state.scaled:
                # The sum is capped at max_threshold (above MIN_THRESHOLD) in the end, so capping
                # each image there too changes no score and keeps the int64 sum from overflowing.
                total += min(state.scaled[image], state.max_threshold) * nodes.lists_image(image)
        total = np.where(
            total < MIN_THRESHOLD, MIN_THRESHOLD, np.minimum(total, state.max_threshold)
        )
        return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (state.max_threshold - MIN_THRESHOLD)


def new_scorer(args: Args, path: str) -> Scorer[_State]:
    no_args(NAME, args, path)
    return _ImageLocalityScorer()
