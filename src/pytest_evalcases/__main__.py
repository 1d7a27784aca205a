"""``python -m pytest_evalcases COMMAND``: init, merge, scan, import, compare, graph (`cli/`)."""

from __future__ import annotations

import sys

from .cli import main
from .cli.merge import read_shard
from .report.merge import merge_results

__all__ = ["main", "merge_results", "read_shard"]

if __name__ == "__main__":
    sys.exit(main())
