"""`python -m pytest_evalcases scan`: recordings and reports checked for secrets, and the folder of
cassettes a project's ini names (the redaction itself is `redaction.py`).

Every kind of file the plugin writes is read: JSON (cassettes, `.http.json`, results.json) as a
document, each finding named by its JSON path; Markdown, HTML and XML (report.md,
recording-changes.md, the dashboard, JUnit XML) as text, line by line (HTML and XML with their
character references decoded), each finding named by its line. A file is read only when it is
a regular file of at most REPORT_FILE_CAP (100 MB); any other is listed as not checked."""

from __future__ import annotations

import configparser
import html
import json
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.names import counted
from .files import REPORT_FILE_CAP, RefusedFile, read_bounded
from .redaction import redact

DEFAULT_CASSETTES = "cassettes"


class ScanPathError(ValueError):
    """A path given to the scan does not exist."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a file (json_path set), or a file that could not be checked (json_path
    None, kind says why)."""

    file: Path
    json_path: str | None
    kind: str

    def line(self) -> str:
        if self.json_path is None:
            return f"{self.file}: {self.kind}"
        return f"{self.file}: {self.json_path}: {self.kind}"


# The kinds of file the plugin writes, by how the scan reads them.
JSON_SUFFIXES = (".json",)
TEXT_SUFFIXES = (".md",)
MARKUP_SUFFIXES = (".html", ".htm", ".xml")
SCANNED_SUFFIXES = JSON_SUFFIXES + TEXT_SUFFIXES + MARKUP_SUFFIXES


def scanned_files(paths: Iterable[Path | str]) -> Iterator[Path]:
    """Every JSON, Markdown, HTML and XML file under the given folders (sorted), and each file
    given by name whatever its name ends in; ScanPathError for a path that does not exist."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(
                child
                for child in path.rglob("*")
                if child.suffix.lower() in SCANNED_SUFFIXES and child.is_file()
            )
        elif path.exists():
            yield path
        else:
            raise ScanPathError(f"{path}: no such file or folder")


def scan_files(
    paths: Iterable[Path | str], secrets: Mapping[str, str] | None = None
) -> list[Finding]:
    """Findings over `scanned_files(paths)`: every secret-shaped value and every value of
    `secrets` ({name: value}, e.g. from secret_values_from_env) found, with its file and JSON
    path (or line), and every file that is unreadable or not what its name says. Raises
    ScanPathError for a missing path."""
    secrets = {} if secrets is None else secrets
    findings: list[Finding] = []
    for path in scanned_files(paths):
        suffix = path.suffix.lower()
        if suffix in TEXT_SUFFIXES or suffix in MARKUP_SUFFIXES:
            findings.extend(_scan_text_file(path, secrets, markup=suffix in MARKUP_SUFFIXES))
            continue
        try:
            doc = json.loads(read_bounded(path, REPORT_FILE_CAP).decode("utf-8-sig"))
        except RefusedFile as exc:
            findings.append(_refused(path, exc))
            continue
        except OSError as exc:
            findings.append(Finding(path, None, f"cannot read ({exc.strerror or exc})"))
            continue
        except UnicodeDecodeError:
            findings.append(Finding(path, None, "not JSON (not UTF-8 text)"))
            continue
        except json.JSONDecodeError as exc:
            findings.append(Finding(path, None, f"not JSON ({exc.msg} at line {exc.lineno})"))
            continue
        _, found = redact(doc, secrets)
        findings.extend(Finding(path, where, kind) for where, kind in found)
    return findings


def _scan_text_file(path: Path, secrets: Mapping[str, str], markup: bool) -> list[Finding]:
    """A Markdown, HTML or XML file, line by line (a PEM block is found by its BEGIN line, and
    its body lines too)."""
    try:
        text = read_bounded(path, REPORT_FILE_CAP).decode("utf-8-sig")
    except RefusedFile as exc:
        return [_refused(path, exc)]
    except OSError as exc:
        return [Finding(path, None, f"cannot read ({exc.strerror or exc})")]
    except UnicodeDecodeError:
        return [Finding(path, None, "not text (not UTF-8)")]
    lines = [html.unescape(line) if markup and "&" in line else line for line in text.splitlines()]
    # The lines as one document: a PEM body line or an AWS secret alone on its line is found
    # when the file holds the key's frame or id on another line.
    _, found = redact(lines, secrets)
    return [Finding(path, f"line {_line_number(where)}", kind) for where, kind in found]


def _line_number(json_path: str) -> int:
    """The line number of a finding in a list of lines (`$[4]` is line 5)."""
    return int(json_path[2 : json_path.index("]")]) + 1


def _refused(path: Path, refused: RefusedFile) -> Finding:
    """A file the scan would not read (a FIFO would block it, `/dev/zero` never ends, a file
    over the cap would take the memory): not checked, with the next step."""
    if refused.too_big:
        return Finding(
            path,
            None,
            f"not checked: {refused.reason} for a scanned file: nothing was read from it; "
            "look at what it holds, or leave it out of the paths scanned",
        )
    return Finding(
        path,
        None,
        f"not checked: {refused.reason}, not a regular file: nothing was read from it; "
        "name regular files (or their folders) to scan",
    )


def scan_summary(findings: list[Finding], scanned: int) -> str:
    """The scan's last line: `clean: 12 files scanned`, or what was found where."""
    if not findings:
        return f"clean: {counted(scanned, 'file')} scanned"
    secrets = [finding for finding in findings if finding.json_path is not None]
    unchecked = {finding.file for finding in findings if finding.json_path is None}
    parts = []
    if secrets:
        files = len({finding.file for finding in secrets})
        parts.append(f"{counted(len(secrets), 'secret')} in {counted(files, 'file')}")
    if unchecked:
        parts.append(f"{counted(len(unchecked), 'file')} not checked")
    return (
        f"found {'; '.join(parts)} ({scanned} scanned): re-record with --live (recording "
        "redacts secrets), or fix the files by hand"
    )


def cassettes_folder_from_ini(directory: Path) -> tuple[Path, str]:
    """(the cassettes folder, where it was read from) per the pytest configuration file in
    `directory`, looked up in pytest's order; `cassettes` when no file sets `eval_cassettes`.
    Only `directory` itself is read: run the scan from the project's root."""
    for name, read in _INI_READERS:
        config_file = directory / name
        if not config_file.is_file():
            continue
        try:
            options = read(config_file)
        except (OSError, ValueError, configparser.Error):
            continue  # pytest itself reports a broken configuration file
        if options is None:
            continue  # no pytest section: pytest looks at the next file
        value = options.get("eval_cassettes")
        if isinstance(value, str) and value.strip():
            return directory / value.strip(), f"eval_cassettes in {name}"
        break
    return directory / DEFAULT_CASSETTES, "the default cassettes folder"


def _ini_section(path: Path, section: str) -> dict[str, Any] | None:
    parser = configparser.RawConfigParser()
    parser.read(path, encoding="utf-8")
    return dict(parser[section]) if parser.has_section(section) else None


def _toml_table(path: Path, *keys: str) -> dict[str, Any] | None:
    table: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table if isinstance(table, dict) else None


def _pyproject_options(path: Path) -> dict[str, Any] | None:
    tool_pytest = _toml_table(path, "tool", "pytest")
    if tool_pytest is None:
        return None
    ini_options = tool_pytest.get("ini_options")
    return ini_options if isinstance(ini_options, dict) else tool_pytest


# pytest's own order of configuration files (a file without a pytest section is skipped).
_INI_READERS = (
    ("pytest.toml", lambda path: _toml_table(path, "pytest") or {}),
    (".pytest.toml", lambda path: _toml_table(path, "pytest") or {}),
    ("pytest.ini", lambda path: _ini_section(path, "pytest") or {}),
    (".pytest.ini", lambda path: _ini_section(path, "pytest") or {}),
    ("pyproject.toml", _pyproject_options),
    ("tox.ini", lambda path: _ini_section(path, "pytest")),
    ("setup.cfg", lambda path: _ini_section(path, "tool:pytest")),
)
