"""What `python -m pytest_evalcases import` was asked to do: the format, the file, where the
suite and its data go, and how the cases are sampled."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class ImportOptions:
    format: str
    file: Path
    output: Path  # the suite file, e.g. cases/hotpot.json
    data_dir: Path  # where the corpus and the users' files go, e.g. data/hotpot
    root: Path  # the project's rootdir: the suite names its files relative to it
    limit: int | None = None
    seed: int = 0
    stratify: str | None = None  # a case field whose values keep their shares in the sample
    ids: Path | None = None  # a file naming exactly the cases to import (ids or 0-based indices)
    max_sessions: int | None = None  # LoCoMo: each conversation's first N sessions
    # a file of gold exclusions (ids or indices): a total that leaves them out
    exclude_ids: Path | None = None
    system: str | None = None
    name: str | None = None
    force: bool = False
    input_var: str | None = None  # promptfoo: the var that is the case's input
    stage: str | None = None  # labelled sets: the judged stage the cases test
    columns: dict[str, str] | None = None  # labelled FILE: role (input, label, ...) -> column
    label_threshold: float | None = None  # labelled FILE: a score label of at least this passes
    download: dict[str, Any] | None = None  # --download: the source's URL and hash (downloads.py)
