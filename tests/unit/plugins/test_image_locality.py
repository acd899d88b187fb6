"""ImageLocality scores image sizes scaled by spread, as kube-scheduler v1.37 does."""

from __future__ import annotations

from typing import Any

import pytest
from plugin_harness import make_node, make_pod, raw_scores

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import image_locality

MB = 1024 * 1024


def pod(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> PodView:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": image} for i, image in enumerate(init)],
        "volumes": [{"name": f"v{i}", "image": {"reference": r}} for i, r in enumerate(volumes)],
    }
    return make_pod("p", "ns", **spec)


def node(name: str, *images: tuple[str, int]) -> NodeInfo:
    listed = [{"names": names.split(), "sizeBytes": size} for names, size in images]
    return make_node(name, status={"images": listed})


def scores(the_pod: PodView, *nodes: NodeInfo) -> list[int]:
    scorer = image_locality.new_scorer({}, "spec.priorities[0].args")
    return [int(score) for score in raw_scores(scorer, the_pod, nodes)[1]]


EMPTY = node("empty")


@pytest.mark.parametrize(
    ("the_pod", "nodes", "expected"),
    [
        pytest.param(
            pod("app:1"), [node("a", ("app:1", 250 * MB))], [23], id="image on the only node"
        ),
        pytest.param(
            pod("app:1"),
            [node("a", ("app:1", 250 * MB)), EMPTY],
            [10, 0],
            id="spread halves the size",
        ),
        pytest.param(pod("app:1"), [node("a", ("app:1", 20 * MB))], [0], id="below 23MB scores 0"),
        pytest.param(pod("app:1"), [node("a", ("app:1", 2000 * MB))], [100], id="capped at 1000MB"),
        pytest.param(
            pod("nginx"), [node("a", ("nginx:latest", 250 * MB))], [23], id="implicit latest tag"
        ),
        pytest.param(
            pod("nginx"),
            [node("a", ("docker.io/library/nginx:latest", 250 * MB))],
            [0],
            id="no registry normalization, as kube",
        ),
        pytest.param(
            pod("localhost:5000/app"),
            [node("a", ("localhost:5000/app:latest", 250 * MB))],
            [23],
            id="registry port is not a tag",
        ),
        pytest.param(
            pod("app@sha256:abc"), [node("a", ("app@sha256:abc", 250 * MB))], [23], id="digest"
        ),
        pytest.param(
            pod("app:1"),
            [node("a", ("app@sha256:abc app:1", 250 * MB))],
            [23],
            id="any listed name matches",
        ),
        pytest.param(
            pod("a:1", "b:1"),
            [node("a", ("a:1", 1000 * MB), ("b:1", 500 * MB))],
            [74],
            id="threshold grows per container",
        ),
        pytest.param(
            pod("a:1", "a:1"),
            [node("a", ("a:1", 500 * MB))],
            [49],
            id="repeated image counts twice",
        ),
        pytest.param(
            pod("a:1", init=("b:1",)),
            [node("a", ("a:1", 1000 * MB), ("b:1", 500 * MB))],
            [74],
            id="init container images count",
        ),
        # 1200MB of 2000MB: (1200 - 23) * 100 // (2000 - 23); v1.34 counted no image volume.
        pytest.param(
            pod("a:1", volumes=("b:1",)),
            [node("a", ("a:1", 600 * MB), ("b:1", 600 * MB))],
            [59],
            id="image volumes add their size and raise the threshold",
        ),
        pytest.param(
            pod("a:1", volumes=("b:1",)),
            [node("a", ("a:1", 1000 * MB))],
            [49],
            id="an image volume the node lacks still raises the threshold",
        ),
        # 900MB of 3000MB.
        pytest.param(
            pod("a:1", volumes=("a:1", "b")),
            [node("a", ("a:1", 300 * MB), ("b:latest", 300 * MB))],
            [29],
            id="image volumes repeat and take an implicit latest tag as containers do",
        ),
        pytest.param(
            pod("a:1"),
            [node("a", ("a:1", 600 * MB), ("a:1", 600 * MB)), EMPTY],
            [28, 0],
            id="a node listing an image twice counts once",
        ),
        pytest.param(
            pod("a:1"),
            [node("a", ("a:1", 400 * MB)), node("b", ("a:1", 200 * MB))],
            [38, 38],
            id="the first size seen is every node's",
        ),
        pytest.param(
            pod("", "a:1"),
            [node("a", ("a:1", 2000 * MB))],
            [100],
            id="container without image",
        ),
    ],
)
def test_score(the_pod: PodView, nodes: list[NodeInfo], expected: list[int]) -> None:
    assert scores(the_pod, *nodes) == expected


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match="ImageLocality takes no args"):
        image_locality.new_scorer({"minThreshold": 1}, "spec.priorities[0].args")
