"""Device quantities keep their format and print as apimachinery's canonical form; capacity
requests are rounded, filled and checked as kube's consumable-capacity code does."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from policy_scheduler.model.dra.capacity import CapacityError, consumption, fits
from policy_scheduler.model.dra.devices import Capacity
from policy_scheduler.model.dra.quantities import Amount


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("1Gi", "1Gi", id="binary stays binary"),
        pytest.param("1536Mi", "1536Mi", id="binary not a whole larger unit"),
        pytest.param("512Ki", "512Ki", id="binary below a larger unit"),
        pytest.param("1000Mi", "1000Mi", id="binary under 1024 of a unit"),
        pytest.param("0.5Gi", "512Mi", id="fractional binary"),
        pytest.param("100", "100", id="small binary-free number"),
        pytest.param("1500M", "1500M", id="decimal"),
        pytest.param("1000M", "1G", id="decimal to a larger suffix"),
        pytest.param("0.5", "500m", id="fraction to milli"),
        pytest.param("1e3", "1e3", id="exponent"),
        pytest.param("1.5e3", "1500", id="exponent with a fraction"),
        pytest.param("0", "0", id="zero"),
        pytest.param("1n", "1n", id="nano"),
        pytest.param("0.1n", "1n", id="below nano rounds up"),
    ],
)
def test_canonical(text: str, canonical: str) -> None:
    assert str(Amount.parse(text)) == canonical


def capacity(value: str, **policy: Any) -> Capacity:
    def opt(key: str) -> Amount | None:
        return Amount.parse(policy[key]) if key in policy else None

    has_range = any(k in policy for k in ("min", "max", "step"))
    return Capacity(
        value=Amount.parse(value),
        default=opt("default"),
        valid_values=tuple(Amount.parse(v) for v in policy.get("values", ())),
        valid_range=(opt("min"), opt("max"), opt("step")) if has_range else None,
        has_policy=bool(policy),
    )


@pytest.mark.parametrize(
    ("requested", "cap", "consumed"),
    [
        pytest.param(None, capacity("10G"), "10G", id="not requested: all of it"),
        pytest.param(None, capacity("10G", default="1G"), "1G", id="not requested: default"),
        pytest.param("3G", capacity("10G"), "3G", id="no policy: as asked"),
        pytest.param("1500M", capacity("10G", min="1G", step="1G"), "2G", id="up to a step"),
        pytest.param("500M", capacity("10G", min="1G", step="1G"), "1G", id="up to the minimum"),
        pytest.param("1500M", capacity("10G", min="1G"), "1500M", id="range without a step"),
        pytest.param("250m", capacity("1", min="100m", step="100m"), "1", id="whole steps"),
        pytest.param("3", capacity("8", values=["2", "4", "8"]), "4", id="next valid value"),
        pytest.param("9", capacity("8", values=["2", "4", "8"]), "9", id="above valid values"),
    ],
)
def test_consumption(requested: str | None, cap: Capacity, consumed: str) -> None:
    requests = {} if requested is None else {"c": Amount.parse(requested)}
    got = consumption(requests, {"c": cap})
    assert got is not None
    assert str(got["c"]) == consumed


@pytest.mark.parametrize(
    ("requested", "cap", "in_use", "allocating", "expect"),
    [
        pytest.param("3G", capacity("10G"), "7G", None, True, id="fills it exactly"),
        pytest.param("3G", capacity("10G"), "7G", "1", False, id="with this allocation's"),
        pytest.param("11G", capacity("10G"), None, None, False, id="more than it has"),
        pytest.param(
            "5G", capacity("10G", min="1G", max="4G"), None, None, False, id="above the maximum"
        ),
        pytest.param("3", capacity("8", values=["2", "4"]), None, None, True, id="rounded to 4"),
        pytest.param("5", capacity("8", values=["2", "4"]), None, None, False, id="no such value"),
    ],
)
def test_fits(
    requested: str, cap: Capacity, in_use: str | None, allocating: str | None, expect: bool
) -> None:
    def used(text: str | None) -> dict[str, Fraction] | None:
        return None if text is None else {"c": Amount.parse(text).value}

    requests = {"c": Amount.parse(requested)}
    assert fits(requests, {"c": cap}, used(in_use), used(allocating)) is expect


def test_a_capacity_the_device_lacks_does_not_fit() -> None:
    assert consumption({"other": Amount.parse("1")}, {"c": capacity("1")}) is None
    assert not fits({"other": Amount.parse("1")}, {"c": capacity("1")}, None, None)


def test_a_request_beyond_int64_cannot_be_rounded() -> None:
    with pytest.raises(CapacityError, match=r'capacity "c": .*exceeds MaxInt64'):
        consumption({"c": Amount.parse("1e19")}, {"c": capacity("1", min="1", step="1")})
