"""Polling a memory system's ready(user, result) with back-off (a fake clock)."""

from __future__ import annotations

import pytest

from pytest_evalcases.domain.users import IngestTimeout, wait_until_ready


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_it_looks_again_with_doubling_pauses_until_ready():
    clock, looks = Clock(), []

    def ready(user, result):
        looks.append(clock.now)
        return len(looks) == 4

    waited = wait_until_ready(ready, {"id": "u"}, None, 600, clock.time, clock.sleep)

    assert clock.pauses == [0.05, 0.1, 0.2]
    assert waited == pytest.approx(0.35)


def test_it_gives_up_at_the_timeout_with_the_time_waited():
    clock = Clock()
    with pytest.raises(IngestTimeout, match=r"still false after 1\.0 s"):
        wait_until_ready(lambda u, r: False, {"id": "u"}, None, 1.0, clock.time, clock.sleep)
    assert sum(clock.pauses) == pytest.approx(1.0)  # the last pause ends at the timeout
    assert max(clock.pauses) <= 5.0


def test_a_system_ready_at_once_costs_no_pause():
    clock = Clock()
    assert wait_until_ready(lambda u, r: True, {}, None, 1.0, clock.time, clock.sleep) == 0.0
    assert clock.pauses == []
