"""Calling a live judge: one verdict, or a stage's repeats as one recorded verdict. A judge that
fails after its retries gives an error verdict (recorded as pending), never a pass."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..core.repeats import repeat_key, verdict_of_repeats
from ..judges import JudgeError, JudgeInput
from ..telemetry import NO_SPANS, CaseSpans
from .recording import JudgeBinding

if TYPE_CHECKING:
    from ..core.schema import Case


async def judge_with_repeats(
    judge: JudgeBinding,
    stage: str,
    case: Case,
    trace: dict[str, Any],
    options: dict[str, Any],
    expected: dict[str, str],
    repeats: int,
    spans: CaseSpans = NO_SPANS,
) -> dict[str, Any]:
    """`repeats` verdicts of one stage, as one recorded verdict (each repeat under its key). A
    repeat whose judge failed makes the whole verdict an error: it is recorded as pending."""
    import asyncio  # only when a judge is called (a live run): a replay never imports it

    verdicts = await asyncio.gather(
        *(_judge_one(judge, stage, case, trace, options, spans) for _ in range(repeats))
    )
    failed = next((v for v in verdicts if v.get("error")), None)
    if failed is not None:
        return {**failed, "key": expected}
    for number, verdict in enumerate(verdicts, start=1):
        verdict["key"] = repeat_key(expected, number)
    return verdict_of_repeats(list(verdicts))


async def _judge_one(
    judge: JudgeBinding,
    stage: str,
    case: Case,
    trace: dict[str, Any],
    options: dict[str, Any],
    spans: CaseSpans = NO_SPANS,
) -> dict[str, Any]:
    """One verdict; a judge that fails after its retries yields an error verdict, never a pass."""
    with spans.judge_request(stage, judge.id) as judge_span:
        verdict = await _verdict(judge, stage, case, trace, options)
        judge_span.verdict(verdict)
    return verdict


async def _verdict(
    judge: JudgeBinding, stage: str, case: Case, trace: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:

    data = JudgeInput(
        input=case.input,
        answer=trace.get("answer", ""),
        reference=case.reference,
        context=list(trace.get("context") or []),
        unanswerable=case.unanswerable,
        rubric=case.rubric or (),
        tool_calls=tuple(call for call in trace.get("tool_calls") or () if isinstance(call, dict)),
    )
    started = time.perf_counter()
    try:
        return dict(await judge.live.evaluate(stage, data, options))
    except JudgeError as exc:
        return {
            "error": str(exc),
            "judge": judge.id,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
        }
