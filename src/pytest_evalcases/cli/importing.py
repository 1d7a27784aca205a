"""``python -m pytest_evalcases import FORMAT FILE -o OUT``: a suite from a benchmark file, or
from another eval tool's own file (DeepEval goldens, promptfoo tests, inspect-ai samples, a
ragas dataset); a calibration suite from a human-labelled set (TruthfulQA, HaluEval general, a
team's own labelled CSV or JSON Lines).

Exit codes: 0 written; 2 bad arguments, or a file not in the format (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..importers import FORMATS, BenchmarkFormatError, ImportOptions, import_suite
from ..importers.downloads import BASE_URL_ENV, CACHE_ENV, Fetched, downloadable, fetch

FORMAT_NAMES = tuple(FORMATS)
STRATA = ("category", "user", "label")
# The labelled FILE's columns: option name -> what the column holds.
COLUMN_OPTIONS = {
    "input": "the question or request",
    "answer": "the answer people labelled",
    "reference": "the golden answer",
    "context": "the passage the answer should rest on",
    "label": "the label (pass/fail, yes/no, 1/0, true/false, or a score)",
}


def add_parser(sub: Any) -> None:
    command = sub.add_parser(
        "import",
        help="write a suite from a benchmark file (HotpotQA, MuSiQue, 2WikiMultihopQA, LoCoMo) "
        "or another eval tool's file (DeepEval, promptfoo, inspect-ai, ragas), or a calibration "
        "suite from labels people gave (TruthfulQA, HaluEval, your own labelled file)",
        description=(
            "Write a suite from a local file in a benchmark's published format, or in another "
            "eval tool's own format (nothing is downloaded unless --download: then the "
            "benchmark's official file, checked against its sha256 and cached). Every record "
            "is checked first: a bad file gives one error naming the record and the field, and "
            "nothing is written. "
            "The corpus paragraphs (and, for LoCoMo, each conversation, one user each) go to "
            "data files under --data, named relative to the current directory, which must be "
            "the project's root. A promptfoo file's checks go to a stage module written next "
            "to the suite. A human-labelled set (truthfulqa, halueval, labelled) becomes a "
            "calibration suite: one judge test case per labelled answer. See docs/benchmarks.md, "
            "docs/extending.md and docs/judges.md for the fields each format maps."
        ),
    )
    command.add_argument(
        "format", choices=FORMAT_NAMES, metavar="FORMAT", help=f"one of: {', '.join(FORMAT_NAMES)}"
    )
    command.add_argument(
        "file",
        type=Path,
        nargs="?",
        metavar="FILE",
        help="the benchmark file (left out with --download)",
    )
    command.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="OUT",
        help="the suite file to write, e.g. cases/hotpotqa.json",
    )
    command.add_argument(
        "--limit", type=int, metavar="N", help="keep N cases, a stable sample (default: every case)"
    )
    command.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of the sample (default 0)"
    )
    command.add_argument(
        "--stratify",
        choices=STRATA,
        help="with --limit: keep each category's (user's, or for a labelled set label's) "
        "share of the file",
    )
    command.add_argument(
        "--ids",
        type=Path,
        metavar="FILE",
        help="import exactly the cases FILE names: ids or 0-based indices, one a line "
        "(or a JSON array)",
    )
    command.add_argument(
        "--exclude-ids",
        type=Path,
        metavar="FILE",
        help='declare a total "without gold exclusions" that leaves out the cases FILE names '
        "(ids or indices, as --ids); they stay in the suite and are run",
    )
    command.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        help="locomo: keep each conversation's first N sessions, and the questions whose "
        "evidence lies in them",
    )
    command.add_argument(
        "--input-var",
        metavar="NAME",
        help="promptfoo: the var that is the case's input (default: the only var, else the one "
        "named input, question, query, prompt or message)",
    )
    command.add_argument(
        "--stage",
        metavar="STAGE",
        help="truthfulqa (correctness, the default, or answer_accuracy) and labelled (required): "
        "the judged stage the labelled cases test",
    )
    for role, holds in COLUMN_OPTIONS.items():
        command.add_argument(
            f"--{role}",
            metavar="COLUMN",
            dest=f"column_{role}",
            help=f"labelled: the column of {holds} (default: {role})",
        )
    command.add_argument(
        "--label-threshold",
        type=float,
        metavar="T",
        help="labelled: the labels are scores; a score of at least T is a pass",
    )
    command.add_argument(
        "--system",
        metavar="MODULE:ATTR",
        help="the suite's system (default: none; set it or ini eval_system)",
    )
    command.add_argument(
        "--data",
        type=Path,
        metavar="DIR",
        help="folder of the data files (default: data/<suite name>)",
    )
    command.add_argument("--name", help="the suite's name (default: OUT's file name)")
    command.add_argument("--force", action="store_true", help="replace OUT if it exists")
    _add_download_options(command)
    command.set_defaults(handler=run)


def _add_download_options(command: Any) -> None:
    group = command.add_argument_group("downloading the benchmark's official file")
    group.add_argument(
        "--download",
        action="store_true",
        help=f"fetch the official file ({', '.join(downloadable(FORMATS))}) into the cache, "
        "check its sha256, and import it; a later run reuses the cached file",
    )
    group.add_argument(
        "--download-base-url",
        metavar="URL",
        help=f"a mirror serving the file under URL/<file name> (default: the official URL, "
        f"or ${BASE_URL_ENV})",
    )
    group.add_argument(
        "--download-cache",
        type=Path,
        metavar="DIR",
        help=f"the cache folder (default: ${CACHE_ENV}, else "
        "$XDG_CACHE_HOME/pytest-evalcases/benchmarks, else ~/.cache/pytest-evalcases/benchmarks)",
    )
    group.add_argument(
        "--sha256",
        metavar="HEX",
        help="the sha256 the download must have (default: the pinned one, else the one the "
        "cache's lock file recorded on the first download)",
    )


def _download(args: argparse.Namespace) -> Fetched | None:
    """The cached official file with --download (None without); BenchmarkFormatError for
    download options that do not fit."""
    if not args.download:
        given = [
            flag
            for flag, value in (
                ("--download-base-url", args.download_base_url),
                ("--download-cache", args.download_cache),
                ("--sha256", args.sha256),
            )
            if value
        ]
        if given:
            raise BenchmarkFormatError(f"{', '.join(given)} applies with --download only")
        if args.file is None:
            raise BenchmarkFormatError(
                f"give the benchmark FILE, or --download to fetch the official one "
                f"({', '.join(downloadable(FORMATS))})"
            )
        return None
    if args.file is not None:
        raise BenchmarkFormatError(
            f"--download fetches the file: leave out FILE ({args.file}), or drop --download "
            "to import it"
        )
    if args.format not in downloadable(FORMATS):
        raise BenchmarkFormatError(
            f"--download: {args.format} has no official file to fetch (it is another tool's "
            f"own file); formats with one: {', '.join(downloadable(FORMATS))}"
        )
    fetched = fetch(args.format, args.download_cache, args.download_base_url, args.sha256)
    if fetched.downloaded:
        print(f"downloaded {fetched.url} ({fetched.size:,} bytes) to {fetched.download}")
    else:
        print(f"using the cached {fetched.download} (nothing downloaded)")
    if fetched.pinned_by:
        print(f"sha256 {fetched.sha256} matches {fetched.pinned_by}")
    else:
        print(
            f"sha256 {fetched.sha256}: nothing pinned this file, so its hash is trusted on "
            f"first use and recorded in {fetched.lock} (and in the suite's source.download); "
            f"later downloads must match it. Pin it in your scripts: --sha256 {fetched.sha256}"
        )
    if fetched.member:
        print(f"reading {fetched.member} of it: {fetched.path}")
    return fetched


def run(args: argparse.Namespace) -> int:
    name = args.name or args.output.stem
    try:
        fetched = _download(args)
    except BenchmarkFormatError as exc:
        print(f"error: {exc}\nnothing was written", file=sys.stderr)
        return 2
    if fetched is not None:
        args.file = fetched.path
    options = ImportOptions(
        format=args.format,
        file=args.file,
        download=fetched.source_note() if fetched is not None else None,
        output=args.output,
        data_dir=args.data if args.data is not None else Path("data") / name,
        root=Path.cwd(),
        limit=args.limit,
        seed=args.seed,
        stratify=args.stratify,
        ids=args.ids,
        max_sessions=args.max_sessions,
        exclude_ids=args.exclude_ids,
        system=args.system,
        name=args.name,
        force=args.force,
        input_var=args.input_var,
        stage=args.stage,
        columns={
            role: column
            for role in COLUMN_OPTIONS
            if (column := getattr(args, f"column_{role}")) is not None
        }
        or None,
        label_threshold=args.label_threshold,
    )
    try:
        suite, written = import_suite(options)
    except BenchmarkFormatError as exc:
        print(f"error: {exc}\nnothing was written", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    source = suite["source"]
    count = len(suite.get("users") or [])
    users = f", {count} user{'s' * (count != 1)}" if count else ""
    labels = ""
    if suite.get("kind") == "calibration":
        fails = sum(case["expect"] == "fail" for case in suite["cases"])
        labels = f" ({source['cases'] - fails} labelled pass, {fails} fail)"
    print(
        f"imported {source['cases']} of {source['records']} cases{labels}{users} from "
        f"{args.file} ({args.format}, sha256 {source['sha256'][:12]}, seed {args.seed})"
    )
    _print_notes(source)
    if suite.get("kind") == "calibration":
        print(
            f"next: record the judge's verdicts with pytest {args.output} --live --eval-judge "
            "JUDGE (a calibration suite runs no system), then replay them offline"
        )
    elif not suite.get("system"):
        print(
            'next: set the suite\'s "system" (or --system, or ini eval_system), then '
            "record it with pytest --live"
        )
    return 0


def _print_notes(source: dict[str, Any]) -> None:
    """What the import could not carry over, by kind, and the recorded outputs it kept aside."""
    unmapped = source.get("unmapped") or []
    if unmapped:
        print(f"not reproduced here ({len(unmapped)}; listed in the suite's source.unmapped):")
        by_kind: dict[tuple[str, str], list[str]] = {}
        for item in unmapped:
            by_kind.setdefault((item["type"], item["why"]), []).append(item["case"])
        for (kind, why), cases in by_kind.items():
            shown = ", ".join(cases[:5]) + (f" and {len(cases) - 5} more" if len(cases) > 5 else "")
            print(f"  {kind}: {why} ({shown})")
    recorded = source.get("recorded_outputs")
    if recorded:
        held = "case holds" if recorded == 1 else "cases hold"
        print(
            f"{recorded} {held} outputs the file recorded (kept in metadata.recorded, never "
            "graded): record your system with pytest --live to grade its own answers"
        )
