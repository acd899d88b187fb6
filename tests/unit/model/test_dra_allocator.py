"""The device allocator decides as kube-scheduler v1.37's (structured/internal/incubating) does:
pools, the search with its backtracking, constraints, limits, admin access, the default-on
features, and the allocation results it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.model.cel import DeviceSelectors
from policy_scheduler.model.dra import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceID,
    Unallocatable,
)
from policy_scheduler.model.dra.devices import SliceCache

DRIVER = "gpu.example.com"
NODE = "node-1"
Obj = dict[str, Any]


def device(name: str, **fields: Any) -> Obj:
    return {"name": name, **fields}


def slice_(
    name: str,
    *devices: Obj,
    node: str | None = NODE,
    pool: str = "pool-1",
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> Obj:
    body: Obj = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    if devices:
        body["devices"] = list(devices)
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}, "spec": body}


def device_class(name: str = "gpu", *config: Obj) -> Obj:
    spec: Obj = {}
    if config:
        spec["config"] = [{"opaque": c} for c in config]
    return {"metadata": {"name": name}, "spec": spec}


def request(name: str = "req", class_name: str = "gpu", **exactly: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": class_name, **exactly}}


def first_available(name: str, *subrequests: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subrequests)}


def sub(name: str, class_name: str = "gpu", **fields: Any) -> Obj:
    return {"name": name, "deviceClassName": class_name, **fields}


def claim(name: str, *requests: Obj, **devices: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": list(requests) or [request()], **devices}},
    }


def local(node: str = NODE) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def result(req: str, name: str, pool: str = "pool-1", **extra: Any) -> Obj:
    return {"request": req, "driver": DRIVER, "pool": pool, "device": name, **extra}


def allocation(*results: Obj, node_selector: Obj | None = None, config: Any = None) -> Obj:
    devices: Obj = {"results": list(results)}
    if config:
        devices["config"] = config
    out: Obj = {"devices": devices}
    if node_selector is not None:
        out["nodeSelector"] = node_selector
    return out


def opaque(value: str) -> Obj:
    return {"driver": DRIVER, "parameters": {"value": value}}


def attr(**values: Any) -> Obj:
    return {
        "attributes": {
            key.replace("_", "/", 1) if "_" in key else key: value for key, value in values.items()
        }
    }


def cel(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


BY_DRIVER = f'device.driver == "{DRIVER}"'
GPU1 = slice_("slice-1", device("gpu-1"), device("gpu-2"))


@dataclass
class Case:
    slices: list[Obj]
    claims: list[Obj]
    expect: list[Obj] | str
    """The allocations, or a text: the start of the Unallocatable reason (or its kube message
    if it starts with 'kube:'), or of the AllocationError ('error:')."""
    classes: list[Obj] = field(default_factory=lambda: [device_class()])
    allocated: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    taint_rules: list[Obj] = field(default_factory=list)


CASES = {
    # --- pools ----------------------------------------------------------------------------
    "the node's own slice, default count 1": Case(
        [GPU1, slice_("other", device("gpu-9"), node="node-2", pool="pool-2")],
        [claim("c")],
        [allocation(result("req", "gpu-1"), node_selector=local())],
    ),
    "no slice for the node": Case(
        [slice_("other", device("gpu-9"), node="node-2")],
        [claim("c")],
        'claim default/c, request "req": no device',
    ),
    "a slice for all nodes needs no node selector": Case(
        [slice_("all", device("gpu-1"), node=None, allNodes=True)],
        [claim("c")],
        [allocation(result("req", "gpu-1"))],
    ),
    "a slice's node selector becomes the allocation's": Case(
        [
            slice_(
                "rack",
                device("gpu-1"),
                node=None,
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}
                    ]
                },
            )
        ],
        [claim("c")],
        [
            allocation(
                result("req", "gpu-1"),
                node_selector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}
                    ]
                },
            )
        ],
        labels={"rack": "a"},
    ),
    "a node selector the node does not match": Case(
        [
            slice_(
                "rack",
                device("gpu-1"),
                node=None,
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}
                    ]
                },
            )
        ],
        [claim("c")],
        'claim default/c, request "req": no device',
        labels={"rack": "b"},
    ),
    "only the highest generation of a pool counts": Case(
        [
            slice_("old", device("gpu-old"), generation=1),
            slice_("new", device("gpu-new"), generation=2),
        ],
        [claim("c")],
        [allocation(result("req", "gpu-new"), node_selector=local())],
    ),
    "an incomplete pool is not allocated from, another pool is": Case(
        [
            slice_("a", device("gpu-a"), pool="pool-a", count=2),
            slice_("b", device("gpu-b"), pool="pool-b"),
        ],
        [claim("c")],
        [allocation(result("req", "gpu-b", pool="pool-b"), node_selector=local())],
    ),
    "an incomplete pool alone": Case(
        [slice_("a", device("gpu-a"), count=2)],
        [claim("c")],
        'claim default/c, request "req": no device',
    ),
    "a pool complete with the slices of other nodes": Case(
        [
            slice_("a", device("gpu-a"), count=2),
            slice_("b", device("gpu-b"), node="node-2", count=2),
        ],
        [claim("c", request(count=2))],
        'claim default/c, request "req": needs 2 devices, 1 ',
    ),
    "a newer generation on another node makes the pool obsolete": Case(
        [
            slice_("a", device("gpu-a"), count=2),
            slice_("b", device("gpu-b"), node="node-2", generation=2),
        ],
        [claim("c")],
        'claim default/c, request "req": no device',
    ),
    "duplicate device names make a pool invalid": Case(
        [slice_("a", device("gpu-1"), count=2), slice_("b", device("gpu-1"), count=2)],
        [claim("c")],
        "kube:invalid resource pools were encountered",
    ),
    "pools by driver and name, binding conditions last": Case(
        [
            slice_("z", device("gpu-z"), pool="pool-z"),
            slice_("b", device("gpu-b", bindingConditions=["ready"]), pool="pool-a"),
            slice_("m", device("gpu-m"), pool="pool-m"),
        ],
        [claim("c", request(count=3))],
        [
            allocation(
                result("req", "gpu-m", pool="pool-m"),
                result("req", "gpu-z", pool="pool-z"),
                result("req", "gpu-b", pool="pool-a", bindingConditions=["ready"]),
                node_selector=local(),
            )
        ],
    ),
    "per-device node selection": Case(
        [
            slice_(
                "per-device",
                device("gpu-other", nodeName="node-2"),
                device("gpu-all", allNodes=True),
                node=None,
                perDeviceNodeSelection=True,
            )
        ],
        [claim("c")],
        [allocation(result("req", "gpu-all"))],
    ),
    # --- the search -----------------------------------------------------------------------
    "a device in use is skipped": Case(
        [GPU1],
        [claim("c")],
        [allocation(result("req", "gpu-2"), node_selector=local())],
        allocated=[allocation(result("req", "gpu-1"))],
    ),
    "every device in use": Case(
        [GPU1],
        [claim("c")],
        'claim default/c, request "req": no device',
        allocated=[allocation(result("req", "gpu-1"), result("req", "gpu-2"))],
    ),
    "two claims take different devices": Case(
        [GPU1],
        [claim("c1"), claim("c2")],
        [
            allocation(result("req", "gpu-1"), node_selector=local()),
            allocation(result("req", "gpu-2"), node_selector=local()),
        ],
    ),
    "the claims together need more than there is": Case(
        [GPU1],
        [claim("c1"), claim("c2", request(count=2))],
        "claim default/c2",
    ),
    "all devices": Case(
        [GPU1],
        [claim("c", request(allocationMode="All"))],
        [allocation(result("req", "gpu-1"), result("req", "gpu-2"), node_selector=local())],
    ),
    "all devices, one in use": Case(
        [GPU1],
        [claim("c", request(allocationMode="All"))],
        'claim default/c, request "req": ',
        allocated=[allocation(result("req", "gpu-1"))],
    ),
    "all devices of an incomplete pool": Case(
        [slice_("a", device("gpu-a"), count=2)],
        [claim("c", request(allocationMode="All"))],
        "error:claim default/c, request req: asks for all devices, but resource pool "
        "gpu.example.com/pool-1 is currently being updated",
    ),
    "all devices of an invalid pool": Case(
        [slice_("a", device("gpu-1"), count=2), slice_("b", device("gpu-1"), count=2)],
        [claim("c", request(allocationMode="All"))],
        "error:claim default/c, request req: asks for all devices, but resource pool "
        "gpu.example.com/pool-1 is currently invalid",
    ),
    "all devices when there are none": Case(
        [slice_("empty")],
        [claim("c", request(allocationMode="All"))],
        'claim default/c, request "req": no device',
    ),
    "first available: the second subrequest": Case(
        [GPU1],
        [claim("c", first_available("req", sub("big", count=3), sub("small", count=2)))],
        [
            allocation(
                result("req/small", "gpu-1"), result("req/small", "gpu-2"), node_selector=local()
            )
        ],
    ),
    "first available: the first that fits with the next request": Case(
        [GPU1],
        [
            claim(
                "c",
                first_available("a", sub("two", count=2), sub("one")),
                request("b"),
            )
        ],
        [allocation(result("a/one", "gpu-1"), result("b", "gpu-2"), node_selector=local())],
    ),
    "first available: no alternative fits": Case(
        [GPU1],
        [claim("c", first_available("req", sub("three", count=3), sub("tpu", class_name="tpu")))],
        'claim default/c, request "req": no alternative fits: "three" needs 3 devices, 2 are '
        'on this node; "tpu" no device matches the selectors of class "tpu" '
        '(device.driver == "tpu.example.com")',
        classes=[
            device_class(),
            {
                "metadata": {"name": "tpu"},
                "spec": {"selectors": [cel('device.driver == "tpu.example.com"')]},
            },
        ],
    ),
    "a claim's requests together need more than there is": Case(
        [GPU1],
        [claim("c", request("a"), request("b", count=2))],
        "claim default/c: its requests together need more devices than fit",
    ),
    "more than 32 devices for a claim": Case(
        [slice_("big", *(device(f"gpu-{i}") for i in range(40)))],
        [claim("c", request(count=33))],
        "error:claim default/c, request req: adding 33 devices exceeds the claim limit of 32, "
        "with 0 already accounted for",
    ),
    "32 devices for a claim": Case(
        [slice_("big", *(device(f"gpu-{i:02}") for i in range(33)))],
        [claim("c", request(count=32))],
        [
            allocation(
                *(result("req", f"gpu-{i:02}") for i in range(32)),
                node_selector=local(),
            )
        ],
    ),
    "a class that does not exist": Case(
        [GPU1],
        [claim("c", request(class_name="tpu"))],
        "error:claim default/c, request req: could not retrieve device class tpu: "
        'deviceclass.resource.k8s.io "tpu" not found',
    ),
    "a capacity request that is not a quantity": Case(
        [GPU1],
        [claim("c", request(capacity={"requests": {"memory": "lots"}}))],
        "error:claim default/c, request req: capacity.requests[memory]: 'lots' is not a "
        "quantity (expected e.g. 500m, 2, 1.5Gi, 1e3)",
    ),
    # --- selectors ------------------------------------------------------------------------
    "the class's selectors, then the request's": Case(
        [
            slice_(
                "mixed",
                device("small", **attr(memory={"int": 16})),
                device("big", **attr(memory={"int": 80})),
                device("nic", **attr(memory={"int": 80}), kind={}),
            ),
            slice_("other", device("big"), driver="other.example.com", pool="pool-2"),
        ],
        [claim("c", request(selectors=[cel(f'device.attributes["{DRIVER}"].memory >= 32')]))],
        [allocation(result("req", "big"), node_selector=local())],
        classes=[{"metadata": {"name": "gpu"}, "spec": {"selectors": [cel(BY_DRIVER)]}}],
    ),
    "no device matches a request's selector": Case(
        [GPU1],
        [claim("c", request(selectors=[cel('device.driver == "x"')]))],
        'claim default/c, request "req": no device matches the request\'s selectors '
        '(device.driver == "x")',
    ),
    "no device of the class": Case(
        [GPU1],
        [claim("c")],
        'claim default/c, request "req": no device matches the selectors of class "gpu" '
        '(device.driver == "other.example.com")',
        classes=[
            {
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [cel('device.driver == "other.example.com"')]},
            }
        ],
    ),
    "a selector that fails at runtime": Case(
        [GPU1],
        [claim("c", request(selectors=[cel("device.attributes['x'].y")]))],
        "error:claim default/c: selector #0 on device gpu.example.com/pool-1/gpu-1: "
        "CEL runtime error: ",
    ),
    "a selector reading a key the device lacks: kube's hint follows": Case(
        [GPU1],
        [claim("c", request(selectors=[cel(f'device.attributes["{DRIVER}"].missing')]))],
        "error:claim default/c: selector #0 on device gpu.example.com/pool-1/gpu-1: "
        "CEL runtime error: no such key: missing. consider using CEL optional chaining "
        "(.? followed by orValue()) or guarding the check with has() for optional fields",
    ),
    "a selector that does not compile": Case(
        [GPU1],
        [claim("c", request(selectors=[cel("device.driver ==")]))],
        "error:claim default/c: selector #0: CEL compile error: ",
    ),
    "slices without uid keep their devices' selector results apart": Case(
        [
            {"metadata": {"name": "a"}, "spec": dict(GPU1["spec"], driver="other.example.com")},
            {
                "metadata": {"name": "b"},
                "spec": dict(GPU1["spec"], pool={**GPU1["spec"]["pool"], "name": "pool-2"}),
            },
        ],
        [claim("c")],
        [allocation(result("req", "gpu-1", pool="pool-2"), node_selector=local())],
        classes=[{"metadata": {"name": "gpu"}, "spec": {"selectors": [cel(BY_DRIVER)]}}],
    ),
    # --- constraints ------------------------------------------------------------------------
    "match attribute: backtracks to two devices of one NUMA node": Case(
        [
            slice_(
                "numa",
                device("gpu-1", **attr(numa={"int": 0})),
                device("gpu-2", **attr(numa={"int": 1})),
                device("gpu-3", **attr(numa={"int": 1})),
            )
        ],
        [claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
        [allocation(result("req", "gpu-2"), result("req", "gpu-3"), node_selector=local())],
    ),
    "match attribute: values of different types differ": Case(
        [
            slice_(
                "numa",
                device("gpu-1", **attr(numa={"int": 1})),
                device("gpu-2", **attr(numa={"string": "1"})),
            )
        ],
        [claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
        'claim default/c: constraint matchAttribute "gpu.example.com/numa"',
    ),
    "match attribute: only across the requests named": Case(
        [
            slice_(
                "numa",
                device("gpu-1", **attr(numa={"int": 0})),
                device("gpu-2", **attr(numa={"int": 1})),
                device("nic-1", **attr(numa={"int": 1})),
            )
        ],
        [
            claim(
                "c",
                request("a"),
                request("b"),
                request("free"),
                constraints=[{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/numa"}],
            )
        ],
        [
            allocation(
                result("a", "gpu-2"),
                result("b", "nic-1"),
                result("free", "gpu-1"),
                node_selector=local(),
            )
        ],
    ),
    "distinct attribute": Case(
        [
            slice_(
                "numa",
                device("gpu-1", **attr(numa={"int": 0})),
                device("gpu-2", **attr(numa={"int": 0})),
                device("gpu-3", **attr(numa={"int": 1})),
            )
        ],
        [claim("c", request(count=2), constraints=[{"distinctAttribute": f"{DRIVER}/numa"}])],
        [allocation(result("req", "gpu-1"), result("req", "gpu-3"), node_selector=local())],
    ),
    "an attribute of another domain is not found unqualified": Case(
        [slice_("numa", device("gpu-1", **attr(numa={"int": 0})))],
        [claim("c", constraints=[{"matchAttribute": "other.example.com/numa"}])],
        'claim default/c: constraint matchAttribute "other.example.com/numa"',
    ),
    "all devices that break a constraint": Case(
        [
            slice_(
                "numa",
                device("gpu-1", **attr(numa={"int": 0})),
                device("gpu-2", **attr(numa={"int": 1})),
            )
        ],
        [
            claim(
                "c",
                request(allocationMode="All"),
                constraints=[{"matchAttribute": f"{DRIVER}/numa"}],
            )
        ],
        "error:claim default/c, request req: cannot add device gpu.example.com/pool-1/gpu-2 "
        "because a claim constraint would not be satisfied",
    ),
    # --- admin access -----------------------------------------------------------------------
    "admin access takes a device in use, not twice in its claim": Case(
        [GPU1],
        [claim("c", request(count=2, adminAccess=True))],
        [
            allocation(
                result("req", "gpu-1", adminAccess=True),
                result("req", "gpu-2", adminAccess=True),
                node_selector=local(),
            )
        ],
        allocated=[allocation(result("req", "gpu-1"), result("req", "gpu-2"))],
    ),
    "admin access, too few devices for its count": Case(
        [GPU1],
        [claim("c", request(count=3, adminAccess=True))],
        'claim default/c, request "req": needs 3 devices, 2 ',
    ),
    # --- configuration ----------------------------------------------------------------------
    "config: the class's first, then the claim's for the requests allocated": Case(
        [GPU1],
        [
            claim(
                "c",
                request("a"),
                request("b"),
                config=[
                    {"requests": ["a"], "opaque": opaque("claim-a")},
                    {"requests": ["x"], "opaque": opaque("claim-x")},
                    {"opaque": opaque("claim-all")},
                ],
            )
        ],
        [
            allocation(
                result("a", "gpu-1"),
                result("b", "gpu-2"),
                node_selector=local(),
                config=[
                    {"source": "FromClass", "opaque": opaque("class")},
                    {"source": "FromClaim", "requests": ["a"], "opaque": opaque("claim-a")},
                    {"source": "FromClaim", "opaque": opaque("claim-all")},
                ],
            )
        ],
        classes=[device_class("gpu", opaque("class"))],
    ),
    "config of a subrequest, by its full name": Case(
        [GPU1],
        [
            claim(
                "c",
                first_available("a", sub("x", class_name="other", count=3), sub("y")),
                request("b", class_name="other"),
                config=[
                    {"requests": ["a/y"], "opaque": opaque("y")},
                    {"requests": ["a/x"], "opaque": opaque("x")},
                ],
            )
        ],
        [
            allocation(
                result("a/y", "gpu-1"),
                result("b", "gpu-2"),
                node_selector=local(),
                config=[
                    {"source": "FromClass", "requests": ["a/y"], "opaque": opaque("class")},
                    {"source": "FromClaim", "requests": ["a/y"], "opaque": opaque("y")},
                ],
            )
        ],
        classes=[
            device_class("gpu", opaque("class")),
            {"metadata": {"name": "other"}, "spec": {"selectors": []}},
        ],
    ),
    # --- taints -----------------------------------------------------------------------------
    "a NoSchedule taint keeps a device out, None does not": Case(
        [
            slice_(
                "tainted",
                device("gpu-1", taints=[{"key": "broken", "effect": "NoSchedule"}]),
                device("gpu-2", taints=[{"key": "note", "effect": "None"}]),
            )
        ],
        [claim("c")],
        [allocation(result("req", "gpu-2"), node_selector=local())],
    ),
    "a NoExecute taint, no toleration": Case(
        [slice_("tainted", device("gpu-1", taints=[{"key": "gone", "effect": "NoExecute"}]))],
        [claim("c")],
        'claim default/c, request "req": no device',
    ),
    "a tolerated taint, tolerations copied into the result": Case(
        [
            slice_(
                "tainted",
                device("gpu-1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            )
        ],
        [claim("c", request(tolerations=[{"key": "k", "value": "v", "operator": "Equal"}]))],
        [
            allocation(
                result(
                    "req",
                    "gpu-1",
                    tolerations=[{"key": "k", "value": "v", "operator": "Equal"}],
                ),
                node_selector=local(),
            )
        ],
    ),
    "a toleration of another effect": Case(
        [slice_("tainted", device("gpu-1", taints=[{"key": "k", "effect": "NoExecute"}]))],
        [claim("c", request(tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]))],
        'claim default/c, request "req": no device',
    ),
    "a DeviceTaintRule taints the devices it selects": Case(
        [GPU1, slice_("other", device("gpu-1"), pool="pool-2")],
        [claim("c", request(count=2))],
        [
            allocation(
                result("req", "gpu-2"), result("req", "gpu-1", pool="pool-2"), node_selector=local()
            )
        ],
        taint_rules=[
            {
                "metadata": {"name": "maintenance"},
                "spec": {
                    "deviceSelector": {"driver": DRIVER, "pool": "pool-1", "device": "gpu-1"},
                    "taint": {"key": "maintenance", "effect": "NoSchedule"},
                },
            },
            {
                "metadata": {"name": "no-selector"},
                "spec": {"taint": {"key": "x", "effect": "NoSchedule"}},
            },
        ],
    ),
    "a DeviceTaintRule for a whole driver, tolerated": Case(
        [GPU1],
        [claim("c", request(tolerations=[{"key": "upgrade", "operator": "Exists"}]))],
        [
            allocation(
                result("req", "gpu-1", tolerations=[{"key": "upgrade", "operator": "Exists"}]),
                node_selector=local(),
            )
        ],
        taint_rules=[
            {
                "metadata": {"name": "upgrade"},
                "spec": {
                    "deviceSelector": {"driver": DRIVER},
                    "taint": {"key": "upgrade", "effect": "NoExecute"},
                },
            }
        ],
    ),
    # --- partitionable devices --------------------------------------------------------------
    "partitions share a counter: two halves fit, not a third": Case(
        [
            slice_(
                "counters",
                node=NODE,
                count=2,
                sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}],
            ),
            slice_(
                "partitions",
                *(
                    device(
                        f"half-{i}",
                        consumesCounters=[
                            {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}}
                        ],
                    )
                    for i in range(3)
                ),
                count=2,
            ),
        ],
        [claim("c", request(count=3))],
        'claim default/c, request "req": needs 3 devices, 2 ',
    ),
    "partitions: what allocated devices consume is not free": Case(
        [
            slice_(
                "counters",
                count=2,
                sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}],
            ),
            slice_(
                "partitions",
                device(
                    "whole",
                    consumesCounters=[
                        {"counterSet": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}
                    ],
                ),
                device(
                    "half",
                    consumesCounters=[
                        {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}}
                    ],
                ),
                count=2,
            ),
        ],
        [claim("c")],
        'claim default/c, request "req": no device',
        allocated=[allocation(result("req", "whole"))],
    ),
    "a device consuming a counter set that does not exist makes the pool invalid": Case(
        [
            slice_(
                "partitions",
                device("half", consumesCounters=[{"counterSet": "nope", "counters": {}}]),
            )
        ],
        [claim("c")],
        "kube:invalid resource pools were encountered",
    ),
    # --- consumable capacity ----------------------------------------------------------------
    "a shared device: each share consumes what it asks, rounded up by the policy": Case(
        [
            slice_(
                "shared",
                device(
                    "nic",
                    allowMultipleAllocations=True,
                    capacity={
                        "bandwidth": {
                            "value": "10G",
                            "requestPolicy": {
                                "default": "1G",
                                "validRange": {"min": "1G", "step": "1G"},
                            },
                        }
                    },
                ),
            )
        ],
        [
            claim("c1", request(capacity={"requests": {"bandwidth": "1500M"}})),
            claim("c2"),
        ],
        [
            allocation(
                result("req", "nic", shareID="share", consumedCapacity={"bandwidth": "2G"}),
                node_selector=local(),
            ),
            allocation(
                result("req", "nic", shareID="share", consumedCapacity={"bandwidth": "1G"}),
                node_selector=local(),
            ),
        ],
    ),
    "a shared device whose capacity is used up": Case(
        [
            slice_(
                "shared",
                device(
                    "nic",
                    allowMultipleAllocations=True,
                    capacity={"bandwidth": {"value": "10G"}},
                ),
            )
        ],
        [claim("c", request(capacity={"requests": {"bandwidth": "3G"}}))],
        'claim default/c, request "req": no device',
        allocated=[
            allocation(
                result("req", "nic", shareID="s1", consumedCapacity={"bandwidth": "8G"}),
            )
        ],
    ),
    "a capacity request above what a device has": Case(
        [slice_("plain", device("gpu-1", capacity={"memory": {"value": "8Gi"}}))],
        [claim("c", request(capacity={"requests": {"memory": "16Gi"}}))],
        'claim default/c, request "req": no device',
    ),
    # --- binding conditions -----------------------------------------------------------------
    "binding conditions and bindsToNode are copied": Case(
        [
            slice_(
                "fabric",
                device(
                    "gpu-1",
                    bindingConditions=["attached"],
                    bindingFailureConditions=["failed"],
                    bindsToNode=True,
                ),
                node=None,
                allNodes=True,
            )
        ],
        [claim("c")],
        [
            allocation(
                result(
                    "req",
                    "gpu-1",
                    bindingConditions=["attached"],
                    bindingFailureConditions=["failed"],
                ),
                node_selector=local(),
            )
        ],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    allocator = Allocator(
        AllocatedState.of(case.allocated),
        {c["metadata"]["name"]: c for c in case.classes},
        case.slices,
        DeviceSelectors(),
        new_share_id=lambda: "share",
        taint_rules=case.taint_rules,
    )
    expect = case.expect
    if isinstance(expect, str) and expect.startswith("error:"):
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(NODE, case.labels, case.claims)
        assert raised.value.message.startswith(expect.removeprefix("error:"))
        return
    got = allocator.allocate(NODE, case.labels, case.claims)
    if isinstance(expect, str):
        assert isinstance(got, Unallocatable), got
        if expect.startswith("kube:"):
            assert got.message == expect.removeprefix("kube:")
        else:
            assert got.reason.startswith(expect), got.reason
        return
    assert got == expect


def test_allocated_state_of_allocations() -> None:
    state = AllocatedState.of(
        [
            allocation(
                result("a", "gpu-1"),
                result("b", "gpu-2", adminAccess=True),
                result("c", "nic", shareID="s1", consumedCapacity={"bandwidth": "1G"}),
                result("d", "nic", shareID="s2", consumedCapacity={"bandwidth": "500M"}),
                result("e", "vf", shareID="s3"),
            )
        ]
    )
    nic, vf = DeviceID(DRIVER, "pool-1", "nic"), DeviceID(DRIVER, "pool-1", "vf")
    assert state.devices == {DeviceID(DRIVER, "pool-1", "gpu-1")}
    assert state.shared == {(nic, "s1"), (nic, "s2"), (vf, "s3")}
    assert state.consumed == {nic: {"bandwidth": 1_500_000_000}}
    assert state.in_use() == {DeviceID(DRIVER, "pool-1", "gpu-1"), nic, vf}


def test_allocate_leaves_its_inputs_alone() -> None:
    slices = [GPU1]
    claims = [claim("c", request(count=2))]
    before = repr((slices, claims))
    Allocator(AllocatedState(), {"gpu": device_class()}, slices, DeviceSelectors()).allocate(
        NODE, {}, claims
    )
    assert repr((slices, claims)) == before


def many(name: str, count: int, pool: str = "pool-1", driver: str = DRIVER) -> Obj:
    return slice_(name, *(device(f"device-{i}") for i in range(count)), pool=pool, driver=driver)


# kube's own counts of allocateOne calls (allocator_testing.go): the search steps as kube's.
STEPS = {
    "an oversized first subrequest is pruned": (
        [claim("c", request("a"), first_available("b", sub("huge", count=2**63 - 1), sub("one")))],
        [many("s", 2)],
        8,
        True,
    ),
    "two prioritized lists at the claim limit": (
        [
            claim(
                "c",
                first_available("a", sub("all", count=32), sub("half", count=16)),
                first_available("b", sub("all", count=32), sub("half", count=16)),
            )
        ],
        [many("s", 64)],
        75,
        True,
    ),
    "a prioritized all-devices request over the limit": (
        [
            claim(
                "c",
                first_available("a", sub("every", allocationMode="All"), sub("two", count=2)),
                request("b", class_name="other", count=2),
            )
        ],
        [many("s1", 31), many("s2", 2, pool="pool-2", driver="other.example.com")],
        42,
        True,
    ),
    "five of four devices: combinations, not permutations": (
        [claim("c", request(count=5))],
        [many("s", 4)],
        16,
        False,
    ),
}


@pytest.mark.parametrize(("claims", "slices", "steps", "found"), STEPS.values(), ids=STEPS.keys())
def test_search_steps_as_kube(
    claims: list[Obj], slices: list[Obj], steps: int, found: bool
) -> None:
    other: Obj = {
        "metadata": {"name": "other"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'other.example.com'"}}]},
    }
    gpu: Obj = {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }
    allocator = Allocator(AllocatedState(), {"gpu": gpu, "other": other}, slices, DeviceSelectors())
    got = allocator.allocate(NODE, {}, claims)
    assert isinstance(got, list) == found
    assert allocator.allocate_one_calls == steps


def test_a_search_past_its_time_is_an_error() -> None:
    steps = iter(range(100))
    allocator = Allocator(
        AllocatedState(), {"gpu": device_class()}, [many("s", 8)], DeviceSelectors()
    )
    with pytest.raises(AllocationTimeout) as raised:
        allocator.allocate(
            NODE, {}, [claim("c", request(count=9))], expired=lambda: next(steps) > 5
        )
    assert raised.value.message == "node node-1: timed out trying to allocate devices"


def test_slices_are_parsed_once_until_they_change() -> None:
    cache = SliceCache()
    first = cache.model(GPU1)
    assert cache.model(GPU1) is first
    changed = slice_("slice-1", device("gpu-1"))
    assert cache.model(changed) is not first
    cache.retain([changed])
    assert cache.model(changed) is cache.model(changed)
    assert cache.model(GPU1) is not first  # forgotten: parsed again


def test_allocated_state_kept_up_to_date() -> None:
    first = allocation(
        result("a", "gpu-1"), result("b", "nic", shareID="s1", consumedCapacity={"bw": "1G"})
    )
    second = allocation(result("c", "nic", shareID="s2", consumedCapacity={"bw": "2G"}))
    state = AllocatedState.of([first])
    snapshot = state.copy()
    state.add(second)
    nic = DeviceID(DRIVER, "pool-1", "nic")
    assert state.consumed == {nic: {"bw": 3_000_000_000}}
    state.discard(first)
    assert state.devices == set()
    assert state.shared == {(nic, "s2")}
    assert state.consumed == {nic: {"bw": 2_000_000_000}}
    state.discard(second)
    assert state == AllocatedState()
    assert snapshot == AllocatedState.of([first])


def test_many_claims_of_many_devices() -> None:
    claims = [claim(f"c{i}", request(count=32)) for i in range(80)]
    slices = [slice_("s", *(device(f"gpu-{i:04}") for i in range(32 * 80)))]
    allocator = Allocator(AllocatedState(), {"gpu": device_class()}, slices, DeviceSelectors())
    got = allocator.allocate(NODE, {}, claims)
    assert isinstance(got, list)
    assert [len(a["devices"]["results"]) for a in got] == [32] * 80
