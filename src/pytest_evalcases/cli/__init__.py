"""`python -m pytest_evalcases COMMAND`: one module per command, each with `add_parser(sub)`
(its arguments; it sets `run`, the function that runs it) and a `run(args) -> exit code`.

Exit codes: 0 done; 1 what the command checks failed (merge: the baseline gate; scan: a secret
found); 2 bad arguments or an unreadable input (the message names the file).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import compare, merge, scan

COMMANDS = (merge, scan, compare)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m pytest_evalcases",
        description="pytest-evalcases report and recording tools.",
    )
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    errors = tuple(error for command in COMMANDS for error in command.ERRORS)
    try:
        return int(args.run(args))
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
