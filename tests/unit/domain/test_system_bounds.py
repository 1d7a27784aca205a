"""`call_within`: user code given a time limit, in a daemon thread."""

from __future__ import annotations

import threading

import pytest

from pytest_evalcases.domain.system import Unfinished, call_within


def test_a_call_that_returns_gives_its_value() -> None:
    assert call_within(lambda: 42, 30) == 42


def test_a_call_that_raises_raises_the_same_in_the_caller() -> None:
    def explode() -> None:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        call_within(explode, 30)


def test_a_call_that_does_not_return_is_unfinished_and_left_behind() -> None:
    release = threading.Event()
    try:
        with pytest.raises(Unfinished):
            call_within(release.wait, 0.01)
    finally:
        release.set()


def test_without_a_limit_the_call_runs_in_this_thread() -> None:
    assert call_within(threading.current_thread, None) is threading.current_thread()
