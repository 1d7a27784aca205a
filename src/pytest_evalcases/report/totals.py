"""The named totals of results.json: a suite's published figures over part of its cases (a
paper's LoCoMo headline leaves the adversarial questions out). Pure: per-case result dicts in,
each carrying `"totals": {name: counts}` for the totals of its suite.

A total of the same name declared by several suites counts the cases of all of them, each by its
own suite's rule. The figures are the summary's: cases counted and left out, the pass rate with
its Wilson interval, and each stage's mean score over the counted cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.outcomes import DECIDED, PASS_LIKE
from ..core.stats import mean, wilson_interval
from .stage_values import stage_score


def totals_section(
    cases: Sequence[Mapping[str, Any]], stage_order: Sequence[str]
) -> dict[str, dict[str, Any]]:
    counted: dict[str, list[Mapping[str, Any]]] = {}
    left_out: dict[str, int] = {}
    for case in cases:
        for name, counts in (case.get("totals") or {}).items():
            counted.setdefault(name, [])
            left_out.setdefault(name, 0)
            if counts:
                counted[name].append(case)
            else:
                left_out[name] += 1
    section: dict[str, dict[str, Any]] = {}
    for name in sorted(counted):
        members = counted[name]
        decided = [case for case in members if case.get("outcome") in DECIDED]
        passed = sum(1 for case in decided if case.get("outcome") in PASS_LIKE)
        ci = wilson_interval(passed, len(decided))
        means: dict[str, float] = {}
        for stage in stage_order:
            scores = [
                score
                for case in members
                if (entry := (case.get("stages") or {}).get(stage)) is not None
                and (score := stage_score(entry)) is not None
            ]
            if scores:
                means[stage] = mean(scores)
        section[name] = {
            "cases": len(members),
            "excluded": left_out[name],
            "decided": len(decided),
            "passed": passed,
            "pass_rate": passed / len(decided) if decided else None,
            "pass_rate_ci95": list(ci) if ci else None,
            "stage_means": means,
        }
    return section
