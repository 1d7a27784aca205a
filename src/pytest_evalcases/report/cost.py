"""The `cost` section of results.json: tokens, USD and latency of the system's and the
judge's calls, as the recordings hold them (a replay itself spends nothing)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core.stats import median


def _usage_totals(usages: list[Mapping[str, Any]], latencies: list[float]) -> dict[str, Any]:
    def total(key: str) -> int:
        return sum(int(u[key]) for u in usages if isinstance(u.get(key), (int, float)))

    costs = [float(u["cost_usd"]) for u in usages if isinstance(u.get("cost_usd"), (int, float))]
    prompt, completion = total("prompt_tokens"), total("completion_tokens")
    return {
        "cases": len(usages),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        # fsum + rounding: a sum of many tiny costs should not print as 0.0036000000000000003
        "cost_usd": round(math.fsum(costs), 10),
        "latency_ms_median": median(latencies),
    }


def cost_section(cases: list[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    """The `cost` section over `cases` (a side-by-side comparison takes it over shared cases):
    tokens, USD and median latency of the system's and the judge's calls, as recorded."""
    system: list[Mapping[str, Any]] = []
    judge: list[Mapping[str, Any]] = []
    system_lat: list[float] = []
    judge_lat: list[float] = []
    for case in cases:
        rec = case.get("recording") or {}
        if isinstance(rec.get("usage"), Mapping):
            system.append(rec["usage"])
        if isinstance(rec.get("judge_usage"), Mapping):
            judge.append(rec["judge_usage"])
        if isinstance(rec.get("latency_ms"), (int, float)):
            system_lat.append(float(rec["latency_ms"]))
        if isinstance(rec.get("judge_latency_ms"), (int, float)):
            judge_lat.append(float(rec["judge_latency_ms"]))
    sys_tot, judge_tot = _usage_totals(system, system_lat), _usage_totals(judge, judge_lat)
    replay = run.get("mode") == "replay"
    return {
        "system": sys_tot,
        "judge": judge_tot,
        "recorded_cost_usd": round(sys_tot["cost_usd"] + judge_tot["cost_usd"], 10),
        # A replay reads cassettes only: nothing was spent by this run.
        "replay_cost_usd": 0.0 if replay else None,
    }
