"""Reading a labelled set's file through the bounded reader: a CSV table (TruthfulQA, a team's
own annotations) or JSON Lines / a JSON array (HaluEval). A FIFO, a device or a file over the
cap is refused by name before anything is read, never read into memory whole."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..core.files import MB, RefusedFile, read_bounded
from .base import BenchmarkFormatError

# What an importer reads of a file, at most. HaluEval's whole general_data.json is about 6 MB,
# TruthfulQA.csv under 1 MB, LoCoMo's locomo10.json 3 MB: a file past this is not a set to run.
IMPORT_FILE_CAP = 200 * MB


def read_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped); BenchmarkFormatError naming the file
    and why when it cannot be read."""
    try:
        raw = read_bounded(path, IMPORT_FILE_CAP)
    except RefusedFile as exc:
        raise BenchmarkFormatError(
            f"{path}: {exc.reason}; give the labelled file itself (a regular file)"
        ) from None
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot read the file ({exc.strerror})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(
            f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None


def read_csv(path: Path) -> list[dict[str, Any]]:
    """The rows of a CSV file with a header row, each a dict by column name; the line each row
    starts on is kept under `_line` (errors name it)."""
    text = read_text(path)
    if not text.strip():
        raise BenchmarkFormatError(f"{path}: the file is empty; expected a header row and rows")
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="_extra")
    rows: list[dict[str, Any]] = []
    try:
        if not reader.fieldnames or not any(name.strip() for name in reader.fieldnames):
            raise BenchmarkFormatError(f"{path}: no header row; the first line names the columns")
        line = reader.line_num + 1
        for row in reader:
            rows.append({**row, "_line": line})
            line = reader.line_num + 1
    except csv.Error as exc:
        raise BenchmarkFormatError(
            f"{path}: line {reader.line_num} is not valid CSV ({exc}); check its quotes"
        ) from None
    return rows


def read_json_records(path: Path) -> list[Any]:
    """The records of a JSON array, or of JSON Lines (one object a line)."""
    text = read_text(path)
    if not text.strip():
        raise BenchmarkFormatError(
            f"{path}: the file is empty; expected JSON Lines (one record a line) or a JSON array"
        )
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        return doc if isinstance(doc, list) else [doc]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(
                f"{path}: line {number} is not valid JSON ({exc.msg} at column {exc.colno}); "
                "expected one record a line (JSON Lines)"
            ) from None
    return records
