"""Bounded: every user hook, in every mode (issue 30, part 1). `setup(suite)`, `setup_user`,
`ready` and `user_ready` that never return end at `--eval-timeout` (one call) or
`--eval-ingest-timeout` (the whole wait of a user): that suite's or that user's cases error,
naming the hook and the bound, the other users' cases run, and the run ends. One Ctrl-C ends a
run whose hook is stuck, in C code and in a non-daemon thread it waits for, within seconds: the
summary is printed, the exit code is 2, and the process says which hook it left behind.

Breaks (before): each of these runs hung until killed (the probe waited 75 s; two Ctrl-C did
not end the process; under --live one Ctrl-C printed pytest's KeyboardInterrupt and the
process never exited).

Every run that hung is a fresh interpreter with a hard `timeout`, so a test that fails cannot
hang the suite; the seconds each took are printed (not asserted: speed is the benchmarks').
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from bytecode import bytecode_env
from evalhelpers import TEST_COLUMNS, Project, error_block, output, summary_section

from pytest_evalcases.core.hook_threads import hooks_left_behind, run_ended, run_started
from pytest_evalcases.domain.users import HookTimeout, IngestionWait

# A memory system steered by behaviour.json (`project.steer`): {"<hook>": [suite or user ids]}
# makes that hook hang in C code (time.sleep; with "thread", after starting a non-daemon thread
# that sleeps too), "redo": the users whose user_ready says their state is gone (so --live
# ingests them again). `mysys` is the project's test system (evalhelpers.SYSTEM_SOURCE).
SYSTEM = """\
import threading
import time

from mysys import behaviour, log


def maybe_hang(hook, name):
    plan = behaviour()
    if name not in plan.get(hook, []):
        return
    log(f"hang {hook} {name}")
    if plan.get("thread"):  # a worker that holds the process open at exit
        threading.Thread(target=time.sleep, args=(3600,), name="stuck-in-c", daemon=False).start()
    time.sleep(3600)


class Memory:
    def setup(self, suite):
        maybe_hang("setup", suite.name)

    def setup_user(self, user):
        maybe_hang("setup_user", user.id)
        return {"memory_id": "mem-" + user.id}

    def ready(self, user, result):
        maybe_hang("ready", user.id)
        return True

    def user_ready(self, user, result):
        maybe_hang("user_ready", user.id)
        return user.id not in behaviour().get("redo", [])

    def run(self, case):
        return {"answer": case["input"], "tool_calls": [], "retrieved": [], "context": []}


system = Memory()
hung = Memory()
"""

USERS = ["u-ok", "u-stuck", "u-ready", "u-uready"]
HARD_TIMEOUT = 60.0  # seconds: a run still going then has hung (the test fails, not the suite)
AFTER_CTRL_C = 20.0  # seconds a run may take to end after one Ctrl-C before the test fails


def _suite(name: str, system: str, users: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "system": f"stuck:{system}",
        "stages": ["exact_match"],
        "users": [{"id": user, "chats": f"data/{user}.json"} for user in users],
        "cases": [
            {"id": f"{user}-q", "input": f"q {user}", "reference": f"q {user}", "user": user}
            for user in users
        ],
    }


def _project(project: Project) -> Project:
    """Two suites: `mem` (four users) and `hung` (one user, its own system object)."""
    project.write_text("stuck.py", SYSTEM)
    for user in [*USERS, "u-x"]:
        project.write_text(f"data/{user}.json", json.dumps([f"fact of {user}"]))
    project.write_suite(_suite("mem", "system", USERS), "cases/mem.json")
    project.write_suite(_suite("hung", "hung", ["u-x"]), "cases/hung.json")
    return project


def _recorded(project: Project) -> Project:
    """The project, recorded by a --live run in this process (nothing hangs)."""
    _project(project)
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=5)
    return project


def _steer(project: Project, **plan: Any) -> None:
    project.steer(**plan)
    project.clear_calls()


def _environment(project: Project) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(bytecode_env(), COLUMNS=TEST_COLUMNS)
    return env


def _command(project: Project, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--basetemp={project.root / '.bt'}",
        *args,
    ]


def _session(project: Project, *args: str) -> pytest.RunResult:
    """One pytest run in a fresh interpreter, killed (and the test failed) past HARD_TIMEOUT."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            _command(project, *args),
            cwd=project.root,
            env=_environment(project),
            capture_output=True,
            text=True,
            timeout=HARD_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"pytest {' '.join(args)} was still running after {HARD_TIMEOUT:g} s: hung")
    took = time.monotonic() - started
    print(proc.stdout, proc.stderr)
    print(f"pytest {' '.join(args)}: ended in {took:.1f} s")
    return pytest.RunResult(
        proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(), took
    )


def _interrupted(project: Project, *args: str) -> pytest.RunResult:
    """One pytest run in a fresh interpreter, sent one Ctrl-C once a hook hangs (SIGINT to its
    process group, as a terminal sends it); the test fails if it has not ended AFTER_CTRL_C
    seconds later."""
    log = project.root / "calls.log"
    proc = subprocess.Popen(
        _command(project, *args),
        cwd=project.root,
        env=_environment(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + HARD_TIMEOUT
        while not (log.exists() and "hang " in log.read_text()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("no hook hung:\n" + (proc.communicate()[0] or ""))
            time.sleep(0.05)
        time.sleep(0.3)  # the hook is in its sleep
        os.killpg(proc.pid, signal.SIGINT)  # once, to the group (xdist's workers too)
        sent = time.monotonic()
        try:
            text, _ = proc.communicate(timeout=AFTER_CTRL_C)
        except subprocess.TimeoutExpired:
            pytest.fail(f"pytest {' '.join(args)} still ran {AFTER_CTRL_C:g} s after one Ctrl-C")
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    print(text)
    print(f"pytest {' '.join(args)}: ended {took:.1f} s after one Ctrl-C")
    return pytest.RunResult(proc.returncode, text.splitlines(), [], took)


def _case_error(result: pytest.RunResult, case: str) -> str:
    return error_block(result, f"::{case}")


def test_hooks_that_never_return_end_at_their_bound_under_live(project: Project) -> None:
    """Break: `setup_user` that never returned under --live (`--eval-timeout 2
    --eval-ingest-timeout 3`) hung past 75 s; so did `ready`, `user_ready` and `setup(suite)`."""
    _recorded(project)
    _steer(
        project,
        setup=["hung"],
        setup_user=["u-stuck"],
        ready=["u-ready"],
        user_ready=["u-uready"],
        redo=USERS,
    )

    result = _session(project, "--live", "--eval-timeout", "0.5", "--eval-ingest-timeout", "1")

    text = output(result)
    result.assert_outcomes(passed=1, errors=4)
    assert "setup(suite) of suite 'hung' did not finish within 0.5 s (--eval-timeout" in (
        _case_error(result, "u-x-q")
    )
    assert "setup_user('u-stuck') of suite 'mem' did not finish within 0.5 s (--eval-timeout" in (
        _case_error(result, "u-stuck-q")
    )
    assert "ready('u-ready') of suite 'mem' did not finish within 0.5 s (--eval-timeout" in (
        _case_error(result, "u-ready-q")
    )
    assert "user_ready('u-uready') of suite 'mem' did not finish within 0.5 s" in (
        _case_error(result, "u-uready-q")
    )
    # The run says what it could not stop (each hook's thread sleeps on).
    assert "left behind: 4 hooks of the system that did not return: " in text, text


def test_setup_and_setup_user_that_never_return_end_at_the_timeout_under_replay_http(
    project: Project,
) -> None:
    """Break: `setup_user` that never returned under `--replay-http --eval-timeout 2` hung."""
    _recorded(project)
    _steer(project, setup=["hung"], setup_user=["u-stuck"])

    result = _session(project, "--replay-http", "--eval-timeout", "0.5")

    result.assert_outcomes(passed=3, errors=2)
    assert "setup(suite) of suite 'hung' did not finish within 0.5 s (--eval-timeout" in (
        _case_error(result, "u-x-q")
    )
    assert "setup_user('u-stuck') of suite 'mem' did not finish within 0.5 s (--eval-timeout" in (
        _case_error(result, "u-stuck-q")
    )


def test_hooks_that_never_return_end_at_their_bound_under_ingest_only(project: Project) -> None:
    """Break: `setup_user` that never returned under `--eval-ingest-only --live` hung. Here
    --eval-ingest-timeout is the shorter bound: it bounds the whole wait of a user."""
    _project(project)
    _steer(project, setup=["hung"], setup_user=["u-stuck"], ready=["u-ready"])

    result = _session(
        project,
        "--eval-ingest-only",
        "--live",
        "--eval-timeout",
        "1",
        "--eval-ingest-timeout",
        "0.5",
    )

    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert "hung::u-x: error: setup(suite) of suite 'hung' did not finish within 1 s" in text
    whole = "did not finish within 0.5 s (--eval-ingest-timeout, the whole wait of a user)"
    assert f"mem::u-stuck: error: setup_user('u-stuck') of suite 'mem' {whole}" in text
    assert f"mem::u-ready: error: ready('u-ready') of suite 'mem' {whole}" in text
    assert "mem::u-ok: recorded" in text
    assert "mem::u-uready: recorded" in text


@pytest.mark.parametrize(
    ("mode", "plan", "left"),
    [
        (["--live"], {"setup_user": ["u-stuck"]}, "setup_user('u-stuck') of suite 'mem'"),
        (["--live"], {"setup": ["hung"]}, "setup(suite) of suite 'hung'"),
        (["--replay-http"], {"setup_user": ["u-stuck"]}, "setup_user('u-stuck') of suite 'mem'"),
        (["--eval-ingest-only", "--live"], {"ready": ["u-ready"]}, "ready('u-ready')"),
        # The worker says it on stderr and ends itself (else xdist would kill it 10 s later).
        (["--live", "-n", "2"], {"setup_user": ["u-stuck"]}, "setup_user('u-stuck')"),
    ],
    ids=[
        "live setup_user",
        "live setup",
        "replay-http setup_user",
        "ingest-only ready",
        "live xdist setup_user",
    ],
)
def test_one_ctrl_c_ends_a_run_whose_hook_is_stuck_in_a_thread(
    project: Project, mode: list[str], plan: dict[str, Any], left: str
) -> None:
    """Break: two Ctrl-C did not end a run whose `setup_user`, `ready` or `user_ready` hung;
    under --live, one Ctrl-C while `setup(suite)` hung printed pytest's KeyboardInterrupt and
    the process never exited."""
    _recorded(project)
    _steer(project, thread=True, redo=USERS, **plan)

    result = _interrupted(project, *mode, "-rs")

    text = output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert summary_section(result)  # printed
    assert f"left behind: 1 hook of the system that did not return: {left}" in text, text
    assert "left behind: 1 non-daemon thread (stuck-in-c)" in text, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text


@pytest.mark.parametrize(
    ("call_timeout", "whole", "said"),
    [
        (0.1, 60.0, 'within 0.1 s (--eval-timeout, or the suite\'s "timeout")'),
        (60.0, 0.1, "within 0.1 s (--eval-ingest-timeout, the whole wait of a user)"),
    ],
    ids=["one call", "the whole wait"],
)
def test_a_hook_past_the_first_bound_is_named_and_left_behind(
    call_timeout: float, whole: float, said: str
) -> None:
    """The bounds themselves, in this process: the shorter one ends the wait and is named, and
    the hook's thread is noted as left behind until it returns."""
    run = run_started()
    release = threading.Event()
    try:
        wait = IngestionWait("u-ana", "memory", call_timeout, whole)
        with pytest.raises(HookTimeout) as raised:
            wait.bounded("setup_user", release.wait)
        assert f"setup_user('u-ana') of suite 'memory' did not finish {said}" in str(raised.value)
        assert [hook for hook, _ in hooks_left_behind(run)] == [
            "setup_user('u-ana') of suite 'memory'"
        ]
    finally:
        release.set()
        run_ended()
    deadline = time.monotonic() + 10
    while hooks_left_behind(run) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hooks_left_behind(run) == []  # forgotten once it returned
