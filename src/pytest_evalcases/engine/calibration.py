"""A calibration case's verdicts: replayed from its cassette, or judged live and saved.

The cassette is an ordinary one: its `trace` is the material the judge read, its one verdict
holds every repeat (see core/repeats.py), each keyed by judge, stage options, material and
repeat number. Replay checks all of it and calls nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    MissingRecording,
    NewerCassette,
    PendingVerdict,
    StaleRecording,
)
from ..core.hashing import content_hash
from ..core.repeats import has_repeats, later_repeats, repeats_of, with_later_repeats
from ..domain.stages.declared import stage_of
from ..domain.stages.judged import scores_text
from ..domain.verdicts import repeats_problem, verdict_key, verdict_labels
from ..store.cassette import Cassette, build_cassette, load_cassette
from ..store.files import shown_path
from ..store.keys import CASSETTE_FORMAT, check_key, stored_labels
from ..store.pair import RecordingPair
from .diff import same_recording
from .judge_calls import judge_with_repeats

if TYPE_CHECKING:
    from ..domain.context import CalibrationContext, CalibrationTarget
    from .recording import JudgeBinding


@dataclass(slots=True)
class CalibrationRecording:
    verdict: dict[str, Any]  # the stage's verdict, its later repeats inside
    status: str  # replayed | recorded | dry_run
    recorded_at: str | None = None
    note: str = ""
    change: dict[str, Any] | None = None


def material(target: CalibrationTarget) -> dict[str, Any]:
    """What the stage's judge reads of the case (the cassette's `trace`): editing anything else
    of the case (its id aside) never needs a re-record."""
    case = target.case
    fields = {
        "answer": case.answer,
        "context": list(case.context),
        "input": case.input,
        "reference": case.reference,
        "unanswerable": case.unanswerable,
    }
    reads = stage_of(target.rule, case.stage).reads
    return {"stage": case.stage, **{name: fields[name] for name in reads if name in fields}}


_KIND = content_hash("calibration")  # the cassette key's `kind`, the same for every case


def cassette_key(material_hash: str) -> dict[str, str]:
    """The cassette's key, from the hash of its material (hashed once a case: `material`)."""
    return {"format": str(CASSETTE_FORMAT), "kind": _KIND, "material": material_hash}


def expected_verdict_key(
    target: CalibrationTarget, judge: JudgeBinding, material_hash: str
) -> dict[str, str]:
    """Repeat 1's key: what ordinary verdicts are keyed on, plus the material."""
    stage = stage_of(target.rule, target.case.stage)
    key = verdict_key(stage, target.as_case, target.options, judge.id, judge.version)
    return {**key, "material": material_hash}


def _path(ctx: CalibrationContext, case_id: str) -> str:
    return f"{ctx.cassette_dir}{os.sep}{case_id}.json"


def _where(ctx: CalibrationContext, target: CalibrationTarget) -> str:
    return f"{ctx.suite.name}::{target.case.id}"


def replay(
    ctx: CalibrationContext, target: CalibrationTarget, judge: JudgeBinding
) -> CalibrationRecording:
    """Load and check a calibration cassette; raises MissingRecording, StaleRecording,
    PendingVerdict or CassetteError, each naming the case and what to do."""
    path = _path(ctx, target.case.id)
    doc = load_cassette(path, ctx.rootdir)
    if doc is None:
        raise MissingRecording(
            f"no recording for calibration case {_where(ctx, target)}; record it with --live "
            f"({shown_path(path, ctx.rootdir)})"
        )
    material_hash = content_hash(material(target))
    check_key(
        doc.key,
        cassette_key(material_hash),
        "",
        "--live",
        labels=lambda: (stored_labels(doc.labels, "key"), {}),
    )
    doc.check_integrity(path, ctx.rootdir)
    stage = target.case.stage
    verdict = doc.verdicts.get(stage)
    if not isinstance(verdict, dict):
        raise MissingRecording(
            f"no recorded verdict for stage {stage} of calibration case {_where(ctx, target)}; "
            "record it with --live"
        )
    if verdict.get("pending"):
        raise PendingVerdict(
            f"judge verdict pending for {stage} of {_where(ctx, target)}; record it with --live"
        )
    expected = expected_verdict_key(target, judge, material_hash)
    old = dict(verdict.get("key") or {})
    if judge.id is None:  # no judge configured: accept whichever judge recorded it
        for name in ("judge", "judge_version"):
            expected.pop(name, None), old.pop(name, None)
    check_key(
        old,
        expected,
        f" (verdict {stage})",
        "--live",
        labels=lambda: (stored_labels(doc.labels, "verdicts", stage), _labels(target, judge)),
    )
    problem = repeats_problem(_comparable(verdict, judge), expected, ctx.suite.repeats)
    if problem is not None:
        raise StaleRecording(
            f'stale recording (verdict {stage}): {problem} (the suite\'s "repeats"); '
            "re-record with --live"
        )
    return CalibrationRecording(verdict, "replayed", doc.recorded_at)


def _comparable(verdict: dict[str, Any], judge: JudgeBinding) -> dict[str, Any]:
    """With no judge configured, the repeats' judge fields are not compared either."""
    if judge.id is not None or not has_repeats(verdict):
        return verdict
    later = []
    for repeat in later_repeats(verdict):
        key = {
            k: v
            for k, v in (repeat.get("key") or {}).items()
            if k not in ("judge", "judge_version")
        }
        later.append({**repeat, "key": key})
    return with_later_repeats(verdict, later)


def _labels(target: CalibrationTarget, judge: JudgeBinding) -> dict[str, str]:
    stage = stage_of(target.rule, target.case.stage)
    return verdict_labels(stage, target.as_case, target.options, judge.id, judge.version)


async def record(
    ctx: CalibrationContext,
    target: CalibrationTarget,
    judge: JudgeBinding,
    rerecord_all: bool,
    dry_run: bool,
) -> CalibrationRecording:
    """Judge the case `repeats` times and save its cassette when it changed (`rerecord_all`:
    --live; else only what replay would refuse is judged). A judge error saves nothing: the
    verdict comes back as an error, and the old cassette stays."""

    path = Path(_path(ctx, target.case.id))
    if not rerecord_all:
        try:
            return replay(ctx, target, judge)
        except NewerCassette:
            raise
        except (MissingRecording, CassetteError, PendingVerdict):
            pass
        except Exception as exc:  # stale: judged again below
            if type(exc).__name__ != "StaleRecording":
                raise
    try:
        old = load_cassette(path, ctx.rootdir)
    except NewerCassette:
        raise
    except CassetteError:
        old = None
    trace = material(target)
    material_hash = content_hash(trace)
    expected = expected_verdict_key(target, judge, material_hash)
    verdict = await judge_with_repeats(
        judge,
        target.case.stage,
        target.as_case,
        trace,
        target.options,
        expected,
        ctx.suite.repeats,
    )
    if verdict.get("error"):
        kept = "; the previous recording was kept" if old is not None else ""
        note = f"judge error ({verdict['error']}){kept}"
        return CalibrationRecording(verdict, "not_rerecorded", None, note)
    labels = {
        "key": {"kind": "calibration", "stage": target.case.stage},
        "verdicts": {target.case.stage: _labels(target, judge)},
    }
    if ctx.judge_from:
        labels["judge_from"] = ctx.judge_from
    doc = build_cassette(
        ctx.suite.name,
        target.case.id,
        cassette_key(material_hash),
        trace,
        {target.case.stage: verdict},
        None,
        labels,
    )
    change = _change(old, doc, target.case.stage)
    if change["kind"] == "unchanged":
        assert old is not None
        return CalibrationRecording(
            old.verdicts[target.case.stage], "recorded", old.recorded_at, change=change
        )
    if not dry_run:
        import asyncio

        pair = RecordingPair.of_case(Path(ctx.cassette_dir).parent, ctx.suite.name, target.case.id)
        await asyncio.to_thread(pair.write, doc, ctx.rootdir)
    return CalibrationRecording(
        verdict, "dry_run" if dry_run else "recorded", doc.recorded_at, change=change
    )


def _change(old: Cassette | None, new: Cassette, stage: str) -> dict[str, Any]:
    """What a re-recording changed, as the `recording changes` section lists it."""

    if old is None:
        return {"kind": "new"}
    if same_recording(old, new):
        return {"kind": "unchanged"}

    def scores(doc: Cassette) -> str:
        verdict = doc.verdicts.get(stage)
        if not isinstance(verdict, dict):
            return "-"
        return scores_text([float(v.get("score") or 0.0) for v in repeats_of(verdict)])

    return {
        "kind": "changed",
        "details": [f"{stage}: repeat scores {scores(old)} -> {scores(new)}"],
    }
