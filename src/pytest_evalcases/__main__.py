"""Command line: ``python -m pytest_evalcases merge DIR... -o OUT`` and ``... scan [PATH...]``.

merge exit codes: 0 merged; 1 the baseline gate failed (only with --baseline); 2 bad
arguments or unreadable shard/baseline files.
scan exit codes: 0 clean; 1 a secret found, or a file that could not be checked; 2 bad
arguments or a path that does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .baseline import BaselineError, compare, load_results, render_baseline_terminal
from .redaction import (
    ScanPathError,
    cassettes_folder_from_ini,
    json_files,
    scan_files,
    scan_summary,
    secret_values_from_env,
)
from .report.markdown import append_step_summary, render_markdown
from .report.merge import MergeError, merge_results
from .report.writers import RESULTS_JSON, write_reports

__all__ = ["main", "merge_results", "read_shard"]


def read_shard(folder: Path) -> dict:
    """Load DIR/results.json (or a results.json path given directly)."""
    path = folder / RESULTS_JSON if folder.is_dir() else folder
    if not path.exists():
        raise MergeError(f"{path}: no such file; each shard folder must contain {RESULTS_JSON}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise MergeError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise MergeError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise MergeError(f"{path}: not a pytest-evalcases results.json (no 'cases' list)")
    return doc


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_evalcases",
        description="pytest-evalcases report and recording tools.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    merge.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                       help="shard report folder (or its results.json)")
    merge.add_argument("-o", "--output", required=True, type=Path, metavar="OUT",
                       help="folder to write the merged report into")
    merge.add_argument("--baseline", type=Path, metavar="FILE",
                       help="results.json to compare the merged run against")
    merge.add_argument("--tolerance", type=float, default=0.0,
                       help="allowed drop of a stage mean before the gate fails (default 0)")
    merge.add_argument("--no-step-summary", action="store_true",
                       help="do not append report.md to $GITHUB_STEP_SUMMARY")
    scan = sub.add_parser(
        "scan",
        help="check recordings for secrets (for pre-commit and CI)",
        description=(
            "Check every *.json file under PATHS for secret-shaped values (sk-..., AIza..., "
            "ghp_..., xoxb-..., AKIA..., Bearer ...) and for the values of the environment "
            "variables named *_KEY, *_TOKEN, *_SECRET or *_PASSWORD. Lists `file: $.json.path: "
            "kind` for each; exits 1 when any is found, 0 when clean."
        ),
    )
    scan.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                      help="file or folder to scan (default: the eval_cassettes folder of "
                           "the pytest configuration in the current directory, or cassettes)")
    return parser


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
    print(f"merged {len(docs)} shard(s): {s['cases']} cases, {s['passed']} passed, "
          f"{s['failed']} failed")
    return status


def _scan(args: argparse.Namespace) -> int:
    paths = args.paths
    if not paths:
        folder, origin = cassettes_folder_from_ini(Path.cwd())
        shown = Path(os.path.relpath(folder))
        if not folder.is_dir():
            raise ScanPathError(f"{shown}: no such folder ({origin}); "
                                "pass the files or folders to scan")
        paths = [shown]
    files = list(json_files(paths))
    findings = scan_files(files, secret_values_from_env(os.environ))
    for finding in findings:
        print(finding.line())
    print(scan_summary(findings, len(files)))
    return 1 if findings else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "merge":
            return _merge(args)
        if args.command == "scan":
            return _scan(args)
    except (MergeError, BaselineError, ScanPathError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
