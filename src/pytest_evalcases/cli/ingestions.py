"""``python -m pytest_evalcases ingestions [SUITE]``: list the users' ingestion recordings of each
suite (or one), variant by variant: each variant's settings, then each recording's user,
variant, date, requests, tokens, cost and file; `--json` prints them as JSON.

Exit codes: 0 listed; 1 no ingestion recording found; 2 no such cassette folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..report.ingestion_variants import suites_with_users, variants_lines, variants_view


def add_parser(sub: Any) -> None:
    ingestions = sub.add_parser(
        "ingestions",
        help="list the users' ingestion recordings, variant by variant",
        description=(
            "List each user's ingestion recordings (users/<id>.json, the variant last "
            "recorded, and users/variants/<variant>/<id>.json, the others kept) with their "
            "variant's ingestion settings, their date and what they took. The variant's name "
            "is what --eval-ingestion takes."
        ),
    )
    ingestions.add_argument("suite", nargs="?", metavar="SUITE", help="one suite (default: all)")
    ingestions.add_argument(
        "--cassettes",
        type=Path,
        default=Path("cassettes"),
        metavar="DIR",
        help="the cassette folder (the ini's eval_cassettes; default: cassettes)",
    )
    ingestions.add_argument("--user", metavar="ID", help="one user's recordings")
    ingestions.add_argument("--json", action="store_true", help="print JSON instead of text")
    ingestions.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    root: Path = args.cassettes
    if not root.is_dir():
        print(f"error: {root}: no such cassette folder; give it with --cassettes", file=sys.stderr)
        return 2
    suites = [args.suite] if args.suite else suites_with_users(root)
    views = [variants_view(root, suite, args.user) for suite in suites]
    views = [view for view in views if view["recordings"]]
    if args.json:
        print(json.dumps({"suites": views}, indent=2, ensure_ascii=False))
    for number, view in enumerate(views if not args.json else ()):
        print(("\n" if number else "") + "\n".join(variants_lines(view)))
    if not views:
        which = f"suite {args.suite!r}" if args.suite else "any suite"
        who = f" of user {args.user!r}" if args.user else ""
        print(f"no ingestion recording{who} of {which} in {root}", file=sys.stderr)
        return 1
    return 0
