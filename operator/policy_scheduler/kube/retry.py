"""Requests tried again, with a bounded backoff, while the API server cannot answer them: what a
restart of kube-apiserver or etcd looks like from here (refused connections, 5xx, a 403 while
its authorizer warms up).

Every wait is :func:`jittered`, as client-go's backoffs are: a dozen watches broken off by one
restart would otherwise list again in lockstep, and so would every replica's."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from policy_scheduler.kube.client import ApiError

T = TypeVar("T")

RETRY_INITIAL = 0.5
RETRY_MAX = 5.0


def jittered(delay: float) -> float:
    """``delay`` plus up to as much again, at random (client-go's jitter factor 1.0)."""
    return delay * (1.0 + random.random())


async def retrying(
    call: Callable[[], Awaitable[T]],
    again: Callable[[ApiError], bool],
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``'s answer. An :class:`ApiError` that ``again`` accepts is tried again after
    0.5 s, then waits doubling up to 5 s (each :func:`jittered`), for as long as the next try
    would start within ``seconds``; the last error, or any other, is raised."""
    deadline = clock() + seconds
    delay = RETRY_INITIAL
    while True:
        try:
            return await call()
        except ApiError as error:
            wait = jittered(delay)
            if not again(error) or clock() + wait > deadline:
                raise
        await asyncio.sleep(wait)
        delay = min(delay * 2, RETRY_MAX)
