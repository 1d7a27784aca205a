"""`run_interruptible(coro)`: `asyncio.run`, where one Ctrl-C ends the run even when coroutines
block the event loop.

asyncio's first Ctrl-C only cancels the main task and wakes the loop; a coroutine that blocks
the loop (`time.sleep`, C code, a sync client inside `async def run`) never reaches an `await`,
so the cancel never lands and the run waits for a second Ctrl-C. Here the first one also
1. starts a timer: while the run has not ended, every BLOCKED_LOOP_GRACE seconds it sends the
   main thread a SIGINT (to that thread, so its blocking call returns EINTR and the handler
   runs; `_thread.interrupt_main` would wait for the blocking call to end), which raises
   KeyboardInterrupt where the loop is blocked;
2. sets a flag (`ctrl_c_pressed`) that user code about to be started checks first: the tasks
   already scheduled when the loop unblocks run their next step before their cancel lands, and
   would otherwise start the next blocking run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# Seconds the loop gets to act on a Ctrl-C before it is interrupted again.
BLOCKED_LOOP_GRACE = 2.0

_pressed = threading.Event()  # a Ctrl-C reached the running run_interruptible


def ctrl_c_pressed() -> bool:
    """Whether the user pressed Ctrl-C during the current run_interruptible: start no user
    code then."""
    return _pressed.is_set()


def run_interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`; a Ctrl-C raises KeyboardInterrupt within BLOCKED_LOOP_GRACE
    seconds wherever the coroutines block the loop."""
    import asyncio  # asyncio: loaded only by runs that await the system or a judge

    ended = threading.Event()
    main = threading.main_thread().ident
    assert main is not None

    def interrupt_while_running() -> None:
        while not ended.wait(BLOCKED_LOOP_GRACE):
            signal.pthread_kill(main, signal.SIGINT)

    class Runner(asyncio.Runner):
        # asyncio.Runner calls _on_sigint for each SIGINT while it runs (Python 3.11 to 3.14).
        def _on_sigint(self, signum: Any, frame: Any, main_task: Any) -> None:
            if not _pressed.is_set() and not main_task.done():
                _pressed.set()
                threading.Thread(
                    target=interrupt_while_running, name="evalcases-ctrl-c", daemon=True
                ).start()
            super()._on_sigint(signum, frame, main_task)  # type: ignore[misc]

    if threading.current_thread() is threading.main_thread():
        # A new run (Ctrl-C reaches only the main thread's runner; a loop another thread runs
        # for a sync system's async turns must not forget a Ctrl-C the batch is acting on).
        _pressed.clear()
    try:
        with Runner() as runner:
            return runner.run(coro)
    finally:
        ended.set()  # no further interrupt once the run has ended
