"""Reading a labelled set's CSV table (TruthfulQA, a team's own annotations) through the
bounded reader (base.read_text): each row a dict by column name, with the line it starts on."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from .base import BenchmarkFormatError, read_text


def read_csv(path: Path) -> list[dict[str, Any]]:
    """The rows of a CSV file with a header row, each a dict by column name; the line each row
    starts on is kept under `_line` (errors name it), cells past the header under `_extra`."""
    try:
        text = read_text(path, "utf-8-sig")
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot read the file ({exc.strerror})") from None
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
