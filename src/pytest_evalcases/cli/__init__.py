"""Command line: ``python -m pytest_evalcases COMMAND``, one module a command.

Each command module has `add_parser(subparsers)`, which registers the command with its
`handler(args) -> exit code`; a command reports its own errors (exit 2 for bad arguments or
unreadable files, unless its module says otherwise).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import collect_recordings, compare, graph, importing, ingestions, init, merge, scan

__all__ = ["main"]

COMMANDS = (init, merge, scan, importing, compare, graph, collect_recordings, ingestions)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m pytest_evalcases",
        description="pytest-evalcases report, recording and suite tools.",
    )
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.handler(args))
