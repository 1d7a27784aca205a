"""pytest_plugin/heap.py: what survives a full collection is frozen, garbage is still collected."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from pytest_evalcases.pytest_plugin.heap import keep_run_heap_out_of_gc, stop_freezing


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def freezing() -> Iterator[None]:
    frozen_before = gc.get_freeze_count()
    keep_run_heap_out_of_gc()
    try:
        yield
    finally:
        stop_freezing()
        # The test process's collector as it was. In a suite run, the in-process pytest runs
        # before this test froze the process's heap (~1M objects by then): unfreezing it would
        # hand them back to every later full collection (0.6 s each, two per in-process run
        # after this test). Frozen live objects are still freed by reference counting.
        if not frozen_before:
            gc.unfreeze()


def test_the_survivors_of_a_full_collection_are_frozen(freezing: None) -> None:
    kept = [_Node() for _ in range(1000)]
    before = gc.get_freeze_count()
    gc.collect()
    assert gc.get_freeze_count() >= before + len(kept)


def test_a_cycle_unreachable_at_a_full_collection_is_still_collected(freezing: None) -> None:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second
    gc.collect()
    assert gone() is None


def test_after_stop_freezing_a_full_collection_freezes_nothing(freezing: None) -> None:
    stop_freezing()
    assert not [cb for cb in gc.callbacks if cb.__name__ == "_freeze_survivors"]
    kept = [_Node() for _ in range(1000)]
    before = gc.get_freeze_count()
    gc.collect()
    # The count is the process's: a pytest session another test left running in a thread (an
    # in-process run's hook left behind) may freeze at the same moment. Alone, it must not move.
    if threading.active_count() == 1:
        assert gc.get_freeze_count() == before
    assert len(kept) == 1000
