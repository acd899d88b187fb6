"""The collector's freezing: survivors of a full collection are frozen, and the periodic sweep
collects the cyclic garbage among them."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from policy_scheduler import collector


class Node:
    """A cycle of two when linked: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> Node:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    clock = Clock()
    uninstall = collector.install(sweep_seconds=600.0, clock=clock)
    try:
        yield clock
    finally:
        uninstall()


def test_the_survivors_of_a_full_collection_are_frozen(clock: Clock) -> None:
    gc.collect()
    assert gc.get_freeze_count() > 0


def test_a_young_collection_freezes_nothing(clock: Clock) -> None:
    gc.unfreeze()
    gc.collect(0)
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_of_frozen_objects_waits_for_the_sweep(clock: Clock) -> None:
    held = cycle()
    ref = weakref.ref(held)
    gc.collect()  # alive then, so frozen
    del held
    gc.collect()
    assert ref() is not None, "frozen: only reference counting could free it, and it is a cycle"
    clock.now = 599.0
    gc.collect()
    assert ref() is not None
    clock.now = 600.0
    gc.collect()
    assert ref() is None
    assert gc.get_freeze_count() > 0, "the sweep's survivors are frozen again"


def test_unfrozen_garbage_is_collected_at_once(clock: Clock) -> None:
    ref = weakref.ref(cycle())
    gc.collect()
    assert ref() is None


def test_uninstall_unfreezes_everything_and_stops_freezing() -> None:
    uninstall = collector.install(clock=Clock())
    gc.collect()
    assert gc.get_freeze_count() > 0
    uninstall()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gc.get_freeze_count() == 0
