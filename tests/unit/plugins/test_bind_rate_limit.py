"""BindRateLimit: a token bucket of ``burst`` tokens refilled at ``qps`` a second, one token per
pod permitted; its args and their errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from plugin_harness import make_pod

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.plugins import bind_rate_limit

PATH = "spec.plugins.permit[0].args"


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class BucketCase:
    qps: float
    burst: int
    times: list[float]
    """When each pod asks, in seconds after the plugin was built."""
    permitted: list[bool]


BUCKET_CASES = {
    "a full bucket permits a burst at once, then refuses": BucketCase(
        qps=1, burst=3, times=[0, 0, 0, 0], permitted=[True, True, True, False]
    ),
    "then a token a second": BucketCase(
        qps=1,
        burst=2,
        times=[0, 0, 0.5, 1, 1.5, 2.5],
        permitted=[True, True, False, True, False, True],
    ),
    "a fraction of a token is kept between pods": BucketCase(
        qps=2, burst=1, times=[0, 0.25, 0.5, 0.75], permitted=[True, False, True, False]
    ),
    "a long quiet time refills the bucket to burst, no more": BucketCase(
        qps=10, burst=2, times=[0, 0, 60, 60, 60], permitted=[True, True, True, True, False]
    ),
}


@pytest.mark.parametrize("case", BUCKET_CASES.values(), ids=BUCKET_CASES.keys())
def test_the_bucket(case: BucketCase) -> None:
    clock = Clock()
    plugin = bind_rate_limit.BindRateLimit(case.qps, case.burst, clock)
    start = clock.now
    permitted = []
    for i, at in enumerate(case.times):
        clock.now = start + at
        permitted.append(plugin.permit(None, make_pod(f"p{i}"), "n1") is None)
    assert permitted == case.permitted


def test_a_refusal_says_why() -> None:
    plugin = bind_rate_limit.new_plugin({"qps": 0.5, "burst": 1}, PATH)
    assert plugin.permit(None, make_pod("a"), "n1") is None
    assert plugin.permit(None, make_pod("b"), "n1") == (
        "BindRateLimit: the policy's pods go to binding at most 0.5 a second, in bursts of 1; "
        "tried again later"
    )


def test_the_defaults_are_kube_schedulers_client_qps_and_burst() -> None:
    plugin = bind_rate_limit.new_plugin({}, PATH)
    pod = make_pod()
    assert all(plugin.permit(None, pod, "n1") is None for _ in range(100))
    assert plugin.permit(None, pod, "n1") is not None


ARGS_ERRORS = {
    "qps 0": ({"qps": 0}, [f"{PATH}.qps: must be a number > 0"]),
    "qps a string": ({"qps": "5"}, [f"{PATH}.qps: must be a number > 0"]),
    "qps a boolean": ({"qps": True}, [f"{PATH}.qps: must be a number > 0"]),
    "burst 0": ({"burst": 0}, [f"{PATH}.burst: must be an integer >= 1"]),
    "burst a fraction": ({"burst": 1.5}, [f"{PATH}.burst: must be an integer >= 1"]),
    "every problem at once": (
        {"rate": 1, "qps": -1, "burst": None},
        [
            f"{PATH}.rate: unknown field; expected one of ['burst', 'qps']",
            f"{PATH}.qps: must be a number > 0",
            f"{PATH}.burst: must be an integer >= 1",
        ],
    ),
}


@pytest.mark.parametrize(("args", "expected"), ARGS_ERRORS.values(), ids=ARGS_ERRORS.keys())
def test_args_errors(args: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(ArgsError) as raised:
        bind_rate_limit.new_plugin(args, PATH)
    assert [str(error) for error in raised.value.errors] == expected
