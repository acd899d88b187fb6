"""Leader-election timings, kept apart from the election itself (``kube/leader.py``) so that the
command line can offer their defaults without importing the API client: ``validate``,
``simulate`` and ``convert`` build the same argument parser as ``run`` and must start fast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    """kube-scheduler's defaults: 15 s lease, 10 s renew deadline, 2 s retry.

    ``lease_duration``: how long a standby waits, by its own clock, after it last saw the Lease
    renewed, before it takes it over. ``renew_deadline``: how long the holder leads, and writes,
    after its last successful renewal started, by its own clock. ``retry_period``: the time between
    two attempts to take or renew the Lease."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5, the micro sign
    "μs": 1_000,  # U+03BC, the Greek letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_UNITS = "ns, us, µs, ms, s, m or h"
_LIMIT = 1 << 63
"""Go's time.Duration is a signed 64-bit count of nanoseconds: at most this many, negated."""
_LONGEST = "2562047h47m16.854775807s"


def parse_duration(text: str) -> float:
    """The seconds of a duration written as Go's ``time.ParseDuration`` reads it, as
    kube-scheduler's flags take it: an optional sign, then one or more decimal numbers, each with
    an optional fraction and a unit (ns, us or µs, ms, s, m, h), such as ``15s``, ``1m30s``,
    ``1.5h``, ``.5s`` or ``-300ms``; ``0`` alone needs no unit. ValueError, naming ``text`` and
    what is wrong, for anything else and for more than Go's limit (about 292 years)."""
    rest = text[1:] if text[:1] in ("-", "+") else text
    if rest == "0":
        return 0.0
    invalid = ValueError(f"{text!r} is not a duration (e.g. 15s, 1m30s, 500ms)")
    if not rest:
        raise invalid
    too_long = ValueError(f"{text!r} is longer than Go's longest duration, {_LONGEST}")
    total = 0
    while rest:
        if rest[0] != "." and not _is_digit(rest[0]):
            raise invalid
        number = rest
        whole, rest = _split(rest, _is_digit)
        fraction = ""
        if rest.startswith("."):
            fraction, rest = _split(rest[1:], _is_digit)
        number = number[: len(number) - len(rest)]
        if not whole and not fraction:  # ".s"
            raise invalid
        unit, rest = _split(rest, lambda char: char != "." and not _is_digit(char))
        if not unit:
            raise ValueError(f"{text!r} is not a duration: {number} has no unit ({_UNITS})")
        if unit not in _NANOSECONDS:
            raise ValueError(f"{text!r} is not a duration: unknown unit {unit!r} ({_UNITS})")
        total += _nanoseconds(whole, fraction, _NANOSECONDS[unit], too_long)
        if total > _LIMIT:
            raise too_long
    if text.startswith("-"):
        return -total / 1_000_000_000
    if total == _LIMIT:
        raise too_long
    return total / 1_000_000_000


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _split(text: str, wanted: Callable[[str], bool]) -> tuple[str, str]:
    """The leading characters of ``text`` that are ``wanted``, and the rest."""
    end = 0
    while end < len(text) and wanted(text[end]):
        end += 1
    return text[:end], text[end:]


def _nanoseconds(whole: str, fraction: str, unit: int, too_long: ValueError) -> int:
    """``whole.fraction`` units in nanoseconds, rounded down as Go rounds them: the fraction's
    digits count only while they fit in 63 bits, and it is scaled in floating point."""
    count = int(whole or "0")
    if count > _LIMIT // unit:
        raise too_long
    digits, scale = 0, 1.0
    for char in fraction:
        if digits > (_LIMIT - 1) // 10 or digits * 10 + int(char) > _LIMIT:
            break
        digits, scale = digits * 10 + int(char), scale * 10
    nanoseconds = count * unit + int(digits * (unit / scale))
    if nanoseconds > _LIMIT:
        raise too_long
    return nanoseconds
