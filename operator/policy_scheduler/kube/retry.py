"""Requests tried again, with a bounded backoff, while the API server cannot answer them: what a
restart of kube-apiserver or etcd looks like from here (refused connections, 5xx, a 403 while
its authorizer warms up)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from policy_scheduler.kube.client import ApiError

T = TypeVar("T")

RETRY_INITIAL = 0.5
RETRY_MAX = 5.0


async def retrying(
    call: Callable[[], Awaitable[T]],
    again: Callable[[ApiError], bool],
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``'s answer. An :class:`ApiError` that ``again`` accepts is tried again after
    0.5 s, then waits doubling up to 5 s, for as long as the next try would start within
    ``seconds``; the last error, or any other, is raised."""
    deadline = clock() + seconds
    delay = RETRY_INITIAL
    while True:
        try:
            return await call()
        except ApiError as error:
            if not again(error) or clock() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX)
