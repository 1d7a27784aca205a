"""Scoring a conversation case: each turn that has expectations (and the last turn, which takes
the case's own expectations) is scored with the suite's stages, as a case of its own whose
input is the conversation up to that turn (so judges see the history). The case fails at its
first failing turn and stage; per stage, the case's result sums its turns up.

Verdicts of turn N are recorded as `turn<N>.<stage>`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.schema import Case, Turn

_EXPECTATIONS = (
    "expected_tools",
    "tool_order",
    "max_tool_calls",
    "expected_docs",
    "reference",
    "unanswerable",
)
_DEFAULTS = {"tool_order": "any", "unanswerable": False}
# The case's own expectations a turn cannot give: the last turn takes them, no other turn.
_LAST_TURN_ONLY = ("expected_triples", "answer_schema", "rubric")


def verdict_name(turn: int, stage: str) -> str:
    return f"turn{turn}.{stage}"


def stage_of_verdict(name: str) -> str:
    """The stage a recorded verdict belongs to: `turn2.faithfulness` -> `faithfulness`."""
    return name.split(".", 1)[1] if name.startswith("turn") and "." in name else name


@dataclass(frozen=True, slots=True)
class TurnUnit:
    number: int  # 1-based
    case: Case  # the turn as a case: the conversation so far as input, its expectations
    trace: dict[str, Any]


def _expectations(case: Case, turn: Turn, last: bool) -> dict[str, Any]:
    """A turn's expectations; the last turn takes the case's own where it gives none."""
    found = {}
    for name in _EXPECTATIONS:
        value = getattr(turn, name)
        if last and value == _DEFAULTS.get(name):
            value = getattr(case, name)
        found[name] = value
    for name in _LAST_TURN_ONLY:
        found[name] = getattr(case, name) if last else None
    return found


def render_conversation(history: Sequence[tuple[str, str]], question: str) -> str:
    """The judge's view of a turn's input: the earlier turns, then this turn's message."""
    if not history:
        return question
    lines = []
    for user, assistant in history:
        lines += [f"user: {user}", f"assistant: {assistant}"]
    return "\n".join([*lines, f"user: {question}"])


def turn_units(case: Case, trace: Mapping[str, Any]) -> list[TurnUnit]:
    """The turns that are scored, each with its own trace (empty when the recording lacks it)."""
    assert case.turns is not None
    traces = trace.get("turns")
    traces = traces if isinstance(traces, list) else []
    units = []
    history: list[tuple[str, str]] = []
    last = len(case.turns) - 1
    for index, turn in enumerate(case.turns):
        turn_trace = (
            traces[index] if index < len(traces) and isinstance(traces[index], dict) else {}
        )
        if turn.has_expectations or index == last:
            unit_case = dataclasses.replace(
                case,
                input=render_conversation(history, turn.input),
                turns=None,
                **_expectations(case, turn, index == last),
            )
            units.append(TurnUnit(index + 1, unit_case, turn_trace))
        history.append((turn.input, str(turn_trace.get("answer", ""))))
    return units


def turn_results(case: Case, scores: Any, trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each scored turn as results.json keeps it: its message, answer and stage results."""
    assert case.turns is not None and scores.turns is not None
    traces = trace.get("turns") if isinstance(trace.get("turns"), list) else []
    found = []
    for number, turn_scores in scores.turns:
        turn_trace = traces[number - 1] if number <= len(traces) else {}
        found.append(
            {
                "turn": number,
                "input": case.turns[number - 1].input,
                "answer": turn_trace.get("answer", "") if isinstance(turn_trace, dict) else "",
                "stages": {
                    name: result.to_dict(gating) for name, result, gating in turn_scores.results
                },
            }
        )
    return found


def all_turns(trace: Mapping[str, Any]) -> dict[str, Any]:
    """A conversation's trace with every turn's calls, retrieved ids and context, in order."""
    merged: dict[str, Any] = {"answer": trace.get("answer", "")}
    for name in ("tool_calls", "retrieved", "context"):
        merged[name] = [
            item
            for turn in trace["turns"]
            if isinstance(turn, dict)
            for item in turn.get(name) or []
        ]
    return merged
