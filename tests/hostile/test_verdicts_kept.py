"""A failed judge never destroys a verdict that held (issue 21, "What to build" 4).

A re-judge whose judge cannot be reached keeps each verdict that still holds for the trace (made
on the same answer and context), with the key of the judge that made it, so a plain replay
passes as it did; the case is listed `not re-judged: <reason>` and the run exits non-zero.
Judge A is the offline lexical judge; judge B an OpenAI judge at a port that refuses.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from evalhelpers import Project, changes_section, output, run_pytest_env_in_process, suite_doc

STAGES = ["tools", "faithfulness", "correctness"]


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.parametrize("mode", ["--live-judges", "--live-stale", "--live"])
def test_a_judge_that_cannot_be_reached_keeps_the_verdicts_that_held(
    project: Project, refused_port: int, mode: str
) -> None:
    """Break: `--live-judges --eval-judge B` with B unreachable replaced every verdict of the
    previous judge A with "pending", and the plain replay that passed before then errored on
    every case (the same with --live-stale, and --live over an unchanged trace)."""
    project.write_suite(suite_doc(stages=STAGES, judge="lexical"))
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=3)
    recorded = {path: content for path, (content, _) in project.files().items()}

    rejudged = run_pytest_env_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        mode,
        "--eval-judge",
        "openai:gpt-4o-mini",
        env={
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{refused_port}/v1",
        },
    )

    assert rejudged.ret == pytest.ExitCode.TESTS_FAILED, output(rejudged)
    listed = [line for line in changes_section(rejudged) if "not re-judged: " in line]
    assert len(listed) == 3, output(rejudged)
    assert all("is unreachable" in line for line in listed), listed
    # Nothing of what held was lost: each cassette is as judge A left it.
    assert {path: content for path, (content, _) in project.files().items()} == recorded
    project.run("-p", "no:cacheprovider").assert_outcomes(passed=3)
