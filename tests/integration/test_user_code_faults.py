"""User code that exits, hangs, returns what JSON cannot hold or crashes: each fault ends on the
case it concerns, the other cases still run and record, and the session ends by itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from bytecode import bytecode_env
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    output,
    suite_doc,
    summary_section,
)


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


def test_system_exit_in_run_is_an_error_of_that_case_only(project: Project) -> None:
    project.write_suite(suite_doc())
    project.steer(exit=["gamma"])

    result = project.run("--live")

    assert_not_aborted(result)
    result.assert_outcomes(passed=2, errors=1)
    block = error_block(result, "suite::gamma")
    assert "run(case) raised SystemExit(3)" in block and "raise an exception instead" in block
    assert not project.cassette_path("suite", "gamma").exists()
    assert project.cassette_path("suite", "alpha").exists()


def test_system_exit_at_import_is_an_error_of_that_suite_only(project: Project) -> None:
    project.write_text("exits.py", "import sys\nsys.exit(3)\n")
    project.write_suite(suite_doc("quits", system="exits:system"), "cases/quits.json")
    project.write_suite(suite_doc())

    result = project.run("--live")

    assert_not_aborted(result)
    result.assert_outcomes(passed=3, errors=1)
    assert "cannot import system 'exits:system': SystemExit: 3" in error_block(
        result, "cases/quits.json::suite"
    )


def test_a_hung_system_times_out_and_keeps_its_old_recording(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    before = project.cassette_path("suite", "gamma").read_bytes()
    project.steer(hang=["gamma"], suffix=" (v2)")

    started = time.monotonic()
    result = project.run("--live", "--eval-timeout", "0.5")
    elapsed = time.monotonic() - started

    assert_not_aborted(result)
    result.assert_outcomes(failed=2, errors=1)  # the others were re-recorded: " (v2)" fails
    assert "run(case) of suite::gamma did not finish within 0.5 s" in error_block(
        result, "suite::gamma"
    )
    assert project.cassette_path("suite", "gamma").read_bytes() == before
    assert project.cassette("suite", "alpha")["trace"]["answer"].endswith(" (v2)")
    assert elapsed < 60, elapsed  # the hung thread (600 s) did not hold up the exit


def test_the_suite_timeout_applies_and_the_command_line_overrides_it(project: Project) -> None:
    # Only the hung case runs, so the limits can be short: each run waits out its limit.
    project.write_suite(suite_doc(timeout=0.2))
    project.steer(hang=["alpha"])

    result = project.run("--live", "-k", "alpha")

    result.assert_outcomes(errors=1, deselected=2)
    assert "within 0.2 s" in error_block(result, "suite::alpha")

    overridden = project.run("--live", "-k", "alpha", "--eval-timeout", "0.3")
    assert "within 0.3 s" in error_block(overridden, "suite::alpha")


@pytest.mark.parametrize("bad", ["0", "-1", "soon"])
def test_a_bad_timeout_is_a_usage_error(project: Project, bad: str) -> None:
    project.write_suite(suite_doc())

    result = (
        project.run("--live", f"--eval-timeout={bad}")
        if bad != "soon"
        else project.run("--live", "-o", f"eval_timeout={bad}")
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert project.calls() == []


def test_one_ctrl_c_ends_a_live_run_whose_system_hangs(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    before = project.files()
    project.clear_calls()
    project.steer(hang=["alpha", "gamma", "epsilon"])
    env = dict(os.environ, **bytecode_env())
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--live", f"--basetemp={project.root / '.bt'}"],
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("hang") for line in project.calls()):
            assert time.monotonic() < deadline, "the system never ran"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # once
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED
    assert {path: content for path, (content, _) in project.files().items()} == {
        path: content for path, (content, _) in before.items()
    }


def test_a_trace_that_is_not_json_names_the_field(project: Project) -> None:
    project.write_suite(suite_doc())
    project.steer(not_json=["gamma"])

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=1)
    assert "malformed trace for suite::gamma: $.tool_outputs[0].content is a bytes" in error_block(
        result, "suite::gamma"
    )
    assert not project.cassette_path("suite", "gamma").exists()


def test_a_crashing_system_shows_its_own_frames_only(project: Project) -> None:
    project.write_suite(suite_doc())
    project.steer(**{"raise": ["gamma"]})

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=1)
    block = error_block(result, "suite::gamma")
    assert "RuntimeError: system exploded on gamma" in block
    assert "mysys.py" in block
    for internal in ("_pytest", "pluggy", "pytest_evalcases", "asyncio"):
        assert internal not in block, (internal, block)
    assert len(block.splitlines()) < 60, block


def test_a_replay_of_stale_cases_builds_no_traceback(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    project.steer(fingerprint={"prompt": "changed", "model": "echo-1"})

    result = project.run()

    result.assert_outcomes(errors=3)
    block = error_block(result, "suite::alpha")
    assert block.strip().startswith("stale recording: fingerprint.prompt changed")
    assert "Traceback" not in block and "raise " not in block and ".py:" not in block, block


def test_temp_files_of_killed_runs_are_removed_and_counted(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    leftover = project.write_text(f"cassettes/suite/alpha.json.tmp.{dead}", "{half")
    # A live process other than the run's (the run is in this process: its own pid is its own).
    alive = project.write_text(f"cassettes/suite/gamma.json.tmp.{os.getppid()}", "{mine")

    result = project.run("--live", "-k", "alpha")

    result.assert_outcomes(passed=1, deselected=2)
    assert not leftover.exists() and alive.exists()
    assert "removed 1 temp file left by interrupted recordings" in output(result)
    assert recordings_line(result).startswith("recordings: 1 recorded")


def test_replay_leaves_temp_files_alone(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    leftover = project.write_text("cassettes/suite/alpha.json.tmp.1999999999", "{half")

    project.run().assert_outcomes(passed=3)

    assert leftover.exists()  # replay writes nothing, so it removes nothing either


def test_a_secret_in_a_trace_is_redacted_before_it_is_written_and_counted(
    project: Project,
) -> None:
    from evalhelpers import run_pytest_env_in_process

    secret = "s3cr3t-value-of-the-service-0042"
    project.write_suite(suite_doc(stages=["tools", "retrieval"]))
    project.steer(suffix=f" (token {secret})")

    result = run_pytest_env_in_process(project.root, "--live", env={"MY_SERVICE_TOKEN": secret})

    result.assert_outcomes(passed=3)
    assert "redacted 3 secrets in 3 recordings" in output(result)
    files = project.files(http=True)
    leaking = [path for path, (content, _) in files.items() if secret.encode() in content]
    assert files and leaking == []
    answer = project.cassette("suite", "alpha")["trace"]["answer"]
    assert answer.endswith("(token [REDACTED:MY_SERVICE_TOKEN])")
    replay = run_pytest_env_in_process(project.root)  # what was written replays (its hashes hold)
    replay.assert_outcomes(passed=3)


@pytest.mark.parametrize(
    "edit",
    [
        lambda doc: doc["trace"].update(tool_calls="search"),
        lambda doc: doc.update(key="abc"),
        lambda doc: doc["verdicts"].update(faithfulness={"score": "high"}),
    ],
    ids=["trace", "key", "verdict"],
)
def test_live_stale_re_records_a_cassette_edited_by_hand(project: Project, edit) -> None:
    import json

    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    path = project.cassette_path("suite", "gamma")
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    project.clear_calls()

    refused = project.run()
    refused.assert_outcomes(passed=2, errors=1)
    assert "cassettes/suite/gamma.json" in error_block(refused, "suite::gamma")

    result = project.run("--live-stale")

    assert_not_aborted(result)
    result.assert_outcomes(passed=3)
    assert [line for line in project.calls() if line.startswith("run")] == ["run gamma"]
    project.run().assert_outcomes(passed=3)
