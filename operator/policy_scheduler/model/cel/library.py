"""Kubernetes' CEL libraries that device selectors use, as Python functions over celpy's values.

The quantity and semver libraries of ``k8s.io/apiserver/pkg/cel/library`` (with their own value
types, `Quantity` and `Semver`), its lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`,
`lastIndexOf`), its regex library (`find`, `findAll`) and cel-go's strings extension, which the
Kubernetes base environment enables. A function called as a method receives its receiver first
(`a.compareTo(b)` is `compareTo(a, b)`), so one Python function serves each name and dispatches on
its arguments. A function returns a `CELEvalError` with kube's text for a runtime error, as celpy
expects of a failing function; an argument of the wrong type raises `TypeError`, which celpy
reports as "no such overload", as cel-go does.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import re2
from celpy import celtypes
from celpy.evaluation import CELEvalError

from policy_scheduler.model.quantity import QuantityError, parse_quantity

# resource.ParseQuantity's error for any string it refuses (ErrFormatWrong).
QUANTITY_FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
# resource.ParseQuantity's error for a string of that form whose suffix is unknown (ErrSuffix).
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"
_QUANTITY_FORM = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
OPT_SELECT = "_optSelect"
"""The function `x.?f` and `x[?k]` become: celpy's grammar has no optional syntax."""


def error(message: str) -> CELEvalError:
    """A runtime error with kube's text, as a function returns it to celpy."""
    return CELEvalError(message)


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource.Quantity in CEL (kube's `Quantity` type): an exact value."""

    value: Fraction

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError("no such overload")
        return self.value == other.value

    def __lt__(self, other: object) -> bool:
        # CEL has no `<` for quantities; comparisons go through compareTo and its kin.
        raise TypeError("no such overload")

    def __hash__(self) -> int:
        return hash(self.value)


@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version in CEL (kube's `Semver` type, blang/semver's Version)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 as semver 2.0.0 orders versions (build metadata ignored)."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            # A version without a pre-release is greater than one with.
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) != isinstance(b, int):
                return -1 if isinstance(a, int) else 1
            return -1 if a < b else 1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        # Build metadata does not count, as blang/semver's Equals.
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))


class SemverError(ValueError):
    """A string blang/semver's Parse refuses; the text is its own."""


_NUMBERS = re.compile(r"^[0-9]+$")
_ALPHANUM = re.compile(r"^[0-9A-Za-z-]+$")


def parse_semver(text: str) -> Semver:
    """Parse strictly, as blang/semver's Parse (the errors are its texts)."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    numbers = []
    for name, part in (("major", parts[0]), ("minor", parts[1])):
        numbers.append(_version_number(name, part))
    rest = parts[2]
    cut = min((i for i in (rest.find("+"), rest.find("-")) if i != -1), default=len(rest))
    numbers.append(_version_number("patch", rest[:cut]))
    pre: list[int | str] = []
    build: list[str] = []
    tail = rest[cut:]
    if tail.startswith("-"):
        pre_text, _, build_text = tail[1:].partition("+")
        pre = [_prerelease(p) for p in pre_text.split(".")]
        build = _build(build_text) if "+" in tail else []
    elif tail.startswith("+"):
        build = _build(tail[1:])
    return Semver(numbers[0], numbers[1], numbers[2], tuple(pre), tuple(build))


def _version_number(name: str, part: str) -> int:
    if not _NUMBERS.match(part):
        raise SemverError(f"Invalid character(s) found in {name} number {part!r}".replace("'", '"'))
    if len(part) > 1 and part[0] == "0":
        raise SemverError(
            f"{name.capitalize()} number must not contain leading zeroes {part!r}".replace("'", '"')
        )
    return int(part)


def _prerelease(part: str) -> int | str:
    if not part:
        raise SemverError("Prerelease is empty")
    if _NUMBERS.match(part):
        if len(part) > 1 and part[0] == "0":
            raise SemverError(
                f"Numeric PreRelease version must not contain leading zeroes {part!r}".replace(
                    "'", '"'
                )
            )
        return int(part)
    if not _ALPHANUM.match(part):
        raise SemverError(f"Invalid character(s) found in prerelease {part!r}".replace("'", '"'))
    return part


def _build(text: str) -> list[str]:
    parts = text.split(".")
    for part in parts:
        if not part:
            raise SemverError("Build meta data is empty")
        if not _ALPHANUM.match(part):
            raise SemverError(
                f"Invalid character(s) found in build meta data {part!r}".replace("'", '"')
            )
    return parts


def _normalize_semver(text: str) -> str:
    """kube's normalizeAndParse: no "v" prefix, no leading zeros, missing parts added."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            if not stripped or not stripped[0].isdigit():
                stripped = "0" + stripped
            parts[i] = stripped
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# --- quantity ---------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return value


# Selectors repeat a handful of literal quantities and versions: each is parsed once.
@functools.lru_cache(maxsize=1024)
def _quantity_of(text: str) -> Quantity | None:
    try:
        return Quantity(parse_quantity(text))
    except QuantityError:
        return None


def quantity(text: Any) -> Quantity | CELEvalError:
    parsed = _quantity_of(_text(text))
    if parsed is not None:
        return parsed
    return error(QUANTITY_SUFFIX_ERROR if _QUANTITY_FORM.match(text) else QUANTITY_FORMAT_ERROR)


def is_quantity(text: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_quantity_of(_text(text)) is not None)


def _quantities(a: Any, b: Any) -> tuple[Fraction, Fraction]:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value, b.value
    raise TypeError("no such overload")


def _semvers(a: Any, b: Any) -> tuple[Semver, Semver]:
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a, b
    raise TypeError("no such overload")


def _sign(x: Fraction | int) -> int:
    return (x > 0) - (x < 0)


def compare_to(a: Any, b: Any) -> celtypes.IntType:
    if isinstance(a, Semver):
        v1, v2 = _semvers(a, b)
        return celtypes.IntType(v1.compare(v2))
    q1, q2 = _quantities(a, b)
    return celtypes.IntType(_sign(q1 - q2))


def is_greater_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(compare_to(a, b) == 1)


def is_less_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(compare_to(a, b) == -1)


def _addend(b: Any) -> Fraction:
    if isinstance(b, Quantity):
        return b.value
    if isinstance(b, int) and not isinstance(b, celtypes.BoolType):
        return Fraction(b)
    raise TypeError("no such overload")


def add(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return Quantity(a.value + _addend(b))


def sub(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return Quantity(a.value - _addend(b))


def _int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return None
    return value.numerator


def as_integer(a: Any) -> celtypes.IntType | CELEvalError:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    value = _int64(a.value)
    return error("cannot convert value to integer") if value is None else celtypes.IntType(value)


def is_integer(a: Any) -> celtypes.BoolType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return celtypes.BoolType(_int64(a.value) is not None)


def as_approximate_float(a: Any) -> celtypes.DoubleType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return celtypes.DoubleType(float(a.value))


def sign(a: Any) -> celtypes.IntType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return celtypes.IntType(_sign(a.value))


# --- semver -----------------------------------------------------------------------------------


def _flag(normalize: Any) -> bool:
    if not isinstance(normalize, celtypes.BoolType | bool):
        raise TypeError("no such overload")
    return bool(normalize)


@functools.lru_cache(maxsize=1024)
def _semver_of(text: str, normalize: bool) -> Semver:
    return parse_semver(_normalize_semver(text) if normalize else text)


def semver(text: Any, normalize: Any = False) -> Semver | CELEvalError:
    try:
        return _semver_of(_text(text), _flag(normalize))
    except SemverError as e:
        return error(str(e))


def is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    try:
        _semver_of(_text(text), _flag(normalize))
    except SemverError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver_part(name: str) -> Callable[[Any], celtypes.IntType]:
    def part(v: Any) -> celtypes.IntType:
        if not isinstance(v, Semver):
            raise TypeError("no such overload")
        return celtypes.IntType(getattr(v, name))

    return part


# --- optionals (cel-go's optional types, which the Kubernetes base environment enables) -------


_ABSENT = object()


@dataclass(frozen=True, slots=True)
class OptionalValue:
    """A CEL optional: `optional.of(v)`, or `optional.none()` when `value` is absent."""

    value: Any = _ABSENT

    def present(self) -> bool:
        return self.value is not _ABSENT


_NONE = OptionalValue()


def _optional(value: Any) -> OptionalValue:
    if not isinstance(value, OptionalValue):
        raise TypeError("no such overload")
    return value


def _is_zero(value: Any) -> bool:
    return value is None or (not isinstance(value, Quantity | Semver) and not value)


def opt_field(target: Any, key: Any) -> OptionalValue:
    """`target.?key` and `target[?key]`: the entry if there, else optional.none()."""
    if isinstance(target, OptionalValue):
        if not target.present():
            return _NONE
        target = target.value
    if isinstance(target, dict):
        return OptionalValue(target[key]) if key in target else _NONE
    if isinstance(target, list) and isinstance(key, int) and not isinstance(key, bool):
        return OptionalValue(target[key]) if 0 <= key < len(target) else _NONE
    raise TypeError("no such overload")


def opt_value(target: Any) -> Any:
    optional = _optional(target)
    return optional.value if optional.present() else error("optional.none() dereference")


def opt_or_value(target: Any, default: Any) -> Any:
    optional = _optional(target)
    return optional.value if optional.present() else default


def opt_or(target: Any, other: Any) -> OptionalValue:
    optional = _optional(target)
    return optional if optional.present() else _optional(other)


# --- lists (kube's library) and strings (cel-go's extension) ----------------------------------


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("no such overload")
    return value


def _comparable(items: Sequence[Any]) -> None:
    # kube's lists library is declared for comparable element types only.
    for item in items:
        if isinstance(item, Semver | celtypes.MapType | celtypes.ListType | Quantity):
            raise TypeError("no such overload")


def is_sorted(items: Any) -> celtypes.BoolType:
    values = _list(items)
    _comparable(values)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def sum_(items: Any) -> Any:
    values = _list(items)
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[[Any], Any]:
    def extreme(items: Any) -> Any:
        values = _list(items)
        if not values:
            return error(f"{name} called on empty list")
        _comparable(values)
        return pick(values)

    return extreme


def index_of(receiver: Any, needle: Any, offset: Any = None) -> celtypes.IntType | CELEvalError:
    if isinstance(receiver, list):
        if offset is not None:
            raise TypeError("no such overload")
        return celtypes.IntType(next((i for i, v in enumerate(receiver) if v == needle), -1))
    text, sub_text = _text(receiver), _text(needle)
    start = 0 if offset is None else int(offset)
    if start < 0 or start > len(text):
        return error(f"index out of range: {start}")
    return celtypes.IntType(text.find(sub_text, start))


def last_index_of(
    receiver: Any, needle: Any, offset: Any = None
) -> celtypes.IntType | CELEvalError:
    if isinstance(receiver, list):
        if offset is not None:
            raise TypeError("no such overload")
        found = [i for i, v in enumerate(receiver) if v == needle]
        return celtypes.IntType(found[-1] if found else -1)
    text, sub_text = _text(receiver), _text(needle)
    end = len(text) if offset is None else int(offset)
    if end < 0 or end > len(text):
        return error(f"index out of range: {end}")
    return celtypes.IntType(text.rfind(sub_text, 0, end + len(sub_text)))


def char_at(text: Any, index: Any) -> celtypes.StringType | CELEvalError:
    value, i = _text(text), int(index)
    if i < 0 or i > len(value):
        return error(f"index out of range: {i}")
    return celtypes.StringType(value[i : i + 1])


def substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType | CELEvalError:
    value = _text(text)
    begin, stop = int(start), len(value) if end is None else int(end)
    if begin < 0 or begin > len(value):
        return error(f"index out of range: {begin}")
    if stop < 0 or stop > len(value):
        return error(f"index out of range: {stop}")
    if begin > stop:
        return error(f"invalid substring range. start: {begin}, end: {stop}")
    return celtypes.StringType(value[begin:stop])


def replace(text: Any, old: Any, new: Any, count: Any = -1) -> celtypes.StringType:
    return celtypes.StringType(_text(text).replace(_text(old), _text(new), int(count)))


def split(text: Any, separator: Any, limit: Any = -1) -> celtypes.ListType:
    value, sep, n = _text(text), _text(separator), int(limit)
    if n == 0:
        return celtypes.ListType()
    if sep == "":
        parts = list(value) if n < 0 else [*list(value[: n - 1]), value[n - 1 :]]
    else:
        parts = value.split(sep, n - 1 if n > 0 else -1)
    return celtypes.ListType(celtypes.StringType(p) for p in parts)


def join(items: Any, separator: Any = "") -> celtypes.StringType:
    return celtypes.StringType(_text(separator).join(_text(item) for item in _list(items)))


def lower_ascii(text: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in _text(text)))


def upper_ascii(text: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in _text(text)))


def trim(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_text(text).strip())


def reverse(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_text(text)[::-1])


def quote(text: Any) -> celtypes.StringType:
    escaped = (
        _text(text)
        .replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\t", "\\t")
        .replace("\r", "\\r")
    )
    return celtypes.StringType(f'"{escaped}"')


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    # A selector's patterns are literals: each is compiled once.
    try:
        return re2.compile(pattern)
    except re2.error as e:
        raise ValueError(f"error parsing regexp: {e}") from e


def find(text: Any, pattern: Any) -> celtypes.StringType | CELEvalError:
    try:
        compiled = _regex(_text(pattern))
    except ValueError as e:
        return error(str(e))
    match = compiled.search(_text(text))
    return celtypes.StringType(match.group(0) if match else "")


def find_all(text: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType | CELEvalError:
    try:
        compiled = _regex(_text(pattern))
    except ValueError as e:
        return error(str(e))
    n = int(limit)
    found = [m.group(0) for m in compiled.finditer(_text(text))]
    if n >= 0:
        found = found[:n]
    return celtypes.ListType(celtypes.StringType(f) for f in found)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": quantity,
    "isQuantity": is_quantity,
    "compareTo": compare_to,
    "isGreaterThan": is_greater_than,
    "isLessThan": is_less_than,
    "add": add,
    "sub": sub,
    "asInteger": as_integer,
    "isInteger": is_integer,
    "asApproximateFloat": as_approximate_float,
    "sign": sign,
    "semver": semver,
    "isSemver": is_semver,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "isSorted": is_sorted,
    "sum": sum_,
    "min": _extreme("min", min),
    "max": _extreme("max", max),
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "charAt": char_at,
    "substring": substring,
    "replace": replace,
    "split": split,
    "join": join,
    "lowerAscii": lower_ascii,
    "upperAscii": upper_ascii,
    "trim": trim,
    "reverse": reverse,
    "strings.quote": quote,
    "find": find,
    "findAll": find_all,
    "optional.of": OptionalValue,
    "optional.none": lambda: _NONE,
    "optional.ofNonZeroValue": lambda v: _NONE if _is_zero(v) else OptionalValue(v),
    "hasValue": lambda o: celtypes.BoolType(_optional(o).present()),
    "value": opt_value,
    "orValue": opt_or_value,
    "or": opt_or,
    # What `x.?f` and `x[?k]` are rewritten to before celpy parses them (program.py).
    OPT_SELECT: opt_field,
}
"""Every function of the libraries above, by its CEL name (a method's name is its function's)."""
