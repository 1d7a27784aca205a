"""What the importers of other eval tools' files share (DeepEval, promptfoo, inspect-ai, ragas):
reading CSV and YAML files as records, a list written into one CSV cell, the case id of a
record that has none, and the outputs a file recorded (a ragas `response`), which are kept in the
case's `metadata` for the people reading it and never given to the system or graded."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Any

from .base import BenchmarkFormatError, RecordReader, read_records, read_text

YAML_HINT = "pip install 'pytest-evalcases[peers]' (or pip install pyyaml)"
# Where a record's recorded outputs go: metadata["recorded"] (see the module docstring).
RECORDED = "recorded"


class TableRow(dict[str, Any]):
    """A CSV row as a record, knowing the line it ends on (for error messages)."""

    line: int = 0


def without_nulls(record: Any) -> Any:
    """A record with its null fields left out: the tools write every field, null when unset
    (DeepEval's save_as, ragas's to_jsonl), and null means absent."""
    if not isinstance(record, dict):
        return record
    kept = type(record)({key: value for key, value in record.items() if value is not None})
    if isinstance(record, TableRow):
        kept.line = record.line
    return kept


def row_place(record: Any, index: int) -> str:
    """How an error names a record: `row 3 (line 4)` for a CSV row, else `record 2`."""
    line = getattr(record, "line", 0)
    return f"row {index + 1} (line {line})" if line else f"record {index}"


def read_table_or_json(path: Path) -> list[Any]:
    """A `.csv` file's rows (empty cells as absent), else a JSON array or JSON Lines."""
    if path.suffix.lower() != ".csv":
        return read_records(path)
    text = _text(path, "a header row and rows")
    reader = csv.DictReader(text.splitlines(keepends=True))
    rows: list[Any] = []
    try:
        for raw in reader:
            if None in raw:  # more cells than the header names
                cells, named = len(raw) - 1 + len(raw[None]), len(reader.fieldnames or [])
                raise BenchmarkFormatError(
                    f"{path}: row {len(rows) + 1} (line {reader.line_num}) has {cells} cells, "
                    f"the header {named}; quote cells that hold commas"
                )
            row = TableRow({key: value for key, value in raw.items() if value not in ("", None)})
            row.line = reader.line_num
            rows.append(row)
    except csv.Error as exc:
        raise BenchmarkFormatError(
            f"{path}: line {reader.line_num}: not valid CSV ({exc})"
        ) from None
    return rows


def read_yaml(path: Path) -> Any:
    """A YAML document (PyYAML, the `peers` extra)."""
    try:
        import yaml  # optional: only the promptfoo importer reads YAML
    except ImportError:
        raise BenchmarkFormatError(
            f"{path}: reading YAML needs the PyYAML package, which is not installed: {YAML_HINT}"
        ) from None
    text = _text(path, "a YAML document")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BenchmarkFormatError(f"{path}: not valid YAML{where}: {problem}") from None


def _text(path: Path, expected: str) -> str:
    """The file's text (a byte-order mark dropped); an empty file is an error naming what was
    expected."""
    text = read_text(path, "utf-8-sig")
    if not text.strip():
        raise BenchmarkFormatError(f"{path}: the file is empty; expected {expected}")
    return text


def text_list(reader: RecordReader, name: str, delimiter: str | None = None) -> list[str] | None:
    """A list of strings, or None when absent. In a CSV cell it is a JSON or Python list literal
    (`["a", "b"]`, as ragas writes it), or, with `delimiter`, texts joined by it (DeepEval's
    `|`)."""
    if name not in reader.record:
        return None
    value = reader.record[name]
    if isinstance(value, str) and isinstance(reader.record, TableRow):
        value = _cell_list(reader, name, value, delimiter)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise reader.error(name, f"is {type(value).__name__}, expected a list of strings")
    return value


def _cell_list(reader: RecordReader, name: str, cell: str, delimiter: str | None) -> Any:
    if cell.lstrip().startswith("["):
        try:
            return json.loads(cell)
        except json.JSONDecodeError:
            pass
        try:
            return ast.literal_eval(cell)  # a Python list literal: literals only, nothing runs
        except (ValueError, SyntaxError):
            raise reader.error(
                name, "starts with '[' but is neither a JSON nor a Python list of strings"
            ) from None
    return cell.split(delimiter) if delimiter else [cell]


def json_cell(reader: RecordReader, name: str) -> Any:
    """A field that is a JSON value, written into a CSV cell as JSON text (None: absent)."""
    value = reader.record.get(name)
    if isinstance(value, str) and isinstance(reader.record, TableRow):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            try:
                return ast.literal_eval(value)  # a Python literal, as some writers leave it
            except (ValueError, SyntaxError):
                raise reader.error(name, "is not JSON") from None
    return value


def numbered_id(prefix: str, index: int, count: int) -> str:
    """`golden-001`: the id of the record at `index` (0-based) of `count`, for formats whose
    records have none; zero-padded so the ids sort in file order."""
    return f"{prefix}-{index + 1:0{max(3, len(str(count)))}d}"


def keep_recorded(case: dict[str, Any], recorded: dict[str, Any]) -> None:
    """The outputs a file recorded (a response, the retrieved contexts), in the case's metadata:
    read by people, never given to the system, never graded (a run grades what the system
    answers when recorded with --live)."""
    kept = {name: value for name, value in recorded.items() if value not in (None, "", [])}
    if kept:
        case.setdefault("metadata", {})[RECORDED] = kept


def recorded_count(cases: list[dict[str, Any]]) -> int:
    return sum(1 for case in cases if RECORDED in (case.get("metadata") or {}))
