"""A team's own labelled answers (CSV with a header row, or JSON Lines) as a calibration suite:
one judge test case per row, judged at the stage `--stage` names.

`--input`, `--answer`, `--reference`, `--context` and `--label` name the columns (default: those
very names; an `id` column, when there is one, names the cases, else `row-<n>`). Only the
columns the stage reads are needed. A label is pass/fail, yes/no, 1/0, true/false (pass, yes, 1
and true: the answer is acceptable, `"expect": "pass"`), or, with `--label-threshold T`, a
score: at least T passes. A context cell is one passage (CSV), or a string or a list of strings
(JSON Lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..domain.calibration_schema import CALIBRATED_STAGES
from ..domain.stages.judged import JUDGE_READS
from .base import BenchmarkFormatError, Parsed, Unit, marker_name, read_records
from .labelled_files import read_csv

FORMAT = "labelled"
DESCRIPTION = "your own labelled answers (CSV or JSON Lines): pass/fail labels or scores"
OPTIONS = ("stage", "columns", "label_threshold")
COLUMNS = ("input", "answer", "reference", "context", "label")
PASS_WORDS = frozenset({"pass", "yes", "1", "true"})
FAIL_WORDS = frozenset({"fail", "no", "0", "false"})
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")


def read(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        return read_csv(path)
    if path.suffix.lower() in JSON_SUFFIXES:
        return read_records(path)
    raise BenchmarkFormatError(
        f"{path}: a labelled file is CSV (.csv) or JSON Lines (.jsonl); name it so"
    )


def parse(
    path: Path,
    records: list[Any],
    stage: str | None = None,
    columns: dict[str, str] | None = None,
    label_threshold: float | None = None,
) -> Parsed:
    if stage is None:
        raise BenchmarkFormatError(
            f"{path}: name the judged stage the labels are for with --stage (one of "
            f"{', '.join(CALIBRATED_STAGES)})"
        )
    if stage not in CALIBRATED_STAGES:
        raise BenchmarkFormatError(
            f"--stage {stage}: not a judged stage to calibrate; one of "
            f"{', '.join(CALIBRATED_STAGES)}"
        )
    named = {**{name: name for name in COLUMNS}, **(columns or {})}
    needed = ["label", *(name for name in JUDGE_READS[stage] if name in COLUMNS)]
    _check_columns(path, records, named, needed, set(columns or {}))
    units = []
    for index, record in enumerate(records):
        units.append(_unit(path, index, record, stage, named, needed, label_threshold))
    return Parsed(units, stages=[], report_only=[], suite_fields={"kind": "calibration"})


def _place(path: Path, index: int, record: Any) -> str:
    if isinstance(record, dict) and "_line" in record:  # CSV: the line a spreadsheet shows
        return f"{path}: row {index + 1} (line {record['_line']})"
    return f"{path}: record {index + 1} (line {index + 1})"


def _check_columns(
    path: Path, records: list[Any], named: dict[str, str], needed: list[str], given: set[str]
) -> None:
    """Every column the stage reads (and the label) is in the file, and every column an option
    named: else one error naming the column, the file's columns and the option to pass."""
    present: dict[str, None] = {}
    for record in records:
        if not isinstance(record, dict):
            raise BenchmarkFormatError(
                f"{_place(path, records.index(record), record)}: is "
                f"{type(record).__name__}, not an object with the columns as keys"
            )
        present.update(dict.fromkeys(k for k in record if k not in ("_line", "_extra")))
    for role in dict.fromkeys([*needed, *given]):
        if named[role] not in present:
            shown = ", ".join(map(repr, present)) or "none"
            raise BenchmarkFormatError(
                f"{path}: no column {named[role]!r} for the {role} (columns: {shown}); name "
                f"the {role} column with --{role} COLUMN"
            )


def _unit(
    path: Path,
    index: int,
    record: dict[str, Any],
    stage: str,
    named: dict[str, str],
    needed: list[str],
    label_threshold: float | None,
) -> Unit:
    where = _place(path, index, record)
    if record.get("_extra"):
        raise BenchmarkFormatError(
            f"{where}: more cells than the header has columns; quote a cell that holds a comma"
        )
    raw_id = record.get("id")
    case_id = str(raw_id).strip() if raw_id not in (None, "") else f"row-{index + 1}"
    expect, shown = _label(where, named["label"], record.get(named["label"]), label_threshold)
    case: dict[str, Any] = {"id": case_id, "stage": stage}
    # what the stage reads, and what else the row holds (the question beside a faithfulness
    # label): shown to a reviewer, keyed only when the stage reads it
    for role in ("input", "answer", "reference"):
        if role in needed or named[role] in record:
            case[role] = _text(where, named[role], record.get(named[role]))
    if "reference" in needed and not case["reference"].strip():
        raise BenchmarkFormatError(
            f"{where}: {named['reference']} is empty, and {stage} compares the answer with it; "
            "fill it in, or leave the row out"
        )
    if "context" in needed or named["context"] in record:
        case["context"] = _passages(where, named["context"], record.get(named["context"]))
    case["expect"] = expect
    if expect == "fail":
        case["defect"] = f"people labelled it fail ({named['label']} = {shown})"
    category = record.get("category")
    if isinstance(category, str) and category.strip():
        case["category"] = marker_name(category)
    case["metadata"] = {"row": index + 1, "label": shown}
    return Unit(case)


def _label(where: str, column: str, value: Any, threshold: float | None) -> tuple[str, str]:
    """("pass" | "fail", the label as written)."""
    shown = str(value).strip() if value is not None else ""
    if threshold is not None:
        try:
            score = float(shown)
        except ValueError:
            score = float("nan")
        if score != score:  # not a number (nan included)
            raise BenchmarkFormatError(
                f"{where}: {column} {shown!r} is not a score; with --label-threshold every "
                "label is a number (fix the row, or leave --label-threshold out for pass/fail "
                "labels)"
            )
        return ("pass" if score >= threshold else "fail"), shown
    word = shown.lower()
    if word in PASS_WORDS or word in ("1.0",):
        return "pass", shown
    if word in FAIL_WORDS or word in ("0.0",):
        return "fail", shown
    hint = (
        "it looks like a score: pass --label-threshold T (a score of at least T passes)"
        if _is_number(word)
        else "fix the row"
    )
    raise BenchmarkFormatError(
        f"{where}: {column} {shown!r} is not a label: pass/fail, yes/no, 1/0 or true/false; {hint}"
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _text(where: str, column: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise BenchmarkFormatError(
            f"{where}: {column} is {type(value).__name__}, expected text; fix the row"
        )
    return str(value)


def _passages(where: str, column: str, value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise BenchmarkFormatError(
        f"{where}: {column} must be a passage (text) or a list of passages; fix the row"
    )
