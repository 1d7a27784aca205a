"""The stage registry: a stage is one small module that registers itself here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .base import Stage, StageResult, skipped

STAGES: dict[str, Stage] = {}

# Suite fields that configure one stage: giving one without running the stage is a mistake.
STAGE_OPTIONS = {"graph": "graph", "citations": "citations", "answer_schema": "schema"}


def register(stage: Stage) -> Stage:
    STAGES[stage.name] = stage
    return stage


def prepare_stages(suite: object, runs: list[str], rootdir: Path) -> None:
    """Once per suite, at collection: each stage it runs checks or loads its suite options.
    Raises CaseFileError (without the file's name: the caller adds it)."""
    from ...core.errors import CaseFileError

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


def _on_first_use(module: str, function: str) -> Callable[..., Any]:
    """A stage function that imports its module on first use; the module's own registration
    then replaces the stand-in, so later cases call the real function directly."""

    def call(*args: Any) -> Any:
        loaded = importlib.import_module(f"{__name__}.{module}")
        return getattr(loaded, function)(*args)

    return call


# Imported for their registrations; order is the order `known stages` are listed in.
from . import tools, retrieval, text, judged  # noqa: E402,F401,I001

# Stages most suites do not run: registered by name, their modules imported on first use.
register(
    Stage(
        "graph",
        _on_first_use("graph", "score_graph"),
        prepare=_on_first_use("graph", "prepare_graph"),
    )
)
register(Stage("citations", _on_first_use("citations", "score_citations")))
register(Stage("schema", _on_first_use("answer_schema", "score_schema")))
register(
    Stage(
        "rubric",
        _on_first_use("rubric", "score_rubric"),
        judged=True,
        reads=judged.JUDGE_READS["rubric"],
    )
)

__all__ = ["STAGES", "Stage", "StageResult", "prepare_stages", "register", "skipped"]
