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

# Results kept before the oldest half is dropped: a device's key changes with its slice's
# resourceVersion, so results of superseded slices would otherwise pile up.
_MAX_RESULTS = 1 << 18


class _DomainMap(celtypes.MapType):
    """`device.attributes` / `device.capacity`: an unknown domain reads as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    if "int" in attribute:
        return celtypes.IntType(attribute["int"])
    if "bool" in attribute:
        return celtypes.BoolType(attribute["bool"])
    if "string" in attribute:
        return celtypes.StringType(attribute["string"])
    if "version" in attribute:
        try:
            return parse_semver(attribute["version"])
        except SemverError as e:
            raise CelError(f"attribute {name}: parse semantic version: {e}") from None
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
            result = self._evaluate(expression, driver, device)
            if len(self._results) >= _MAX_RESULTS:
                for old in list(self._results)[: _MAX_RESULTS // 2]:
                    del self._results[old]
            self._results[cache_key] = result
        if isinstance(result, CelError):
            raise result
        return result

    def _evaluate(self, expression: str, driver: str, device: Mapping[str, Any]) -> bool | CelError:
        try:
            program = self.compile(expression)
            self.evaluations += 1
            variable = device_variable(driver, device)
            return as_bool(program.evaluate({"device": variable}, self.cost_limit))
        except CelError as e:
            return e
