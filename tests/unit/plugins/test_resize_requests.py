"""A pod on a node counts, while an in-place resize is under way, as the largest of its spec, what
the kubelet allocated (``allocatedResources``) and what its containers run with (the status'
``resources.requests``), each resource on its own, as kube-scheduler v1.37 counts it
(component-helpers' PodRequests with the status' resources); a resize the kubelet found
infeasible leaves the spec out. NodeResourcesFit, the resource scorers and preemption all read
these requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import filter_node, make_node

from policy_scheduler.framework.interface import FITS
from policy_scheduler.model.objects import NON_ZERO_DEFAULTS, PodView, slim_pod
from policy_scheduler.plugins import node_resources_fit

MI = 1024 * 1024


def container(name: str = "c", restart: str | None = None, **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if restart:
        spec["restartPolicy"] = restart
    return spec


def status(
    name: str = "c", allocated: dict[str, str] | None = None, actual: dict[str, str] | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "ready": True}
    if allocated is not None:
        entry["allocatedResources"] = allocated
    if actual is not None:
        entry["resources"] = {"requests": actual}
    return entry


def running(
    spec: dict[str, Any],
    statuses: Sequence[dict[str, Any]] = (),
    init_statuses: Sequence[dict[str, Any]] = (),
    **pod_status: Any,
) -> dict[str, Any]:
    the_status: dict[str, Any] = {"phase": "Running", **pod_status}
    if statuses:
        the_status["containerStatuses"] = list(statuses)
    if init_statuses:
        the_status["initContainerStatuses"] = list(init_statuses)
    return {
        "metadata": {"name": "r", "namespace": "ns", "uid": "r"},
        "spec": {"nodeName": "n", **spec},
        "status": the_status,
    }


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
DEFERRED = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
ONE = {"containers": [container(cpu="1", memory="1Gi")]}

# (the pod as the API server has it, its requests in millicores and bytes)
REQUESTS: dict[str, tuple[dict[str, Any], dict[str, int]]] = {
    "no status: the spec": (running(ONE), {"cpu": 1000, "memory": 1024 * MI}),
    "statuses without resources: the spec": (
        running(ONE, [{"name": "c", "ready": True}]),
        {"cpu": 1000, "memory": 1024 * MI},
    ),
    "resized up, not yet allocated: the spec": (
        running(
            {"containers": [container(cpu="2", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "1Gi"}, actual={"cpu": "1", "memory": "1Gi"})],
        ),
        {"cpu": 2000, "memory": 1024 * MI},
    ),
    "resized down, not yet actuated: what it runs with": (
        running(
            {"containers": [container(cpu="1", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "1Gi"}, actual={"cpu": "3", "memory": "1Gi"})],
        ),
        {"cpu": 3000, "memory": 1024 * MI},
    ),
    "allocated above both: what is allocated": (
        running(
            {"containers": [container(cpu="1", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "2Gi"}, actual={"cpu": "1", "memory": "1Gi"})],
        ),
        {"cpu": 1000, "memory": 2048 * MI},
    ),
    "each resource its own largest": (
        running(
            {"containers": [container(cpu="2", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "3Gi"}, actual={"cpu": "1500m"})],
        ),
        {"cpu": 2000, "memory": 3072 * MI},
    ),
    "allocated only: it stands for what it runs with too": (
        running(ONE, [status(allocated={"cpu": "4"})]),
        {"cpu": 4000, "memory": 1024 * MI},
    ),
    "a resource only the status names counts": (
        running(ONE, [status(allocated={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"})]),
        {"cpu": 1000, "memory": 1024 * MI, "ephemeral-storage": 1024 * MI},
    ),
    "infeasible: the spec left out": (
        running(
            {"containers": [container(cpu="8", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "1Gi"}, actual={"cpu": "1", "memory": "1Gi"})],
            conditions=INFEASIBLE,
        ),
        {"cpu": 1000, "memory": 1024 * MI},
    ),
    "infeasible without a status: nothing of the spec": (
        running({"containers": [container(cpu="8")]}, conditions=INFEASIBLE),
        {},
    ),
    "deferred: the spec still counts": (
        running(
            {"containers": [container(cpu="8", memory="1Gi")]},
            [status(allocated={"cpu": "1", "memory": "1Gi"}, actual={"cpu": "1", "memory": "1Gi"})],
            conditions=DEFERRED,
        ),
        {"cpu": 8000, "memory": 1024 * MI},
    ),
    "each container by its own status, summed": (
        running(
            {"containers": [container("a", cpu="1"), container("b", cpu="1")]},
            [status("b", allocated={"cpu": "2"}), status("a", actual={"cpu": "500m"})],
        ),
        {"cpu": 3000},
    ),
    "a sidecar's status, in its init container phase and beside the containers": (
        running(
            {
                "initContainers": [container("side", "Always", cpu="1")],
                "containers": [container("main", cpu="1")],
            },
            [status("main", allocated={"cpu": "1"})],
            [status("side", allocated={"cpu": "2"}, actual={"cpu": "2"})],
        ),
        {"cpu": 3000},
    ),
    "pod-level status figures stand for the containers'": (
        running(
            ONE,
            [status(allocated={"cpu": "4"})],
            allocatedResources={"cpu": "2", "memory": "1Gi"},
            resources={"requests": {"cpu": "1500m", "memory": "1Gi"}},
        ),
        {"cpu": 2000, "memory": 1024 * MI},
    ),
    "pod-level requests: the largest of spec, actual and allocated": (
        running(
            {**ONE, "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}},
            allocatedResources={"cpu": "3", "memory": "1Gi"},
            resources={"requests": {"cpu": "2", "memory": "4Gi"}},
        ),
        {"cpu": 3000, "memory": 4096 * MI},
    ),
    "pod-level requests, infeasible: the spec left out": (
        running(
            {**ONE, "resources": {"requests": {"cpu": "8", "memory": "2Gi"}}},
            allocatedResources={"cpu": "2", "memory": "2Gi"},
            resources={"requests": {"cpu": "2", "memory": "2Gi"}},
            conditions=INFEASIBLE,
        ),
        {"cpu": 2000, "memory": 2048 * MI},
    ),
    "the overhead adds to it": (
        running(
            {**ONE, "overhead": {"cpu": "100m"}},
            [status(allocated={"cpu": "2", "memory": "1Gi"})],
        ),
        {"cpu": 2100, "memory": 1024 * MI},
    ),
}


@pytest.mark.parametrize(("raw", "requests"), REQUESTS.values(), ids=REQUESTS.keys())
def test_requests(raw: dict[str, Any], requests: dict[str, int]) -> None:
    assert PodView(raw).requests == requests
    # What the informers keep of the pod requests as much.
    assert PodView(slim_pod(raw)).requests == requests


def test_the_scorers_defaults_stand_in_for_what_the_status_lacks_too() -> None:
    raw = running(
        {"containers": [container("a", cpu="1"), container("b")]},
        [status("a", allocated={"cpu": "2"}), status("b", allocated={})],
    )
    # b's allocated nothing: the defaults, as for its spec.
    assert PodView(raw).pod_requests(NON_ZERO_DEFAULTS) == {
        "cpu": 2000 + 100,
        "memory": 2 * 200 * MI,
    }


NODE = {"cpu": "4", "memory": "8Gi", "pods": "110"}


@pytest.mark.parametrize(
    ("on_node", "reasons"),
    [
        pytest.param(running(ONE), FITS, id="its spec leaves room"),
        pytest.param(
            running(ONE, [status(allocated={"cpu": "3"}, actual={"cpu": "1"})]),
            ("Insufficient cpu",),
            id="a resize up allocated leaves none",
        ),
        pytest.param(
            running(ONE, [status(allocated={"cpu": "1"}, actual={"cpu": "3"})]),
            ("Insufficient cpu",),
            id="a resize down not yet actuated leaves none",
        ),
        pytest.param(
            running(
                {"containers": [container(cpu="3")]},
                [status(allocated={"cpu": "1"}, actual={"cpu": "1"})],
                conditions=INFEASIBLE,
            ),
            FITS,
            id="an infeasible resize up takes nothing more",
        ),
    ],
)
def test_node_resources_fit_counts_a_resizing_pod(
    on_node: dict[str, Any], reasons: tuple[str, ...]
) -> None:
    pending = PodView(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [container(cpu="2")]}}
    )
    info = make_node("n", None, PodView(on_node), status={"allocatable": NODE})
    fit = node_resources_fit.new_filter({}, "spec.predicates[0].args")
    assert tuple(filter_node(fit, pending, info)) == reasons
