"""Compare a run's results.json with a baseline results.json (pure except load_results).

Gate semantics (see docs/reports.md):

* cases are matched by (suite, id) -- node ids change when files move, ids do not;
* pass-like outcomes are passed and xpassed; not-passing ones are failed, xfailed,
  error, stale and missing; a case skipped on either side is ignored;
* a regression is a matched case that was pass-like and now is not-passing;
  fixed is the reverse;
* stage means are compared over the cases both runs scored (paired), so adding or
  removing cases cannot by itself move a stage mean; a stage drops when its mean
  fell by more than ``tolerance``;
* the gate fails on any regression or any stage drop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.outcomes import NOT_PASSING, PASS_LIKE, case_label, failure_of
from ..core.stats import bootstrap_ci, mean
from ..store.files import REPORT_FILE_CAP, RefusedFile, read_bounded
from .aggregate import RESULTS_FORMAT, stage_score
from .formatting import fmt_ci, fmt_delta, fmt_score

#: Keys a results.json must have to be usable as a baseline.
REQUIRED_KEYS: tuple[str, ...] = ("format", "summary", "stages", "cases")
# Float noise guard: means over the same scores summed in another order may differ
# in the last bits; that must not count as a drop with tolerance 0.
_EPS = 1e-9
_TERMINAL_LIST_CAP = 20


class BaselineError(Exception):
    """The baseline file is missing, not JSON or not a pytest-evalcases results.json."""


_HOW_TO_FIX = (
    "point the baseline option at a results.json written by pytest-evalcases "
    "(the one in an earlier run's report folder), or drop the option"
)


def load_results(path: str | Path) -> dict:
    """Read and validate a results.json; every problem is a BaselineError naming the file."""
    p = Path(path)
    try:
        text = read_bounded(p, REPORT_FILE_CAP).decode("utf-8")
    except FileNotFoundError:
        raise BaselineError(f"baseline file {p} does not exist; {_HOW_TO_FIX}") from None
    except RefusedFile as exc:  # a FIFO would block the run before it starts
        what = "" if exc.too_big else ", not a regular file"
        raise BaselineError(
            f"baseline file {p} {exc.reason}{what}: nothing was read from it; {_HOW_TO_FIX}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline file {p}: {exc}; {_HOW_TO_FIX}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"baseline file {p} is not valid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}); {_HOW_TO_FIX}"
        ) from None
    validate_results(doc, f"baseline file {p}")
    return doc


def validate_results(doc: object, source: str = "baseline") -> None:
    """Raise BaselineError unless doc looks like a results.json document."""
    if not isinstance(doc, dict):
        raise BaselineError(
            f"{source} is not a results.json (top level is {type(doc).__name__}, "
            f"expected an object); {_HOW_TO_FIX}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        raise BaselineError(
            f"{source} is not a results.json (missing keys: {', '.join(missing)}); {_HOW_TO_FIX}"
        )
    if doc["format"] != RESULTS_FORMAT:
        raise BaselineError(
            f"{source} has format {doc['format']!r}, expected {RESULTS_FORMAT!r}; {_HOW_TO_FIX}"
        )
    if not isinstance(doc["cases"], list) or not all(
        isinstance(c, dict) and "outcome" in c for c in doc["cases"]
    ):
        raise BaselineError(
            f"{source} is not a results.json (cases must be a list of result objects "
            f"with an outcome); {_HOW_TO_FIX}"
        )


def case_key(case: Mapping[str, Any]) -> tuple[str, str]:
    """(suite, id); node id as a fallback for results without suite/id."""
    suite, cid = case.get("suite"), case.get("id")
    if suite not in (None, "") and cid not in (None, ""):
        return (str(suite), str(cid))
    return ("", str(case.get("nodeid")))


def _ref(case: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "case": case_label(case),
        "suite": case.get("suite"),
        "id": case.get("id"),
        "nodeid": case.get("nodeid"),
        "outcome": case.get("outcome"),
    }


def compare(current: dict, baseline: dict, tolerance: float = 0.0) -> dict:
    """Compare two results.json documents; see the module docstring for the rules."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    validate_results(current, "current results")
    validate_results(baseline, "baseline")
    base_cases = {case_key(c): c for c in baseline["cases"]}
    cur_keys = {case_key(c) for c in current["cases"]}

    regressions: list[dict[str, Any]] = []
    unstable: list[dict[str, Any]] = []  # flips that unstable verdicts alone explain
    fixed: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    still_failing = 0
    compared = 0
    matched: list[tuple[dict, dict]] = []
    for case in current["cases"]:
        before = base_cases.get(case_key(case))
        if before is None:
            new.append(_ref(case))
            continue
        matched.append((before, case))
        was, now = before.get("outcome"), case.get("outcome")
        if "skipped" in (was, now):
            continue  # nothing was measured on one side
        compared += 1
        if was in PASS_LIKE and now in NOT_PASSING:
            stage, reason = failure_of(case)
            turn = (case.get("first_failure") or {}).get("turn")
            if stage is not None and turn:  # a conversation: the turn, as the terminal says it
                stage = f"turn {turn} {stage}"
            entry = {**_ref(case), "baseline_outcome": was, "stage": stage, "reason": reason}
            (unstable if _noise_only(before, case) else regressions).append(entry)
        elif was in NOT_PASSING and now in PASS_LIKE:
            entry = {**_ref(case), "baseline_outcome": was}
            (unstable if _noise_only(case, before) else fixed).append(entry)
        elif was in NOT_PASSING and now in NOT_PASSING:
            still_failing += 1
    removed = [_ref(c) for c in baseline["cases"] if case_key(c) not in cur_keys]

    stage_order = list(current.get("stage_order") or current["stages"])
    stage_order += [
        s for s in (baseline.get("stage_order") or baseline["stages"]) if s not in stage_order
    ]
    deltas = {name: _stage_delta(name, matched) for name in stage_order}
    drops = [
        {"stage": name, **{k: d[k] for k in ("baseline_mean", "current_mean", "delta")}}
        for name, d in deltas.items()
        if d["delta"] is not None and d["delta"] < -(tolerance + _EPS)
    ]
    return {
        "tolerance": tolerance,
        "baseline_run": dict(baseline.get("run") or {}),
        "compared": compared,
        "regressions": regressions,
        "unstable": unstable,
        "fixed": fixed,
        "new": new,
        "removed": removed,
        "still_failing": still_failing,
        "stage_order": stage_order,
        "stage_deltas": deltas,
        "stage_drops": drops,
        "failed": bool(regressions or drops),
    }


def _gating_failures(case: Mapping[str, Any]) -> dict[str, bool]:
    """The gating stages a case failed (or, unstable, may have): name -> unstable."""
    return {
        name: bool(stage.get("unstable"))
        for name, stage in (case.get("stages") or {}).items()
        if stage.get("gating")
        and not stage.get("judge_error")
        and (stage.get("passed") is False or stage.get("unstable"))
    }


def _noise_only(passing: Mapping[str, Any], failing: Mapping[str, Any]) -> bool:
    """Whether unstable verdicts alone explain why `failing` did not pass while `passing` did:
    every gating stage that failed in `failing` was unstable in one of the two runs (a judge
    whose repeats disagree decides nothing, so its flip is not a regression)."""
    failed = _gating_failures(failing)
    if not failed or failing.get("outcome") not in ("failed", "xfailed"):
        return False
    before = passing.get("stages") or {}
    return all(
        unstable or (before.get(name) or {}).get("unstable") for name, unstable in failed.items()
    )


def _unstable_in(case: Mapping[str, Any], name: str) -> bool:
    return bool(((case.get("stages") or {}).get(name) or {}).get("unstable"))


def _stage_delta(name: str, matched: list[tuple[dict, dict]]) -> dict[str, Any]:
    base_scores: list[float] = []
    cur_scores: list[float] = []
    for before, after in matched:
        if _unstable_in(before, name) or _unstable_in(after, name):
            continue  # kept out of the gate, as the flips of unstable verdicts are
        b = stage_score((before.get("stages") or {}).get(name) or {})
        c = stage_score((after.get("stages") or {}).get(name) or {})
        if b is not None and c is not None:
            base_scores.append(b)
            cur_scores.append(c)
    b_mean, c_mean = mean(base_scores), mean(cur_scores)
    b_ci, c_ci = bootstrap_ci(base_scores), bootstrap_ci(cur_scores)
    return {
        "cases": len(cur_scores),
        "baseline_mean": b_mean,
        "current_mean": c_mean,
        "delta": (c_mean - b_mean) if c_mean is not None and b_mean is not None else None,
        "ci95": list(c_ci) if c_ci else None,
        "baseline_ci95": list(b_ci) if b_ci else None,
    }


def _capped(items: list[str], cap: int) -> list[str]:
    if len(items) <= cap:
        return items
    return items[:cap] + [f"    ... and {len(items) - cap} more (see report.md)"]


def render_baseline_terminal(cmp: Mapping[str, Any]) -> list[str]:
    """Lines for the terminal section 'regressions vs baseline'."""
    regs, drops = cmp["regressions"], cmp["stage_drops"]
    verdict = "FAILED" if cmp["failed"] else "passed"
    lines = [
        f"baseline gate {verdict}: {len(regs)} regression(s), {len(drops)} stage drop(s) "
        f"(tolerance {cmp['tolerance']:.3f}); {len(cmp['fixed'])} fixed, "
        f"{len(cmp['new'])} new, {len(cmp['removed'])} removed, "
        f"{cmp['still_failing']} still failing"
        + (f", {len(cmp['unstable'])} unstable (not counted)" if cmp.get("unstable") else "")
    ]
    if regs:
        lines.append("regressions:")
        rows = []
        for r in regs:
            where = f" at {r['stage']}" if r.get("stage") else ""
            reason = " ".join(str(r.get("reason") or "").split())
            rows.append(
                f"  {r['case']}: {r['baseline_outcome']} -> {r['outcome']}{where}"
                f"{': ' + reason if reason else ''}"
            )
        lines += _capped(rows, 100)
    if drops:
        lines.append("stage drops:")
        for d in drops:
            lines.append(
                f"  {d['stage']}: {fmt_score(d['baseline_mean'])} -> "
                f"{fmt_score(d['current_mean'])} ({fmt_delta(d['delta'])})"
            )
    if cmp.get("unstable"):
        lines.append("unstable (not counted):")
        rows = [
            f"  {r['case']}: {r['baseline_outcome']} -> {r['outcome']}"
            + (f" at {r['stage']}" if r.get("stage") else "")
            for r in cmp["unstable"]
        ]
        lines += _capped(rows, _TERMINAL_LIST_CAP)
    for key in ("fixed", "new", "removed"):
        if cmp[key]:
            lines.append(f"{key}:")
            lines += _capped(
                [f"  {r['case']} ({r['outcome']})" for r in cmp[key]], _TERMINAL_LIST_CAP
            )
    deltas = cmp["stage_deltas"]
    if deltas:
        width = max(len(s) for s in deltas)
        lines.append("stage means over cases scored in both runs:")
        lines.append(f"  {'stage':<{width}}  baseline  current    delta  current 95% CI")
        for name in cmp.get("stage_order") or deltas:
            d = deltas[name]
            lines.append(
                f"  {name:<{width}}  {fmt_score(d['baseline_mean']):>8}  "
                f"{fmt_score(d['current_mean']):>7}  {fmt_delta(d['delta']):>7}  "
                f"{fmt_ci(d['ci95'])}"
            )
    return lines


__all__ = [
    "BaselineError",
    "case_key",
    "compare",
    "load_results",
    "render_baseline_terminal",
    "validate_results",
]
