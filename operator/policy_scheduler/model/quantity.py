"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3") parsed exactly, as apimachinery does.

Scheduling compares integers: CPU in millicores, every other resource in its base unit (bytes for
memory and storage, a plain count for pods and extended resources). Both conversions round up, as
``resource.Quantity.MilliValue()`` and ``Value()`` do, so a request is never under-counted.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


class QuantityError(ValueError):
    """A quantity that Kubernetes would not accept."""


def parse_quantity(text: object) -> Fraction:
    """Parse a quantity (a string, or a number as YAML may give one) into an exact fraction."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a quantity")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity")
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 500m, 2, 1.5Gi, 1e3)")
    value = Fraction(match["number"])
    if match["binary"]:
        value *= _BINARY[match["binary"]]
    elif match["exp"]:
        value *= Fraction(10) ** int(match["exp"][1:])
    else:
        value *= _DECIMAL[match["decimal"] or ""]
    return -value if match["sign"] == "-" else value


def to_int(resource: str, text: object) -> int:
    """A quantity of ``resource`` as the integer the scheduler compares: millicores for CPU."""
    if isinstance(text, str):
        return _text_to_int(resource == CPU, text)
    return _to_int(resource == CPU, text)


# Pods and nodes repeat a handful of quantities ("100m", "128Mi", "4"): each is parsed once.
@functools.lru_cache(maxsize=4096)
def _text_to_int(milli: bool, text: str) -> int:
    return _to_int(milli, text)


def _to_int(milli: bool, text: object) -> int:
    value = parse_quantity(text)
    if milli:
        value *= 1000
    return math.ceil(value)


def format_quantity(resource: str, amount: int) -> str:
    """Render an integer amount of ``resource`` the way people write it (for messages)."""
    if resource == CPU:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    for suffix, factor in reversed(_BINARY.items()):
        if amount and amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)
