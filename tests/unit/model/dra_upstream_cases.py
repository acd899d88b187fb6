"""The cases of kube's own allocator table, as data for ``test_dra_upstream.py``.

The table is ``TestAllocator`` (and ``TestLexicographicalAllocator``) of
``k8s.io/dynamic-resource-allocation@v0.37.2/structured/internal/allocatortesting``; each case keeps
the name it has there. The objects are built by small functions named after the Go file's builders
(``claim(...).with_requests(...)``, ``slice_with_devices(...)``, ``device(...).with_taints(...)``)
and are the raw ``resource.k8s.io/v1`` objects as the API serves them. What a case expects is
kube's: the ``status.allocation`` of each claim, in the claims' order, or kube's error text (the
substrings the Go case matches), or no allocation on the node.

Here are 222 of the table's 279 cases (275 and 4). Every one passes under the real v1.37.2
allocator with kube-scheduler's default gates (the allocator features it derives:
DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, DRAConsumableCapacity). Kube's
expectation lists a claim's results in any order; the real allocator's order is deterministic
and is the order written here, so the test compares in order.

Left out, because kube-scheduler v1.37.2 does not run them with its default gates:

- 27 cases that need DRAListTypeAttributes (alpha, off): ``list-attributes-*`` with the feature
  on and ``numanode-matchattribute-*``;
- 11 that need DRADeviceCompatibilityGroups (alpha, off): ``compatibility-groups-*`` with it on;
- 5 that need DRADerivedAttributes (alpha, off): ``derived-attributes*``;
- 2 that need DRAOptionalNodeOperations (alpha, off): ``optional-node-operations*``;
- 1 that needs DRAFractionalCapacityRange (off unless the minimum compatibility version is 1.37):
  ``consumable-capacity-fractional-range-gate-enabled-round-up``;
- 11 that test a default-on gate turned off, whose outcome differs with it on:
  ``admin-access-disabled``, ``binding-conditions-without-feature-gate``,
  ``consumable-capacity-disabled-feature``,
  ``consumable-capacity-disabled-feature-with-prioritized-list``,
  ``partitionable-devices-disabled-other-device-do-not-consume-counters``,
  ``partitionable-devices-disabled-per-device-node-selection``, ``prioritized-list-disabled``,
  ``tainted-admin-access-disabled``, ``tainted-all-devices-single-disabled``,
  ``tainted-disabled``, ``tainted-prioritized-list-disabled``.

Quantities are written in their canonical form: one case's consumed 10^21 is "1000E" (Go's
Quantity prints that value as "1"; the Go case compares values, not text).

Where a Go case counts the search's steps (``expectNumAllocateOneInvocations``, the value of the
incubating variant), so does the case here: ``allocate_one_calls``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Obj = dict[str, Any]
DeviceKey = tuple[str, str, str]
"""(driver, pool, device) of an allocated device."""

REGION_1 = "region-1"
REGION_2 = "region-2"
NODE_1 = "node-1"
NODE_2 = "node-2"
CLASS_A = "class-a"
CLASS_B = "class-b"
DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
POOL_1 = "pool-1"
POOL_2 = "pool-2"
POOL_3 = "pool-3"
POOL_4 = "pool-4"
REQ_0 = "req-0"
REQ_1 = "req-1"
REQ_2 = "req-2"
REQ_3 = "req-3"
SUB_REQ_0 = "subReq-0"
SUB_REQ_1 = "subReq-1"
REQ_0_SUB_REQ_0 = "req-0/subReq-0"
REQ_0_SUB_REQ_1 = "req-0/subReq-1"
REQ_1_SUB_REQ_0 = "req-1/subReq-0"
REQ_1_SUB_REQ_1 = "req-1/subReq-1"
REQ_2_SUB_REQ_0 = "req-2/subReq-0"
REQ_2_SUB_REQ_1 = "req-2/subReq-1"
CLAIM_0 = "claim-0"
CLAIM_1 = "claim-1"
SLICE_1 = "slice-1"
SLICE_2 = "slice-2"
SLICE_3 = "slice-3"
SLICE_4 = "slice-4"
DEVICE_0 = "device-0"
DEVICE_1 = "device-1"
DEVICE_2 = "device-2"
DEVICE_3 = "device-3"
DEVICE_4 = "device-4"
COUNTER_SET_1 = "counter-set-1"
COUNTER_SET_2 = "counter-set-2"
CAPACITY_0 = "capacity-0"
CAPACITY_1 = "capacity-1"

FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
"""Stands for every shareID in a result: kube makes a random one per allocation."""

ZERO = "0"
ONE = "1"
TWO = "2"
THREE = "3"
FOUR = "4"
POINT_ONE = "100m"
POINT_TWO = "200m"
POINT_TWO_FIVE = "250m"
POINT_THREE = "300m"

ALLOCATION_RESULTS_MAX_SIZE = 32
"""resourceapi.AllocationResultsMaxSize: at most this many devices per claim."""
MAX_INT = 2**63 - 1

FIELD_NAME_KEY = "metadata.name"
REGION_KEY = "region"
PLANET_KEY = "planet"
PLANET_VALUE_EARTH = "earth"

NON_EXISTENT_ATTRIBUTE = f"{DRIVER_A}/NonExistentAttribute"
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
INT_ATTRIBUTE = f"{DRIVER_A}/numa"
TAINT_KEY = "taint-key"
TAINT_VALUE = "taint-value"
TAINT_VALUE_2 = "taint-value-2"
TAINT_NONE = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "None"}
TAINT_NO_SCHEDULE = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": TAINT_KEY, "value": TAINT_VALUE_2, "effect": "NoExecute"}
TOLERATION_NO_SCHEDULE = {"operator": "Exists", "key": TAINT_KEY, "effect": "NoSchedule"}
TOLERATION_NO_EXECUTE = {
    "operator": "Equal",
    "key": TAINT_KEY,
    "value": TAINT_VALUE_2,
    "effect": "NoExecute",
}
TOLERATION_NO_SCHEDULE_KEY_1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}

FROM_COUNTERS = "fromCounters"
NODE_SELECTION_ALL = "nodeSelectionAll"
NODE_SELECTION_PER_DEVICE = "nodeSelectionPerDevice"


class Node(NamedTuple):
    name: str
    labels: dict[str, str]


def node(name: str, region: str) -> Node:
    return Node(name, {REGION_KEY: region, PLANET_KEY: PLANET_VALUE_EARTH})


def cel(expression: str) -> Obj:
    """A device selector."""
    return {"cel": {"expression": expression}}


def device_class(name: str, driver: str) -> Obj:
    """A DeviceClass selecting the devices of `driver`."""
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [cel(f'device.driver == "{driver}"')]},
    }


def class_with_allow_multiple_allocations(name: str, driver: str, multialloc: bool) -> Obj:
    multiple = str(multialloc).lower()
    expression = f'device.driver == "{driver}" && device.allowMultipleAllocations == {multiple}'
    return {"metadata": {"name": name}, "spec": {"selectors": [cel(expression)]}}


def device_configuration(driver: str, attribute: str) -> Obj:
    """Opaque parameters {attribute: attribute + "Value"} for `driver`."""
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def class_with_config(name: str, driver: str, attribute: str) -> Obj:
    out = device_class(name, driver)
    out["spec"]["config"] = [device_configuration(driver, attribute)]
    return out


def _without_empty(obj: Obj) -> Obj:
    return {key: value for key, value in obj.items() if value not in (None, [], {})}


class Request(dict[str, Any]):
    """A DeviceRequest of a claim."""

    def _exactly(self, **fields: Any) -> Request:
        out = Request(copy.deepcopy(self))
        out["exactly"].update(fields)
        return out

    def with_capacity_request(self, quantity: str | None) -> Request:
        return self._exactly(capacity=capacity_requests(quantity))

    def with_selectors(self, *selectors: Obj) -> Request:
        return self._exactly(selectors=list(selectors))

    def with_admin_access(self) -> Request:
        return self._exactly(adminAccess=True)

    def with_allocation_mode(self, mode: str, count: int | None = None) -> Request:
        """Kube's cases set these fields on a built request; the count stays unless given."""
        out = self._exactly(allocationMode=mode)
        if count is not None:
            out["exactly"]["count"] = count
        return out


def request(name: str, class_name: str, count: int, *selectors: Obj) -> Request:
    exactly = {
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count or None,
    }
    return Request(name=name, exactly=_without_empty(exactly | {"selectors": list(selectors)}))


def device_request(name: str, class_name: str, count: int) -> Request:
    return request(name, class_name, count)


def all_device_request(name: str, class_name: str) -> Request:
    return Request(name=name, exactly={"allocationMode": "All", "deviceClassName": class_name})


class SubRequest(dict[str, Any]):
    """One alternative of a request's firstAvailable list."""

    def with_allocation_mode(self, mode: str) -> SubRequest:
        return SubRequest(copy.deepcopy(self), allocationMode=mode)

    def with_capacity_request(self, quantity: str | None) -> SubRequest:
        return SubRequest(copy.deepcopy(self), capacity=capacity_requests(quantity))

    def with_all_devices(self) -> SubRequest:
        """Mode All, no count: what kube's cases set on a built sub-request."""
        out = self.with_allocation_mode("All")
        out.pop("count", None)
        return out


def sub_request(name: str, class_name: str, count: int, *fields: Obj) -> SubRequest:
    """`fields` are selectors (with "cel") and tolerations (the others)."""
    out: Obj = {
        "name": name,
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count or None,
        "selectors": [f for f in fields if "cel" in f],
        "tolerations": [f for f in fields if "cel" not in f],
    }
    return SubRequest(_without_empty(out))


def request_with_prioritized_list(name: str, *sub_requests: SubRequest) -> Request:
    return Request(name=name, firstAvailable=list(sub_requests))


class Claim(dict[str, Any]):
    """A ResourceClaim to allocate."""

    def _devices(self, **fields: Any) -> Claim:
        out = Claim(copy.deepcopy(self))
        out["spec"]["devices"].update(fields)
        return out

    def with_tolerations(self, *tolerations: Obj) -> Claim:
        out = Claim(copy.deepcopy(self))
        for each in out["spec"]["devices"]["requests"]:
            each["exactly"].setdefault("tolerations", []).extend(tolerations)
        return out

    def with_requests(self, *requests: Obj) -> Claim:
        return self._devices(requests=list(requests))

    def with_constraints(self, *constraints: Obj) -> Claim:
        return self._devices(constraints=list(constraints))

    def with_configs(self, configs: list[Obj]) -> Claim:
        return self._devices(config=configs)


def claim(name: str) -> Claim:
    return Claim(metadata={"name": name}, spec={"devices": {}})


def claim_with_requests(name: str, constraints: list[Obj] | None, *requests: Obj) -> Claim:
    return claim(name).with_requests(*requests).with_constraints(*(constraints or []))


def claim_with_request(name: str, req: str, class_name: str, *constraints: Obj) -> Claim:
    return claim_with_requests(name, list(constraints), request(req, class_name, 1))


def claim_with_device_config(
    name: str, req: str, class_name: str, driver: str, attribute: str
) -> Claim:
    return claim_with_request(name, req, class_name).with_configs(
        [device_configuration(driver, attribute)]
    )


def device_claim_config(requests: list[str], device_config: Obj) -> Obj:
    return {"requests": requests, **device_config}


def _capacities(capacity: dict[str, Any]) -> Obj:
    return {
        name: value if isinstance(value, dict) else {"value": value}
        for name, value in capacity.items()
    }


class Device(dict[str, Any]):
    """A device of a ResourceSlice."""

    capacity_from_counters = False

    def _with(self, **fields: Any) -> Device:
        return Device(copy.deepcopy(self), **fields)

    def with_taints(self, *taints: Obj) -> Device:
        return self._with(taints=[*self.get("taints", []), *taints])

    def with_device_counter_consumption(self, *consumptions: Obj) -> Device:
        consumes = [*self.get("consumesCounters", []), *consumptions]
        out = self._with(consumesCounters=consumes)
        if self.capacity_from_counters:
            out["capacity"] = {
                name: {"value": counter["value"]}
                for each in consumes
                for name, counter in each["counters"].items()
            }
        return out

    def with_node_selection(self, node_selection: Obj | str) -> Device:
        if isinstance(node_selection, dict):
            return self._with(nodeSelector=node_selection)
        if node_selection == NODE_SELECTION_ALL:
            return self._with(allNodes=True)
        return self._with(nodeName=node_selection)

    def with_binding_conditions(
        self, conditions: list[str], failure_conditions: list[str]
    ) -> Device:
        return self._with(bindingConditions=conditions, bindingFailureConditions=failure_conditions)

    def with_binds_to_node(self, binds_to_node: bool) -> Device:
        return self._with(bindsToNode=binds_to_node)

    def with_allow_multiple_allocations(self) -> Device:
        return self._with(allowMultipleAllocations=True)

    def _with_policies(self, capacity: dict[str, str], policy: Obj) -> Device:
        policies = {
            name: {"value": value, "requestPolicy": policy} for name, value in capacity.items()
        }
        return self._with(capacity={**self.get("capacity", {}), **policies})

    def with_capacity_request_policy_range(self, capacity: dict[str, str]) -> Device:
        """Each capacity shared in steps of 2 from 2 to 4, 2 by default."""
        valid_range = {"min": TWO, "step": TWO, "max": FOUR}
        return self._with_policies(capacity, {"default": TWO, "validRange": valid_range})

    def with_fractional_capacity_request_policy_range(self, capacity: dict[str, str]) -> Device:
        """Each capacity shared in steps of 100m from 200m to 1, 200m by default."""
        valid_range = {"min": POINT_TWO, "step": POINT_ONE, "max": ONE}
        return self._with_policies(capacity, {"default": POINT_TWO, "validRange": valid_range})

    def with_capacity_request_policy_valid_values(
        self, default: str, capacity: dict[str, str], additional: list[str] | None
    ) -> Device:
        valid_values = [default, *(additional or [])]
        return self._with_policies(capacity, {"default": default, "validValues": valid_values})


def device(name: str, capacity: dict[str, Any] | str | None, attributes: Obj | None) -> Device:
    """`capacity` FROM_COUNTERS: the counters it consumes, once set, are its capacity."""
    out = Device(_without_empty({"name": name, "attributes": attributes}))
    if isinstance(capacity, dict):
        out["capacity"] = _capacities(capacity)
    out.capacity_from_counters = capacity == FROM_COUNTERS
    return out


def device_counter_consumption(counter_set_name: str, counters: dict[str, str] | None) -> Obj:
    return _without_empty({"counterSet": counter_set_name, "counters": _capacities(counters or {})})


def device_counter_consumption_with_groups(
    counter_set_name: str, counters: dict[str, str], *groups: str
) -> Obj:
    out = device_counter_consumption(counter_set_name, counters)
    out["compatibilityGroups"] = list(groups)
    return out


def resource_pool(name: str, count: int, generation: int = 1) -> Obj:
    return {"name": name, "generation": generation, "resourceSliceCount": count}


def resource_slice(name: str, node_selection: Obj | str, pool: Obj | str, driver: str) -> Obj:
    """`node_selection`: a node name, a node selector, NODE_SELECTION_ALL or _PER_DEVICE;
    `pool`: a pool, or a name for a pool of one slice."""
    spec: Obj = {
        "driver": driver,
        "pool": resource_pool(pool, 1) if isinstance(pool, str) else pool,
    }
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == NODE_SELECTION_ALL:
        spec["allNodes"] = True
    elif node_selection == NODE_SELECTION_PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, *devices: Device
) -> Obj:
    out = resource_slice(name, node_selection, pool, driver)
    if devices:
        out["spec"]["devices"] = [dict(each) for each in devices]
    return out


def slice_with_counter_sets(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, *counter_sets: Obj
) -> Obj:
    out = resource_slice(name, node_selection, pool, driver)
    out["spec"]["sharedCounters"] = list(counter_sets)
    return out


def slice_with_no_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str
) -> Obj:
    return slice_with_devices(name, node_selection, pool, driver)


def slice_with_one_device(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str
) -> Obj:
    return slice_with_devices(name, node_selection, pool, driver, device(DEVICE_1, None, None))


def slice_with_multiple_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, count: int
) -> Obj:
    devices = [device(f"device-{i}", None, None) for i in range(count)]
    return slice_with_devices(name, node_selection, pool, driver, *devices)


def counter_set(name: str, counters: dict[str, str] | None) -> Obj:
    return _without_empty({"name": name, "counters": _capacities(counters or {})})


def device_id(driver: str, pool: str, device_name: str) -> DeviceKey:
    return (driver, pool, device_name)


def capacity_requests(quantity: str | None) -> Obj:
    return {"requests": {} if quantity is None else {CAPACITY_0: quantity}}


class Result(dict[str, Any]):
    """One device of an allocation result (DeviceRequestAllocationResult)."""

    def with_consumed_capacity(
        self, share_id: str | None, consumed: dict[str, str] | None
    ) -> Result:
        return Result(
            copy.deepcopy(self),
            **_without_empty({"shareID": share_id, "consumedCapacity": consumed}),
        )


def device_allocation_result(
    req: str,
    driver: str,
    pool: str,
    device_name: str,
    *tolerations: Obj,
    admin_access: bool = False,
) -> Result:
    out = {"request": req, "driver": driver, "pool": pool, "device": device_name}
    extra = {"tolerations": list(tolerations), "adminAccess": admin_access or None}
    return Result(_without_empty(out | extra))


def device_request_allocation_result(req: str, driver: str, pool: str, device_name: str) -> Result:
    return device_allocation_result(req, driver, pool, device_name)


def device_request_allocation_result_with_binding_conditions(  # noqa: PLR0917 (as kube's)
    req: str,
    driver: str,
    pool: str,
    device_name: str,
    conditions: list[str] | None,
    failure_conditions: list[str] | None,
    *tolerations: Obj,
) -> Result:
    out = device_allocation_result(req, driver, pool, device_name, *tolerations)
    conditions_fields = {
        "bindingConditions": conditions,
        "bindingFailureConditions": failure_conditions,
    }
    return Result(out | _without_empty(conditions_fields))


def multiple_device_allocation_results(
    req: str, driver: str, pool: str, count: int, start: int
) -> list[Result]:
    return [
        device_allocation_result(req, driver, pool, f"device-{i}")
        for i in range(start, start + count)
    ]


def node_label_selector(key: str, *values: str) -> Obj:
    requirement = {"key": key, "operator": "In", "values": list(values)}
    return {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}


def local_node_selector(node_name: str) -> Obj:
    requirement = {"key": FIELD_NAME_KEY, "operator": "In", "values": [node_name]}
    return {"nodeSelectorTerms": [{"matchFields": [requirement]}]}


def allocation_result_with_configs(
    selector: Obj | None, results: list[Result], configs: list[Obj] | None
) -> Obj:
    devices = _without_empty({"results": results, "config": configs})
    return _without_empty({"devices": devices, "nodeSelector": selector})


def allocation_result(selector: Obj | None, *results: Result) -> Obj:
    return allocation_result_with_configs(selector, list(results), None)


def allocation_result_with_config(
    selector: Obj | None, driver: str, source: str, attribute: str, *results: Result
) -> Obj:
    config = {"source": source, **device_configuration(driver, attribute)}
    return allocation_result_with_configs(selector, list(results), [config])


@dataclass(frozen=True)
class Case:
    """One case: what the scheduler knows, and kube's outcome on `node`.

    `expect` None (or empty) with claims to allocate: kube finds no allocation on the node.
    `error`: substrings of kube's error; "invalid resource pools were encountered" is the one
    error kube reports as the node being unschedulable rather than as fatal."""

    claims: list[Claim] = field(default_factory=list)
    allocated: list[DeviceKey] = field(default_factory=list)
    shared: set[tuple[DeviceKey, str]] = field(default_factory=set)
    consumed: dict[DeviceKey, dict[str, str]] = field(default_factory=dict)
    classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] | None = None
    node: Node = field(default_factory=lambda: node(NODE_1, REGION_1))
    expect: list[Obj] | None = None
    error: tuple[str, ...] = ()
    allocate_one_calls: int | None = None
    """How often kube's search calls allocateOne for the case, where kube's case says."""


CASES: dict[str, Case] = {
    "empty": Case(),
    "compatibility-groups-disabled-skips-grouped-pool": Case(
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(COUNTER_SET_1, {CAPACITY_0: TWO}, "mig")
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {CAPACITY_0: FOUR}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_A,
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {CAPACITY_0: TWO})
                ),
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_2, {CAPACITY_0: FOUR}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    "compatibility-groups-disabled-skips-ungrouped-device-in-grouped-pool": Case(
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(COUNTER_SET_1, {CAPACITY_0: ONE}, "mig")
                ),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: ONE})
                ),
            ),
            slice_with_counter_sets(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {CAPACITY_0: FOUR}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "simple": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "other-node": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
            slice_with_one_device(SLICE_2, NODE_2, POOL_2, DRIVER_A),
        ],
        node=node(NODE_2, REGION_2),
        expect=[
            allocation_result(
                local_node_selector(NODE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "small-and-large": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(
                    REQ_0,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
                ),
                request(
                    REQ_1,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {"memory": "1Gi"}, None),
                device(DEVICE_2, {"memory": "2Gi"}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(
                    REQ_0,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
                ),
                request(
                    REQ_1,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_2, {"memory": "2Gi"}, None),
                device(DEVICE_1, {"memory": "1Gi"}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(
                    REQ_0,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
                ),
            ),
            claim_with_requests(
                CLAIM_1,
                None,
                request(
                    REQ_1,
                    CLASS_A,
                    1,
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                ),
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_2, {"memory": "2Gi"}, None),
                device(DEVICE_1, {"memory": "1Gi"}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            ),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "count": 2,
                        "allocationMode": "ExactCount",
                        "deviceClassName": CLASS_A,
                    },
                },
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                "slice-1-obsolete",
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                "slice-1-obsolete",
                NODE_1,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "duplicate-slice": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A),
            slice_with_one_device(SLICE_1 + "-2", NODE_1, resource_pool(POOL_1, 2), DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "no-slices": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=None,
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "not-enough-suitable-devices": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A),
            claim_with_request(CLAIM_0, REQ_1, CLASS_A),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "no-classes": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
        error=("could not retrieve device class class-a",),
    ),
    "unknown-class": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, "unknown-class")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
        error=("could not retrieve device class unknown-class",),
    ),
    "empty-class": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, "")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
        error=(
            "claim claim-0, request req-0: missing device class name (unsupported request type?)",
        ),
    ),
    "no-claims-to-allocate": Case(
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "all-devices-single": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "all-devices-with-consumed-counters": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "all-devices-many": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_1, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {
                    "name": REQ_0,
                    "exactly": {"allocationMode": "All", "count": 1, "deviceClassName": CLASS_A},
                },
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
        error=(
            "claim claim-0, request req-0: asks for all devices, "
            "but resource pool driver-a/pool-1 is currently being updated",
        ),
    ),
    "all-devices-plus-another": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_B,
                    },
                },
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1),
            ),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_B,
                    },
                },
            ),
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
        ],
    ),
    "all-devices-many-plus-another": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_B,
                    },
                },
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1),
            ),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_B,
                    },
                },
            ),
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            ),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=[
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_A,
                    },
                },
            ),
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            ),
            claim_with_requests(
                CLAIM_1,
                None,
                {
                    "name": REQ_0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": CLASS_A,
                    },
                },
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    "all-devices-slice-without-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_no_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "all-devices-no-slices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=None,
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "all-devices-some-allocated": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "all-devices-some-allocated-admin-access": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1).with_admin_access().with_allocation_mode("All"),
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, admin_access=True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1).with_admin_access(),
                request(REQ_1, CLASS_A, 1).with_admin_access().with_allocation_mode("All"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1)
                .with_admin_access()
                .with_allocation_mode("ExactCount", 2),
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, admin_access=True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1).with_admin_access()),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1).with_admin_access()),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
            ),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1).with_admin_access()),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
            ),
        ],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1).with_all_devices(),
                    sub_request(SUB_REQ_1, CLASS_B, 1),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_no_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1),
            )
        ],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1).with_all_devices(),
                    sub_request(SUB_REQ_1, CLASS_B, 1),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1),
            )
        ],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1).with_all_devices(),
                    sub_request(SUB_REQ_1, CLASS_B, 1),
                )
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1),
            )
        ],
    ),
    "network-attached-device": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector(REGION_KEY, REGION_1), POOL_1, DRIVER_A
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                node_label_selector(REGION_KEY, REGION_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector(REGION_KEY, REGION_1), POOL_1, DRIVER_A
            )
        ],
        node=node(NODE_2, REGION_2),
        expect=None,
    ),
    "many-network-attached-devices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 4))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector(REGION_KEY, REGION_1), POOL_1, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, NODE_SELECTION_ALL, POOL_2, DRIVER_A),
            slice_with_one_device(
                SLICE_1, node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH), POOL_3, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, local_node_selector(NODE_1), POOL_4, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": REGION_KEY, "operator": "In", "values": [REGION_1]},
                                {
                                    "key": PLANET_KEY,
                                    "operator": "In",
                                    "values": [PLANET_VALUE_EARTH],
                                },
                            ],
                            "matchFields": [
                                {"key": FIELD_NAME_KEY, "operator": "In", "values": [NODE_1]}
                            ],
                        }
                    ]
                },
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_3, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_4, DEVICE_1),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector(REGION_KEY, REGION_1), POOL_1, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "several-different-drivers": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A),
            claim_with_request(CLAIM_0, REQ_0, CLASS_B),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1),
            ),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1), device_id(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "admin-access-enabled": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1).with_admin_access())],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1), device_id(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True),
            )
        ],
    ),
    "with-constraint": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [
                    {"matchAttribute": INT_ATTRIBUTE},
                    {"matchAttribute": VERSION_ATTRIBUTE},
                    {"matchAttribute": STRING_ATTRIBUTE},
                    {"matchAttribute": BOOL_ATTRIBUTE},
                ],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 1},
                        "stringAttribute": {"string": "stringAttributeValue"},
                        "boolAttribute": {"bool": True},
                    },
                ),
                device(
                    DEVICE_2,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 1},
                        "stringAttribute": {"string": "stringAttributeValue"},
                        "boolAttribute": {"bool": True},
                    },
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A, {"matchAttribute": NON_EXISTENT_ATTRIBUTE})
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": INT_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"numa": {"int": 1}}),
                device(DEVICE_2, None, {"numa": {"int": 2}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [{"matchAttribute": INT_ATTRIBUTE}],
                request(REQ_0, CLASS_A, 0).with_allocation_mode("All"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"numa": {"int": 1}}),
                device(DEVICE_2, None, {"numa": {"int": 2}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
            "because a claim constraint would not be satisfied",
        ),
    ),
    "partitionable-all-mode-constraint-must-error-with-reserved-counter": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [{"matchAttribute": INT_ATTRIBUTE}],
                request(REQ_0, CLASS_A, 0).with_allocation_mode("All"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, {"numa": {"int": 1}}),
                device(DEVICE_2, None, {"numa": {"int": 2}}).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
            "because a claim constraint would not be satisfied",
        ),
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "stringAttributeValue"}}),
                device(DEVICE_2, None, {"stringAttribute": {"string": "stringAttributeValue2"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": BOOL_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"boolAttribute": {"bool": True}}),
                device(DEVICE_2, None, {"boolAttribute": {"bool": False}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": VERSION_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"driverVersion": {"version": "1.0.0"}}),
                device(DEVICE_2, None, {"driverVersion": {"version": "2.0.0"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-constraint-for-request": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [{"requests": [REQ_0], "matchAttribute": VERSION_ATTRIBUTE}],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"driverVersion": {"version": "1.0.0"}}),
                device(DEVICE_2, None, {"driverVersion": {"version": "2.0.0"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "with-constraint-for-request-retry": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [
                    {"requests": [REQ_0], "matchAttribute": VERSION_ATTRIBUTE},
                    {"matchAttribute": STRING_ATTRIBUTE},
                ],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1,
                    None,
                    {"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}},
                ),
                device(
                    DEVICE_2,
                    None,
                    {"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}},
                ),
                device(
                    DEVICE_3,
                    None,
                    {"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}},
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[class_with_config(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)],
                [
                    {
                        "source": "FromClass",
                        "requests": None,
                        **device_configuration(DRIVER_A, "classAttribute"),
                    }
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                [],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
                request(REQ_2, CLASS_B, 1),
            )
        ],
        classes=[
            class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
            class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
        ],
        slices=[
            slice_with_multiple_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2),
            slice_with_one_device(SLICE_2, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_0),
                    device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                    device_allocation_result(REQ_2, DRIVER_B, POOL_1, DEVICE_1),
                ],
                [
                    {
                        "source": "FromClass",
                        "requests": [REQ_0, REQ_1],
                        **device_configuration(DRIVER_A, "classAttribute-A"),
                    },
                    {
                        "source": "FromClass",
                        "requests": [REQ_2],
                        **device_configuration(DRIVER_B, "classAttribute-B"),
                    },
                ],
            )
        ],
    ),
    "with-claim-config-for-two-requests": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
                request(REQ_2, CLASS_A, 1),
            ).with_configs(
                [
                    device_claim_config(
                        [REQ_0, REQ_1], device_configuration(DRIVER_A, "deviceAttribute")
                    )
                ]
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_multiple_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 3)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_0),
                    device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                    device_allocation_result(REQ_2, DRIVER_A, POOL_1, DEVICE_2),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": [REQ_0, REQ_1],
                        **device_configuration(DRIVER_A, "deviceAttribute"),
                    }
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[claim_with_device_config(CLAIM_0, REQ_0, CLASS_A, DRIVER_A, "deviceAttribute")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_config(
                local_node_selector(NODE_1),
                DRIVER_A,
                "FromClaim",
                "deviceAttribute",
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1, {}))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("CEL expression empty (unsupported selector type?)",),
    ),
    "unknown-allocation-mode": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 1).with_allocation_mode("future-mode", 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("unsupported count mode future-mode",),
    ),
    "unknown-constraint": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A, {})],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("empty constraint (unsupported constraint type?)",),
    ),
    "invalid-CEL-one-device": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1, cel("noSuchVar")))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("undeclared reference",),
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[{"metadata": {"name": CLASS_A}, "spec": {"selectors": [cel("noSuchVar")]}}],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("undeclared reference",),
    ),
    "invalid-CEL-all-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, cel("noSuchVar")).with_allocation_mode("All"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error=("undeclared reference",),
    ),
    "too-many-devices-single-request": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 500))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=("exceeds the claim limit",),
    ),
    "many-devices-okay": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
    ),
    "too-many-devices-total": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_multiple_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE + 1
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("exceeds the claim limit",),
    ),
    "exact-count-total-overflows-claim-limit": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ_1, CLASS_A, MAX_INT // 2 + 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=("exceeds the claim limit",),
    ),
    "exact-count-total-would-wrap-to-zero": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ_1, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ_2, CLASS_A, MAX_INT // 2 + 1),
                device_request(REQ_3, CLASS_A, MAX_INT // 2 + 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=("exceeds the claim limit",),
    ),
    "exact-count-sum-exceeds-claim-limit": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 20), device_request(REQ_1, CLASS_A, 20)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=(
            "request " + REQ_1,
            "exceeds the claim limit",
        ),
    ),
    "exact-count-sum-exactly-fills-claim-limit": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                device_request(REQ_1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_multiple_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                *[
                    *multiple_device_allocation_results(
                        REQ_0, DRIVER_A, POOL_1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0
                    ),
                    *multiple_device_allocation_results(
                        REQ_1,
                        DRIVER_A,
                        POOL_1,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                    ),
                ],
            )
        ],
    ),
    "all-devices-invalid-CEL": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 500))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=("exceeds the claim limit",),
    ),
    "prioritized-list-first-unavailable": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 1), sub_request(SUB_REQ_1, CLASS_A, 1)
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-non-available": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 2), sub_request(SUB_REQ_1, CLASS_A, 2)
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "prioritized-list-device-config": Case(
        claims=[
            claim(CLAIM_0)
            .with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 1), sub_request(SUB_REQ_1, CLASS_B, 2)
                )
            )
            .with_configs(
                [
                    device_claim_config([REQ_0_SUB_REQ_0], device_configuration(DRIVER_A, "foo")),
                    device_claim_config([REQ_0_SUB_REQ_1], device_configuration(DRIVER_B, "bar")),
                ]
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_B,
                device(DEVICE_1, None, {}),
                device(DEVICE_2, None, {}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_1),
                    device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_2),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": None,
                        **device_configuration(DRIVER_B, "bar"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 2), sub_request(SUB_REQ_1, CLASS_B, 2)
                )
            )
        ],
        classes=[
            class_with_config(CLASS_A, DRIVER_A, "foo"),
            class_with_config(CLASS_B, DRIVER_B, "bar"),
        ],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_B,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_3, None, None)),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_1),
                    device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_2),
                ],
                [
                    {
                        "source": "FromClass",
                        "requests": None,
                        **device_configuration(DRIVER_B, "bar"),
                    }
                ],
            )
        ],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        claims=[
            claim(CLAIM_0)
            .with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 1), sub_request(SUB_REQ_1, CLASS_B, 1)
                ),
                device_request(REQ_1, CLASS_A, 1),
            )
            .with_configs(
                [
                    device_claim_config(
                        [REQ_0_SUB_REQ_0, REQ_0_SUB_REQ_1], device_configuration(DRIVER_A, "scoped")
                    )
                ]
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with_multiple_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0_SUB_REQ_0, DRIVER_A, POOL_1, DEVICE_0),
                    device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": [REQ_0_SUB_REQ_0, REQ_0_SUB_REQ_1],
                        **device_configuration(DRIVER_A, "scoped"),
                    }
                ],
            )
        ],
    ),
    "claim-config-covering-all-requests-is-cleared": Case(
        claims=[
            claim(CLAIM_0)
            .with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 1), sub_request(SUB_REQ_1, CLASS_B, 1)
                ),
                device_request(REQ_1, CLASS_A, 1),
            )
            .with_configs(
                [
                    device_claim_config(
                        [REQ_0_SUB_REQ_0, REQ_1], device_configuration(DRIVER_A, "all")
                    )
                ]
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with_multiple_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result_with_configs(
                local_node_selector(NODE_1),
                [
                    device_allocation_result(REQ_0_SUB_REQ_0, DRIVER_A, POOL_1, DEVICE_0),
                    device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": None,
                        **device_configuration(DRIVER_A, "all"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_selectors(
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0')
                ),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        2,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {"memory": "2Gi"}, None),
                device(DEVICE_2, {"memory": "2Gi"}, None),
                device(DEVICE_3, {"memory": "1Gi"}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"requests": [REQ_0, REQ_1], "matchAttribute": VERSION_ATTRIBUTE})
            .with_requests(
                device_request(REQ_0, CLASS_A, 1).with_selectors(
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0')
                ),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                POOL_2,
                DRIVER_A,
                device(DEVICE_2, {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}),
                device(DEVICE_3, {"memory": "1Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_3),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints(
                {"requests": [REQ_0, REQ_1_SUB_REQ_0], "matchAttribute": VERSION_ATTRIBUTE}
            )
            .with_requests(
                device_request(REQ_0, CLASS_A, 1).with_selectors(
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0')
                ),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                POOL_2,
                DRIVER_A,
                device(DEVICE_2, {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1).with_all_devices(),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, 0).with_allocation_mode("All"),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "prioritized-list-multi-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_1, CLASS_A, 1).with_selectors(
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0')
                ),
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1, {"memory": "8Gi"}, {})
            ),
            slice_with_devices(
                SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_2, {"memory": "4Gi"}, {})
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    "prioritized-list-with-backtracking": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                ),
                device_request(REQ_1, CLASS_A, 1).with_selectors(
                    cel('device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0')
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1, {"memory": "8Gi"}, {})
            ),
            slice_with_devices(
                SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_2, {"memory": "4Gi"}, {})
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 500), sub_request(SUB_REQ_1, CLASS_A, 1)
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-minimum-sum-exceeds-claim-limit": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 20),
                request_with_prioritized_list(
                    REQ_1, sub_request(SUB_REQ_0, CLASS_A, 20), sub_request(SUB_REQ_1, CLASS_A, 24)
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error=(
            "request " + REQ_1,
            "exceeds the claim limit",
        ),
    ),
    "prioritized-list-overflowing-first-subrequest-is-pruned": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, MAX_INT),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
        allocate_one_calls=8,
    ),
    "partitionable-devices-single-device": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "partitionable-devices-counter-quantities-are-not-modified": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "9E"})
                ),
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "10E"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "partitionable-devices-counter-cache-scoped-by-pool-ID": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1)),
            claim_with_requests(CLAIM_1, None, request(REQ_1, CLASS_B, 1)),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_B,
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "2"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_B,
                counter_set(COUNTER_SET_1, {"c": "2"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_B, POOL_1, DEVICE_2),
            ),
        ],
    ),
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1)),
            claim_with_requests(CLAIM_1, None, request(REQ_1, CLASS_B, 1)),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_B,
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"d": "2"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_B,
                counter_set(COUNTER_SET_2, {"d": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "partitionable-devices-taint-releases-counter": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_taints(TAINT_NO_SCHEDULE)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "partitionable-devices-constraint-releases-counter": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(
                    DEVICE_1, None, {"stringAttribute": {"string": "red"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
                device(
                    DEVICE_2, None, {"stringAttribute": {"string": "blue"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
                device(
                    DEVICE_3, None, {"stringAttribute": {"string": "blue"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "2"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-consumable-capacity-backtrack-releases-counter": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, cel('device.attributes["driver-a"].kind == "shared"')),
                request(
                    REQ_1, CLASS_A, 1, cel('device.attributes["driver-a"].kind == "counteronly"')
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, {"kind": {"string": "shared"}})
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
                device(DEVICE_2, None, {"kind": {"string": "shared"}}),
                device(
                    DEVICE_3, None, {"kind": {"string": "counteronly"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "consumable-capacity-rejection-rolls-back-constraints": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1)
                .with_capacity_request(TWO)
                .with_selectors(cel('device.attributes["driver-a"].stringAttribute == "cap"'))
            ),
            claim(CLAIM_1)
            .with_constraints({"matchAttribute": STRING_ATTRIBUTE})
            .with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.attributes["driver-a"].stringAttribute == "cap"'),
                    )
                    .with_allocation_mode("All")
                    .with_capacity_request(TWO),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.attributes["driver-a"].stringAttribute == "fb"'),
                    ),
                )
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1, {CAPACITY_0: TWO}, {"stringAttribute": {"string": "cap"}}
                ).with_allow_multiple_allocations(),
                device(DEVICE_2, None, {"stringAttribute": {"string": "fb"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            ),
        ],
    ),
    "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, cel('device.attributes["driver-a"].kind == "shared"')),
            ),
            claim_with_requests(
                CLAIM_1,
                [{"matchAttribute": STRING_ATTRIBUTE, "requests": [REQ_1, REQ_2]}],
                request(
                    REQ_1,
                    CLASS_A,
                    1,
                    cel(
                        'device.attributes["driver-a"].kind == "shared" || '
                        'device.attributes["driver-a"].kind == "fallback"'
                    ),
                ),
                request(REQ_2, CLASS_A, 1, cel('device.attributes["driver-a"].kind == "gate"')),
                request(REQ_3, CLASS_A, 1, cel('device.attributes["driver-a"].kind == "shared"')),
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(
                    DEVICE_1,
                    None,
                    {"kind": {"string": "shared"}, "stringAttribute": {"string": "red"}},
                )
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
                device(
                    DEVICE_2,
                    None,
                    {"kind": {"string": "fallback"}, "stringAttribute": {"string": "blue"}},
                ),
                device(
                    DEVICE_3,
                    None,
                    {"kind": {"string": "gate"}, "stringAttribute": {"string": "blue"}},
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_2, DRIVER_A, POOL_1, DEVICE_3),
                device_request_allocation_result(
                    REQ_3, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            ),
        ],
    ),
    "partitionable-devices-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 1), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "4"}),
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "6"}),
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "4"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "18Gi"}),
                counter_set(COUNTER_SET_2, {"cpus": "8"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-multiple-counters": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 1), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi", "cpus": "6"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "4", "memory": "2Gi"}),
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi", "cpus": "4"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "6", "memory": "6Gi"}),
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi", "cpus": "4"}),
                    device_counter_consumption(COUNTER_SET_2, {"cpus": "4", "memory": "4Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"cpus": "8", "memory": "18Gi"}),
                counter_set(COUNTER_SET_2, {"cpus": "12", "memory": "18Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-multiple-pools": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 1), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "6", "memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "4", "memory": "6Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "4", "memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"cpus": "8", "memory": "18Gi"}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "6", "memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "1", "memory": "7Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpus": "1", "memory": "7Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"cpus": "8", "memory": "18Gi"}),
            ),
        ],
        allocated=[
            device_id(DRIVER_A, POOL_1, DEVICE_2),
            device_id(DRIVER_A, POOL_1, DEVICE_3),
            device_id(DRIVER_A, POOL_2, DEVICE_1),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_2, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "5Gi"})
                ),
                device(DEVICE_2, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
                device(DEVICE_3, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi", "unused": "1Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-no-capacity-available": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "16Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2, NODE_1, POOL_1, DRIVER_A, counter_set(COUNTER_SET_1, {"memory": "18Gi"})
            ),
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_2)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "20Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2, NODE_1, POOL_1, DRIVER_A, counter_set(COUNTER_SET_1, {"memory": "18Gi"})
            ),
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_2)],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2, NODE_1, POOL_1, DRIVER_A, counter_set(COUNTER_SET_1, {"memory": "18Gi"})
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_node_selection(NODE_1),
                device(DEVICE_2, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                )
                .with_node_selection(NODE_2),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "18Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_node_selection(node_label_selector(REGION_KEY, REGION_1)),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "18Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": REGION_KEY, "operator": "In", "values": [REGION_1]}
                            ]
                        }
                    ]
                },
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 3), request(REQ_1, CLASS_B, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_node_selection(node_label_selector(REGION_KEY, REGION_1)),
                device(DEVICE_2, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_node_selection(NODE_1),
                device(DEVICE_3, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_node_selection(NODE_SELECTION_ALL),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_SELECTION_PER_DEVICE,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "18Gi"}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_B,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"memory": "4Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"memory": "4Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_2, 2),
                DRIVER_B,
                counter_set(COUNTER_SET_2, {"memory": "12Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": FIELD_NAME_KEY, "operator": "In", "values": [NODE_1]}
                            ]
                        }
                    ]
                },
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
                device_allocation_result(REQ_1, DRIVER_B, POOL_2, DEVICE_1),
                device_allocation_result(REQ_1, DRIVER_B, POOL_2, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_B, POOL_2, DEVICE_3),
            )
        ],
    ),
    "tainted-two-devices": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
                device(DEVICE_2, None, None).with_taints(TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "tainted-one-device-two-taints": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "tainted-two-devices-tolerated": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A).with_tolerations(TOLERATION_NO_EXECUTE)
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
                device(DEVICE_2, None, None).with_taints(TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, TOLERATION_NO_EXECUTE),
            )
        ],
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1),
                    sub_request(SUB_REQ_1, CLASS_A, 1, TOLERATION_NO_EXECUTE),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
                device(DEVICE_2, None, None).with_taints(TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(
                    REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2, TOLERATION_NO_EXECUTE
                ),
            )
        ],
    ),
    "tainted-no-effect": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NONE),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[
            claim_with_request(CLAIM_0, REQ_0, CLASS_A).with_tolerations(
                TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1, TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE
                ),
            )
        ],
    ),
    "tainted-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 1), sub_request(SUB_REQ_1, CLASS_A, 1)
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "tainted-admin-access": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1).with_admin_access())],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1), device_id(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "tainted-all-devices-single": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_taints(TAINT_NO_SCHEDULE),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "prioritized-list-allocation-mode-all": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 0).with_allocation_mode("All"),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            )
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_2)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v6"'),
                    ).with_allocation_mode("All"),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v5"'),
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"generation": {"string": "v5"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v6"'),
                    ).with_allocation_mode("All"),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v5"'),
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"generation": {"string": "v5"}}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                POOL_2,
                DRIVER_A,
                device(DEVICE_1, None, {"generation": {"string": "v5"}}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v6"'),
                    ).with_allocation_mode("All"),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v5"'),
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"generation": {"string": "v5"}}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_2,
                POOL_2,
                DRIVER_A,
                device(DEVICE_1, None, {"generation": {"string": "v5"}}),
                device(DEVICE_2, None, {"generation": {"string": "v6"}}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v6"'),
                    ).with_allocation_mode("All"),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        0,
                        cel('device.attributes["driver-a"].generation == "v5"'),
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[
            {
                "metadata": {"name": CLASS_A},
                "spec": {
                    "selectors": [
                        cel('device.driver == "driver-a" && device.attributes["driver-a"].selected')
                    ]
                },
            }
        ],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1, None, {"generation": {"string": "v6"}, "selected": {"bool": False}}
                ),
                device(
                    DEVICE_2, None, {"generation": {"string": "v5"}, "selected": {"bool": False}}
                ),
                device(
                    DEVICE_3, None, {"generation": {"string": "v5"}, "selected": {"bool": True}}
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "max-number-devices": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_multiple_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                *multiple_device_allocation_results(
                    REQ_0, DRIVER_A, POOL_1, ALLOCATION_RESULTS_MAX_SIZE, 0
                ),
            )
        ],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 2),
                request(REQ_1, CLASS_A, 1, cel('device.attributes["driver-a"].special')),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, {"special": {"bool": True}}).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpu1": "1"}),
                    device_counter_consumption(COUNTER_SET_2, {"mem": "10Gi"}),
                ),
                device(
                    DEVICE_2, None, {"special": {"bool": False}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpu2": "1"}),
                    device_counter_consumption(COUNTER_SET_2, {"mem": "10Gi"}),
                ),
                device(
                    DEVICE_3, None, {"special": {"bool": False}}
                ).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"cpu3": "1"}),
                    device_counter_consumption(COUNTER_SET_2, {"mem": "10Gi"}),
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"cpu1": "1", "cpu2": "1", "cpu3": "1"}),
                counter_set(COUNTER_SET_2, {"mem": "30Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(SUB_REQ_1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(SUB_REQ_1, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_multiple_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE * 2
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                *[
                    *multiple_device_allocation_results(
                        REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0
                    ),
                    *multiple_device_allocation_results(
                        REQ_1_SUB_REQ_1,
                        DRIVER_A,
                        POOL_1,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                    ),
                ],
            )
        ],
        allocate_one_calls=75,
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 0).with_allocation_mode("All"),
                    sub_request(SUB_REQ_1, CLASS_A, 2),
                ),
                device_request(REQ_1, CLASS_B, 2),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[
            slice_with_multiple_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE - 1
            ),
            slice_with_multiple_devices(SLICE_2, NODE_1, POOL_2, DRIVER_B, 2),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, "device-0"),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, "device-1"),
                device_allocation_result(REQ_1, DRIVER_B, POOL_2, "device-0"),
                device_allocation_result(REQ_1, DRIVER_B, POOL_2, "device-1"),
            )
        ],
        allocate_one_calls=42,
    ),
    "device-binding-conditions": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "binding-conditions-multiple-devices": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 2), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
                device(DEVICE_2, None, None).with_binding_conditions(
                    ["IsPrepare2"], ["BindingFailed2"]
                ),
                device(DEVICE_3, None, None).with_binding_conditions(
                    ["IsPrepare3"], ["BindingFailed3"]
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_1, DRIVER_A, POOL_1, DEVICE_3, ["IsPrepare3"], ["BindingFailed3"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "binding-conditions-with-and-without": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 1), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_1, DRIVER_A, POOL_1, DEVICE_2, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "node-restriction": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH),
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_binds_to_node(True),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
                device(DEVICE_2, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare2"], ["BindingFailed2"]),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 3))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "2Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "2Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsReady"], ["BindingTimeout"]),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_3, ["IsReady"], ["BindingTimeout"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                SLICE_3,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                counter_set(COUNTER_SET_2, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"])
                .with_taints({"key": "key1", "value": "value1", "effect": "NoSchedule"}),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2, NODE_1, POOL_1, DRIVER_A, counter_set(COUNTER_SET_1, {"memory": "8Gi"})
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2)).with_tolerations(
                TOLERATION_NO_SCHEDULE_KEY_1
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"])
                .with_taints({"key": "key1", "value": "value1", "effect": "NoSchedule"}),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0,
                            DRIVER_A,
                            POOL_1,
                            DEVICE_1,
                            ["IsPrepare"],
                            ["BindingFailed"],
                            TOLERATION_NO_SCHEDULE_KEY_1,
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0,
                            DRIVER_A,
                            POOL_1,
                            DEVICE_2,
                            None,
                            None,
                            TOLERATION_NO_SCHEDULE_KEY_1,
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_1: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(  # noqa: E501
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request(ONE)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_1: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1)),
            claim(CLAIM_1).with_requests(device_request(REQ_0, CLASS_A, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1)),
            claim(CLAIM_1).with_requests(device_request(REQ_0, CLASS_A, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(  # noqa: E501
        claims=[
            claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1)),
            claim(CLAIM_1).with_requests(device_request(REQ_0, CLASS_A, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
            claim(CLAIM_1).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1)),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1)),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(ZERO, {CAPACITY_0: ONE}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ZERO}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ZERO}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(ZERO, {CAPACITY_0: ONE}, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
            claim(CLAIM_1).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("3")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: FOUR}),
            )
        ],
    ),
    "consumable-capacity-range-policy-request-above-int64-rejected": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("cannot be represented",),
    ),
    "consumable-capacity-range-policy-rounded-value-overflow-rejected": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("9223372036854775807")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("cannot be represented",),
    ),
    "consumable-capacity-range-policy-overflow-aborts-not-skip": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
                device(
                    DEVICE_2, {CAPACITY_0: "36893488147419103232"}, None
                ).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("cannot be represented",),
    ),
    "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("cannot be represented",),
    ),
    "consumable-capacity-negative-request-aborts": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("-5")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: "10"}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        error=("negative",),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("2")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(ONE, {CAPACITY_0: FOUR}, [TWO]),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("2")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(ONE, {CAPACITY_0: THREE}, [THREE]),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: THREE}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
            claim(CLAIM_1).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request("6")
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: "10"}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO)
            )
        ],
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: TWO}},
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO)
            )
        ],
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: TWO}},
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
                device(DEVICE_2, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"matchAttribute": STRING_ATTRIBUTE})
            .with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO),
                device_request(REQ_1, CLASS_A, 1).with_capacity_request(TWO),
            ),
            claim(CLAIM_1).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO)
            ),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_2, None, {"stringAttribute": {"string": "stringAttributeValue1"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
                device(DEVICE_1, None, {"stringAttribute": {"string": "stringAttributeValue2"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1).with_capacity_request(FOUR),
                    sub_request(SUB_REQ_1, CLASS_A, 1).with_capacity_request(TWO),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                )
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO)
            )
        ],
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: TWO}},
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request(TWO)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, None, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(  # noqa: E501
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request(TWO)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE),
                all_device_request(REQ_1, CLASS_A).with_capacity_request(ONE),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: ONE}},
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request(ONE)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: TWO}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(  # noqa: E501
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE),
                all_device_request(REQ_1, CLASS_A).with_capacity_request(ONE),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: ONE}},
        claims=[
            claim(CLAIM_0).with_requests(
                all_device_request(REQ_0, CLASS_A).with_capacity_request(ONE)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
                device(DEVICE_2, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1, {CAPACITY_0: ONE}, None)
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
            claim(CLAIM_1).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "consumable-capacity-requests-are-not-modified": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO),
                device_request(REQ_1, CLASS_A, 1).with_capacity_request("1000000000000000000000"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1,
                    {
                        CAPACITY_0: {
                            "value": "1000000000000000000002",
                            "requestPolicy": {
                                "default": "1000000000000000000000",
                                "validRange": {"min": TWO},
                            },
                        }
                    },
                    None,
                ).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: "1000E"}),
            )
        ],
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, {CAPACITY_0: ONE}, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(  # noqa: E501
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(  # noqa: E501
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE)
            )
        ],
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: ONE}},
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0'),
                    ),
                ),
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_allow_multiple_allocations(),
                device(DEVICE_2, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                )
                .with_allow_multiple_allocations(),
                device(DEVICE_3, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "4Gi"})
                )
                .with_allow_multiple_allocations(),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {"memory": "4Gi"}),
                device_request_allocation_result(
                    REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_3
                ).with_consumed_capacity(FIXED_SHARE_ID, {"memory": "4Gi"}),
            )
        ],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1)
                .with_capacity_request(ONE)
                .with_selectors(cel('device.attributes["driver-a"].mode == "b"'))
            )
        ],
        shared={(device_id(DRIVER_A, POOL_1, DEVICE_1), FIXED_SHARE_ID)},
        consumed={device_id(DRIVER_A, POOL_1, DEVICE_1): {CAPACITY_0: ONE}},
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, {"mode": {"string": "a"}})
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: ONE})
                )
                .with_allow_multiple_allocations(),
                device(DEVICE_2, FROM_COUNTERS, {"mode": {"string": "b"}})
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: ONE})
                )
                .with_allow_multiple_allocations(),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {CAPACITY_0: ONE}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "partitionable-consumable-capacity-shared-device-counter-not-recharged": Case(
        shared={(device_id(DRIVER_A, POOL_1, DEVICE_1), FIXED_SHARE_ID)},
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"c": "1"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            )
        ],
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE),
                device_request(REQ_2, CLASS_A, 1).with_capacity_request(TWO),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel(
                            'device.capacity["driver-a"]["capacity-0"]'
                            '.compareTo(quantity("4")) >= 0'
                        ),
                    ).with_capacity_request(ONE),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel(
                            'device.capacity["driver-a"]["capacity-0"]'
                            '.compareTo(quantity("2")) >= 0'
                        ),
                    ).with_capacity_request(ONE),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: TWO}),
                    device_counter_consumption(COUNTER_SET_2, {CAPACITY_1: FOUR}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_1: FOUR}),
                device(DEVICE_2, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: FOUR}),
                    device_counter_consumption(COUNTER_SET_2, {CAPACITY_1: FOUR}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_1: FOUR}),
                device(DEVICE_3, FROM_COUNTERS, None)
                .with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {CAPACITY_0: TWO}),
                    device_counter_consumption(COUNTER_SET_2, {CAPACITY_1: FOUR}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_1: FOUR}),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {CAPACITY_0: FOUR}),
                counter_set(COUNTER_SET_2, {CAPACITY_1: "8"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE, CAPACITY_1: TWO}),
                device_request_allocation_result(
                    REQ_2, DRIVER_A, POOL_1, DEVICE_3
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO, CAPACITY_1: TWO}),
                device_request_allocation_result(
                    REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: ONE, CAPACITY_1: TWO}),
            )
        ],
    ),
    "with-distinct-constraints": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints(
                {"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ_0, REQ_1]},
                {"distinctAttribute": VERSION_ATTRIBUTE, "requests": [REQ_0, REQ_1, REQ_2]},
                {"distinctAttribute": INT_ATTRIBUTE, "requests": [REQ_0, REQ_1, REQ_2, REQ_3]},
            )
            .with_requests(
                device_request(REQ_0, CLASS_A, 1),
                device_request(REQ_1, CLASS_A, 1),
                device_request(REQ_2, CLASS_A, 1),
                device_request(REQ_3, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 0},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    DEVICE_2,
                    None,
                    {
                        "driverVersion": {"version": "1.0.1"},
                        "numa": {"int": 1},
                        "boolAttribute": {"bool": False},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    DEVICE_3,
                    None,
                    {
                        "driverVersion": {"version": "1.0.2"},
                        "numa": {"int": 2},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    DEVICE_4,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 3},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
                device_request_allocation_result(
                    REQ_2, DRIVER_A, POOL_1, DEVICE_3
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
                device_request_allocation_result(
                    REQ_3, DRIVER_A, POOL_1, DEVICE_4
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            )
        ],
    ),
    "distinct-constraint-single-request-count-3-not-distinct": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "value1"}}),
                device(DEVICE_2, None, {"stringAttribute": {"string": "value2"}}),
                device(DEVICE_3, None, {"stringAttribute": {"string": "value1"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "value1"}}),
                device(DEVICE_2, None, {"stringAttribute": {"string": "value2"}}),
                device(DEVICE_3, None, {"stringAttribute": {"string": "value3"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": STRING_ATTRIBUTE, "requests": [REQ_0, REQ_1]})
            .with_requests(device_request(REQ_0, CLASS_A, 2), device_request(REQ_1, CLASS_A, 1))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "value1"}}),
                device(DEVICE_2, None, {"stringAttribute": {"string": "value2"}}),
                device(DEVICE_3, None, {"stringAttribute": {"string": "value1"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ_0]})
            .with_requests(device_request(REQ_0, CLASS_A, 1))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ_0]})
            .with_requests(device_request(REQ_0, CLASS_A, 1))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"boolAttribute": {}}).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
        error=("unsupported attribute value",),
    ),
    "with-distinct-constraints-with-subrequests": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ_0, REQ_1]})
            .with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0, CLASS_A, 1, cel('device.attributes["driver-a"].boolAttribute')
                    ),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                ),
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0, CLASS_A, 1, cel('device.attributes["driver-a"].boolAttribute')
                    ),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                ),
                request_with_prioritized_list(
                    REQ_2,
                    sub_request(
                        SUB_REQ_0, CLASS_A, 1, cel('device.attributes["driver-a"].boolAttribute')
                    ),
                    sub_request(SUB_REQ_1, CLASS_A, 1),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1, None, {"boolAttribute": {"bool": True}}
                ).with_allow_multiple_allocations(),
                device(
                    DEVICE_2, None, {"boolAttribute": {"bool": False}}
                ).with_allow_multiple_allocations(),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0_SUB_REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
                device_request_allocation_result(
                    REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
                device_request_allocation_result(
                    REQ_2_SUB_REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, None),
            )
        ],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-not-set": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": INT_ATTRIBUTE}], request(REQ_0, CLASS_A, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
                device(DEVICE_3, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "distinct-constraint-single-request-not-enough-distinct-values": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": INT_ATTRIBUTE}], request(REQ_0, CLASS_A, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"numa": {"int": 1}}),
                device(DEVICE_2, None, {"numa": {"int": 2}}),
                device(DEVICE_3, None, {"numa": {"int": 2}}),
                device(DEVICE_4, None, {"numa": {"int": 2}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-set": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": INT_ATTRIBUTE}], request(REQ_0, CLASS_A, 3)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"numa": {"int": 1}}),
                device(DEVICE_2, None, {"numa": {"int": 2}}),
                device(DEVICE_3, None, {"numa": {"int": 1}}),
                device(DEVICE_4, None, {"numa": {"int": 3}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_4),
            )
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": STRING_ATTRIBUTE})
            .with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(ONE),
                device_request(REQ_1, CLASS_A, 1).with_capacity_request(ONE),
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "stringAttributeValue"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: TWO}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=[
            claim(CLAIM_0)
            .with_constraints({"distinctAttribute": STRING_ATTRIBUTE})
            .with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(TWO),
                device_request(REQ_1, CLASS_A, 1).with_capacity_request(TWO),
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, {"stringAttribute": {"string": "stringAttributeValue1"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            ),
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_2, None, {"stringAttribute": {"string": "stringAttributeValue2"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({CAPACITY_0: FOUR}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
                device_request_allocation_result(
                    REQ_1, DRIVER_A, POOL_1, DEVICE_2
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: TWO}),
            )
        ],
    ),
    "consumable-capacity-fractional-range-gate-disabled": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                device_request(REQ_0, CLASS_A, 1).with_capacity_request(POINT_TWO)
            )
        ],
        classes=[class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None)
                .with_allow_multiple_allocations()
                .with_fractional_capacity_request_policy_range({CAPACITY_0: ONE}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_request_allocation_result(
                    REQ_0, DRIVER_A, POOL_1, DEVICE_1
                ).with_consumed_capacity(FIXED_SHARE_ID, {CAPACITY_0: "1"}),
            )
        ],
    ),
    "list-attributes-disabled-match-constraint-with-lists": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"matchAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    DEVICE_2, None, {"stringAttribute": {"strings": ["value2", "value3", "value4"]}}
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": Case(
        claims=[
            claim_with_requests(
                CLAIM_0, [{"distinctAttribute": STRING_ATTRIBUTE}], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    DEVICE_2, None, {"stringAttribute": {"strings": ["value2", "value3", "value4"]}}
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                {"name": REQ_0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}},
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_2, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_2,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_2,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_2,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_2,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_1,
                NODE_2,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_2,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_2,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
            slice_with_devices(
                SLICE_1,
                NODE_2,
                resource_pool(POOL_1, 2, generation=1),
                DRIVER_A,
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2, generation=2),
                DRIVER_A,
                device(DEVICE_1, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 4), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                counter_set(COUNTER_SET_1, None),
            ),
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_1, 4), DRIVER_A, device(DEVICE_2, None, None)
            ),
            slice_with_counter_sets(
                SLICE_4,
                NODE_1,
                resource_pool(POOL_1, 4),
                DRIVER_A,
                counter_set(COUNTER_SET_1, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, None)
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(  # noqa: E501
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"other-memory": "8Gi"}),
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        claims=[claim(CLAIM_0).with_requests(device_request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(
                SLICE_2, NODE_1, POOL_2, DRIVER_A, counter_set(COUNTER_SET_1, {"memory": "8Gi"})
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_0,
                    sub_request(
                        SUB_REQ_0,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0'),
                    ),
                    sub_request(
                        SUB_REQ_1,
                        CLASS_A,
                        1,
                        cel('device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'),
                    ),
                )
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_counter_sets(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "2Gi"})
                ),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_2,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_3, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
            ),
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_3)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_counter_sets(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_2,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_2, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
                device(DEVICE_3, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "2Gi"})
                ),
            ),
        ],
        allocated=[device_id(DRIVER_A, POOL_1, DEVICE_1)],
        node=node(NODE_2, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_counter_sets(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                counter_set(COUNTER_SET_1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_1, FROM_COUNTERS, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_2,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_3, None, None).with_device_counter_consumption(
                    device_counter_consumption(COUNTER_SET_2, {"memory": "6Gi"})
                ),
            ),
        ],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_2, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_2, 1), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_2, 1), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        allocated=[device_id(DRIVER_A, POOL_2, DEVICE_2)],
        node=node(NODE_1, REGION_1),
        error=("invalid resource pools were encountered",),
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 5))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
                device(DEVICE_3, None, None),
                device(DEVICE_4, None, None),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
        allocate_one_calls=16,
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 5))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, None),
                device(DEVICE_2, None, None),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_3, None, None),
                device(DEVICE_4, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
        allocate_one_calls=16,
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 5))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_1, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 2), DRIVER_A, device(DEVICE_2, None, None)
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                POOL_2,
                DRIVER_A,
                device(DEVICE_3, None, None),
                device(DEVICE_4, None, None),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
        allocate_one_calls=16,
    ),
    "check-combinations-within-single-request-many-pools": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 5))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1, None, None)),
            slice_with_devices(SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_2, None, None)),
            slice_with_devices(SLICE_3, NODE_1, POOL_3, DRIVER_A, device(DEVICE_3, None, None)),
            slice_with_devices(SLICE_4, NODE_1, POOL_4, DRIVER_A, device(DEVICE_4, None, None)),
        ],
        node=node(NODE_1, REGION_1),
        expect=None,
        allocate_one_calls=16,
    ),
    "check-combinations-with-backtracking": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_1, CLASS_A, 2),
                request(REQ_2, CLASS_A, 1, cel('device.attributes["driver-a"].type == "X"')),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"type": {"string": "X"}}),
                device(DEVICE_2, None, {"type": {"string": "Y"}}),
                device(DEVICE_3, None, {"type": {"string": "Y"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
                device_allocation_result(REQ_2, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
        allocate_one_calls=12,
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_1, CLASS_A, 2),
                request(REQ_2, CLASS_A, 1, cel('device.attributes["driver-a"].type == "X"')),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_1, None, {"type": {"string": "X"}}),
            ),
            slice_with_devices(
                SLICE_2,
                NODE_1,
                resource_pool(POOL_1, 2),
                DRIVER_A,
                device(DEVICE_2, None, {"type": {"string": "Y"}}),
            ),
            slice_with_devices(
                SLICE_3,
                NODE_1,
                POOL_2,
                DRIVER_A,
                device(DEVICE_3, None, {"type": {"string": "Y"}}).with_binding_conditions(
                    ["IsPrepare"], []
                ),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
                device_request_allocation_result_with_binding_conditions(
                    REQ_1, DRIVER_A, POOL_2, DEVICE_3, ["IsPrepare"], []
                ),
                device_allocation_result(REQ_2, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
        allocate_one_calls=12,
    ),
    "check-combinations-with-prioritized-list": Case(
        claims=[
            claim(CLAIM_0).with_requests(
                request_with_prioritized_list(
                    REQ_1,
                    sub_request(
                        SUB_REQ_0, CLASS_A, 3, cel('device.attributes["driver-a"].type == "Y"')
                    ),
                    sub_request(SUB_REQ_1, CLASS_A, 2),
                ),
                request_with_prioritized_list(
                    REQ_2,
                    sub_request(SUB_REQ_0, CLASS_A, 2),
                    sub_request(
                        SUB_REQ_1, CLASS_A, 1, cel('device.attributes["driver-a"].type == "X"')
                    ),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, None, {"type": {"string": "X"}}),
                device(DEVICE_2, None, {"type": {"string": "Y"}}),
                device(DEVICE_3, None, {"type": {"string": "Y"}}),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
                device_allocation_result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_3),
                device_allocation_result(REQ_2_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
        allocate_one_calls=26,
    ),
    "lexicographical-sorting-pools": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, resource_pool(POOL_3, 1), DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, resource_pool(POOL_2, 1), DRIVER_A),
            slice_with_one_device(SLICE_3, NODE_1, resource_pool(POOL_1, 1), DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    "lexicographical-sorting-pools-with-binding-conditions": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 1),
                DRIVER_A,
                device(DEVICE_1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            ),
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_3, 1), DRIVER_A, device(DEVICE_3, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_2, 1), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_2, DEVICE_2),
                device_allocation_result(REQ_0, DRIVER_A, POOL_3, DEVICE_3),
            )
        ],
    ),
    "lexicographical-sorting-slices": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_1, 3), DRIVER_A, device(DEVICE_3, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 3), DRIVER_A, device(DEVICE_2, None, None)
            ),
            slice_with_devices(
                SLICE_1, NODE_1, resource_pool(POOL_1, 3), DRIVER_A, device(DEVICE_1, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation_result(
                local_node_selector(NODE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    "lexicographical-sorting-slices-with-binding-conditions": Case(
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_devices(
                SLICE_1,
                NODE_1,
                resource_pool(POOL_1, 3),
                DRIVER_A,
                device(DEVICE_1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            ),
            slice_with_devices(
                SLICE_3, NODE_1, resource_pool(POOL_1, 3), DRIVER_A, device(DEVICE_3, None, None)
            ),
            slice_with_devices(
                SLICE_2, NODE_1, resource_pool(POOL_1, 3), DRIVER_A, device(DEVICE_2, None, None)
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ_0, DRIVER_A, POOL_1, DEVICE_1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_allocation_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                    ]
                },
                "nodeSelector": local_node_selector(NODE_1),
            }
        ],
    ),
}
