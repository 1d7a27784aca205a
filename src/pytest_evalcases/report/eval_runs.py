"""The `runs` section of results.json (--eval-runs): pass@k and pass^k, overall and per stage,
from each case's independent system runs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core.outcomes import DECIDED, PASS_LIKE
from ..core.stats import pass_at_k, pass_hat_k


def _pass_estimates(counts: list[tuple[int, int]]) -> dict[str, dict[str, float]]:
    """Mean pass@k and pass^k over cases of (runs, passes), for k = 1 .. the most runs; each
    k over the cases with at least k runs."""
    at: dict[str, float] = {}
    hat: dict[str, float] = {}
    for k in range(1, max((n for n, _ in counts), default=0) + 1):
        usable = [(n, c) for n, c in counts if n >= k]
        at[str(k)] = math.fsum(pass_at_k(n, c, k) for n, c in usable) / len(usable)
        hat[str(k)] = math.fsum(pass_hat_k(n, c, k) for n, c in usable) / len(usable)
    return {"pass_at_k": at, "pass_hat_k": hat}


def runs_section(cases: list[Mapping[str, Any]], stage_order: list[str]) -> dict[str, Any] | None:
    """--eval-runs: pass@k and pass^k estimates, overall and per stage, from the cases' runs
    (None: no case was recorded with more than one run). A case recorded once counts as one
    run."""
    if not any("runs" in case for case in cases):
        return None
    overall: list[tuple[int, int]] = []
    per_stage: dict[str, list[tuple[int, int]]] = {name: [] for name in stage_order}
    flaky = []
    for case in cases:
        if case.get("outcome") not in DECIDED or "calibration" in case:
            continue
        runs = case.get("runs")
        if runs is None:
            passed = case["outcome"] in PASS_LIKE
            overall.append((1, int(passed)))
            for name, stage in (case.get("stages") or {}).items():
                if stage.get("passed") is not None and not stage.get("judge_error"):
                    per_stage.setdefault(name, []).append((1, int(bool(stage["passed"]))))
            continue
        overall.append((int(runs["k"]), int(runs["passed_runs"])))
        if 0 < runs["passed_runs"] < runs["k"]:
            flaky.append(f"{case.get('suite')}::{case.get('id')}")
        for name, verdicts in (runs.get("stages") or {}).items():
            decided = [v for v in verdicts if v is not None]
            if decided:
                per_stage.setdefault(name, []).append((len(decided), sum(map(bool, decided))))
    return {
        "k": max((n for n, _ in overall), default=0),
        "cases": len(overall),
        **_pass_estimates(overall),
        "stages": {
            name: {"cases": len(counts), **_pass_estimates(counts)}
            for name, counts in per_stage.items()
            if counts
        },
        "flaky": flaky,
    }
