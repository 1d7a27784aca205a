"""The stages: each is one small module that registers itself in `registry`; importing this
package registers them all (those most suites do not run load on first use)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .base import Stage, StageResult, skipped
from .registry import STAGES, prepare_stages, register
from .shown import answer_and_reference


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
register(
    Stage(
        "graph_schema",
        _on_first_use("graph_schema", "score_graph_schema"),
        prepare=_on_first_use("graph_schema", "prepare_graph_schema"),
        shows=_on_first_use("graph_schema", "show_graph_schema"),
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
register(
    Stage(
        "context_coverage",
        _on_first_use("context_coverage", "score_context_coverage"),
        shows=_on_first_use("context_coverage", "show_context_coverage"),
    )
)
register(
    Stage(
        "kendall_tau",
        _on_first_use("kendall_tau", "score_kendall_tau"),
        shows=_on_first_use("kendall_tau", "show_kendall_tau"),
    )
)
# The benchmarks' own answer scores (imported suites report them): loaded on first use.
register(Stage("locomo_f1", _on_first_use("locomo", "score_locomo_f1"), shows=answer_and_reference))
for _name in (
    "hotpotqa_em",
    "hotpotqa_f1",
    "hotpotqa_sp_f1",
    "2wikimultihopqa_em",
    "2wikimultihopqa_f1",
    "2wikimultihopqa_sp_f1",
    "musique_em",
    "musique_f1",
    "musique_sp_f1",
):
    _shows = None if _name.endswith("sp_f1") else answer_and_reference
    register(Stage(_name, _on_first_use("multihop_qa", f"score_{_name}"), shows=_shows))

__all__ = ["STAGES", "Stage", "StageResult", "prepare_stages", "register", "skipped"]
