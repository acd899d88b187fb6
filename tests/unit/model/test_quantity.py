"""Quantities parse exactly and round up as apimachinery's MilliValue/Value do."""

from __future__ import annotations

import pytest

from policy_scheduler.model.quantity import QuantityError, format_quantity, to_int


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        pytest.param("cpu", "500m", 500, id="millicores"),
        pytest.param("cpu", "2", 2000, id="whole cores"),
        pytest.param("cpu", "0.1", 100, id="decimal cores"),
        pytest.param("cpu", "1.0005", 1001, id="sub-millicore rounds up"),
        pytest.param("cpu", "100u", 1, id="micro cores round up to one millicore"),
        pytest.param("cpu", 3, 3000, id="YAML integer"),
        pytest.param("cpu", 0.25, 250, id="YAML float"),
        pytest.param("memory", "1Gi", 2**30, id="binary suffix"),
        pytest.param("memory", "1G", 10**9, id="decimal suffix"),
        pytest.param("memory", "1.5Mi", 3 * 2**19, id="fractional binary"),
        pytest.param("memory", "2e3", 2000, id="exponent"),
        pytest.param("memory", "1E3", 1000, id="capital exponent"),
        pytest.param("memory", "1500m", 2, id="milli bytes round up"),
        pytest.param("pods", "110", 110, id="count"),
        pytest.param("nvidia.com/gpu", "+1", 1, id="explicit plus sign"),
    ],
)
def test_to_int(resource: str, text: object, expected: int) -> None:
    assert to_int(resource, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("lots", id="a word"),
        pytest.param("1 Gi", id="space before suffix"),
        pytest.param("1Gb", id="unknown suffix"),
        pytest.param("", id="empty"),
        pytest.param(True, id="boolean"),
        pytest.param(None, id="null"),
        pytest.param(float("inf"), id="infinity"),
    ],
)
def test_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        to_int("memory", text)


@pytest.mark.parametrize(
    ("resource", "amount", "expected"),
    [
        pytest.param("cpu", 1500, "1500m", id="millicores"),
        pytest.param("cpu", 2000, "2", id="whole cores"),
        pytest.param("memory", 2**31, "2Gi", id="binary"),
        pytest.param("memory", 1000, "1000", id="plain bytes"),
    ],
)
def test_format(resource: str, amount: int, expected: str) -> None:
    assert format_quantity(resource, amount) == expected
