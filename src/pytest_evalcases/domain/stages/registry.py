"""The stage registry: every stage module registers its Stage here by name; suites name them."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import CaseFileError
from .base import Stage

STAGES: dict[str, Stage] = {}

# Suite fields that configure one stage: giving one without running the stage is a mistake.
STAGE_OPTIONS = {
    "graph": "graph",
    "citations": "citations",
    "answer_schema": "schema",
    "rubric": "rubric",
}


def register(stage: Stage) -> Stage:
    STAGES[stage.name] = stage
    return stage


def prepare_stages(suite: object, runs: list[str], rootdir: Path) -> None:
    """Once per suite, at collection: each stage it runs checks or loads its suite options.
    Raises CaseFileError (without the file's name: the caller adds it)."""
    for option, stage in STAGE_OPTIONS.items():
        if getattr(suite, option) is not None and stage not in runs:
            raise CaseFileError(
                f'"{option}" configures the {stage} stage, which this suite does not run: add '
                f'"{stage}" to "stages" or "report_only", or remove the option'
            )
    for name in runs:
        prepare = STAGES[name].prepare
        if prepare is not None:
            prepare(suite, rootdir)  # type: ignore[arg-type]
