"""Waiting until something holds, within a time limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeoutError(RuntimeError):
    """What was waited for did not come in time."""


def poll(
    what: str,
    probe: Callable[[], T | None],
    timeout: float,
    interval: float = 0.2,
    alive: Callable[[], None] | None = None,
) -> T:
    """``probe()`` every ``interval`` seconds until it returns something truthy, which is
    returned; ``alive()`` (which raises when what is waited on has died) before each. After
    ``timeout`` seconds, WaitTimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None:
            alive()
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise WaitTimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
