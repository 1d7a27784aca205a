"""Whether a process still runs: the pid of a temp file or a live-run marker left behind."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True for this process and any process that exists (someone else's included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, and someone else's
        return True
    except OSError:
        return False
    return True
