"""Short pauses of Python's cyclic garbage collector in the long-running operator.

A full (generation 2) collection walks every container object the process holds, with the event
loop stopped: at 5,000 nodes and a few thousand pods that takes about 450 ms, which every pod
arriving meanwhile waits (kube-scheduler's collector, Go's, runs concurrently with it and costs
its pods no such pause). Nearly everything such a
collection walks is long-lived and never part of a cycle that dies: the imported modules, the
cache's nodes and pods (freed by reference counting when they go, frozen or not).

So :func:`install` freezes (``gc.freeze``) whatever survives a full collection: later full
collections walk only the objects made since. Cycles among frozen objects that become garbage
would never be found that way, so once every ``sweep_seconds`` the next full collection first
unfreezes everything and walks it all once: one long pause in that period instead of one every
few seconds.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

SWEEP_SECONDS = 600.0
"""How often a full collection walks the frozen objects too, collecting their cyclic garbage."""

_FULL = 2


def install(
    sweep_seconds: float = SWEEP_SECONDS, clock: Callable[[], float] = time.monotonic
) -> Callable[[], None]:
    """Freeze the survivors of every full collection, and let one full collection every
    ``sweep_seconds`` (by ``clock``) walk everything. Returns the function that undoes it
    (unfreezing everything)."""
    last_sweep = clock()

    def callback(phase: str, info: dict[str, Any]) -> None:
        nonlocal last_sweep
        if info["generation"] != _FULL:
            return
        if phase == "start":
            if clock() - last_sweep >= sweep_seconds:
                # The collection about to run takes the frozen objects back with it.
                gc.unfreeze()
                last_sweep = clock()
        else:
            gc.freeze()

    gc.callbacks.append(callback)

    def uninstall() -> None:
        gc.callbacks.remove(callback)
        gc.unfreeze()

    return uninstall
