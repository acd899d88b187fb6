"""Pod requests are computed as kube-scheduler computes them (component-helpers' PodRequests)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from policy_scheduler.model.objects import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NON_ZERO_DEFAULTS,
    HostPort,
    NodeView,
    ObjectError,
    PodView,
)

Mi = 2**20


def container(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory}.items() if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


def pod(**spec: Any) -> PodView:
    return PodView({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        pytest.param(
            {"containers": [container("100m", "1Mi"), container("200m")]},
            {"cpu": 300, "memory": Mi},
            id="containers add up",
        ),
        pytest.param(
            {
                "containers": [container("100m")],
                "initContainers": [container("500m"), container("200m", "4Mi")],
            },
            {"cpu": 500, "memory": 4 * Mi},
            id="init containers count by their peak",
        ),
        pytest.param(
            {
                "containers": [container("100m")],
                "initContainers": [container("50m", restartPolicy="Always"), container("300m")],
            },
            {"cpu": 350},
            id="sidecar runs beside the later init container",
        ),
        pytest.param(
            {
                "containers": [container("400m")],
                "initContainers": [container("50m", restartPolicy="Always"), container("300m")],
            },
            {"cpu": 450},
            id="sidecar runs beside the regular containers",
        ),
        pytest.param(
            {"containers": [container("100m")], "overhead": {"cpu": "10m"}},
            {"cpu": 110},
            id="overhead is added",
        ),
        pytest.param(
            {"containers": [container("100m", "1Mi")], "resources": {"requests": {"cpu": "1"}}},
            {"cpu": 1000, "memory": Mi},
            id="pod-level cpu replaces the containers' sum",
        ),
        pytest.param(
            {
                "containers": [{"name": "c", "resources": {"requests": {"hugepages-2Mi": "2Mi"}}}],
                "resources": {"requests": {"hugepages-2Mi": "4Mi"}},
            },
            {"hugepages-2Mi": 4 * Mi},
            id="pod-level hugepages replace the containers' sum",
        ),
        pytest.param(
            {
                "containers": [container("100m")],
                "resources": {"requests": {"ephemeral-storage": "1Gi"}},
            },
            {"cpu": 100},
            id="pod-level requests of other resources are not read",
        ),
        pytest.param(
            {"containers": [container("100m")], "initContainers": [container(memory="0")]},
            {"cpu": 100, "memory": 0},
            id="an init container's explicit zero is requested",
        ),
        pytest.param({"containers": [container()]}, {}, id="no requests"),
    ],
)
def test_requests(spec: dict[str, Any], requests: dict[str, int]) -> None:
    assert pod(**spec).requests == requests


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        pytest.param(
            {"containers": [container(), container("1")]},
            {"cpu": 1000 + DEFAULT_MILLI_CPU_REQUEST, "memory": 2 * DEFAULT_MEMORY_REQUEST},
            id="each container without requests counts the defaults",
        ),
        pytest.param(
            {"containers": [container("0", "0")]},
            {"cpu": 0, "memory": 0},
            id="an explicit zero stays zero",
        ),
        pytest.param(
            {"containers": [container()], "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
            {"cpu": 2000, "memory": 1024 * Mi},
            id="pod-level requests replace the defaults",
        ),
        pytest.param(
            {"containers": [container(), container()], "resources": {"requests": {"cpu": "1"}}},
            {"cpu": 1000, "memory": 2 * DEFAULT_MEMORY_REQUEST},
            id="pod-level cpu only: memory requested nowhere is defaulted per container",
        ),
        pytest.param(
            {
                "containers": [container(memory="1Mi"), container()],
                "resources": {"requests": {"cpu": "1"}},
            },
            {"cpu": 1000, "memory": Mi},
            id="pod-level cpu only: memory one container requests is not defaulted for another",
        ),
        pytest.param(
            {
                "containers": [container()],
                "initContainers": [container(memory="0")],
                "resources": {"requests": {"cpu": "1"}},
            },
            {"cpu": 1000, "memory": 0},
            id="pod-level cpu only: an init container's zero memory is a request",
        ),
        pytest.param(
            {
                "containers": [container()],
                "overhead": {"memory": "10Mi"},
                "resources": {"requests": {"cpu": "1"}},
            },
            {"cpu": 1000, "memory": 10 * Mi},
            id="pod-level cpu only: the overhead's memory is a request",
        ),
    ],
)
def test_nonzero_requests(spec: dict[str, Any], requests: dict[str, int]) -> None:
    """What the pod counts for on its node (kube-scheduler's PodInfo.CalculateResource)."""
    assert pod(**spec).nonzero_requests == requests


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        pytest.param(
            {"containers": [container()], "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
            {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST},
            id="pod-level requests are not read",
        ),
        pytest.param(
            {
                "containers": [container(memory="1Mi"), container()],
                "overhead": {"cpu": "10m"},
                "resources": {"requests": {"cpu": "1"}},
            },
            {"cpu": 2 * DEFAULT_MILLI_CPU_REQUEST + 10, "memory": Mi + DEFAULT_MEMORY_REQUEST},
            id="each container without a request counts the default, the overhead adds",
        ),
    ],
)
def test_requests_without_pod_level(spec: dict[str, Any], requests: dict[str, int]) -> None:
    """PodRequests with the non-zero defaults and SkipPodLevelResources, as NodeResourcesFit's
    scoring strategies ask for it in kube-scheduler v1.34."""
    assert pod(**spec).pod_requests(NON_ZERO_DEFAULTS, pod_level=False) == requests


def test_broken_quantity_names_the_pod_and_field() -> None:
    broken = pod(containers=[container("lots")])
    with pytest.raises(ObjectError, match=r"pod ns/p: spec.containers\[0\].resources.requests.cpu"):
        _ = broken.requests


def test_host_ports_default_protocol_and_ip() -> None:
    view = pod(
        containers=[
            {"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 53}]}
        ]
    )
    assert view.host_ports == (HostPort("0.0.0.0", "TCP", 8080),)


@pytest.mark.parametrize(
    ("a", "b", "conflict"),
    [
        pytest.param(
            HostPort("0.0.0.0", "TCP", 80),
            HostPort("10.0.0.1", "TCP", 80),
            True,
            id="wildcard IP conflicts with any IP",
        ),
        pytest.param(
            HostPort("10.0.0.1", "TCP", 80),
            HostPort("10.0.0.2", "TCP", 80),
            False,
            id="different IPs",
        ),
        pytest.param(
            HostPort("0.0.0.0", "TCP", 80),
            HostPort("0.0.0.0", "UDP", 80),
            False,
            id="different protocols",
        ),
        pytest.param(
            HostPort("0.0.0.0", "TCP", 80),
            HostPort("0.0.0.0", "TCP", 81),
            False,
            id="different ports",
        ),
    ],
)
def test_host_port_conflicts(a: HostPort, b: HostPort, conflict: bool) -> None:
    assert a.conflicts(b) is conflict
    assert b.conflicts(a) is conflict


def test_node_view() -> None:
    view = NodeView(
        {
            "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "images": [{"names": ["nginx:1"], "sizeBytes": 100}],
            },
        }
    )
    assert view.allocatable == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110}
    assert view.unschedulable
    assert str(view.taints[0]) == "{k: }"
    assert view.images == ((("nginx:1",), 100),)


def test_broken_node_quantity_names_the_node() -> None:
    with pytest.raises(ObjectError, match=r"node n1: status\.allocatable\.cpu"):
        NodeView({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "lots"}}})


RS = {"kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}


@pytest.mark.parametrize(
    ("owners", "controller"),
    [
        pytest.param(None, None, id="no owners"),
        pytest.param([{**RS, "controller": False}], None, id="an owner that does not control"),
        pytest.param([{"kind": "Job", "uid": "j"}, RS], RS, id="the controlling owner"),
        pytest.param(["rs"], None, id="an owner that is not an object"),
    ],
)
def test_controller_ref(owners: Any, controller: Any) -> None:
    raw = {"metadata": {"name": "p", "ownerReferences": owners}}
    assert PodView(raw).controller_ref == controller


@pytest.mark.parametrize(
    ("status", "start"),
    [
        pytest.param({"startTime": "2026-01-02T03:04:05Z"}, 1767323045.0, id="started"),
        pytest.param({"phase": "Pending"}, math.inf, id="not started yet: as if now"),
        pytest.param(None, math.inf, id="no status"),
        pytest.param({"startTime": "yesterday"}, math.inf, id="a time that does not parse"),
        pytest.param({"startTime": 5}, math.inf, id="a time that is not text"),
    ],
)
def test_start_time(status: Any, start: float) -> None:
    assert PodView({"metadata": {"name": "p"}, "status": status}).start_time == start


@pytest.mark.parametrize(
    ("spec", "ports"),
    [
        pytest.param(
            {"containers": [{"ports": [{"hostPort": 80}]}]},
            [HostPort("0.0.0.0", "TCP", 80)],
            id="container",
        ),
        pytest.param(
            {"initContainers": [{"ports": [{"hostPort": 80}]}]}, [], id="init container has exited"
        ),
        pytest.param(
            {"initContainers": [{"restartPolicy": "Always", "ports": [{"hostPort": 80}]}]},
            [HostPort("0.0.0.0", "TCP", 80)],
            id="sidecar keeps running",
        ),
    ],
)
def test_host_ports(spec: dict[str, Any], ports: list[HostPort]) -> None:
    assert list(pod(**spec).host_ports) == ports


def test_required_node_affinity_names_the_invalid_term() -> None:
    required = {"nodeSelectorTerms": [{"matchFields": [{"key": "spec.x", "operator": "In"}]}]}
    affinity = pod(
        nodeSelector={"disk": "ssd"},
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    ).required_node_affinity
    assert affinity.node_selector == (("disk", "ssd"),)
    assert [str(e) for e in affinity.errors] == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchFields[0].key: only metadata.name is supported, not 'spec.x'"
    ]


BASE: dict[str, Any] = {"containers": [container("100m")], "tolerations": [{"key": "a"}]}


@pytest.mark.parametrize(
    ("other", "alike"),
    [
        pytest.param({**BASE, "nodeName": "n1", "priority": 5}, True, id="alike elsewhere"),
        pytest.param({**BASE, "containers": [container("200m")]}, False, id="requests"),
        pytest.param({**BASE, "nodeSelector": {"disk": "ssd"}}, False, id="node selector"),
        pytest.param({**BASE, "tolerations": []}, False, id="tolerations"),
        pytest.param(
            {**BASE, "affinity": {"podAntiAffinity": {"x": []}}}, False, id="pod affinity"
        ),
        pytest.param(
            {**BASE, "topologySpreadConstraints": [{"topologyKey": "zone"}]},
            False,
            id="spread constraints",
        ),
        pytest.param({**BASE, "affinity": {1: {}}}, False, id="a key that is not a string"),
        pytest.param(
            {**BASE, "affinity": {"podAffinity": {"x": 2**70}}}, False, id="beyond 64 bits"
        ),
    ],
)
def test_hint_signature_holds_what_queueing_hints_read(other: dict[str, Any], alike: bool) -> None:
    assert (pod(**BASE).hint_signature == pod(**other).hint_signature) is alike
