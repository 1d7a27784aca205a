"""``python -m pytest_evalcases scan [PATH...]``: check recordings for secrets.

Exit codes: 0 clean; 1 a secret found, or a file that could not be checked; 2 bad arguments
or a path that does not exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..store.redaction import secret_values_from_env
from ..store.secret_scan import (
    ScanPathError,
    cassettes_folder_from_ini,
    scan_files,
    scan_summary,
    scanned_files,
)


def add_parser(sub: Any) -> None:
    scan = sub.add_parser(
        "scan",
        help="check recordings and reports for secrets (for pre-commit and CI)",
        description=(
            "Check every *.json, *.md, *.html and *.xml file under PATHS (cassettes, HTTP "
            "recordings, results.json, report.md, recording-changes.md, the dashboard, JUnit "
            "XML) for secret-shaped values (sk-..., AIza..., ghp_..., xoxb-..., AKIA... and an "
            "AWS secret access key, JWTs, PEM private keys, Bearer ..., Basic ..., sk_live_..., "
            "hf_..., a URL's password, a SAS sig=, fields named like a password or a key) and "
            "for the values of "
            "the environment variables named *_KEY, *_TOKEN, *_SECRET or *_PASSWORD. Lists "
            "`file: $.json.path: kind` (`file: line N: kind` in text files) for each; exits 1 "
            "when any is found, 0 when clean."
        ),
    )
    scan.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="file or folder to scan (default: the eval_cassettes folder of "
        "the pytest configuration in the current directory, or cassettes)",
    )
    scan.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _scan(args)
    except ScanPathError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _scan(args: argparse.Namespace) -> int:
    paths = args.paths
    if not paths:
        folder, origin = cassettes_folder_from_ini(Path.cwd())
        shown = Path(os.path.relpath(folder))
        if not folder.is_dir():
            raise ScanPathError(
                f"{shown}: no such folder ({origin}); pass the files or folders to scan"
            )
        paths = [shown]
    files = list(scanned_files(paths))
    findings = scan_files(files, secret_values_from_env(os.environ))
    for finding in findings:
        print(finding.line())
    print(scan_summary(findings, len(files)))
    return 1 if findings else 0
