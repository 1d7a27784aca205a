"""What a failing stage shows beside its reason: the values it compared, so a failure says what
happened and not only that it happened. A stage names its own with `Stage.shows` (`tools`: the
calls made, with their arguments, beside the expected ones; `retrieval`: the ids retrieved beside
the expected ones; `exact_match` and `token_f1`: the answer beside the reference); a judged stage
shows what its judge read (the answer, the reference, the context); every failure shows the
answer. Each value is cut short (a few dozen characters, a few items); `whole` (-vv) shows it
whole. Values are shown as their repr: one line each, and a control character in a model's answer
cannot restyle the terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.names import listed, shown_value
from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage

ANSWER_CHARS = 160  # of the answer and the reference
PASSAGE_CHARS = 80  # of each context passage shown
PASSAGES_LISTED = 3


def answer_shown(trace: dict[str, Any], whole: bool) -> tuple[str, str]:
    return "answer", shown_value(trace.get("answer", ""), None if whole else ANSWER_CHARS)


def reference_shown(case: Case, whole: bool) -> tuple[str, str]:
    return "reference", shown_value(case.reference, None if whole else ANSWER_CHARS)


def context_shown(trace: dict[str, Any], whole: bool) -> tuple[str, str]:
    passages = [str(p) for p in trace.get("context") or []]
    limit = None if whole else PASSAGE_CHARS
    shown = listed([shown_value(p, limit) for p in passages], None if whole else PASSAGES_LISTED)
    count = f"{len(passages)} passage{'' if len(passages) == 1 else 's'}"
    return "context", f"{count}: {shown}" if passages else "none"


def answer_and_reference(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    """What a stage comparing the answer with the reference shows."""
    return [answer_shown(trace, whole), reference_shown(case, whole)]


def stage_details(
    stage: Stage,
    case: Case,
    trace: dict[str, Any],
    suite: Suite,
    whole: bool = False,
    shown: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """The (label, text) lines a failure of `stage` shows: what its result says it compared
    (`shown`: a user stage's `ev.Score(shows=...)`), the stage's own, else what its judge read;
    the answer always (last when the stage did not show it)."""
    if shown:
        limit = None if whole else ANSWER_CHARS
        lines = [(str(label), shown_value(value, limit)) for label, value in shown.items()]
    elif stage.shows is not None:
        lines = list(stage.shows(case, trace, suite, whole))
    else:
        lines = []
        if "answer" in stage.reads:
            lines.append(answer_shown(trace, whole))
        if "reference" in stage.reads and case.reference is not None:
            lines.append(reference_shown(case, whole))
        if "context" in stage.reads:
            lines.append(context_shown(trace, whole))
    if not any(label == "answer" for label, _ in lines):
        lines.append(answer_shown(trace, whole))
    return lines
