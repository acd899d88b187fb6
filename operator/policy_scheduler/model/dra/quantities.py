"""Device quantities (capacities, counters, capacity requests) with the format they were written in.

The allocator compares capacities exactly and writes what a claim consumed back into its
allocation result, where kube-scheduler writes a ``resource.Quantity``: a value keeps the format
of the text it came from (binary suffix, decimal suffix or exponent), and is written in
apimachinery's canonical form for that format, so that a result reads as kube's does.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from policy_scheduler.model.quantity import QuantityError, parse_quantity

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei)\s*$")
_EXPONENT_SUFFIX = re.compile(r"[0-9.][eE][+-]?[0-9]+\s*$")
_BINARY_NAMES = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_DECIMAL_NAMES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
_DECIMAL_NAMES[18] = "E"
_NANO = 10**9


@dataclass(frozen=True, slots=True)
class Amount:
    """An exact quantity and the format apimachinery would keep for it."""

    value: Fraction
    format: str = DECIMAL_SI

    @classmethod
    def parse(cls, raw: object) -> Amount:
        """A quantity as the API serves it (a string, or a number from YAML); values finer than
        a nano-unit round up, as ``resource.ParseQuantity`` rounds them."""
        if isinstance(raw, str):
            return _parse_text(raw)
        return cls._parse(raw)

    @classmethod
    def _parse(cls, raw: object) -> Amount:
        value = parse_quantity(raw)
        if value.denominator != 1 and (value * _NANO).denominator != 1:
            value = Fraction(math.ceil(value * _NANO), _NANO)
        text = raw if isinstance(raw, str) else ""
        if _BINARY_SUFFIX.search(text):
            return cls(value, BINARY_SI)
        if _EXPONENT_SUFFIX.search(text):
            return cls(value, DECIMAL_EXPONENT)
        return cls(value, DECIMAL_SI)

    def whole(self) -> int:
        """``Quantity.Value()``: units, rounded up."""
        return math.ceil(self.value)

    def __str__(self) -> str:
        return canonical(self.value, self.format)


# Slices repeat a handful of quantities ("80Gi", "1"): each text is parsed once.
@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Amount:
    return Amount._parse(text)


def canonical(value: Fraction, format: str) -> str:
    """``Quantity.String()`` of ``value`` in ``format``: binary suffixes only for whole values of
    at least 1024 in magnitude; otherwise the largest decimal suffix (or exponent) that keeps
    the mantissa an integer."""
    if value == 0:
        return "0"
    if format == BINARY_SI and value.denominator == 1 and abs(value) >= 1024:
        number, exponent = int(value), 0
        while number % 1024 == 0 and exponent < 60:
            number //= 1024
            exponent += 10
        return f"{number}{_BINARY_NAMES[exponent]}"
    scaled, exponent = value, 0
    while scaled.denominator != 1:
        scaled *= 10
        exponent -= 1
    number = int(scaled)
    while number % 10 == 0:
        number //= 10
        exponent += 1
    shift = exponent % 3
    number *= 10**shift
    exponent -= shift
    if format == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else str(number)
    if exponent > 18:
        number *= 10 ** (exponent - 18)
        exponent = 18
    return f"{number}{_DECIMAL_NAMES[exponent]}"


def amount(raw: object, where: str) -> Amount:
    """A quantity of a slice or claim, or a ValueError naming the field."""
    try:
        return Amount.parse(raw)
    except QuantityError as error:
        raise ValueError(f"{where}: {error}") from None
