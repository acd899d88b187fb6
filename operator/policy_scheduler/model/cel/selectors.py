"""Device selectors: the CEL environment a DRA device selector sees, and its results cached.

A selector sees one variable, `device`, as kube's dynamic-resource-allocation/cel builds it from a
ResourceSlice's device: `driver`, `allowMultipleAllocations`, `attributes[domain][id]` (bool,
int, string or Semver values) and `capacity[domain][id]` (Quantity values). A qualified name
without a domain belongs to the driver's domain; an unknown domain reads as an empty map (but is
not `in` the map), so `device.attributes["other"].x` is "no such key: x" rather than an error on
the domain.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from celpy import celtypes

from policy_scheduler.model.cel.library import Quantity, SemverError, parse_semver
from policy_scheduler.model.cel.program import (
    DEFAULT_COST_LIMIT,
    CelError,
    Program,
    as_bool,
    compile_expression,
)
from policy_scheduler.model.quantity import QuantityError, parse_quantity

# Results (and device variables) kept before the oldest half is dropped: a device's key changes
# with its slice's resourceVersion, so entries of superseded slices would otherwise pile up.
_MAX_RESULTS = 1 << 18


class _DomainMap(celtypes.MapType):
    """`device.attributes` / `device.capacity`: an unknown domain reads as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


def _semver(name: str, text: str) -> Any:
    try:
        return parse_semver(text)
    except SemverError as e:
        raise CelError(f"attribute {name}: parse semantic version: {e}") from None


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    # List values (ints, bools, strings, versions) come first, as in kube's getAttributeValue,
    # which converts them whether or not the DRAListTypeAttributes gate is on.
    if "ints" in attribute:
        return celtypes.ListType(celtypes.IntType(v) for v in attribute["ints"])
    if "bools" in attribute:
        return celtypes.ListType(celtypes.BoolType(v) for v in attribute["bools"])
    if "strings" in attribute:
        return celtypes.ListType(celtypes.StringType(v) for v in attribute["strings"])
    if "versions" in attribute:
        return celtypes.ListType(_semver(name, v) for v in attribute["versions"])
    if "int" in attribute:
        return celtypes.IntType(attribute["int"])
    if "bool" in attribute:
        return celtypes.BoolType(attribute["bool"])
    if "string" in attribute:
        return celtypes.StringType(attribute["string"])
    if "version" in attribute:
        return _semver(name, attribute["version"])
    raise CelError(f"attribute {name}: unsupported attribute value")


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_variable(driver: str, device: Mapping[str, Any]) -> celtypes.MapType:
    """The `device` variable of a ResourceSlice's device (as the API serves it)."""
    attributes: dict[str, celtypes.MapType] = {}
    for name, attribute in (device.get("attributes") or {}).items():
        domain, ident = _split(name, driver)
        inner = attributes.setdefault(domain, celtypes.MapType())
        inner[celtypes.StringType(ident)] = _attribute_value(name, attribute)
    capacity: dict[str, dict[celtypes.StringType, Quantity]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        try:
            value = parse_quantity((cap or {}).get("value", "0"))
        except QuantityError as e:
            raise CelError(f"capacity {name}: {e}") from None
        capacity.setdefault(domain, {})[celtypes.StringType(ident)] = Quantity(value)
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                bool(device.get("allowMultipleAllocations"))
            ),
            celtypes.StringType("attributes"): _DomainMap(
                {celtypes.StringType(k): v for k, v in attributes.items()}
            ),
            celtypes.StringType("capacity"): _DomainMap(
                {celtypes.StringType(k): celtypes.MapType(v) for k, v in capacity.items()}
            ),
        }
    )


class DeviceSelectors:
    """Device selectors compiled once per expression; each result cached per (expression, key)."""

    def __init__(self, cost_limit: int = DEFAULT_COST_LIMIT) -> None:
        self.cost_limit = cost_limit
        self._programs: dict[str, Program | CelError] = {}
        self._results: dict[tuple[str, Hashable], bool | CelError] = {}
        # A device's `device` variable, shared by the expressions evaluated on it.
        self._devices: dict[Hashable, celtypes.MapType | CelError] = {}
        self.evaluations = 0
        """How many times an expression was evaluated (not answered from the cache)."""

    def compile(self, expression: str) -> Program:
        """The compiled expression (compiled once); raises CelError for a compile error."""
        program = self._programs.get(expression)
        if program is None:
            try:
                program = compile_expression(expression)
            except CelError as e:
                program = e
            self._programs[expression] = program
        if isinstance(program, CelError):
            raise program
        return program

    def capacities_read(self, expression: str) -> tuple[str, ...]:
        """The device capacities ``expression`` reads (:meth:`Program.capacities_read`); none
        when it does not compile, which its evaluation tells."""
        try:
            return self.compile(expression).capacities_read()
        except CelError:
            return ()

    def matches(
        self, expression: str, driver: str, device: Mapping[str, Any], key: Hashable
    ) -> bool:
        """Whether `expression` is true for `device`: the raw device of a ResourceSlice
        (`spec.devices[i]` as the API serves it) of driver `driver`. `key` names the device's
        content (the allocator passes (slice uid, slice resourceVersion, device name)): the same
        key with the same expression gives the cached result. Raises CelError (compile or
        runtime error, a non-bool result, cost limit exceeded) with kube's message."""
        cache_key = (expression, key)
        result = self._results.get(cache_key)
        if result is None:
            result = self._evaluate(expression, driver, device, key)
            _bounded(self._results)[cache_key] = result
        if isinstance(result, CelError):
            # A new exception each time: raising the cached one would grow its traceback.
            raise CelError(result.message, result.phase)
        return result

    def _evaluate(
        self, expression: str, driver: str, device: Mapping[str, Any], key: Hashable
    ) -> bool | CelError:
        try:
            program = self.compile(expression)
            variable = self._devices.get(key)
            if variable is None:
                try:
                    variable = device_variable(driver, device)
                except CelError as e:
                    variable = e
                _bounded(self._devices)[key] = variable
            if isinstance(variable, CelError):
                return variable
            self.evaluations += 1
            return as_bool(program.evaluate({"device": variable}, self.cost_limit))
        except CelError as e:
            return e


def _bounded(cache: dict[Any, Any]) -> dict[Any, Any]:
    """`cache`, its oldest half dropped when it is full."""
    if len(cache) >= _MAX_RESULTS:
        for old in list(cache)[: _MAX_RESULTS // 2]:
            del cache[old]
    return cache
