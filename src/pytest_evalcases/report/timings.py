"""The `timings` section of results.json: how long each step of an answer took, as recorded
(Zep reports search, generation and grading times). Pure: per-case result dicts in.

Steps, in this order: the users' ingestions (`measured ingestion_ms`, each user recording's
`duration_s`, one value a user), the system's whole run as it reports it (`system_ms`, its
`latency_ms`), each step the trace names in `"timings"` (`{"search_ms": 120, "generate_ms":
840}`), the run as the plugin measured it while recording (`measured run_ms`) and each turn of a
conversation it drove (`measured turn_ms`, one value a turn), and the judge: in all (`judge_ms`)
and per judged stage (`judge <stage>_ms`), each verdict's `latency_ms` (measured by the plugin,
retries included). Each step gets its cases (users for the ingestion; and turns for a turn),
mean and p95. Each case gets its own `timings`: its values of the same steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.measured import MEASURED, RUN_MS, TURNS_MS
from ..core.stats import mean, percentile
from .formatting import fmt_ms

TIMINGS_HEADER = ("step", "cases", "mean", "p95")
TIMINGS_ALIGN = ("l", "r", "r", "r")

SYSTEM_STEP = "system_ms"
MEASURED_RUN = f"measured {RUN_MS}"
MEASURED_TURN = "measured turn_ms"
MEASURED_TURNS = f"measured {TURNS_MS}"  # a case's list of turn times
MEASURED_INGESTION = "measured ingestion_ms"
JUDGE_STEP = "judge_ms"
# The steps that alone make no Timings table (the system's and the judge's time go beside the
# cost): a table shows once a trace names a step, or the plugin measured one.
_COST_STEPS = (SYSTEM_STEP, "judge")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def case_timings(recording: Mapping[str, Any]) -> dict[str, Any]:
    """One case's timings, by step (results.json's `cases[].timings`): only the steps it has."""
    found: dict[str, Any] = {}

    def add(step: str, value: Any) -> None:
        number = _number(value)
        if number is not None:
            found[step] = number

    add(SYSTEM_STEP, recording.get("latency_ms"))
    steps = recording.get("timings")
    for step, value in steps.items() if isinstance(steps, Mapping) else ():
        add(str(step), value)
    measured = recording.get(MEASURED)
    if isinstance(measured, Mapping):
        add(MEASURED_RUN, measured.get(RUN_MS))
        turns = measured.get(TURNS_MS)
        numbers = [_number(t) for t in turns] if isinstance(turns, list) else []
        if numbers and None not in numbers:
            found[MEASURED_TURNS] = numbers
    add(JUDGE_STEP, recording.get("judge_latency_ms"))
    by_stage = recording.get("judge_ms_by_stage")
    for stage, value in by_stage.items() if isinstance(by_stage, Mapping) else ():
        add(f"judge {stage}_ms", value)
    return found


def timings_section(
    cases: Sequence[dict[str, Any]], users: Iterable[Mapping[str, Any]] = ()
) -> dict[str, dict[str, Any]]:
    """Each step's cases, mean and p95; `users`: the ingestion section's rows (their
    `duration_s`). Each case that has a step gets its `timings` (set here, at the end of the
    run, from what its recording already holds: nothing is read per case while it runs)."""
    ingestion = [d * 1000 for u in users if (d := _number(u.get("duration_s"))) is not None]
    system: dict[str, list[float]] = {}
    own: dict[str, list[float]] = {}  # the steps the traces name
    measured: dict[str, list[float]] = {}
    judge: dict[str, list[float]] = {}
    turn_cases = 0
    for case in cases:
        timings = case_timings(case.get("recording") or {})
        if not timings:
            case.pop("timings", None)
            continue
        case["timings"] = timings
        for step, value in timings.items():
            if step == MEASURED_TURNS:
                turn_cases += 1
                measured.setdefault(MEASURED_TURN, []).extend(value)
            elif step == SYSTEM_STEP:
                system.setdefault(step, []).append(value)
            elif step == MEASURED_RUN:
                measured.setdefault(step, []).append(value)
            elif step == JUDGE_STEP or step.startswith("judge "):
                judge.setdefault(step, []).append(value)
            else:
                own.setdefault(step, []).append(value)
    section: dict[str, dict[str, Any]] = {}
    if ingestion:
        section[MEASURED_INGESTION] = _figures(ingestion, users=len(ingestion))
    for group in (system, own, measured):
        for step, values in group.items():
            section[step] = _figures(values, cases=len(values))
    if MEASURED_TURN in section:
        section[MEASURED_TURN] = _figures(measured[MEASURED_TURN], cases=turn_cases)
        section[MEASURED_TURN]["turns"] = len(measured[MEASURED_TURN])
    if JUDGE_STEP in judge:  # the judge in all first, then per stage
        judge = {JUDGE_STEP: judge.pop(JUDGE_STEP), **judge}
    for step, values in judge.items():
        section[step] = _figures(values, cases=len(values))
    return section


def _figures(values: Sequence[float], **count: int) -> dict[str, Any]:
    # Milliseconds to the microsecond: a mean of 0.1 + 0.2 should not read 0.30000000000000004.
    return {**count, "mean": _ms(mean(values)), "p95": _ms(percentile(values, 95))}


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _count(figures: Mapping[str, Any]) -> str:
    """The count cell: cases, `3 users` for the ingestion, `2 (6 turns)` for a turn."""
    if "users" in figures:
        return f"{figures['users']} user" + ("s" if figures["users"] != 1 else "")
    if "turns" in figures:
        return f"{figures['cases']} ({figures['turns']} turns)"
    return str(figures["cases"])


def timing_rows(section: Mapping[str, Any] | None) -> list[tuple[str, str, str, str]]:
    """The Timings table of report.md and the dashboard: each step (`_ms` dropped) with its
    count, mean and p95, in the section's order; none unless a trace names a step of its own or
    the plugin measured one (the system's and the judge's time alone go beside the cost)."""
    steps = section or {}
    if all(name.startswith(_COST_STEPS) for name in steps):
        return []
    return [
        (name.removesuffix("_ms"), _count(s), fmt_ms(s["mean"]), fmt_ms(s["p95"]))
        for name, s in steps.items()
    ]
