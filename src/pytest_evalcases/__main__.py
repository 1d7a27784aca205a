"""``python -m pytest_evalcases COMMAND``: init, merge, scan, import, compare, graph (`cli/`)."""

from __future__ import annotations

import os
import sys

from .cli import main
from .cli.merge import read_shard
from .report.merge import merge_results

__all__ = ["main", "merge_results", "read_shard"]

# What a shell reports for a tool the pipe stopped: 128 + SIGPIPE.
_PIPE_CLOSED = 141


def _run() -> int:
    try:
        code = main()
        sys.stdout.flush()  # here, not at exit: a reader that is gone is found inside the try
        return code
    except BrokenPipeError:
        # The reader closed the pipe (`graph ... | head`): stop quietly, as a Unix tool does.
        # Python flushes stdout once more at exit; pointed at devnull, that says nothing either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _PIPE_CLOSED


if __name__ == "__main__":
    sys.exit(_run())
