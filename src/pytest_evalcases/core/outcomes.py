"""Outcome vocabulary and the counting rules every report section shares.

One place decides what counts as a pass, a fail or "not measured", so the summary,
the category pass rates and the baseline gate can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OUTCOMES: tuple[str, ...] = (
    "passed",
    "failed",
    "stale",
    "missing",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
)

#: The labelled judged stages of a memory suite and their labels, counted per category and per
#: group beside the pass rates (Zep's completeness and accuracy figures).
COMPLETENESS_STAGE = "context_completeness"
ACCURACY_STAGE = "answer_accuracy"
COMPLETENESS_LABELS: tuple[str, ...] = ("COMPLETE", "PARTIAL", "INSUFFICIENT")
ACCURACY_LABELS: tuple[str, ...] = ("CORRECT", "WRONG")

#: summary key for each outcome ("error" is counted under "errors").
SUMMARY_KEYS: dict[str, str] = {o: ("errors" if o == "error" else o) for o in OUTCOMES}

#: The system's answer met every gating stage (xpassed: it did although expected not to).
PASS_LIKE: frozenset[str] = frozenset({"passed", "xpassed"})
#: The system was scored and failed (xfailed: a known failure is still a failure).
SCORED_FAIL: frozenset[str] = frozenset({"failed", "xfailed"})
#: Outcomes in a pass-rate denominator: the cases whose answer was actually judged.
#: stale / missing / error / skipped say nothing about answer quality, so they are
#: reported as counts but left out of rates.
DECIDED: frozenset[str] = PASS_LIKE | SCORED_FAIL
#: Not a pass for the baseline gate: a case that passed before and is now any of
#: these is a regression.
NOT_PASSING: frozenset[str] = SCORED_FAIL | {"error", "stale", "missing"}
#: Shown in the "failing cases" tables (xfailed is expected, so it is left out there).
FAILING: frozenset[str] = frozenset({"failed", "error", "stale", "missing"})


def check_outcome(outcome: object, nodeid: object) -> str:
    """Return the outcome or raise ValueError naming the case."""
    if outcome not in OUTCOMES:
        raise ValueError(
            f"case {nodeid!r}: unknown outcome {outcome!r} (expected one of {', '.join(OUTCOMES)})"
        )
    return str(outcome)


_DEFAULT_REASONS = {
    "stale": "recording is stale: the case changed since it was recorded",
    "missing": "no recording for this case",
    "error": "error while running the case",
    "failed": "failed",
    "xfailed": "failed (expected)",
}


def failure_of(case: Mapping[str, Any]) -> tuple[str | None, str]:
    """(first failing stage or None, reason) for display; falls back to the outcome."""
    ff = case.get("first_failure") or {}
    stage = ff.get("stage") or None
    reason = ff.get("reason")
    if reason in (None, ""):
        reason = _DEFAULT_REASONS.get(case.get("outcome", ""), "")
    return (str(stage) if stage is not None else None, str(reason))


def case_label(case: Mapping[str, Any]) -> str:
    """suite::id when both are known, else the node id."""
    suite, cid = case.get("suite"), case.get("id")
    if suite not in (None, "") and cid not in (None, ""):
        return f"{suite}::{cid}"
    return str(case.get("nodeid", cid))
