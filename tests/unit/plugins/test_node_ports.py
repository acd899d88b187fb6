"""NodePorts rejects nodes where a wanted host port is taken, as kube-scheduler v1.37 does."""

from __future__ import annotations

from typing import Any

import pytest
from plugin_harness import filter_node, make_node, make_pod

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.interface import FITS
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import node_ports

CONFLICT = ("node(s) didn't have free ports for the requested pod ports",)


def port(host_port: int | None = 8080, ip: str | None = None, protocol: str | None = None) -> Any:
    raw: dict[str, Any] = {"containerPort": 80}
    for key, value in {"hostPort": host_port, "hostIP": ip, "protocol": protocol}.items():
        if value is not None:
            raw[key] = value
    return raw


def pod(*ports: Any, name: str = "p", init: Any = (), sidecar: Any = ()) -> PodView:
    init_containers: list[dict[str, Any]] = []
    if init:
        init_containers.append({"name": "i", "ports": list(init)})
    if sidecar:
        init_containers.append({"name": "s", "restartPolicy": "Always", "ports": list(sidecar)})
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "ports": list(ports)}],
        "initContainers": init_containers,
    }
    return make_pod(name, "ns", **spec)


def node(*pods: PodView) -> NodeInfo:
    return make_node("n", None, *pods)


def run(the_pod: PodView, info: NodeInfo) -> object:
    return filter_node(node_ports.new_filter({}, "spec.predicates[0].args"), the_pod, info)


def used(*ports: Any, **kwargs: Any) -> NodeInfo:
    return node(pod(*ports, name="existing", **kwargs))


@pytest.mark.parametrize(
    ("the_pod", "info", "reasons"),
    [
        pytest.param(pod(), used(port()), FITS, id="no host ports"),
        pytest.param(pod(port(None)), used(port(80)), FITS, id="container port only"),
        pytest.param(pod(port()), node(), FITS, id="free node"),
        pytest.param(pod(port()), used(port()), CONFLICT, id="same port on every IP"),
        pytest.param(
            pod(port(protocol="TCP")), used(port()), CONFLICT, id="protocol defaults to TCP"
        ),
        pytest.param(pod(port(protocol="UDP")), used(port()), FITS, id="other protocol"),
        pytest.param(pod(port(8081)), used(port()), FITS, id="other port"),
        pytest.param(
            pod(port(ip="10.0.0.1")), used(port(ip="10.0.0.2")), FITS, id="different host IPs"
        ),
        pytest.param(
            pod(port(ip="10.0.0.1")), used(port(ip="10.0.0.1")), CONFLICT, id="same host IP"
        ),
        pytest.param(pod(port(ip="10.0.0.1")), used(port()), CONFLICT, id="used on every IP"),
        pytest.param(
            pod(port(ip="0.0.0.0")), used(port(ip="10.0.0.1")), CONFLICT, id="wanted on every IP"
        ),
        pytest.param(
            pod(port(9000), port()), used(port()), CONFLICT, id="any conflicting port fails"
        ),
        pytest.param(pod(sidecar=[port()]), used(port()), CONFLICT, id="pod's sidecar port"),
        pytest.param(pod(port()), used(sidecar=[port()]), CONFLICT, id="node's sidecar port"),
    ],
)
def test_filter(the_pod: PodView, info: NodeInfo, reasons: object) -> None:
    assert run(the_pod, info) == reasons


@pytest.mark.parametrize(
    ("the_pod", "info"),
    [
        pytest.param(pod(init=[port()]), used(port()), id="pod's init container port"),
        pytest.param(pod(port()), used(init=[port()]), id="node's init container port"),
    ],
)
def test_init_container_ports_are_ignored(the_pod: PodView, info: NodeInfo) -> None:
    assert run(the_pod, info) == FITS


def test_takes_no_args() -> None:
    with pytest.raises(ArgsError, match=r"spec.predicates\[0\].args: NodePorts takes no args"):
        node_ports.new_filter({"ports": [80]}, "spec.predicates[0].args")
