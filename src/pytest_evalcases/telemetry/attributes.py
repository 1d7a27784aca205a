"""Span attributes of live cases, after the OpenTelemetry GenAI semantic conventions (pure).

`gen_ai.*` where the conventions name the figure (operation, agent, provider, model, token
usage, evaluation name/score/label/explanation), `evalcases.*` for the rest (run id, suite, case,
stage, score, outcome, cost, latency). Attribute values must be str, bool, int or float: None
values are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXPLANATION_CHARS = 500

Attributes = dict[str, str | bool | int | float]


def _clean(found: Mapping[str, Any]) -> Attributes:
    out: Attributes = {}
    for name, value in found.items():
        if isinstance(value, bool | str):
            out[name] = value
        elif isinstance(value, int | float):
            out[name] = value
    return out


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def case_attributes(run_id: str, suite: str, case_id: str, category: str | None) -> Attributes:
    return _clean(
        {
            "evalcases.run_id": run_id,
            "evalcases.suite": suite,
            "evalcases.case.id": case_id,
            "evalcases.case.category": category,
        }
    )


def outcome_attributes(result: Mapping[str, Any]) -> Attributes:
    """A case's outcome once it is scored: outcome, first failing stage, each stage's score."""
    first = result.get("first_failure") or {}
    found: dict[str, Any] = {
        "evalcases.outcome": result.get("outcome"),
        "evalcases.first_failure.stage": first.get("stage"),
        "evalcases.first_failure.reason": str(first.get("reason") or "")[:EXPLANATION_CHARS]
        or None,
    }
    for name, stage in (result.get("stages") or {}).items():
        found[f"evalcases.stage.{name}.score"] = _number(stage.get("score"))
        found[f"evalcases.stage.{name}.passed"] = stage.get("passed")
    spent = (result.get("recording") or {}).get("spent_usd")
    found["evalcases.cost_usd"] = _number(spent)
    return _clean(found)


def model_of(fingerprint: Mapping[str, Any], trace: Mapping[str, Any]) -> str | None:
    """The system's model: the trace's `usage.model` or `model`, else the fingerprint's."""
    usage = trace.get("usage") if isinstance(trace.get("usage"), Mapping) else {}
    for value in (usage.get("model"), trace.get("model"), fingerprint.get("model")):
        if isinstance(value, str) and value:
            return value
    return None


def system_attributes(run_id: str, system_spec: str, suite: str) -> Attributes:
    return _clean(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": system_spec,
            "evalcases.run_id": run_id,
            "evalcases.suite": suite,
        }
    )


def usage_attributes(usage: Any, latency_ms: Any) -> Attributes:
    usage = usage if isinstance(usage, Mapping) else {}
    cost = _number(usage.get("cost_usd"))
    return _clean(
        {
            "gen_ai.usage.input_tokens": _number(usage.get("prompt_tokens")),
            "gen_ai.usage.output_tokens": _number(usage.get("completion_tokens")),
            "gen_ai.usage.cost": cost,  # not in the conventions; Langfuse reads it
            "evalcases.cost_usd": cost,
            "evalcases.latency_ms": _number(latency_ms),
        }
    )


def trace_attributes(trace: Mapping[str, Any], model: str | None) -> Attributes:
    found: Attributes = usage_attributes(trace.get("usage"), trace.get("latency_ms"))
    if model:
        found["gen_ai.request.model"] = model
    turns = trace.get("turns")  # a conversation: every turn's calls, in order
    parts = [t for t in turns if isinstance(t, Mapping)] if isinstance(turns, list) else [trace]
    tools = [
        c.get("name")
        for part in parts
        for c in part.get("tool_calls") or ()
        if isinstance(c, Mapping)
    ]
    if tools:
        found["evalcases.tool_calls"] = ", ".join(str(t) for t in tools)[:EXPLANATION_CHARS]
    return found


def judge_span_name(stage: str, provider: str | None, model: str | None) -> str:
    """`chat <model>` (the conventions' name of a model call) for a model judge; `evaluate
    <stage>` for one that calls no model (the lexical judge)."""
    return f"chat {model}" if model else f"evaluate {stage}"


def judge_attributes(
    run_id: str, stage: str, provider: str | None, model: str | None
) -> Attributes:
    return _clean(
        {
            "gen_ai.operation.name": "chat" if model else None,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.evaluation.name": stage,
            "evalcases.run_id": run_id,
            "evalcases.stage": stage,
        }
    )


def verdict_attributes(verdict: Mapping[str, Any]) -> Attributes:
    found: Attributes = usage_attributes(verdict.get("usage"), verdict.get("latency_ms"))
    score = _number(verdict.get("score"))
    explanation = str(verdict.get("reason") or verdict.get("error") or "")[:EXPLANATION_CHARS]
    found.update(
        _clean(
            {
                "gen_ai.evaluation.score.value": score,
                "gen_ai.evaluation.score.label": verdict.get("label"),
                "gen_ai.evaluation.explanation": explanation or None,
                "evalcases.score": score,
                "evalcases.judge": verdict.get("judge"),
                "evalcases.judge.calls": _number(verdict.get("calls")),
                "evalcases.judge.error": verdict.get("error"),
            }
        )
    )
    return found
