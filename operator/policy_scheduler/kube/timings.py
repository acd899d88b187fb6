"""Leader-election timings, kept apart from the election itself (``kube/leader.py``) so that the
command line can offer their defaults without importing the API client: ``validate``,
``simulate`` and ``convert`` build the same argument parser as ``run`` and must start fast."""

from __future__ import annotations

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
