"""``python -m pytest_evalcases merge DIR... -o OUT``: one report from the report folders of
CI shards.

Exit codes: 0 merged; 1 the baseline gate failed (only with --baseline); 2 bad arguments or
unreadable shard/baseline files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..report.baseline import BaselineError, compare, load_results, render_baseline_terminal
from ..report.markdown import append_step_summary, render_markdown
from ..report.merge import MergeError, merge_results
from ..report.writers import RESULTS_JSON, write_reports
from ..store.files import REPORT_FILE_CAP, RefusedFile, read_bounded


def read_shard(folder: Path, kind: str = "shard folder") -> dict:
    """Load DIR/results.json (or a results.json path given directly); `kind` names the folder
    in messages. A FIFO, a device or a file over REPORT_FILE_CAP is refused before reading."""
    path = folder / RESULTS_JSON if folder.is_dir() else folder
    if not path.exists():
        raise MergeError(f"{path}: no such file; each {kind} must contain {RESULTS_JSON}")
    try:
        doc = json.loads(read_bounded(path, REPORT_FILE_CAP).decode("utf-8"))
    except RefusedFile as exc:
        what = "" if exc.too_big else ", not a regular file"
        raise MergeError(
            f"{path}: {exc.reason}{what}: nothing was read from it; each {kind} must "
            f"contain the {RESULTS_JSON} a run wrote"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MergeError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise MergeError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise MergeError(f"{path}: not a pytest-evalcases results.json (no 'cases' list)")
    return doc


def add_parser(sub: Any) -> None:
    merge = sub.add_parser(
        "merge",
        help="merge the report folders of CI shards into one report",
        description=(
            "Merge report folders written by sharded runs (each with a results.json) into "
            "one results.json, report.md and dashboard.html. Aggregates are recomputed "
            "over all cases, so they equal an unsharded run. A case present in two shards "
            "is an error. Shard baseline sections are dropped unless --baseline is given."
        ),
    )
    merge.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="shard report folder (or its results.json)",
    )
    merge.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="OUT",
        help="folder to write the merged report into",
    )
    merge.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="results.json to compare the merged run against",
    )
    merge.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="allowed drop of a stage mean before the gate fails (default 0)",
    )
    merge.add_argument(
        "--no-step-summary",
        action="store_true",
        help="do not append report.md to $GITHUB_STEP_SUMMARY",
    )
    merge.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _merge(args)
    except (MergeError, BaselineError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _merge(args: argparse.Namespace) -> int:
    docs = [read_shard(d) for d in args.dirs]
    merged = merge_results(docs, names=[str(d) for d in args.dirs])
    status = 0
    if args.baseline is not None:
        cmp = compare(merged, load_results(args.baseline), tolerance=args.tolerance)
        merged["baseline"] = cmp
        print("regressions vs baseline")
        for line in render_baseline_terminal(cmp):
            print(line)
        status = 1 if cmp["failed"] else 0
    for path in write_reports(merged, args.output):
        print(f"wrote {path}")
    if not args.no_step_summary:
        target = append_step_summary(render_markdown(merged), os.environ)
        if target is not None:
            print(f"appended summary to {target}")
    s = merged["summary"]
    print(
        f"merged {len(docs)} shard(s): {s['cases']} cases, {s['passed']} passed, "
        f"{s['failed']} failed"
    )
    return status
