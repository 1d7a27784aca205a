"""What a live run changed in a case's recording.

A new recording that differs from the old one only in what no two runs share (`recorded_at`,
latencies, the times the plugin measured (the trace's `measured`), usage counters, and the
content hashes that follow from them) is not written: the
cassette stays byte for byte, so a re-recording's diff shows real changes only (the values a
provider makes fresh on every call are put back first, by http/rerecord.py). Otherwise the
change is described in a few short phrases for the `recording changes` section, the HTTP
recording's by the fields that changed (`describe_http_changes`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.measured import MEASURED
from ..core.repeats import later_repeats, with_later_repeats
from ..http.match import ABSENT
from ..http.rerecord import Rerecorded, exchange_differences
from ..http.volatile import Volatility
from ..store.cassette import Cassette, Run
from ..store.user_recordings import UserRecording

# Never equal between two runs of the same system: left out wherever they appear in a trace or
# a verdict (a verdict's `calls` counts its model requests, retries included).
VOLATILE_KEYS = frozenset({"latency_ms", "usage"})
VOLATILE_VERDICT_KEYS = VOLATILE_KEYS | {"calls"}
# What a recording holds besides its trace and verdicts: these must be equal too. `labels`
# count: a re-record that only adds missing labels (or their long form) rewrites the cassette,
# so its stale messages can show names and words instead of hashes.
_COMPARED_FIELDS = ("format", "suite", "case", "key", "labels")
SHOWN_CHARS = 60
# Differences of the HTTP exchanges shown for one case (the rest are counted).
SHOWN_HTTP_DIFFERENCES = 6

# A run (its trace and verdicts) -> stage -> (passed, score): how the suite scores it, in the
# suite's stage order (passed None: the stage does not apply, or its verdict is pending).
StageScores = Callable[[Run], "dict[str, tuple[bool | None, float | None]]"]


def stable(value: Any, drop: frozenset[str] = VOLATILE_KEYS) -> Any:
    """A copy of a JSON value without the volatile keys, at any depth."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def stable_trace(trace: Any) -> Any:
    """A trace as compared: without the volatile keys, nor what the plugin measured of its run
    (its top-level `measured`; a system's own field of that name deeper down is compared)."""
    if isinstance(trace, dict) and MEASURED in trace:
        trace = {k: v for k, v in trace.items() if k != MEASURED}
    return stable(trace)


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


def same_recording(old: Cassette, new: Cassette, labels: bool = True) -> bool:
    """Equal but for what no two runs share (the HTTP recording is compared on its own); with
    `labels` False, whatever their labels."""
    fields = _COMPARED_FIELDS if labels else _COMPARED_FIELDS[:-1]
    return (
        all(getattr(old, name) == getattr(new, name) for name in fields)
        and stable_trace(old.trace) == stable_trace(new.trace)
        and _stable_verdicts(old.verdicts) == _stable_verdicts(new.verdicts)
        and _stable_runs(old.later_runs) == _stable_runs(new.later_runs)
    )


def _stable_runs(runs: list[Run] | None) -> Any:
    """Runs 2..K (--eval-runs) as compared: each trace and its verdicts without volatile keys."""
    if runs is None:
        return None
    return [(stable_trace(run.trace), _stable_verdicts(run.verdicts)) for run in runs]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 3] + "..."
    return repr(text) if isinstance(value, str) else text


def describe_http_changes(
    before_count: int | None,
    rerecorded: Rerecorded | None,
    after_count: int,
    volatility: Volatility,
    ignore: Sequence[list[str | int]] = (),
) -> list[str]:
    """What changed in a case's HTTP recording: the count of exchanges when it changed, then each
    field that differs between an exchange and its old partner (volatile values aside), the same
    difference in several exchanges said once:
    `HTTP request $.tools[0].function.description: '…knowledge base…' -> '…help center…' (2
    exchanges)`."""
    found = []
    if before_count != after_count:
        shown_before = "none" if before_count is None else str(before_count)
        found.append(f"HTTP exchanges: {shown_before} -> {after_count}")
    exchanges: dict[tuple[str, str], int] = {}  # (side, text) -> in how many exchanges
    for old, new in rerecorded.changed if rerecorded is not None else ():
        if old is None:
            continue
        for side, where, was, now in exchange_differences(old, new, volatility, ignore):
            text = f"HTTP {side} {where}: {changed_values(was, now)}"
            exchanges[side, text] = exchanges.get((side, text), 0) + 1
    differences = sorted(exchanges.items(), key=lambda item: item[0][0] != "request")
    for (_, text), count in differences[:SHOWN_HTTP_DIFFERENCES]:
        found.append(text + (f" ({count} exchanges)" if count > 1 else ""))
    if len(differences) > SHOWN_HTTP_DIFFERENCES:
        found.append(f"HTTP: {len(differences) - SHOWN_HTTP_DIFFERENCES} more differences")
    if not found:
        found.append(f"HTTP exchanges: {after_count} (changed)")
    return found


def changed_values(old: Any, new: Any) -> str:
    """`old -> new`, shortened; two strings show where they differ, with the words around it:
    `'Search the ShopCo knowledge base…' -> 'Search the ShopCo help center…'`."""
    if isinstance(old, str) and isinstance(new, str):
        return " -> ".join(repr(text) for text in _excerpts(old, new))
    return f"{_shown(old)} -> {_shown(new)}"


def _shown(value: Any) -> str:
    return "<absent>" if value is ABSENT else _short(value)


_CONTEXT_CHARS = 30  # shown before the first difference


def _excerpts(old: str, new: str) -> tuple[str, str]:
    """Each string whole when both are short; else from a word or so before where they start to
    differ to the end of the word where they meet again, within SHOWN_CHARS, "…" marking what
    is cut."""
    old_text, new_text = " ".join(old.split()), " ".join(new.split())
    if max(len(old_text), len(new_text)) <= SHOWN_CHARS:
        return old_text, new_text
    shortest = min(len(old_text), len(new_text))
    start = 0
    while start < shortest and old_text[start] == new_text[start]:
        start += 1
    same_end = 0
    while (
        same_end < shortest - start
        and old_text[len(old_text) - 1 - same_end] == new_text[len(new_text) - 1 - same_end]
    ):
        same_end += 1
    begin = max(0, start - _CONTEXT_CHARS)
    if begin > 0:
        space = old_text.find(" ", begin, start)
        begin = space + 1 if space != -1 else begin
    return (
        _excerpt(old_text, begin, len(old_text) - same_end),
        _excerpt(new_text, begin, len(new_text) - same_end),
    )


def _excerpt(text: str, begin: int, end: int) -> str:
    space = text.find(" ", end)
    end = len(text) if space == -1 else space  # to the end of the word
    if end - begin > SHOWN_CHARS:
        end = begin + SHOWN_CHARS - 1
    return ("…" if begin > 0 else "") + text[begin:end] + ("…" if end < len(text) else "")


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
    old: Cassette,
    new: Cassette,
    scores: StageScores,
    http_changes: Sequence[str] = (),
) -> list[str]:
    """Short phrases saying what differs between two recordings of one case, most telling first:
    the key fields that changed, the answer, tool calls, retrieved ids, other trace fields, each
    stage that flipped pass/fail (old -> new score; judged or not), other verdict changes, then
    `http_changes` (what `describe_http_changes` said of the HTTP recording, when it changed)."""
    found: list[str] = []
    changed_key = _key_changes(old.key, new.key)
    if changed_key:
        found.append(changed_key)
    elif old.labels != new.labels:  # labels follow the key: said when alone
        found.append("labels added" if not old.labels else "labels changed")
    found += _run_differences(Run(old.trace, old.verdicts), Run(new.trace, new.verdicts), scores)
    found += _run_changes(old, new, scores)
    found += http_changes
    return found


def describe_ingestion_changes(
    old: UserRecording, new: UserRecording, http_changes: Sequence[str] = ()
) -> list[str]:
    """Short phrases saying what differs between two recordings of a user's ingestion: the key
    fields that changed (the user's files, the `ingestion` settings), what `setup_user`
    returned, then `http_changes` (`describe_http_changes`, when its exchanges changed)."""
    found = [_key_changes(old.key, new.key)]
    if old.result != new.result:
        found.append(f"result: {changed_values(old.result, new.result)}")
    return [text for text in found if text] + list(http_changes)


def _key_changes(old_key: Mapping[str, str], new_key: Mapping[str, str]) -> str:
    """`key changed: user.u-ana, ingestion.ontology`, or "" when the keys are equal."""
    changed = sorted(n for n in old_key.keys() | new_key.keys() if old_key.get(n) != new_key.get(n))
    return "key changed: " + ", ".join(changed) if changed else ""


def _run_differences(old: Run, new: Run, scores: StageScores) -> list[str]:
    """What differs between two runs of one case: the answer, tool calls, retrieved ids, other
    trace fields, stages that flipped, other verdict changes."""
    found: list[str] = []
    old_trace, new_trace = stable_trace(old.trace), stable_trace(new.trace)
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
    return found


def _run_changes(old: Cassette, new: Cassette, scores: StageScores) -> list[str]:
    """--eval-runs: `runs: 1 -> 3` when the count changed, else each later run's own changes
    (`run 2: ...`)."""
    before, after = old.later_runs or [], new.later_runs or []
    if len(before) != len(after):
        return [f"runs: {len(before) + 1} -> {len(after) + 1}"]
    found = []
    for number, (was, now) in enumerate(zip(before, after, strict=True), start=2):
        found += [f"run {number}: {change}" for change in _run_differences(was, now, scores)]
    return found


def _stage_flips(old: Run, new: Run, scores: StageScores) -> list[str]:
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


def _verdict_changes(old: Run, new: Run, flipped: set[str]) -> list[str]:
    """Verdicts that changed without a flip (`flipped` are shown already): pending, judged,
    re-scored, re-worded."""
    old_verdicts, new_verdicts = old.verdicts, new.verdicts
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
