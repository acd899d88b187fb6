"""Parity with kube-scheduler v1.37.2 for extended resources backed by a DeviceClass, beyond
test_parity_dra's case of an ``extendedResourceName``: a pod of two containers requesting a
class's implicit name ``deviceclass.resource.kubernetes.io/<class>``, on the two sides of one
control plane as test_parity_dra builds them. Besides the node, the message and the claim that
test_parity_dra compares, the pod's ``status.extendedResourceClaimStatus.requestMappings`` (which
request serves which container) must be kube's."""

from __future__ import annotations

import copy
import json
from typing import Any

import test_parity_dra
from test_parity_dra import Expect, Scenario, Side, Sides, Step, gpu, not_allocatable, run

IMPLICIT = "deviceclass.resource.kubernetes.io/"
# The two sides of one control plane, as test_parity_dra's scenarios get them.
sides = test_parity_dra.sides


def two_containers(side: Side, name: str, resource: str, first: str, second: str) -> dict[str, Any]:
    """A pod kept to the side's nodes whose two containers request ``first`` and ``second`` of
    ``resource`` (the second container nothing else)."""
    pod = side.pod(name, requests={resource: first})
    container = copy.deepcopy(pod["spec"]["containers"][0])
    container["name"] = "second"
    container["resources"] = {"requests": {resource: second}, "limits": {resource: second}}
    pod["spec"]["containers"].append(container)
    return pod


def request_mappings(sides: Sides, side: Side, pod: str) -> Any:
    found = json.loads(
        sides.cluster.kubectl("get", "pod", pod, "-n", side.namespace, "-o", "json").stdout
    )
    status = found.get("status", {}).get("extendedResourceClaimStatus") or {}
    mappings = status.get("requestMappings", [])
    return json.loads(side.normal(json.dumps(mappings, sort_keys=True)))


def test_implicit_class_name_for_two_containers(sides: Sides) -> None:
    """Each container gets its own request (named after the container's index and the
    resource's place among its sorted requests), the devices of the class taken in the slice's
    order; the next pod finds too few left."""

    def build(side: Side) -> Scenario:
        resource = IMPLICIT + side.named("gpu")
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("b", gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2")),
            ],
            claims=[],
            steps=[
                Step(
                    two_containers(side, "p1", resource, "1", "1"),
                    Expect(
                        "b",
                        devices={
                            "p1-extended-resources-<random>": [
                                "container-0-request-1 b gpu-0",
                                "container-1-request-0 b gpu-1",
                            ]
                        },
                    ),
                ),
                Step(
                    two_containers(side, "p2", resource, "1", "1"),
                    Expect(None, not_allocatable(2)),
                ),
            ],
        )

    run(sides, build)
    kube, ours = (request_mappings(sides, side, "p1") for side in sides.both())
    assert kube == [
        {
            "containerName": "main",
            "requestName": "container-0-request-1",
            "resourceName": "deviceclass.resource.kubernetes.io/gpu",
        },
        {
            "containerName": "second",
            "requestName": "container-1-request-0",
            "resourceName": "deviceclass.resource.kubernetes.io/gpu",
        },
    ]
    assert ours == kube
