"""What every benchmark importer shares: reading a published file, checked field access that
names the record and the field, and the cases a format yields before sampling."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.files import MB, RefusedFile, read_bounded

# The biggest benchmark file read (HotpotQA's training set is 566 MB; the dev sets ship at
# 5-50 MB): past it, the file is not one to import whole.
BENCHMARK_FILE_CAP = 1000 * MB
# An --ids or --exclude-ids file: a list of ids (a million of them is some 20 MB).
IDS_FILE_CAP = 50 * MB


class BenchmarkFormatError(ValueError):
    """The file is not in the format asked for: the message names the file, the record and
    the field, and nothing was written."""


def read_file(
    path: Path,
    cap: int = BENCHMARK_FILE_CAP,
    what: str = "the file",
    too_big_step: str = "import from a smaller file (a split of it)",
) -> bytes:
    """A file the command was given, read through the bounded reader (regular files only, at
    most `cap` bytes: `/dev/zero` or a FIFO is refused before anything is read, never read until
    the memory runs out); BenchmarkFormatError naming the file, what it is and the limit (and
    `too_big_step`, the next step past it)."""
    try:
        return read_bounded(path, cap)
    except RefusedFile as exc:
        if exc.too_big:
            raise BenchmarkFormatError(f"{path}: {what} {exc.reason}; {too_big_step}") from None
        raise BenchmarkFormatError(
            f"{path}: {what} {exc.reason}, not a regular file: it was not read; give the path "
            "of a file"
        ) from None
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot read the file ({exc.strerror})") from None


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """A benchmark file's text (`read_file`); BenchmarkFormatError when it is not `encoding`."""
    try:
        return read_file(path).decode(encoding)
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: cannot read the file as UTF-8 text ({exc})") from None


class TextFiles(dict[str, str]):
    """A user's field of several files written as they are (not as JSON): path under the data
    folder -> text. The user lists them; the same path in several users is written once (Zep's
    shared documents)."""


@dataclass(slots=True)
class Unit:
    """One case an importer made of the file, with what it brings to the data files."""

    case: dict[str, Any]
    paragraphs: list[dict[str, str]] = field(default_factory=list)  # corpus entries it reads
    # what of the record has no counterpart here (a promptfoo assertion type): listed in the
    # suite's `source` and by the command, never dropped silently
    unmapped: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Parsed:
    """A whole file, converted: every case (in file order), the users' data (user id -> file
    field -> JSON content, for formats with users) and the suite's stages."""

    units: list[Unit]
    stages: list[str]
    report_only: list[str]
    k: int = 5
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the suite's shared documents (Zep's document graph), written as they are: its
    # `"documents": {"files": [...]}`, ingested once by `setup_documents`
    documents: TextFiles | None = None
    # the named totals papers report for this benchmark (a suite's "totals")
    totals: list[dict[str, Any]] = field(default_factory=list)
    # The total --exclude-ids adds, when the benchmark's publishers combine their exclusion list
    # with a total of theirs ({"name", "exclude"}: the ids are added); else the ids alone.
    exclusion_total: dict[str, Any] | None = None
    # what the format's own limits left out (LoCoMo's --max-sessions): source field -> value
    source_notes: dict[str, Any] = field(default_factory=dict)
    # further suite fields (a peer's file: judged_stages, stage_modules, system_fields, ...)
    suite_fields: dict[str, Any] = field(default_factory=dict)
    # Python modules written next to the suite, named in its "stage_modules" (promptfoo's
    # checks become user stages there): name suffix -> source(module folder, suite path)
    modules: dict[str, Callable[[Path, str], str]] = field(default_factory=dict)


def read_records(path: Path) -> list[Any]:
    """The records of a JSON array, or of JSON Lines (one record a line, as MuSiQue ships)."""
    text = read_text(path)
    if not text.strip():
        raise BenchmarkFormatError(
            f"{path}: the file is empty; expected a JSON array of records or JSON Lines"
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise BenchmarkFormatError(
                f"{path}: not valid JSON (line {whole.lineno}, column {whole.colno}: "
                f"{whole.msg}); expected a JSON array of records or JSON Lines"
            ) from None
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise BenchmarkFormatError(
                    f"{path}: line {number} is not valid JSON ({exc.msg} at column "
                    f"{exc.colno}); expected one record a line (JSON Lines)"
                ) from None
        return records
    if isinstance(doc, dict):
        doc = [doc]  # a file of one record
    if not isinstance(doc, list):
        raise BenchmarkFormatError(
            f"{path}: expected a JSON array of records, found {type(doc).__name__}"
        )
    return doc


class RecordReader:
    """Checked access to one record's fields: a problem raises BenchmarkFormatError naming the
    file, the record (by position and id) and the field."""

    def __init__(
        self,
        path: Path,
        index: int,
        record: Any,
        id_field: str | None,
        place: str | None = None,
        next_step: str = "",
    ) -> None:
        """`place`: how the record is named (default `record <index>`; a CSV row says its
        line); `next_step`: what every error of this file adds (how to fix or re-export it)."""
        self.path = path
        self.index = index
        self.place = place or f"record {index}"
        self.next_step = next_step
        if not isinstance(record, dict):
            raise BenchmarkFormatError(
                f"{path}: {self.place} is {type(record).__name__}, not an object{next_step}"
            )
        self.record = record
        self.id = None
        if id_field is not None:
            self.id = self.text(id_field)

    def where(self, field_path: str) -> str:
        named = f" ({self.id})" if self.id else ""
        return f"{self.path}: {self.place}{named}: field {field_path!r}"

    def error(self, field_path: str, problem: str) -> BenchmarkFormatError:
        return BenchmarkFormatError(f"{self.where(field_path)} {problem}{self.next_step}")

    def get(
        self,
        name: str,
        kinds: type | tuple[type, ...],
        container: Any = None,
        field_path: str | None = None,
        required: bool = True,
    ) -> Any:
        source = self.record if container is None else container
        shown = field_path or name
        if name not in source:
            if required:
                raise self.error(shown, "is missing")
            return None
        value = source[name]
        if not isinstance(value, kinds) or isinstance(value, bool) and bool not in _tuple(kinds):
            expected = " or ".join(kind.__name__ for kind in _tuple(kinds))
            raise self.error(shown, f"is {type(value).__name__}, expected {expected}")
        return value

    def text(
        self,
        name: str,
        container: Any = None,
        field_path: str | None = None,
        required: bool = True,
        numbers: bool = False,
    ) -> Any:
        """A string field; with `numbers`, a number is read as its text (LoCoMo answers may be
        years)."""
        kinds = (str, int, float) if numbers else str
        value = self.get(name, kinds, container, field_path, required)
        if value is None:
            return None
        text = value if isinstance(value, str) else json.dumps(value)
        if not text.strip() and required:
            raise self.error(field_path or name, "is empty")
        return text

    def sentences(self, value: Any, field_path: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise self.error(field_path, "must be a list of sentences (strings)")
        return value


def _tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


_NOT_MARKER = re.compile(r"[^A-Za-z0-9_]+")


def marker_name(value: str) -> str:
    """A benchmark's label as a pytest marker (categories become markers): `bridge`,
    `bridge_comparison`, `hop2`."""
    name = _NOT_MARKER.sub("_", value.strip()).strip("_").lower() or "unknown"
    return name if name[0].isalpha() else f"c_{name}"


def paragraphs_of(reader: RecordReader, context: Any, field_path: str) -> list[dict[str, str]]:
    """HotpotQA-style `context`: [[title, [sentence, ...]], ...] as {"title", "text"} entries."""
    if not isinstance(context, list):
        raise reader.error(field_path, "must be a list of [title, sentences] pairs")
    out = []
    for number, entry in enumerate(context):
        where = f"{field_path}[{number}]"
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise reader.error(where, "must be a [title, [sentences]] pair")
        sentences = reader.sentences(entry[1], f"{where}[1]")
        text = " ".join(sentence.strip() for sentence in sentences if sentence.strip())
        out.append({"title": entry[0], "text": text})
    return out


def supporting_titles(reader: RecordReader, facts: Any, field_path: str) -> list[str]:
    """HotpotQA-style `supporting_facts`: [[title, sentence index], ...] -> the distinct titles.
    A title need not be among the record's paragraphs: in the fullwiki setting it often is not
    (the retrieval stage then fails on it, as it should)."""
    if not isinstance(facts, list):
        raise reader.error(field_path, "must be a list of [title, sentence index] pairs")
    found: list[str] = []
    for number, fact in enumerate(facts):
        where = f"{field_path}[{number}]"
        if not (
            isinstance(fact, list)
            and len(fact) == 2
            and isinstance(fact[0], str)
            and isinstance(fact[1], int)
            and not isinstance(fact[1], bool)
        ):
            raise reader.error(where, "must be a [title, sentence index] pair")
        if fact[0] not in found:
            found.append(fact[0])
    return found
