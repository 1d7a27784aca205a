"""Replay: a case's cassette loaded and checked against today's key, verdict by verdict.

Replay never records and never calls anything: a recording that no longer matches its inputs is
refused, naming each changed field (with labels, from what to what).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    MissingRecording,
    PendingVerdict,
    StaleRecording,
)
from ..core.names import clip
from ..core.repeats import has_repeats
from ..core.trace import trace_shape_problem
from ..domain.context import case_where
from ..domain.system import CaseInput, key_view, system_view
from ..domain.verdicts import (
    judge_source_advice,
    judged_units,
    repeats_problem,
    verdict_key,
    verdict_labels,
)
from ..judges import judge_version
from ..store.cassette import Cassette, load_cassette
from ..store.files import shown_path
from ..store.keys import (
    LabelSource,
    case_key_label,
    check_key,
    recording_key,
    stored_labels,
)
from ..store.redaction import redact_for_output
from .recording import JudgeBinding, Recording
from .user_runs import ingestion_fields

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext


def replay(ctx: SuiteContext, case: Case, judge: JudgeBinding) -> Recording:
    """Load and check a cassette; raises MissingRecording, StaleRecording, CassetteError."""
    doc, _, _ = checked_cassette(ctx, case)
    check_verdicts(ctx, case, judge, doc.trace, doc.verdicts, doc=doc)
    later = doc.later_runs_doc
    if later is not None or ctx.runs is not None:  # --eval-runs: every run's verdicts hold
        _check_runs(ctx, case, judge, doc)
    return Recording(doc.trace, doc.verdicts, "replayed", doc.recorded_at, later_runs=later)


def _check_runs(ctx: SuiteContext, case: Case, judge: JudgeBinding, doc: Cassette) -> None:
    """Every run of an --eval-runs cassette holds: as many as asked for, each run's verdicts."""
    count = doc.run_count
    if ctx.runs is not None and count != ctx.runs:
        raise StaleRecording(
            f"stale recording: runs changed ({count} -> {ctx.runs}); re-record with --live"
        )
    for number, run in enumerate(doc.later_runs or (), start=2):
        check_verdicts(
            ctx, case, judge, run.trace, run.verdicts, f"--live (run {number} of {count})", doc=doc
        )


def checked_cassette(
    ctx: SuiteContext, case: Case, ignore_prefix: str | None = None
) -> tuple[Cassette, dict[str, str], CaseInput]:
    """The case's cassette, its key checked against today's (less the fields starting with
    `ignore_prefix`) and its content against its hashes; with today's key and the system's view
    of the case. Replay calls this once per case: keep it lean."""
    path = _cassette_of(ctx, case)
    doc = load_cassette(path, ctx.rootdir)
    if doc is None:
        raise MissingRecording(
            f"no recording for {case_where(ctx, case)}; record it with --live "
            f"({shown_path(path, ctx.rootdir)})"
        )
    view = system_view(case, ctx.run_config)
    key = case_key(ctx, view)
    check_key(
        doc.key,
        key,
        "",
        "--live",
        ignore_prefix=ignore_prefix,
        labels=key_labels_of(doc, ctx, case),
    )
    doc.check_integrity(path, ctx.rootdir)
    _check_trace_shapes(doc, path, ctx, case)
    return doc, key, view


def case_key(ctx: SuiteContext, view: CaseInput, repairs: bool = False) -> dict[str, str]:
    """Today's key of a case: the suite's fields, the hash of what the system gets of it, and
    for a user's case the ingestion it runs on (`ingested.<user>`, engine/user_runs.py; a
    recording of the user that cannot be used raises, or with `repairs` (--live,
    --live-stale) reads as none, so the case is recorded again)."""
    key = recording_key(ctx.key_fields, key_view(view))
    if ctx.user is not None or ctx.documents is not None:
        key.update(ingestion_fields(ctx, repairs)[0])
    return key


def _check_trace_shapes(doc: Cassette, path: str, ctx: SuiteContext, case: Case) -> None:
    """CassetteError naming the file, the case and the field when a recorded trace holds a field
    the stages cannot read (`"retrieved": 5`): a cassette written by a tool, or edited and its
    hashes recomputed, would otherwise end in a raw AttributeError or TypeError in a stage."""
    problem = trace_shape_problem(doc.trace)
    where = ""
    if problem is None and doc.later_runs_doc is not None:
        for number, run in enumerate(doc.later_runs or (), start=2):
            problem = trace_shape_problem(run.trace)
            if problem:
                where = f" (run {number})"
                break
    if problem:
        raise CassetteError(
            f"cassette {shown_path(path, ctx.rootdir)} of {case_where(ctx, case)}{where}: "
            f"{problem}; the stages cannot read it: fix the field, or delete the file and record "
            "again with --live"
        )


def _cassette_of(ctx: SuiteContext, case: Case) -> str:
    return f"{ctx.cassette_dir}{os.sep}{case.id}.json"  # a str: pathlib is slow per case


def check_verdicts(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    rejudge: str = "--live-judges (re-judges the recorded trace)",
    doc: Cassette | None = None,
) -> None:
    """Every verdict the trace needs is recorded, under the key it would be made with today.
    `doc`, the cassette, holds the labels a stale message shows."""
    if not ctx.judged:  # a suite without judged stages needs no verdict (replay: every case)
        return
    for name, stage, judged_case, _ in judged_units(ctx.judged, case, trace):
        recorded = verdicts.get(name)
        if not isinstance(recorded, dict):
            raise MissingRecording(
                f"no recorded verdict for stage {name} of {case_where(ctx, case)}; "
                f"record it with {rejudge} or --live"
            )
        if recorded.get("pending"):
            raise PendingVerdict(
                f"judge verdict pending for {name}; complete it with --live-judges (the "
                f"judge failed when {case_where(ctx, case)} was recorded: "
                f"{clip(str(recorded.get('error') or 'no reason recorded'))})"
            )
        expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
        recorded_key = recorded.get("key") or {}
        if not isinstance(recorded_key, dict):
            raise CassetteError(
                f"cassette {shown_path(_cassette_of(ctx, case), ctx.rootdir)} of "
                f"{case_where(ctx, case)}: verdicts.{name}.key is {type(recorded_key).__name__}, "
                "not an object; re-judge with --live-judges"
            )
        old = dict(recorded_key)
        if judge.id is None:  # no judge configured: accept whichever judge recorded it
            old.pop("judge", None), old.pop("judge_version", None)
        if old != expected:  # labels are read only for the message of a stale verdict
            _stale_verdict(ctx, judged_case, judge, stage, old, expected, doc, name)
        if has_repeats(recorded) or ctx.judge_repeats is not None:
            _check_repeats(ctx, judge, name, recorded, expected, rejudge)


def _check_repeats(
    ctx: SuiteContext,
    judge: JudgeBinding,
    name: str,
    recorded: dict[str, Any],
    expected: dict[str, str],
    rejudge: str,
) -> None:
    """A verdict's later repeats hold: as many as this run asks for, each under its key."""
    if judge.id is None:  # no judge configured: the repeats' own judge fields are not compared
        expected = {
            **expected,
            **{
                k: v
                for k, v in (recorded.get("key") or {}).items()
                if k in ("judge", "judge_version")
            },
        }
    problem = repeats_problem(recorded, expected, ctx.judge_repeats)
    if problem is not None:
        raise StaleRecording(
            f"stale recording (verdict {name}): {problem}; re-judge with "
            f"{rejudge.split(' (')[0]} (or set the repeats back)"
        )


def _stale_verdict(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    stage: Any,
    old: dict[str, Any],
    expected: dict[str, str],
    doc: Cassette | None,
    name: str,
) -> None:
    """Raise StaleRecording for a verdict whose key differs, worded with the labels, and naming
    the override the verdict was recorded with when only that explains a changed judge."""
    labels = doc.labels if doc is not None else None
    recorded = stored_labels(labels, "verdicts", name)
    recorded_from = labels.get("judge_from") if isinstance(labels, dict) else None

    def both_labels() -> Any:
        current = verdict_labels(stage, case, ctx.judge_options, judge.id, judge.version)
        return recorded, redact_for_output(current)

    def advice(changed: set[str]) -> str | None:
        return judge_source_advice(changed, recorded, recorded_from, judge.id, ctx.judge_from)

    check_key(
        old, expected, f" (verdict {name})", "--live-judges", labels=both_labels, advice=advice
    )


def key_labels_of(doc: Cassette, ctx: SuiteContext, case: Case) -> LabelSource:
    """The recorded and current labels of the trace's key, computed only if asked (a stale
    message), never on the passing path. Both redacted (a recording made before a shape was
    known holds it raw): a label of a field named like a secret (`fingerprint.password`) holds
    its value."""
    return lambda: redact_for_output((stored_labels(doc.labels, "key"), trace_labels(ctx, case)))


def trace_labels(ctx: SuiteContext, case: Case) -> dict[str, str]:
    """Labels of the trace key's fields today: the suite's and this case's."""
    labels = dict(ctx.key_labels)
    if ctx.user is not None or ctx.documents is not None:
        labels.update(ingestion_fields(ctx, repairs=True)[1])
    label = case_key_label(key_view(system_view(case, ctx.run_config)))
    if label is not None:
        labels["case"] = label
    return labels


def recording_labels(
    ctx: SuiteContext, case: Case, verdicts: dict[str, Any], trace: dict[str, Any]
) -> dict[str, Any]:
    """What a cassette keeps beside its key hashes: the trace key's labels, each verdict's, and
    where the judge came from (named when only an override explains a changed judge)."""
    labels: dict[str, Any] = {"key": trace_labels(ctx, case)}
    version = judge_version(ctx.judge_spec) if ctx.judge_spec else None
    per_stage = {
        name: verdict_labels(stage, judged_case, ctx.judge_options, ctx.judge_spec, version)
        for name, stage, judged_case, _ in sorted(
            judged_units(ctx.judged, case, trace), key=lambda unit: unit[0]
        )
        if name in verdicts
    }
    if per_stage:
        labels["verdicts"] = per_stage
    if ctx.judge_spec and ctx.judge_from:
        labels["judge_from"] = ctx.judge_from
    return labels
