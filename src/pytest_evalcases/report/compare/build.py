"""Two results.json documents in, their comparison out (pure).

Cases are matched by (suite, id), as the baseline gate matches them. Every figure that compares
the two sides is over the shared cases: a case only one run has is counted, never paired, so a
run with more cases cannot move a mean by itself. Per stage, the means are over the shared cases
both runs scored, each with its bootstrap interval, and the difference (B - A) has a paired
bootstrap interval: the shared cases are resampled together (the bootstrap of the per-case
differences), with the reports' fixed seed, so the same two runs always give the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ...core.outcomes import DECIDED, NOT_PASSING, PASS_LIKE, case_label, failure_of
from ...core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_ci, mean, wilson_interval
from ...domain.calibration_agreement import judges_compared
from ..aggregate import stage_score
from ..baseline import case_key, validate_results
from ..cost import cost_section
from ..formatting import uncommitted_changes

COMPARE_FORMAT = "pytest-evalcases/compare"
UNCATEGORISED = "(none)"

Doc = Mapping[str, Any]


def compare_runs(a: Doc, b: Doc, names: Sequence[str] = ("A", "B")) -> dict[str, Any]:
    """The comparison of run `a` with run `b` (B - A wherever a difference is shown)."""
    validate_results(a, f"{names[0]} results.json")
    validate_results(b, f"{names[1]} results.json")
    a_cases = {case_key(c): c for c in a["cases"]}
    b_cases = {case_key(c): c for c in b["cases"]}
    shared_keys = [k for k in a_cases if k in b_cases]
    pairs = [(a_cases[k], b_cases[k]) for k in shared_keys]
    order = list(a.get("stage_order") or a["stages"])
    order += [s for s in (b.get("stage_order") or b["stages"]) if s not in order]
    shared_a = [pa for pa, _ in pairs]
    shared_b = [pb for _, pb in pairs]
    cost = {
        "a": cost_section(shared_a, a.get("run") or {}),
        "b": cost_section(shared_b, b.get("run") or {}),
    }
    comparison: dict[str, Any] = {
        "format": COMPARE_FORMAT,
        "seed": DEFAULT_SEED,
        "resamples": DEFAULT_RESAMPLES,
        "runs": {"a": _run_view(a, names[0]), "b": _run_view(b, names[1])},
        "cases": {
            "shared": len(pairs),
            "only_a": len(a_cases) - len(pairs),
            "only_b": len(b_cases) - len(pairs),
        },
        "stage_order": order,
        "stages": {name: _stage(name, pairs) for name in order},
        "pass_rate": {"a": _rate(shared_a), "b": _rate(shared_b)},
        "categories": _categories(pairs),
        "totals": _totals(pairs),
        "flipped": _flipped(pairs),
        "cost": cost,
    }
    break_even = token_break_even(
        _ingestion_tokens({"a": a, "b": b}), {side: cost[side]["system"] for side in ("a", "b")}
    )
    if break_even is not None:  # only when exactly one run ingested (the memory run)
        comparison["break_even"] = break_even
    calibrations = [doc.get("calibration") for doc in (a, b)]
    if all(isinstance(found, Mapping) for found in calibrations):  # two judges, one labelled set
        comparison["calibration"] = judges_compared(
            calibrations[0]["cases"],  # type: ignore[index]
            calibrations[1]["cases"],  # type: ignore[index]
        )
    return comparison


def _run_view(doc: Doc, name: str) -> dict[str, Any]:
    run, summary = doc.get("run") or {}, doc["summary"]
    return {
        "name": name,
        "run_id": run.get("run_id"),
        "mode": run.get("mode"),
        "judge": run.get("judge"),
        "git_commit": run.get("git_commit"),
        "uncommitted_changes": uncommitted_changes(run),
        "started": run.get("started") or run.get("started_at"),
        "suites": list(summary.get("suites") or []),
        "cases": len(doc["cases"]),
        "pass_rate": summary.get("pass_rate"),
        "pass_rate_ci95": summary.get("pass_rate_ci95"),
    }


def _interval(values: list[float]) -> list[float] | None:
    ci = bootstrap_ci(values)
    return list(ci) if ci else None


def _stage(name: str, pairs: list[tuple[Doc, Doc]]) -> dict[str, Any]:
    a_scores: list[float] = []
    b_scores: list[float] = []
    for case_a, case_b in pairs:
        sa = stage_score((case_a.get("stages") or {}).get(name) or {})
        sb = stage_score((case_b.get("stages") or {}).get(name) or {})
        if sa is not None and sb is not None:
            a_scores.append(sa)
            b_scores.append(sb)
    diffs = [sb - sa for sa, sb in zip(a_scores, b_scores, strict=True)]
    delta, delta_ci = mean(diffs), _interval(diffs)
    return {
        "cases": len(diffs),
        "a_mean": mean(a_scores),
        "a_ci95": _interval(a_scores),
        "b_mean": mean(b_scores),
        "b_ci95": _interval(b_scores),
        "delta": delta,
        "delta_ci95": delta_ci,
        "verdict": _verdict(delta, delta_ci),
    }


def _verdict(delta: float | None, ci: list[float] | None) -> str | None:
    """`B higher` / `B lower` when the paired interval leaves out 0, else `no clear difference`
    (`same` when every shared case scored the same)."""
    if delta is None or ci is None:
        return None
    if ci[0] == ci[1] == 0.0:
        return "same"
    if ci[0] > 0:
        return "B higher"
    if ci[1] < 0:
        return "B lower"
    return "no clear difference"


def _rate(cases: list[Doc]) -> dict[str, Any]:
    passed = sum(1 for c in cases if c.get("outcome") in PASS_LIKE)
    decided = sum(1 for c in cases if c.get("outcome") in DECIDED)
    ci = wilson_interval(passed, decided)
    return {
        "passed": passed,
        "decided": decided,
        "pass_rate": passed / decided if decided else None,
        "pass_rate_ci95": list(ci) if ci else None,
    }


def _categories(pairs: list[tuple[Doc, Doc]]) -> dict[str, dict[str, Any]]:
    """Pass rates per category over the shared cases, each side by its own case's category."""
    by_side: dict[str, dict[str, list[Doc]]] = {"a": {}, "b": {}}
    for case_a, case_b in pairs:
        for side, case in (("a", case_a), ("b", case_b)):
            name = str(case.get("category") or UNCATEGORISED)
            by_side[side].setdefault(name, []).append(case)
    names = sorted(by_side["a"].keys() | by_side["b"].keys())
    return {
        name: {side: _rate(by_side[side].get(name, [])) for side in ("a", "b")} for name in names
    }


def _totals(pairs: list[tuple[Doc, Doc]]) -> dict[str, dict[str, Any]]:
    """Pass rates per named total over the shared cases, each side by its own case's
    membership (a total a suite declares in one run only has an empty side)."""
    by_side: dict[str, dict[str, list[Doc]]] = {"a": {}, "b": {}}
    for case_a, case_b in pairs:
        for side, case in (("a", case_a), ("b", case_b)):
            for name, counts in (case.get("totals") or {}).items():
                counted = by_side[side].setdefault(name, [])
                if counts:
                    counted.append(case)
    names = sorted(by_side["a"].keys() | by_side["b"].keys())
    return {
        name: {side: _rate(by_side[side].get(name, [])) for side in ("a", "b")} for name in names
    }


def _flipped(pairs: list[tuple[Doc, Doc]]) -> dict[str, list[dict[str, Any]]]:
    """Shared cases that passed in one run and not in the other (skipped ones never flip)."""
    to_failing: list[dict[str, Any]] = []
    to_passing: list[dict[str, Any]] = []
    for case_a, case_b in pairs:
        was, now = case_a.get("outcome"), case_b.get("outcome")
        if was in PASS_LIKE and now in NOT_PASSING:
            to_failing.append(_flip(case_a, case_b))
        elif was in NOT_PASSING and now in PASS_LIKE:
            to_passing.append(_flip(case_a, case_b))
    return {"to_failing": to_failing, "to_passing": to_passing}


def _flip(case_a: Doc, case_b: Doc) -> dict[str, Any]:
    def side(case: Doc) -> dict[str, Any]:
        if case.get("outcome") in PASS_LIKE:
            return {"outcome": case.get("outcome"), "stage": None, "reason": ""}
        stage, reason = failure_of(case)
        turn = (case.get("first_failure") or {}).get("turn")
        if stage is not None and turn:  # a conversation: the turn it failed at, as the terminal
            stage = f"turn {turn} {stage}"
        return {"outcome": case.get("outcome"), "stage": stage, "reason": reason}

    return {"case": case_label(case_b), "a": side(case_a), "b": side(case_b)}


def _ingestion_tokens(docs: Mapping[str, Doc]) -> dict[str, int | None]:
    """Each run's ingestion tokens in total (None: unknown), for the runs that have an
    ingestion (some suite user with an ingestion record). A total that leaves out a user of
    unknown tokens (`usage_unknown_users`) is a lower bound, not the total: unknown."""
    out: dict[str, int | None] = {}
    for side, doc in docs.items():
        section = doc.get("ingestion")
        if isinstance(section, Mapping) and section:
            total = section.get("total") or {}
            tokens = total.get("total_tokens")
            known = isinstance(tokens, (int, float)) and not isinstance(tokens, bool)
            out[side] = int(tokens) if known and not total.get("usage_unknown_users") else None
    return out


def token_break_even(
    ingestion: Mapping[str, int | None], system: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Cognee's token break-even: after how many questions the memory run's ingestion tokens
    are paid back by its cheaper questions, against the run that puts the whole context in
    every prompt.

    `ingestion` holds the ingestion tokens (None: unknown) of each side that has an ingestion.
    The memory run is the one side there, whose total I is known and > 0; the other is the
    full-context run. Tokens per question are each system's tokens over its shared cases with
    recorded usage (`system[side]`, the cost section's). N = ceil(I / (q_full - q_mem)) when
    q_full > q_mem, else never (None). None when both or neither side ingested, I is unknown
    (some user's tokens unknown included) or 0, or a side has no recorded usage. Exact in
    fractions: a float quotient of 3.0000000000000004 must not round up to 4."""
    if len(ingestion) != 1:
        return None
    ((memory, tokens),) = ingestion.items()
    full = "b" if memory == "a" else "a"
    if tokens is None or tokens <= 0 or not system[memory]["cases"] or not system[full]["cases"]:
        return None
    q_mem = Fraction(system[memory]["total_tokens"], system[memory]["cases"])
    q_full = Fraction(system[full]["total_tokens"], system[full]["cases"])
    questions = math.ceil(Fraction(tokens) / (q_full - q_mem)) if q_full > q_mem else None
    return {
        "memory": memory,
        "ingestion_tokens": tokens,
        "per_question_memory": float(q_mem),
        "per_question_full": float(q_full),
        "questions": questions,
        "never": questions is None,
    }
