"""What a run leaves behind: the hooks of user code that never returned (core/hook_threads.py).

They are said at the end of the summary. When one of them keeps a non-daemon thread running
(a hook waiting for a thread it started), the interpreter would wait for that thread forever at
exit: the process then ends itself (`os._exit`, with the run's exit code) once pytest has
printed the summary and written the report files, at the very end of the run. An xdist worker
does so too, once it has sent the controller its last word (`workerfinished`, in its session's
finish), saying what it left behind on stderr (its terminal output is the controller's); else
the controller would wait 10 s for it, then kill it. Never in a pytest session run inside
another one (pytester's in-process runs, whose process is the test run's).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from ..core.hook_threads import hooks_left_behind, run_ended, run_started, threads_holding_exit

SHOWN = 5  # hooks named at most; the rest are counted


class LeftBehind:
    """The plugin (one a run) that says and ends what was left behind (`worker`: an xdist
    worker's, which says it on stderr)."""

    def __init__(self, worker: bool) -> None:
        self.run = run_started()
        self.worker = worker
        self.exit_status = int(pytest.ExitCode.OK)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:  # after every other plugin has set it
            self.exit_status = int(session.exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.worker:
            for line in self.lines():
                terminalreporter.write_line(line)

    def lines(self) -> list[str]:
        hooks = hooks_left_behind(self.run)
        if not hooks:
            return []
        named = "; ".join(
            f"{hook} (running for {seconds:.0f} s)" for hook, seconds in hooks[:SHOWN]
        )
        more = f"; and {len(hooks) - SHOWN} more" if len(hooks) > SHOWN else ""
        lines = [
            f"left behind: {len(hooks)} hook{'s' * (len(hooks) != 1)} of the system that did "
            f"not return: {named}{more}. A hook cannot be stopped from outside; its thread is "
            "a daemon thread, which does not hold the process open"
        ]
        holding = threads_holding_exit()
        if holding:
            lines.append(
                f"left behind: {len(holding)} non-daemon thread{'s' * (len(holding) != 1)} "
                f"({', '.join(holding[:SHOWN])}), which would hold the process open: it "
                "ends now, with the run's exit code"
            )
        return lines

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        outermost = run_ended()
        if outermost and hooks_left_behind(self.run) and threads_holding_exit():
            if self.worker:
                worker = getattr(config, "workerinput", {}).get("workerid", "an xdist worker")
                for line in self.lines():
                    print(f"[{worker}] {line}", file=sys.stderr)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(self.exit_status)
