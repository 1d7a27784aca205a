"""The `timings` section of results.json: how long each step of an answer took, as recorded
(Zep reports search, generation and grading times). Pure: per-case result dicts in.

Steps are the system's whole run (`system_ms`, its `latency_ms`), each step the trace names in
`"timings"` (`{"search_ms": 120, "generate_ms": 840}`), and the judge: in all (`judge_ms`) and
per judged stage (`judge <stage>_ms`). Each step gets its cases, mean and p95.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.stats import mean, percentile
from .formatting import fmt_ms

TIMINGS_HEADER = ("step", "cases", "mean", "p95")
TIMINGS_ALIGN = ("l", "r", "r", "r")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def timings_section(cases: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    steps: dict[str, list[float]] = {}

    def add(step: str, value: Any) -> None:
        number = _number(value)
        if number is not None:
            steps.setdefault(step, []).append(number)

    for case in cases:
        recording = case.get("recording") or {}
        add("system_ms", recording.get("latency_ms"))
        for step, value in (recording.get("timings") or {}).items():
            add(str(step), value)
        add("judge_ms", recording.get("judge_latency_ms"))
        for stage, value in (recording.get("judge_ms_by_stage") or {}).items():
            add(f"judge {stage}_ms", value)
    return {
        step: {"cases": len(values), "mean": mean(values), "p95": percentile(values, 95)}
        for step, values in steps.items()
    }


def timing_rows(section: Mapping[str, Any] | None) -> list[tuple[str, int, str, str]]:
    """The Timings table of report.md and the dashboard: each step (`_ms` dropped) with its
    cases, mean and p95, in the section's order; none unless the traces name a step of their
    own (the system's and the judge's time alone go beside the cost, not in a table)."""
    steps = section or {}
    if not any(name != "system_ms" and not name.startswith("judge") for name in steps):
        return []
    return [
        (name.removesuffix("_ms"), s["cases"], fmt_ms(s["mean"]), fmt_ms(s["p95"]))
        for name, s in steps.items()
    ]
