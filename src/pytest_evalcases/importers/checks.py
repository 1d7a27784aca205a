"""The importers' checks: the options before a file is read, the ids of what a format yielded,
and the suite built (it must be one the plugin loads); and the ids files `--ids` and
`--exclude-ids` name, read through the bounded reader. Each problem is a BenchmarkFormatError
naming the file, the case or the option, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.names import unsafe_id_reason, unsafe_suite_name_reason
from ..core.schema import ValidationError, validate_case
from ..core.suite_schema import Suite
from ..core.validation import format_validation_error, misspelled_fields
from ..domain.calibration_schema import CalibrationCase, CalibrationSuite
from . import halueval, labelled, truthfulqa
from .base import IDS_FILE_CAP, BenchmarkFormatError, Unit, read_file
from .options import ImportOptions


def read_ids(path: Path) -> list[str | int]:
    """A JSON array of ids (strings) and 0-based indices (integers), or a text file of one id or
    index a line (blank lines and `#` comments skipped)."""
    text = read_ids_file(path).decode("utf-8-sig", errors="replace")
    if not text.lstrip().startswith("["):
        return [s for line in text.splitlines() if (s := line.split("#", 1)[0].strip())]
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(doc, list) or not all(
        isinstance(entry, str) or (isinstance(entry, int) and not isinstance(entry, bool))
        for entry in doc
    ):
        raise BenchmarkFormatError(
            f"{path}: a JSON ids file is an array of case ids (strings) and 0-based indices "
            "(integers)"
        )
    return doc


def check_options(options: ImportOptions, formats: Mapping[str, ModuleType]) -> None:
    """The options, each checked against the others and the format, before a file is read."""
    if options.format not in formats:
        raise BenchmarkFormatError(
            f"unknown format {options.format!r}; known: {', '.join(formats)}"
        )
    if options.limit is not None and options.limit < 1:
        raise BenchmarkFormatError(f"--limit {options.limit}: give at least 1 case")
    if options.ids is not None and (options.limit is not None or options.stratify is not None):
        raise BenchmarkFormatError(
            "--ids imports exactly the cases it names: leave out --limit and --stratify"
        )
    if options.stratify is not None and options.limit is None:
        raise BenchmarkFormatError(f"--stratify {options.stratify}: give --limit N as well")
    if options.input_var is not None and "input_var" not in getattr(
        formats[options.format], "OPTIONS", ()
    ):
        raise BenchmarkFormatError("--input-var applies to promptfoo files only")
    _check_labelled_options(options, formats)
    if options.max_sessions is not None:
        if options.format != "locomo":
            raise BenchmarkFormatError("--max-sessions applies to locomo files only")
        if options.max_sessions < 1:
            raise BenchmarkFormatError(f"--max-sessions {options.max_sessions}: keep at least 1")
    if options.output.suffix != ".json":
        raise BenchmarkFormatError(f"{options.output}: a suite file ends in .json")
    if not options.force and options.output.exists():
        raise BenchmarkFormatError(
            f"{options.output} exists; pass --force to replace it (its recordings go stale "
            "only where cases changed)"
        )
    for path, what in ((options.output, "the suite"), (options.data_dir, "the data folder")):
        if not path.resolve().is_relative_to(options.root.resolve()):
            raise BenchmarkFormatError(
                f"{path}: {what} must be inside the project ({options.root}), whose files the "
                "suite names; run the command from the project's root"
            )
    cases_dir = options.output.resolve().parent
    if options.data_dir.resolve().is_relative_to(cases_dir):
        raise BenchmarkFormatError(
            f"{options.data_dir}: the data folder is inside {cases_dir}, where its .json files "
            "would be collected as case files; pass --data with a folder outside it"
        )


def read_ids_file(path: Path) -> bytes:
    return read_file(
        path,
        IDS_FILE_CAP,
        "the ids file",
        "an ids file holds case ids or 0-based indices, one a line (or a JSON array): check "
        "that it is the file you meant",
    )


def _check_labelled_options(options: ImportOptions, formats: Mapping[str, ModuleType]) -> None:
    """The labelled sets' options go with the formats that read them, and the eval suites'
    options (a system, gold exclusions) not with a labelled set, which runs no system."""
    own = getattr(formats[options.format], "OPTIONS", ())
    for name, flag, formats in (
        ("stage", "--stage", "truthfulqa and labelled files"),
        ("columns", "--input/--answer/--reference/--context/--label", "labelled files"),
        ("label_threshold", "--label-threshold", "labelled files"),
    ):
        if getattr(options, name) is not None and name not in own:
            raise BenchmarkFormatError(f"{flag} applies to {formats} only")
    labelled_set = options.format in (truthfulqa.FORMAT, halueval.FORMAT, labelled.FORMAT)
    if options.stratify == "label" and not labelled_set:
        raise BenchmarkFormatError(
            "--stratify label applies to labelled sets (truthfulqa, halueval, labelled), whose "
            "cases carry a label; stratify by category or user"
        )
    if labelled_set:
        for given, flag in ((options.system, "--system"), (options.exclude_ids, "--exclude-ids")):
            if given is not None:
                raise BenchmarkFormatError(
                    f"{flag}: a {options.format} file becomes a calibration suite, which runs "
                    "no system and has no totals; leave it out"
                )


def check_unique_ids(path: Path, units: list[Unit]) -> None:

    seen: dict[str, int] = {}
    for index, unit in enumerate(units):
        case_id = unit.case["id"]
        unsafe = unsafe_id_reason(case_id)
        if unsafe:
            raise BenchmarkFormatError(
                f"{path}: case {index} has the id {case_id!r}, which cannot name a cassette "
                f"file: {unsafe}"
            )
        if case_id in seen:
            raise BenchmarkFormatError(
                f"{path}: case id {case_id!r} appears twice (cases {seen[case_id]} and "
                f"{index}); ids name the recordings, so they must be unique"
            )
        seen[case_id] = index


def _check_suite_name(suite: dict[str, Any]) -> None:
    unsafe = unsafe_suite_name_reason(suite["name"])
    if unsafe:
        raise BenchmarkFormatError(
            f"suite name {suite['name']!r} cannot name the cassette folder: {unsafe}; pass "
            "another --name"
        )


def check_suite(path: Path, suite: dict[str, Any]) -> None:
    """What was built is a suite the plugin loads (e.g. no category is a reserved marker)."""
    _check_suite_name(suite)
    problems = []
    try:
        Suite.model_validate(suite)
        for index, case in enumerate(suite["cases"]):
            extra = validate_case(case).extra
            for line in misspelled_fields(extra, suite.get("system_fields", ())):
                problems.append(f"cases[{index}].{line}")
    except ValidationError as exc:
        problems.append(format_validation_error(exc))
    if problems:
        raise BenchmarkFormatError(
            f"{path}: the imported suite would not load:\n" + "\n".join(problems)
        )


def check_calibration_suite(path: Path, suite: dict[str, Any]) -> None:
    """What was built is a calibration suite the plugin loads, every case included."""
    _check_suite_name(suite)
    prefix = ""
    try:
        checked = CalibrationSuite.model_validate(suite)
        for index, case in enumerate(suite["cases"]):
            prefix = f"cases[{index}] ({case['id']})"
            CalibrationCase.model_validate(case, context={"declared": checked.judged_stages})
    except ValidationError as exc:
        raise BenchmarkFormatError(
            f"{path}: the imported calibration suite would not load:\n"
            + format_validation_error(exc, prefix=prefix)
        ) from None
