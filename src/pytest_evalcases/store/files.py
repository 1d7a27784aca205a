"""The caps of the files a run reads but did not write, each read through `core/files.py`
(regular files only, the cap checked on the open file before anything is read). The reading
itself is re-exported here for the store's modules."""

from __future__ import annotations

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
