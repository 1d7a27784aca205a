"""The caps of the files a run reads but did not write, each read through `core/files.py`
(regular files only, the cap checked on the open file before anything is read). The reading
itself is re-exported here for the store's modules."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import CassetteError
from ..core.files import MB, RefusedFile, kind_of, problem_of, read_bounded, too_big

__all__ = [
    "CASE_FILE_CAP",
    "CASSETTE_CAP",
    "MB",
    "REPORT_FILE_CAP",
    "RefusedFile",
    "kind_of",
    "problem_of",
    "read_bounded",
    "too_big",
    "shown_path",
    "read_recording",
    "refused_message",
]

# A cassette holds one case's trace and verdicts (a few KB; a long RAG context, some MB).
CASSETTE_CAP = 50 * MB
# A case file holds a whole suite: an imported benchmark with its contexts inline reaches tens
# of MB; past this it is not a case file (and parsing it would take the run's memory).
CASE_FILE_CAP = 100 * MB
# A report file read back whole: results.json (--eval-baseline, `merge`, `compare`),
# manifest.json (--eval-manifest), and every file `scan` checks. Measured: 10,000 passing cases
# make a 20 MB results.json and a 27 MB dashboard; judged cases' reasons add a few KB each.
REPORT_FILE_CAP = 100 * MB


def shown_path(path: Path | str, rootdir: Path) -> str:
    """A path as messages show it: relative to the rootdir, the same on every machine."""
    return os.path.relpath(path, rootdir)


def read_recording(path: Path, what: str, shown: str) -> bytes | None:
    """The bytes of a recording file (`what`: "HTTP recording", "ingestion recording"); None
    when there is none. CassetteError naming it when it is refused (not a regular file, over
    the size cap) or cannot be read."""
    try:
        return read_bounded(path, CASSETTE_CAP)
    except FileNotFoundError:
        return None
    except RefusedFile as exc:
        raise CassetteError(refused_message(what, shown, exc)) from None
    except OSError as exc:
        raise CassetteError(f"cannot read {what} {shown}: {exc}") from None


def refused_message(what: str, shown: str, refused: RefusedFile) -> str:
    """The error of a recording file refused before reading (`what`: "cassette", "HTTP
    recording"), with the next step."""
    if refused.too_big:
        return (
            f"{what} {shown} {refused.reason}: pytest-evalcases never writes one this big; look "
            "at what it holds, then delete it and record again with --live"
        )
    return (
        f"{what} {shown} {refused.reason}, not a regular file: it was not read; remove it and "
        "record again with --live"
    )
