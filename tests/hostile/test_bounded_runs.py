"""Bounded: runs and user code (issue 21, "What to build" 8): user code that raises
KeyboardInterrupt ends the run cleanly (the summary printed, recordings already written kept,
the cases not run counted as interrupted, exit code 2 as pytest's own interrupt); user code
that ends the process with `os._exit` under --live is reported by the next run, from the marker
file a live run leaves in the cassettes root until it ends.

Each interrupted or ended run is a fresh interpreter (`subprocess`, `run_in_subprocess`): an
interrupt's asyncio noise is printed as the interpreter cleans up, and `os._exit` ends the
process it runs in. The runs before and after it are in the test's process.
"""

from __future__ import annotations

import pytest
from evalhelpers import Project, changes_section, output, suite_doc, summary_section

# A system steered by steer.txt: KeyboardInterrupt or os._exit at import, or in run(case) of c2.
SYSTEM = """\
import asyncio
import os
import time
from pathlib import Path

STEER = Path(__file__).with_name("steer.txt")


def steer():
    return STEER.read_text().split() if STEER.exists() else []


if "import_interrupt" in steer():
    raise KeyboardInterrupt
if "import_exit" in steer():
    os._exit(7)


def answer(case):
    if case["id"] == "c2" and "run_interrupt" in steer():
        raise KeyboardInterrupt
    if case["id"] == "c2" and "run_exit" in steer():
        written = STEER.with_name("cassettes") / "s" / "c1.json"
        for _ in range(500):  # c1 is saved beside this run: end the process once it is
            if written.exists():
                break
            time.sleep(0.01)
        os._exit(7)
    return {"answer": case["input"], "tool_calls": [], "retrieved": [], "context": []}


def run(case):
    return answer(case)


async def arun(case):
    await asyncio.sleep(0)
    return answer(case)
"""

NOISE = ("Task was destroyed", "GeneratorExit", "never retrieved", "Traceback", "INTERNALERROR")
MARKER = ".live-run-in-progress.json"


def _project(project: Project, run: str = "run") -> Project:
    project.write_text("steered.py", SYSTEM)
    cases = [{"id": f"c{n}", "input": f"q{n}", "reference": f"q{n}"} for n in (1, 2, 3)]
    project.write_suite(
        {"name": "s", "system": f"steered:{run}", "stages": ["exact_match"], "cases": cases}
    )
    return project


def _cassettes(project: Project) -> list[str]:
    folder = project.root / "cassettes" / "s"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.mark.subprocess
@pytest.mark.parametrize("run", ["run", "arun"], ids=["sync run", "async run"])
def test_keyboard_interrupt_in_run_ends_the_live_run_cleanly(project: Project, run: str) -> None:
    """Break: KeyboardInterrupt in run(case) under --live printed "Task was destroyed but it
    is pending!" and GeneratorExit noise, and no summary."""
    _project(project, run)
    project.write_text("steer.txt", "run_interrupt")

    result = project.run("--live", "--eval-concurrency", "1", "-p", "no:cacheprovider")

    text = output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert not [noise for noise in NOISE if noise in text], text
    assert summary_section(result)  # printed
    not_recorded = [line for line in changes_section(result) if "not recorded:" in line]
    assert [line.split()[2] for line in not_recorded] == ["s::c2", "s::c3"], text
    assert all("interrupted" in line for line in not_recorded), not_recorded
    assert _cassettes(project) == ["c1.http.json", "c1.json"]  # what was written is kept


def test_keyboard_interrupt_in_run_ends_a_replay_http_run_cleanly(project: Project) -> None:
    """Break (a gap issue 21 left): KeyboardInterrupt in run(case) under --replay-http took
    pytest's own interrupt path: a traceback, no per-stage summary, the case not said."""
    _project(project)
    assert project.run("--live", "-p", "no:cacheprovider").ret == 0
    project.write_text("steer.txt", "run_interrupt")

    result = project.run_in_subprocess("--replay-http", "-rs", "-p", "no:cacheprovider")

    text = output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert not [noise for noise in NOISE if noise in text], text
    assert summary_section(result)  # printed
    assert "run interrupted: KeyboardInterrupt in run(case) of s::c2" in text
    assert "not run: interrupted (KeyboardInterrupt in run(case) of s::c2)" in text
    assert "1 passed, 1 skipped" in text  # c1 replayed; c2 not run; c3 not started


@pytest.mark.parametrize("mode", ["--live", "replay"])
def test_keyboard_interrupt_at_import_ends_the_run_cleanly(project: Project, mode: str) -> None:
    """Break: KeyboardInterrupt at import of the system module ended the run with no summary."""
    _project(project)
    project.write_suite(suite_doc())  # another suite, whose cases are not run
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=6)
    recorded = {path: content for path, (content, _) in project.files(http=True).items()}
    project.write_text("steer.txt", "import_interrupt")

    result = project.run_in_subprocess(
        *([mode] if mode != "replay" else []), "-p", "no:cacheprovider"
    )

    text = output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert not [noise for noise in NOISE if noise in text], text
    assert any(line.endswith(", 3 interrupted") for line in summary_section(result)), text
    assert "run interrupted: KeyboardInterrupt at import of the system 'steered:run'" in text
    assert {path: c for path, (c, _) in project.files(http=True).items()} == recorded


@pytest.mark.parametrize("where", ["import_exit", "run_exit"])
def test_os_exit_under_live_is_reported_by_the_next_run(project: Project, where: str) -> None:
    """Break: os._exit in a system under --live (at import or in run) left no report."""
    _project(project)
    project.write_text("steer.txt", where)

    killed = project.run_in_subprocess(
        "--live", "--eval-concurrency", "1", "-p", "no:cacheprovider"
    )

    assert killed.ret == 7, output(killed)
    project.write_text("steer.txt", "")
    after = project.run("--live", "-p", "no:cacheprovider")

    recordings = 1 if where == "run_exit" else 0
    assert (
        f"the previous --live run ended without a summary (os._exit or a kill?) after "
        f"{recordings} recording{'s' * (recordings != 1)}"
    ) in output(after)
    after.assert_outcomes(passed=3)
    assert not (project.root / "cassettes" / MARKER).exists()  # this run ended: no marker
    again = project.run("-p", "no:cacheprovider")
    assert "the previous --live run ended without a summary" not in output(again)
