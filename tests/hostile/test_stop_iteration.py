"""StopIteration from user code (issue 30, "What to build" 1): `next()` on an exhausted
iterator in `run(case)` or `run_turn` (sync or async) or in `setup(suite)` is that hook's error
at once, as any other exception of the system is. It cannot cross a Future or a coroutine:
before, a sync run() or run_turn waited out the whole --eval-timeout and read "did not finish",
an async one read "coroutine raised StopIteration", and setup(suite) hung."""

from __future__ import annotations

import pytest
from evalhelpers import Project, output

SYSTEM = """\
def exhausted():
    return next(iter([]))


def run(case):
    exhausted()


async def arun(case):
    exhausted()


class WithSetup:
    def setup(self, suite):
        exhausted()

    def run(self, case):
        return {"answer": "a", "tool_calls": [], "retrieved": [], "context": []}


with_setup = WithSetup()


class Turns:
    def run(self, case):
        raise AssertionError("run_turn drives a conversation")

    def run_turn(self, case, history):
        exhausted()


class AsyncTurns(Turns):
    async def run_turn(self, case, history):
        exhausted()


turns, async_turns = Turns(), AsyncTurns()
"""


@pytest.mark.parametrize(
    ("system", "hook"),
    [
        ("run", "run(case)"),
        ("arun", "run(case)"),
        ("with_setup", "setup(suite)"),
        ("turns", "run_turn(case, history)"),
        ("async_turns", "run_turn(case, history)"),
    ],
    ids=["sync run", "async run", "setup", "sync run_turn", "async run_turn"],
)
def test_stop_iteration_in_a_hook_is_its_error_at_once(
    project: Project, system: str, hook: str
) -> None:
    """Break: a sync run() waited the whole --eval-timeout, then "did not finish ... if it is
    slow"; setup(suite) hung the run."""
    project.write_text("exhausting.py", SYSTEM)
    case = {"id": "c1", "reference": "a"}
    case.update({"turns": ["q1", "q2"]} if "turns" in system else {"input": "q"})
    project.write_suite(
        {"name": "s", "system": f"exhausting:{system}", "stages": ["exact_match"], "cases": [case]}
    )

    result = project.run("--live", "--eval-timeout", "60", "-p", "no:cacheprovider")

    text = output(result)
    result.assert_outcomes(errors=1)
    assert f"{hook} raised StopIteration()" in text, text
    assert "did not finish" not in text, text
