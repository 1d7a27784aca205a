"""The stages: each is one small module that registers itself in `registry`; importing this
package registers them all (the four that most suites do not run load on first use)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .base import Stage, StageResult, skipped
from .registry import STAGES, prepare_stages, register


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
