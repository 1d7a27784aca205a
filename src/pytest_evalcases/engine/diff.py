"""What a live run changed in a case's recording.

A new recording that differs from the old one only in what no two runs share (`recorded_at`,
latencies, usage counters, and the content hashes that follow from them) is not written: the
cassette stays byte for byte, so a re-recording's diff shows real changes only. Otherwise the
change is described in a few short phrases for the `recording changes` section.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.repeats import later_repeats, with_later_repeats
from ..http.match import request_view

# Never equal between two runs of the same system: left out wherever they appear in a trace or
# a verdict (a verdict's `calls` counts its model requests, retries included).
VOLATILE_KEYS = frozenset({"latency_ms", "usage"})
VOLATILE_VERDICT_KEYS = VOLATILE_KEYS | {"calls"}
# Per-response metadata of model APIs (ids, timestamps, backend build): never the content.
VOLATILE_RESPONSE_FIELDS = frozenset({"id", "created", "system_fingerprint"})
# What a recording holds besides its trace and verdicts: these must be equal too.
_COMPARED_FIELDS = ("format", "suite", "case", "key")
SHOWN_CHARS = 60

# A recording (trace and verdicts) -> stage -> (passed, score): how the suite scores it, in the
# suite's stage order (passed None: the stage does not apply, or its verdict is pending).
StageScores = Callable[[Mapping[str, Any]], "dict[str, tuple[bool | None, float | None]]"]


def stable(value: Any, drop: frozenset[str] = VOLATILE_KEYS) -> Any:
    """A copy of a JSON value without the volatile keys, at any depth."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def stable_verdict(verdict: Any) -> Any:
    if not isinstance(verdict, dict):
        return verdict
    kept = {k: stable(v) for k, v in verdict.items() if k not in VOLATILE_VERDICT_KEYS}
    later = later_repeats(verdict)
    if isinstance(later, list):  # each repeat is a verdict of its own
        kept = with_later_repeats(kept, [stable_verdict(v) for v in later])
    return kept


def _stable_verdicts(verdicts: Any) -> Any:
    if not isinstance(verdicts, dict):
        return verdicts
    return {name: stable_verdict(v) for name, v in verdicts.items()}


def same_recording(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Equal but for what no two runs share (the HTTP recording is compared on its own)."""
    return (
        all(old.get(name) == new.get(name) for name in _COMPARED_FIELDS)
        and stable(old.get("trace")) == stable(new.get("trace"))
        and _stable_verdicts(old.get("verdicts") or {}) == _stable_verdicts(new.get("verdicts"))
        and _stable_runs(old.get("later_runs")) == _stable_runs(new.get("later_runs"))
    )


def _stable_runs(runs: Any) -> Any:
    """Runs 2..K (--eval-runs) as compared: each trace and its verdicts without volatile keys."""
    if not isinstance(runs, list):
        return runs
    return [
        {"trace": stable(run.get("trace")), "verdicts": _stable_verdicts(run.get("verdicts"))}
        if isinstance(run, dict)
        else run
        for run in runs
    ]


def _exchange_view(exchange: Mapping[str, Any], ignore: Sequence[list[str | int]]) -> str:
    """An HTTP exchange as compared: the request as --replay-http matches it (the suite's
    `http_ignore` paths left out), the response's status and body without volatile fields.
    Response headers are left out: dates, request ids and rate-limit counters change every run."""

    response = exchange.get("response") or {}
    body = response.get("body") or {}
    if isinstance(body.get("json"), dict):
        content = stable(
            {k: v for k, v in body["json"].items() if k not in VOLATILE_RESPONSE_FIELDS}
        )
        body = {"json": content}
    status = (response.get("status") or {}).get("code")
    view = (request_view(exchange["request"], list(ignore)), status, body)
    return json.dumps(view, sort_keys=True, default=str)


def same_exchanges(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    ignore: Sequence[list[str | int]] = (),
) -> bool:
    """The same exchanges, in any order (concurrent requests of one case may finish in any)."""
    if len(old) != len(new):
        return False
    try:
        return sorted(_exchange_view(e, ignore) for e in old) == sorted(
            _exchange_view(e, ignore) for e in new
        )
    except (KeyError, TypeError, AttributeError, ValueError):  # a malformed old file: changed
        return False


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 3] + "..."
    return repr(text) if isinstance(value, str) else text


def _tool_names(trace: Mapping[str, Any]) -> list[str]:
    calls = trace.get("tool_calls") or []
    return [str(c.get("name")) if isinstance(c, dict) else str(c) for c in calls]


def _pass_word(passed: bool | None) -> str:
    return "-" if passed is None else "pass" if passed else "FAIL"


def _number(score: Any) -> str:
    return f"{score:.2f}" if isinstance(score, int | float) and not isinstance(score, bool) else "-"


def _score(verdict: Any) -> str:
    return _number(verdict.get("score") if isinstance(verdict, dict) else None)


def describe_changes(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    scores: StageScores,
    http_counts: tuple[int | None, int] | None = None,
) -> list[str]:
    """Short phrases saying what differs between two recordings of one case, most telling first:
    the key fields that changed, the answer, tool calls, retrieved ids, other trace fields, each
    stage that flipped pass/fail (old -> new score; judged or not), other verdict changes, the
    HTTP exchanges (`http_counts`: old and new count, when the HTTP recording changed)."""
    found: list[str] = []
    old_key, new_key = old.get("key") or {}, new.get("key") or {}
    changed_key = sorted(
        n for n in old_key.keys() | new_key.keys() if old_key.get(n) != new_key.get(n)
    )
    if changed_key:
        found.append("key changed: " + ", ".join(changed_key))
    old_trace, new_trace = stable(old.get("trace") or {}), stable(new.get("trace") or {})
    if old_trace.get("answer") != new_trace.get("answer"):
        found.append(
            f"answer: {_short(old_trace.get('answer', ''))} -> "
            f"{_short(new_trace.get('answer', ''))}"
        )
    if old_trace.get("tool_calls") != new_trace.get("tool_calls"):
        before, after = _tool_names(old_trace), _tool_names(new_trace)
        if before == after:
            found.append(f"tool calls: {', '.join(after) or 'none'} (arguments changed)")
        else:
            found.append(
                f"tool calls: {', '.join(before) or 'none'} -> {', '.join(after) or 'none'}"
            )
    if old_trace.get("retrieved") != new_trace.get("retrieved"):
        found.append(
            f"retrieved: {_short(old_trace.get('retrieved') or [])} -> "
            f"{_short(new_trace.get('retrieved') or [])}"
        )
    shown = {"answer", "tool_calls", "retrieved"}
    others = sorted(
        n
        for n in (old_trace.keys() | new_trace.keys()) - shown
        if old_trace.get(n) != new_trace.get(n)
    )
    if others:
        found.append("also changed in the trace: " + ", ".join(others))
    flips = _stage_flips(old, new, scores)
    found += flips
    found += _verdict_changes(old, new, {flip.split(":", 1)[0] for flip in flips})
    found += _run_changes(old, new, scores)
    if http_counts is not None:
        before_count, after_count = http_counts
        if before_count == after_count:
            found.append(f"HTTP exchanges: {after_count} (changed)")
        else:
            shown_before = "none" if before_count is None else str(before_count)
            found.append(f"HTTP exchanges: {shown_before} -> {after_count}")
    return found


def _run_changes(old: Mapping[str, Any], new: Mapping[str, Any], scores: StageScores) -> list[str]:
    """--eval-runs: `runs: 1 -> 3` when the count changed, else each later run's own changes
    (`run 2: ...`)."""
    before, after = old.get("later_runs") or [], new.get("later_runs") or []
    if not isinstance(before, list) or not isinstance(after, list):
        return []
    if len(before) != len(after):
        return [f"runs: {len(before) + 1} -> {len(after) + 1}"]
    found = []
    for number, (was, now) in enumerate(zip(before, after, strict=True), start=2):
        if not isinstance(was, dict) or not isinstance(now, dict):
            continue
        found += [
            f"run {number}: {change}"
            for change in describe_changes({"key": {}, **was}, {"key": {}, **now}, scores)
        ]
    return found


def _stage_flips(old: Mapping[str, Any], new: Mapping[str, Any], scores: StageScores) -> list[str]:
    """`stage: pass -> FAIL (1.00 -> 0.00)` for each stage whose outcome flipped."""
    try:
        before, after = scores(old), scores(new)
    except Exception:  # an old recording of another shape: show no flips rather than fail
        return []
    flips = []
    for stage, (now, score) in after.items():
        was, old_score = before.get(stage, (None, None))
        if was is not None and now is not None and was != now:
            flips.append(
                f"{stage}: {_pass_word(was)} -> {_pass_word(now)} "
                f"({_number(old_score)} -> {_number(score)})"
            )
    return flips


def _verdict_changes(
    old: Mapping[str, Any], new: Mapping[str, Any], flipped: set[str]
) -> list[str]:
    """Verdicts that changed without a flip (`flipped` are shown already): pending, judged,
    re-scored, re-worded."""
    old_verdicts, new_verdicts = old.get("verdicts") or {}, new.get("verdicts") or {}
    pending, others = [], []
    for stage in sorted(old_verdicts.keys() | new_verdicts.keys()):
        before, after = old_verdicts.get(stage), new_verdicts.get(stage)
        if stage in flipped or stable_verdict(before) == stable_verdict(after):
            continue
        if isinstance(after, dict) and after.get("pending"):
            pending.append(f"{stage}: verdict pending (the judge failed)")
        elif after is None:
            others.append(f"{stage} dropped")
        elif before is None or (isinstance(before, dict) and before.get("pending")):
            others.append(f"{stage} judged ({_score(after)})")
        elif _score(before) != _score(after):
            others.append(f"{stage} {_score(before)} -> {_score(after)}")
        elif before.get("judge") != after.get("judge"):
            others.append(f"{stage} (judge {before.get('judge')} -> {after.get('judge')})")
        else:
            others.append(f"{stage} (same score, {_what_differs(before, after)})")
    return pending + (["verdicts: " + "; ".join(others)] if others else [])


def _what_differs(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    fields = sorted(
        n
        for n in (before.keys() | after.keys()) - VOLATILE_VERDICT_KEYS
        if before.get(n) != after.get(n)
    )
    return ", ".join(fields) + " changed" if fields else "changed"
