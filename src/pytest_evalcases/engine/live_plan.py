"""The plan of one live case, pure: from the case, its old recording and the mode, what runs
(the system, or a current trace reused), which verdicts are due and which fall back on the verdict
recorded before when their judge fails; then what the judges' outcomes make of them.

engine/live.py reads the files, runs the plan and saves; nothing here does I/O or awaits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import CassetteError, MissingRecording, StaleRecording
from ..core.modes import RunMode
from ..core.names import clip
from ..domain.context import case_where
from ..domain.verdicts import (
    judged_inputs,
    judged_part,
    judged_units,
    repeats_problem,
    verdict_key,
)
from ..store.cassette import Cassette, cassette_path
from ..store.keys import changed_fields, check_key
from ..store.redaction import redact_for_output
from .limits import recorded_cost_of
from .recording import JudgeBinding
from .replay import key_labels_of

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..domain.stages import Stage


@dataclass(frozen=True, slots=True)
class OldRecording:
    """The case's recording before this run, as engine/live.py read it. `compared`: the
    cassette there is (a new recording is compared with it); `base`: what --live-stale and
    --live-judges may build on (None: record from scratch). `judged_on`, from an offline run
    (--replay-http --live-judges): the trace the recorded verdicts were made on, `base` then
    holding today's trace."""

    compared: Cassette | None
    base: Cassette | None
    judged_on: dict[str, Any] | None = None

    @property
    def offline(self) -> bool:
        return self.judged_on is not None


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """One run of the case: its trace, the verdicts recorded on it (none for a new run) and the
    trace those verdicts were made on."""

    trace: dict[str, Any]
    verdicts: Mapping[str, Any] = field(default_factory=dict)
    judged_on: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KeptVerdicts:
    """A run's verdicts recorded before (none edited by hand) and the trace they were made on:
    what a verdict falls back on when its judge fails."""

    verdicts: Mapping[str, Any] = field(default_factory=dict)
    judged_on: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What runs: the recorded runs reused as they are (a current trace), or `wanted` system
    runs (`reused` None); per run, the verdicts a failed judge falls back on (`fallbacks`); the
    HTTP recording kept (a reused trace keeps its own)."""

    key: dict[str, str]
    wanted: int
    reused: tuple[RecordedRun, ...] | None
    # Worked out when asked, after the system runs: for a case that runs its system it hashes
    # every old verdict, and a live batch plans every case before the first system run starts
    # (200 cases: ~30 ms more before the first judge request).
    fallbacks_of: Callable[[], tuple[KeptVerdicts, ...]]
    http: str | None = None

    @property
    def fallbacks(self) -> tuple[KeptVerdicts, ...]:
        return self.fallbacks_of()


@dataclass(frozen=True, slots=True)
class DueVerdict:
    """A verdict to ask the judge for: its run (index), its name (`turn2.faithfulness` for a
    conversation's turn), its stage, the case and trace it judges, the key it is made under, and
    the verdict kept when the judge fails (None: saved as pending)."""

    run: int
    name: str
    stage: Stage
    case: Case
    trace: dict[str, Any]
    key: dict[str, str]
    fallback: Any = None


@dataclass(frozen=True, slots=True)
class VerdictPlan:
    """Per run, the recorded verdicts that still hold (kept as they are); the verdicts due."""

    kept: tuple[dict[str, Any], ...]
    due: tuple[DueVerdict, ...]


@dataclass(frozen=True, slots=True)
class JudgedRuns:
    """The verdicts once the judges answered: per run, every verdict (kept, judged, pending, or
    fallen back on); `pending` and `not_rejudged` as `name (run N): error`; the names kept from
    the old recording; the recorded cost of each judge call, in the order of the due verdicts."""

    verdicts: tuple[dict[str, Any], ...]
    pending: tuple[str, ...]
    not_rejudged: tuple[str, ...]
    kept: frozenset[str]
    costs: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class JudgeNotes:
    """What the judges' failures say: the item's note, and the stage names pending or not
    re-judged (redacted, as they may leave the process)."""

    text: str
    pending: list[str]
    not_rejudged: list[str]


def plan_runs(
    ctx: SuiteContext, case: Case, key: dict[str, str], mode: RunMode, old: OldRecording
) -> RunPlan:
    """Reuse the recorded runs when their key is today's and their count the one wanted (always,
    judging an offline run's trace), else run the system: `--eval-runs K`, else as many runs as
    the recording holds (--live: 1). --live-judges never runs the system: a missing or stale
    recording, or another count of runs, raises naming the next step."""
    base = old.base
    if old.offline:
        assert base is not None and old.judged_on is not None
        return _reusing(key, base, old.judged_on)
    current = base is not None and not changed_fields(base.key, key)
    wanted = ctx.runs or (base.run_count if base is not None and mode != RunMode.LIVE else 1)
    if current and base is not None and base.run_count != wanted:
        if mode == RunMode.LIVE_JUDGES:
            raise StaleRecording(
                f"stale recording: runs changed ({base.run_count} "
                f"-> {wanted}); re-record with --live"
            )
        current = False
    if mode == RunMode.LIVE_JUDGES and not current:
        if base is None:
            raise MissingRecording(
                f"no recording for {case_where(ctx, case)} to re-judge; record it with --live"
            )
        check_key(
            base.key,
            key,
            "",
            "--live (--live-judges re-judges a current trace)",
            labels=key_labels_of(base, ctx, case),
        )
    if current and base is not None:
        return _reusing(key, base, base.trace)
    path = cassette_path(ctx.cassette_root, ctx.suite.name, case.id)
    return RunPlan(key, wanted, None, lambda: _verdicts_before(ctx, path, old.compared))


def _reusing(key: dict[str, str], base: Cassette, judged_on: dict[str, Any]) -> RunPlan:
    """A plan that reuses every run `base` holds; a failed judge keeps what each run holds."""
    runs = (RecordedRun(base.trace, base.verdicts, judged_on),) + tuple(
        RecordedRun(run.trace, run.verdicts, run.trace) for run in base.later_runs or ()
    )
    fallbacks = tuple(KeptVerdicts(run.verdicts, run.judged_on) for run in runs)
    return RunPlan(key, len(runs), runs, lambda: fallbacks, base.http)


def _verdicts_before(
    ctx: SuiteContext, path: Any, old: Cassette | None
) -> tuple[KeptVerdicts, ...]:
    """Per run, the verdicts a cassette holds that were not edited by hand, with the trace they
    were made on. None of a cassette whose trace was edited."""
    if old is None:
        return ()
    try:
        old.check_integrity(path, ctx.rootdir, verdicts=False)
    except CassetteError:
        return ()
    return (KeptVerdicts(old.usable_verdicts(), old.trace),) + tuple(
        KeptVerdicts(run.verdicts, run.trace) for run in old.later_runs or ()
    )


def plan_verdicts(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    mode: RunMode,
    runs: Sequence[RecordedRun],
    fallbacks: Sequence[KeptVerdicts],
) -> VerdictPlan:
    """Which verdicts each run needs judged: under --live every one; else only those pending,
    missing, edited by hand, made under another key (or judge repeats) or on another answer,
    context or (a conversation's turn) input. A due verdict falls back on the one recorded
    before when that still holds for today's trace."""
    kept: list[dict[str, Any]] = []
    due: list[DueVerdict] = []
    for index, run in enumerate(runs):
        before = fallbacks[index] if index < len(fallbacks) else KeptVerdicts()
        run_kept, run_due = _plan_run(ctx, case, judge, mode, index, run, before)
        kept.append(run_kept)
        due += run_due
    return VerdictPlan(tuple(kept), tuple(due))


def _plan_run(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    mode: RunMode,
    index: int,
    run: RecordedRun,
    before: KeptVerdicts,
) -> tuple[dict[str, Any], list[DueVerdict]]:
    """One run's verdicts: those kept as recorded, and those due."""
    kept: dict[str, Any] = {}
    due: list[DueVerdict] = []
    judged_on = run.judged_on
    inputs_judged = judged_inputs(ctx.judged, case, judged_on) if judged_on is not run.trace else {}
    inputs_kept: dict[str, str] | None = None  # read once, when a fallback asks
    for name, stage, judged_case, judged_trace in judged_units(ctx.judged, case, run.trace):
        expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
        old = run.verdicts.get(name)
        same_input = "input" not in stage.reads or (
            inputs_judged.get(name, judged_case.input) == judged_case.input
        )
        if (
            mode != RunMode.LIVE
            and same_input
            and _still_valid(
                stage, old, expected, judged_part(judged_on, name), judged_trace, ctx.judge_repeats
            )
        ):
            kept[name] = old
            continue
        fallback = before.verdicts.get(name)
        if "input" in stage.reads and fallback is not None:
            if inputs_kept is None:
                inputs_kept = judged_inputs(ctx.judged, case, before.judged_on)
            if inputs_kept.get(name, judged_case.input) != judged_case.input:
                fallback = None
        if not _holds_for(stage, fallback, judged_part(before.judged_on, name), judged_trace):
            fallback = None
        due.append(DueVerdict(index, name, stage, judged_case, judged_trace, expected, fallback))
    return kept, due


def _holds_for(stage: Stage, old: Any, judged: dict[str, Any], trace: dict[str, Any]) -> bool:
    """A recorded verdict still says something true of `trace`: a finished verdict (not pending,
    no error) made on the answer and context its stage reads now (`judged`: the trace it was
    made on), whatever judge or key made it."""
    return (
        isinstance(old, dict)
        and not old.get("pending")
        and not old.get("error")
        and all(
            trace.get(name) == judged.get(name)
            for name in ("answer", "context")
            if name in stage.reads
        )
    )


def _still_valid(
    stage: Stage,
    old: Any,
    expected: dict[str, str],
    judged: dict[str, Any],
    trace: dict[str, Any],
    repeats: int | None = None,
) -> bool:
    """A recorded verdict holds for `trace` (see `_holds_for`), made under today's key (and
    repeats): it needs no judge call."""
    return (
        _holds_for(stage, old, judged, trace)
        and old.get("key") == expected
        and repeats_problem(old, expected, repeats) is None
    )


def apply_outcomes(
    plan: VerdictPlan, outcomes: Sequence[dict[str, Any]], run_count: int
) -> JudgedRuns:
    """The judges' verdicts (`outcomes`, one per due verdict) placed in their runs. A verdict
    whose judge failed falls back on the one recorded before when that held (never traded for a
    pending one: kept with the key of the judge that made it, and listed as not re-judged), else
    it is saved as pending, the trace and the other verdicts staying."""
    verdicts = tuple(dict(run) for run in plan.kept)
    pending: list[str] = []
    not_rejudged: list[str] = []
    kept: set[str] = set()
    costs: list[float] = []
    for due, verdict in zip(plan.due, outcomes, strict=True):
        costs.append(recorded_cost_of(verdict))
        where = f" (run {due.run + 1})" if run_count > 1 else ""
        if verdict.get("error") and due.fallback is not None:
            not_rejudged.append(f"{due.name}{where}: {verdict['error']}")
            kept.add(due.name)
            verdicts[due.run][due.name] = due.fallback
            continue
        if verdict.get("error"):
            verdict = dict(verdict)
            verdict["pending"] = True
            verdict.setdefault("score", None)
            pending.append(f"{due.name}{where}: {verdict['error']}")
        verdicts[due.run][due.name] = verdict
    return JudgedRuns(verdicts, tuple(pending), tuple(not_rejudged), frozenset(kept), tuple(costs))


def judge_notes(judged: JudgedRuns, dry_run: bool) -> JudgeNotes:
    """The note a case shows when judges failed, and the stages pending or not re-judged.
    Redacted before it is cut short: a clip could leave half a key that no rule knows."""
    failed = redact_for_output(list(judged.pending))
    not_rejudged = redact_for_output(list(judged.not_rejudged))
    notes = []
    if failed:
        notes.append(
            "judge error (" + "; ".join(clip(f, 160) for f in failed) + "); the new trace "
            "was saved with the verdict pending: complete it with --live-judges"
        )
        if dry_run:
            notes[-1] = "judge error (" + "; ".join(clip(f, 160) for f in failed) + ")"
    if not_rejudged:
        notes.append(
            "not re-judged: "
            + "; ".join(clip(f, 160) for f in not_rejudged)
            + "; the verdict recorded before was kept"
        )
    return JudgeNotes("; ".join(notes), _stage_names(failed), _stage_names(not_rejudged))


def _stage_names(entries: list[str]) -> list[str]:
    """`faithfulness (run 2): timeout` -> `faithfulness`."""
    return [entry.split(":", 1)[0].split(" (run ")[0] for entry in entries]
