"""judges/pacing's learnt pace on a fake clock (issue 30 part 5): a refusal halves the pace at
once, and it is back at the rate it was cut from within seconds of the provider's pause, for
servers with and without x-ratelimit-* headers and whole-second or fractional Retry-After.

Before: a refusal cut the pace to the served rate less a tenth, and it grew back by 2% of that a
second, and the next refusal measured the rate afresh from the slower pace: under a limit that
refuses now and then, the pace fell a step a refusal and took minutes to climb back (6.62x the
limit's best against a token bucket answering fractional Retry-Afters, no headers)."""

from __future__ import annotations

import pytest

from pytest_evalcases.judges.pacing import (
    LEARNT_CUT,
    RECOVERY_SECONDS,
    Pacing,
    RateLimits,
    learnt_pace,
)

from .test_endpoint import FakeClock


def served_at(pacing: Pacing, clock: FakeClock, per_second: float, seconds: float) -> None:
    """Successes at an even rate, for `seconds`."""
    for _ in range(round(per_second * seconds)):
        clock.now += 1.0 / per_second
        pacing.note_served()


def refused(pacing: Pacing, clock: FakeClock, retry_after: float) -> float:
    """A refusal as the endpoint handles it: the pace cut, every bucket empty until the pause's
    end. Returns when the pause ends."""
    pacing.learn_pace(pacing.round)
    pause_end = clock.now + retry_after
    pacing.empty_until(pause_end)
    return pause_end


@pytest.mark.parametrize("retry_after", [0.013, 1.0], ids=["fractional", "whole-seconds"])
def test_a_refusal_halves_the_pace_at_once_and_it_is_back_within_seconds(
    retry_after: float,
) -> None:
    clock = FakeClock()
    pacing = Pacing(None, clock)  # no limit given, none announced: only the 429s to go by
    served_at(pacing, clock, per_second=50, seconds=3)

    pause_end = refused(pacing, clock, retry_after)

    assert pacing.learnt_rpm == pytest.approx(LEARNT_CUT * 3000, rel=0.02)  # halved at once
    assert pacing.requests is not None and pacing.requests.per_minute == pacing.learnt_rpm
    # the bucket is empty until the pause's end: the next request waits for it, not longer
    assert pacing.reserve(0, clock.now)[0] == pytest.approx(retry_after + 60 / pacing.learnt_rpm)
    paces = {}
    for second in range(1, 6):  # served at the pace, whatever it is
        clock.now = pause_end + second
        pacing.note_served()
        paces[second] = pacing.learnt_rpm
    assert paces[1] > 0.9 * 3000  # most of the cut is won back in the first second
    assert paces[round(RECOVERY_SECONDS)] == pytest.approx(3000, rel=0.02)  # back at the limit
    assert 3000 < paces[5] < 1.05 * 3000  # then probing above it, slowly at first


def test_the_climb_back_starts_when_the_pause_ends_not_at_the_refusal() -> None:
    clock = FakeClock()
    pacing = Pacing(None, clock)
    served_at(pacing, clock, per_second=50, seconds=3)
    pause_end = refused(pacing, clock, retry_after=5.0)
    clock.now = pause_end  # the pause is over: nothing was sent during it
    pacing.note_served()
    assert pacing.learnt_rpm == pytest.approx(LEARNT_CUT * 3000, rel=0.02)


def test_refusals_in_a_row_do_not_ratchet_the_pace_down() -> None:
    """The limit holds at 50 a second: each probe above it is refused, and the pace keeps
    returning to it (before: each refusal measured a slower pace and cut it further)."""
    clock = FakeClock()
    pacing = Pacing(None, clock)
    served_at(pacing, clock, per_second=50, seconds=3)
    for _ in range(10):
        pause_end = refused(pacing, clock, retry_after=0.02)
        clock.now = pause_end
        while (pacing.learnt_rpm or 0) <= 3000 * 1.05:  # served at the pace, refused above
            clock.now += 60 / (pacing.learnt_rpm or 3000)
            pacing.note_served()
    assert pacing.learnt_rpm == pytest.approx(3000, rel=0.06)
    assert pacing._peak == pytest.approx(3000, rel=0.06)


def test_a_refusal_of_a_request_paced_before_the_cut_does_not_cut_again() -> None:
    """Requests paced at the old rate still go out after a cut and may be refused: they say
    nothing of the new pace (before, a second cut 0.16 s after the first halved a pace still
    climbing back, and the probe took 25 s to regain the limit)."""
    clock = FakeClock()
    pacing = Pacing(None, clock)
    served_at(pacing, clock, per_second=50, seconds=3)
    paced_before = pacing.round
    pause_end = refused(pacing, clock, retry_after=0.02)
    clock.now = pause_end + 0.2
    pacing.note_served()
    climbing = pacing.learnt_rpm
    pacing.learn_pace(paced_before)
    pacing.empty_until(clock.now + 0.02)  # its own pause: the climb goes on from where it was
    clock.now += 0.02
    pacing.note_served()
    assert pacing.learnt_rpm is not None and climbing < pacing.learnt_rpm < 3000
    climbing = pacing.learnt_rpm
    pacing.learn_pace(pacing.round)  # paced after the cut: cut again
    assert pacing.learnt_rpm == pytest.approx(LEARNT_CUT * climbing)


def test_a_peak_measured_too_low_is_passed_within_seconds() -> None:
    clock = FakeClock()
    pacing = Pacing(None, clock)
    served_at(pacing, clock, per_second=30, seconds=3)  # still climbing: the limit is 50 a second
    pause_end = refused(pacing, clock, retry_after=0.02)
    clock.now = pause_end + RECOVERY_SECONDS + 10.0
    pacing.note_served()
    assert pacing.learnt_rpm is not None and pacing.learnt_rpm > 3000


def test_the_peak_is_the_lower_of_the_pace_and_the_served_rate() -> None:
    clock = FakeClock()
    pacing = Pacing(RateLimits(rpm=6000), clock)  # a pace of 100 a second in force
    served_at(pacing, clock, per_second=20, seconds=3)  # the provider served 20 a second
    refused(pacing, clock, retry_after=0.0)
    assert pacing.learnt_rpm == pytest.approx(LEARNT_CUT * 20 * 60, rel=0.02)

    clock2 = FakeClock()
    paced = Pacing(RateLimits(rpm=600), clock2)  # 10 a second in force: the lower
    served_at(paced, clock2, per_second=20, seconds=3)
    refused(paced, clock2, retry_after=0.0)
    assert paced.learnt_rpm == pytest.approx(LEARNT_CUT * 600)


@pytest.mark.parametrize("whole", [False, True], ids=["fractional", "whole-seconds"])
def test_with_announced_limits_the_pace_gives_way_to_the_limit_once_regained(whole: bool) -> None:
    clock = FakeClock()
    pacing = Pacing(None, clock)
    pacing.adopt({"x-ratelimit-limit-requests": "3000"}, sent_since=0)
    served_at(pacing, clock, per_second=50, seconds=3)
    pause_end = refused(pacing, clock, retry_after=1.0 if whole else 0.05)
    assert pacing.learnt_rpm == pytest.approx(LEARNT_CUT * 3000)
    assert "requests/min (learnt from 429s)" in pacing.describe_limits()
    clock.now = pause_end + RECOVERY_SECONDS
    pacing.note_served()
    assert pacing.learnt_rpm is None  # the announced limit paces on its own again
    assert pacing.requests is not None and pacing.requests.per_minute == 3000


def test_nothing_served_yet_and_no_limit_leaves_the_pause_to_back_off_alone() -> None:
    clock = FakeClock()
    pacing = Pacing(None, clock)
    refused(pacing, clock, retry_after=1.0)
    assert pacing.learnt_rpm is None and not pacing.active


def test_the_learnt_pace_curve() -> None:
    assert learnt_pace(1000, 0.0) == pytest.approx(1000 * LEARNT_CUT)
    assert learnt_pace(1000, -1.0) == pytest.approx(1000 * LEARNT_CUT)  # still paused
    points = [learnt_pace(1000, t / 10) for t in range(0, 41)]
    assert points == sorted(points)  # never slower as time passes
    assert learnt_pace(1000, RECOVERY_SECONDS) == pytest.approx(1000)
