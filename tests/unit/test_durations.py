"""Durations as Go's ``time.ParseDuration`` reads them (``kube.timings.parse_duration``), and the
leader-election flags that take them."""

from __future__ import annotations

import pytest

from policy_scheduler.cli import build_parser
from policy_scheduler.kube.timings import parse_duration

VALID = [
    pytest.param("15s", 15.0, id="seconds"),
    pytest.param("500ms", 0.5, id="milliseconds"),
    pytest.param("1m30s", 90.0, id="minutes-and-seconds"),
    pytest.param("1h", 3600.0, id="an-hour"),
    pytest.param("1.5h", 5400.0, id="a-fraction-of-hours"),
    pytest.param("2h45m", 9900.0, id="hours-and-minutes"),
    pytest.param("1h1m1s1ms1us1ns", 3661.001001001, id="every-unit"),
    pytest.param("1m1h", 3660.0, id="units-in-any-order"),
    pytest.param("1s1s", 2.0, id="a-unit-twice"),
    pytest.param("3µs", 3e-6, id="micro-sign"),
    pytest.param("3μs", 3e-6, id="greek-mu"),
    pytest.param("3us", 3e-6, id="us"),
    pytest.param("250ns", 2.5e-7, id="nanoseconds"),
    pytest.param(".5s", 0.5, id="no-whole-part"),
    pytest.param("5.s", 5.0, id="no-fraction-digits"),
    pytest.param("007s", 7.0, id="leading-zeros"),
    pytest.param("0", 0.0, id="zero-needs-no-unit"),
    pytest.param("-0", 0.0, id="signed-zero"),
    pytest.param("0s", 0.0, id="zero-seconds"),
    pytest.param("+2s", 2.0, id="plus-sign"),
    pytest.param("-1.5s", -1.5, id="negative"),
    pytest.param("0.1ns", 0.0, id="less-than-a-nanosecond-is-dropped"),
    pytest.param("1.0000000000000000000000001s", 1.0, id="digits-beyond-precision"),
    pytest.param("9223372036854775807ns", 9223372036.854775807, id="longest"),
    pytest.param("2562047h47m16.854775807s", 9223372036.854775807, id="longest-in-hours"),
    pytest.param("-9223372036854775808ns", -9223372036.854775808, id="most-negative"),
]


@pytest.mark.parametrize(("text", "seconds"), VALID)
def test_valid_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


NOT_A_DURATION = "is not a duration (e.g. 15s, 1m30s, 500ms)"
UNITS = "(ns, us, µs, ms, s, m or h)"
TOO_LONG = "is longer than Go's longest duration, 2562047h47m16.854775807s"
INVALID = [
    pytest.param("", f"'' {NOT_A_DURATION}", id="empty"),
    pytest.param("-", f"'-' {NOT_A_DURATION}", id="a-sign-alone"),
    pytest.param("--1s", f"'--1s' {NOT_A_DURATION}", id="two-signs"),
    pytest.param("s", f"'s' {NOT_A_DURATION}", id="a-unit-alone"),
    pytest.param(".s", f"'.s' {NOT_A_DURATION}", id="a-point-alone"),
    pytest.param(
        "1h-1m", f"'1h-1m' is not a duration: unknown unit 'h-' {UNITS}", id="a-sign-inside"
    ),
    pytest.param(" 1s", f"' 1s' {NOT_A_DURATION}", id="leading-space"),
    pytest.param("1", f"'1' is not a duration: 1 has no unit {UNITS}", id="no-unit"),
    pytest.param("00", f"'00' is not a duration: 00 has no unit {UNITS}", id="zero-twice"),
    pytest.param("1.5", f"'1.5' is not a duration: 1.5 has no unit {UNITS}", id="fraction-no-unit"),
    pytest.param("1m30", f"'1m30' is not a duration: 30 has no unit {UNITS}", id="last-no-unit"),
    pytest.param("1.2.3s", f"'1.2.3s' is not a duration: 1.2 has no unit {UNITS}", id="two-points"),
    pytest.param("1d", f"'1d' is not a duration: unknown unit 'd' {UNITS}", id="days"),
    pytest.param("1S", f"'1S' is not a duration: unknown unit 'S' {UNITS}", id="upper-case"),
    pytest.param("1 s", f"'1 s' is not a duration: unknown unit ' s' {UNITS}", id="inner-space"),
    pytest.param("1s ", f"'1s ' is not a duration: unknown unit 's ' {UNITS}", id="trailing"),
    pytest.param("1e3s", f"'1e3s' is not a duration: unknown unit 'e' {UNITS}", id="exponent"),
    pytest.param("1sec", f"'1sec' is not a duration: unknown unit 'sec' {UNITS}", id="sec"),
    pytest.param("9223372036854775808ns", f"'9223372036854775808ns' {TOO_LONG}", id="too-long"),
    pytest.param("2562048h", f"'2562048h' {TOO_LONG}", id="too-many-hours"),
    pytest.param("2562047h47m16.854775808s", f"'2562047h47m16.854775808s' {TOO_LONG}", id="sum"),
    pytest.param("99999999999999999999ns", f"'99999999999999999999ns' {TOO_LONG}", id="huge"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert str(raised.value) == message


FLAGS = ("lease-duration", "renew-deadline", "retry-period")


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("1m30s", 90.0, id="minutes-and-seconds"),
        pytest.param("1h", 3600.0, id="an-hour"),
        pytest.param("750ms", 0.75, id="milliseconds"),
    ],
)
def test_leader_election_flags_take_go_durations(flag: str, value: str, seconds: float) -> None:
    args = build_parser().parse_args(["run", f"--leader-elect-{flag}", value])
    assert getattr(args, f"leader_elect_{flag.replace('-', '_')}") == seconds


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("0", "'0' must be positive", id="zero"),
        pytest.param("-5s", "'-5s' must be positive", id="negative"),
        pytest.param("15", f"'15' is not a duration: 15 has no unit {UNITS}", id="no-unit"),
    ],
)
def test_leader_election_flags_refuse(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", f"--leader-elect-{flag}={value}"])
    assert capsys.readouterr().err.endswith(f"error: argument --leader-elect-{flag}: {message}\n")
