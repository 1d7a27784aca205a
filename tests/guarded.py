"""One guarded interpreter shared by a group of hostile-input runs.

A run that blocked (a FIFO opened for reading) or read a file whole (`/dev/zero`, a huge file)
on the old code must not hang or exhaust the test process: it runs in another interpreter, under
a cap on its address space, and is killed (the test failed) when it blocks for the hang guard.
Starting an interpreter (pytest, the plugin) for every such run cost most of these tests' time,
so a group shares one: each run is a pytest session (or a `python -m MODULE` command) in that
interpreter, run as `inprocess.py` runs one in the test's process (the project's modules
imported afresh and forgotten, the output captured), with the environment the test has at the
call. A run that blocks kills the interpreter and fails its test; the next run starts a new one.

What a session leaves behind stays in the interpreter's address space (pytest-rerunfailures
starts a server thread in every session and never stops it: its stack, and with glibc's default
a malloc arena of 64 MB, each). So the interpreter runs with two malloc arenas, and is replaced
once it takes more than half the cap: every run starts with at least half the cap free (a run
of these projects takes under 300 MB in all; reading a huge file whole still cannot fit).

Requests and replies are JSON lines on two pipes of their own (the runs' fd-level capture
leaves them alone); the interpreter's own output goes to a log, quoted when it fails.
"""

from __future__ import annotations

import json
import os
import runpy
import select
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.capture import MultiCapture, SysCapture
from inprocess import run_pytest_in_process

_TESTS = Path(__file__).resolve().parent

# The cap is set before the interpreter imports anything, as `python -c` would for one run.
_LAUNCH = (
    "import resource, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap})); "
    "sys.path.insert(0, {tests!r}); "
    "import guarded; guarded.serve({requests}, {replies})"
)


class GuardedInterpreter:
    """The test side: `run` sends one run and waits for its result, at most `hang_guard` s."""

    def __init__(self, memory_cap: int, hang_guard: float, log: Path) -> None:
        self.memory_cap = memory_cap
        self.hang_guard = hang_guard
        self.log = log
        self._child: subprocess.Popen[bytes] | None = None
        self._requests = self._replies = -1
        self._address_space = 0  # bytes the interpreter took after its last run

    def run(self, root: Path, *args: str, module: str = "pytest") -> pytest.RunResult:
        """`python -m <module> <args>` in `root`, in the guarded interpreter; the test fails
        when it blocks for the hang guard (the interpreter is killed) or the interpreter dies."""
        command = f"python -m {module} {' '.join(args)}"
        if self._child is not None and self._address_space > self.memory_cap // 2:
            self.close()
        if self._child is None:
            self._start()
        request = {"root": str(root), "args": list(args), "module": module, "env": dict(os.environ)}
        started = time.perf_counter()
        os.write(self._requests, json.dumps(request).encode() + b"\n")
        try:
            reply = self._reply(started + self.hang_guard)
        except TimeoutError:
            self.close()
            pytest.fail(f"{command} blocked: killed after {self.hang_guard} s\n{self._log_tail()}")
        except EOFError:
            code = self._stop()
            pytest.fail(f"{command}: the guarded interpreter died ({code})\n{self._log_tail()}")
        self._address_space = reply["address_space"]
        if "error" in reply:
            pytest.fail(f"{command} raised in the guarded interpreter:\n{reply['error']}")
        return pytest.RunResult(
            reply["ret"], reply["outlines"], reply["errlines"], time.perf_counter() - started
        )

    def close(self) -> None:
        """End the interpreter: asked to (its requests end), killed if it does not."""
        if self._child is None:
            return
        os.close(self._requests)
        try:
            self._child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._stop()

    def _start(self) -> None:
        requests_read, self._requests = os.pipe()
        self._replies, replies_write = os.pipe()
        launch = _LAUNCH.format(
            cap=self.memory_cap, tests=str(_TESTS), requests=requests_read, replies=replies_write
        )
        self._address_space = 0
        with self.log.open("ab") as log:
            self._child = subprocess.Popen(
                [sys.executable, "-c", launch],
                env={**os.environ, "MALLOC_ARENA_MAX": "2"},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(requests_read, replies_write),
            )
        os.close(requests_read)
        os.close(replies_write)

    def _stop(self) -> int | None:
        """Kill the interpreter (if it still runs) and close this side's pipes."""
        child, self._child = self._child, None
        if child is None:
            return None
        if child.poll() is None:
            child.kill()
        code = child.wait()
        for fd in (self._requests, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass  # closed already
        return code

    def _reply(self, deadline: float) -> dict[str, Any]:
        received = bytearray()
        while not received.endswith(b"\n"):
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._replies], [], [], remaining)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    raise EOFError
                received += chunk
        return json.loads(received)

    def _log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "guarded interpreter's output (last 4000 characters):\n" + text[-4000:]


def guarded_interpreter_fixture(memory_cap: int, hang_guard: float) -> Callable[..., Any]:
    """A module-scoped fixture: the guarded interpreter of the module's runs (one per xdist
    worker that runs them), started at its first run."""

    @pytest.fixture(scope="module")
    def guarded_interpreter(
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[GuardedInterpreter]:
        log = tmp_path_factory.mktemp("guarded") / "interpreter.log"
        interpreter = GuardedInterpreter(memory_cap, hang_guard, log)
        yield interpreter
        interpreter.close()

    return guarded_interpreter


# ---- the guarded interpreter's side ------------------------------------------------------------
def serve(requests_fd: int, replies_fd: int) -> None:
    """Run each request read from `requests_fd`, write its result to `replies_fd`, until the
    requests end."""
    with os.fdopen(requests_fd, "rb") as requests, os.fdopen(replies_fd, "wb") as replies:
        for line in requests:
            request = json.loads(line)
            try:
                reply = _run_request(request)
            except BaseException:  # noqa: BLE001 - the test reports it
                reply = {"error": traceback.format_exc()}
            reply["address_space"] = _address_space()
            replies.write(json.dumps(reply).encode() + b"\n")
            replies.flush()


def _address_space() -> int:
    """The bytes of address space this interpreter takes (VmSize; 0 where /proc has none)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    sizes = [line.split()[1] for line in status.splitlines() if line.startswith("VmSize:")]
    return int(sizes[0]) * 1024 if sizes else 0


def _run_request(request: dict[str, Any]) -> dict[str, Any]:
    root, args, module = Path(request["root"]), request["args"], request["module"]
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(request["env"])  # as a subprocess started by the test would inherit it
    try:
        if module == "pytest":
            result = run_pytest_in_process(root, *args)
            return {
                "ret": int(result.ret),
                "outlines": result.outlines,
                "errlines": result.errlines,
            }
        return _run_module(root, module, args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run_module(root: Path, module: str, args: list[str]) -> dict[str, Any]:
    """`python -m <module> <args>` in `root`: its exit code and its output."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "argv", [module, *args])
        capture = MultiCapture(in_=None, out=SysCapture(1), err=SysCapture(2))
        capture.start_capturing()
        try:
            code = _exit_code(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True))
        finally:
            out, err = capture.readouterr()
            capture.stop_capturing()
    return {"ret": code, "outlines": out.splitlines(), "errlines": err.splitlines()}


def _exit_code(main: Callable[[], object]) -> int:
    """The exit code of `main` as an interpreter's: SystemExit's code (a message printed, 1),
    an exception's traceback printed, 1."""
    try:
        main()
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 - as the interpreter would: printed, exit code 1
        traceback.print_exc()
        return 1
    return 0
