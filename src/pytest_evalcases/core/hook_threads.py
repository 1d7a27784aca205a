"""The threads that run user code (a system's hooks: `setup(suite)`, `setup_user`, `ready`,
`user_ready`, `run`), noted while they run, so a run can say what it left behind.

Each hook runs in a daemon thread of its own and is waited for within its bound; a hook that
never returns (stuck in C code, or waiting for a thread it started) cannot be stopped from
outside, so its thread is left behind. A daemon thread does not hold the process open; a
non-daemon thread the hook started does (the interpreter joins them at exit), and then only
ending the process ends the run: the pytest layer does so after the summary and the report files
are written (`pytest_plugin/left_behind.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The threads of user code this process started, while they run: (what each runs, when it
# started, the run it belongs to). What is still here at the end of a run was left behind.
_HOOK_THREADS: dict[threading.Thread, tuple[str, float, int]] = {}
_LOCK = threading.Lock()
_RUNS = [0, 0]  # [the number of the latest run, the runs going on now] (pytest sessions)


def start_daemon(body: Callable[[], None], name: str, hook: str | None = None) -> None:
    """`body()` in a new daemon thread; one that runs user code (`hook`, e.g. "setup_user('u')
    of suite 's'") is noted until it ends."""
    if hook is None:
        threading.Thread(target=body, name=name, daemon=True).start()
        return

    def run_then_forget() -> None:
        try:
            body()
        finally:
            with _LOCK:
                _HOOK_THREADS.pop(thread, None)

    thread = threading.Thread(target=run_then_forget, name=name, daemon=True)
    with _LOCK:
        _HOOK_THREADS[thread] = (hook, time.monotonic(), _RUNS[0])
    thread.start()


def run_started() -> int:
    """A run (a pytest session) starts: its number, which tells the threads it leaves behind
    from those another run in the process left (pytester's in-process runs)."""
    with _LOCK:
        _RUNS[0] += 1
        _RUNS[1] += 1
        return _RUNS[0]


def run_ended() -> bool:
    """A run ends: whether it was the outermost one of the process (no pytest session runs
    around it, as a test's in-process pytest run has one)."""
    with _LOCK:
        _RUNS[1] = max(_RUNS[1] - 1, 0)
        return _RUNS[1] == 0


def hooks_left_behind(run: int) -> list[tuple[str, float]]:
    """The threads of user code `run` started that are still running: (what each runs, for how
    many seconds), the longest first."""
    now = time.monotonic()
    with _LOCK:
        running = [
            (hook, now - started)
            for thread, (hook, started, started_by) in _HOOK_THREADS.items()
            if started_by == run and thread.is_alive()
        ]
    return sorted(running, key=lambda entry: -entry[1])


def threads_holding_exit() -> list[str]:
    """The names of the non-daemon threads still running besides the main one: the interpreter
    waits for them before the process can end."""
    main = threading.main_thread()
    return [
        thread.name
        for thread in threading.enumerate()
        if thread is not main and not thread.daemon and thread.is_alive()
    ]
