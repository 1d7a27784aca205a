"""`compare A/ B/ [-o OUT]`: two report folders side by side, in compare.md and compare.html.

Exit code 0 whatever the comparison shows (the gate is --eval-baseline); 2 when a folder holds
no readable results.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..domain.calibration_agreement import compared_text
from ..report.baseline import BaselineError
from ..report.compare import (
    COMPARE_HTML,
    COMPARE_MD,
    compare_runs,
    render_compare_html,
    render_compare_markdown,
)
from ..report.merge import MergeError
from .merge import read_shard


def add_parser(sub: Any) -> None:
    compare = sub.add_parser(
        "compare",
        help="compare two runs side by side (e.g. two models): compare.md and compare.html",
        description=(
            "Compare the runs of two report folders (each with a results.json): per-stage means "
            "with their intervals and the paired bootstrap difference over the shared cases, "
            "pass rates per category, the cases that flipped either way with their first "
            "failing stages, and cost and latency. Cases are matched by suite and id; cases "
            "only one run has are counted, not compared. Always exits 0: the gate is "
            "--eval-baseline."
        ),
    )
    compare.add_argument("a", type=Path, metavar="A", help="report folder (or results.json) A")
    compare.add_argument("b", type=Path, metavar="B", help="report folder (or results.json) B")
    compare.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("."),
        metavar="OUT",
        help="folder to write compare.md and compare.html into (default: the current folder)",
    )
    compare.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _compare(args)
    except (MergeError, BaselineError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _compare(args: argparse.Namespace) -> int:
    names = [_name(args.a), _name(args.b)]
    if names[0] == names[1]:
        names = [str(args.a), str(args.b)]
    docs = [read_shard(path, "report folder (from --eval-report)") for path in (args.a, args.b)]
    cmp = compare_runs(docs[0], docs[1], names)
    args.output.mkdir(parents=True, exist_ok=True)
    for name, text in (
        (COMPARE_MD, render_compare_markdown(cmp)),
        (COMPARE_HTML, render_compare_html(cmp)),
    ):
        path = args.output / name
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    counts = cmp["cases"]
    print(
        f"compared {counts['shared']} shared cases ({counts['only_a']} only in A, "
        f"{counts['only_b']} only in B)"
    )
    for stage in cmp["stage_order"]:
        s = cmp["stages"][stage]
        if s["delta"] is not None:
            low, high = s["delta_ci95"]
            print(
                f"  {stage}: {s['a_mean']:.3f} -> {s['b_mean']:.3f} ({s['delta']:+.3f}, "
                f"95% CI [{low:+.3f}, {high:+.3f}]; {s['verdict']})"
            )
    for found in cmp.get("calibration") or []:
        print("  judges: " + compared_text(found))
    flips = cmp["flipped"]
    print(
        f"flipped: {len(flips['to_failing'])} passed in A and not in B, "
        f"{len(flips['to_passing'])} the other way"
    )
    return 0


def _name(path: Path) -> str:
    """A report folder as the comparison names it: the folder's own name."""
    folder = path.parent if path.suffix == ".json" else path
    return folder.resolve().name or str(path)
