"""The spine's side of judged stages: which verdicts a case needs and the key each is made under.

Kept free of deepeval and of any network client, so replay can check verdict keys cheaply.
"""

from __future__ import annotations

import functools
from typing import Any

from ..core.hashing import content_hash, name_label, value_label
from ..core.repeats import LATER_REPEATS, repeat_key, repeats_of
from ..core.schema import Case
from ..core.suite_schema import Suite
from .stages import Stage
from .stages.declared import DeclaredStage, declared_specs, stage_of
from .stages.judged import judged_skip_reason
from .turns import turn_units, verdict_name

DEFAULT_CORRECTNESS_CRITERIA = (
    "The answer conveys the same key facts as the reference and nothing contradicting it."
)

# Characters of a judge's reason a verdict keeps: every report copies the verdict's reason, so
# the cap here bounds the cassette, results.json, the dashboard and report.md alike.
REASON_LIMIT = 1_048_576


def clipped_text(text: str, limit: int) -> str:
    """`text` whole, or its first `limit` characters and a note that says what was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [clipped: {len(text):,} characters, limit {limit:,}]"


# The judge options' entry for the suite's own judged stages: name -> what grading it takes.
DECLARED_OPTION = "declared"


def judge_options(suite: Suite) -> dict[str, Any]:
    """The suite settings judges receive."""
    options = {
        "strict": suite.strict,
        "correctness_criteria": suite.correctness_criteria or DEFAULT_CORRECTNESS_CRITERIA,
        "accept_partial": suite.accept_partial,
        "rubric_scale": suite.rubric_scale,
    }
    declared = declared_specs(suite)
    if declared:
        options[DECLARED_OPTION] = declared
    return options


def stage_params(stage: str, options: dict[str, Any]) -> dict[str, Any]:
    """The settings that change a stage's verdict (not gating rules such as `accept_partial`)."""
    if stage == "faithfulness":
        return {"strict": bool(options["strict"])}
    if stage == "correctness":
        return {"criteria_sha": content_hash(options["correctness_criteria"])}
    return {}


# The verdict key field of the rubric stage's scale (the suite's `"rubric": {"scale": ...}`),
# present only off the binary default: verdicts and labels recorded before the half scale stay
# as they are, and a change reads `rubric.scale added (- -> half)`.
RUBRIC_SCALE_FIELD = "rubric.scale"


def _rubric_scale(stage: str, options: dict[str, Any]) -> str | None:
    scale = options.get("rubric_scale", "binary")
    return scale if stage == "rubric" and scale != "binary" else None


@functools.lru_cache(maxsize=256)
def _suite_part(
    stage: str,
    strict: bool,
    criteria: str,
    rubric_scale: str,
    judge_id: str | None,
    judge_version: str | None,
) -> tuple[tuple[str, str], ...]:
    """The fields of a verdict key that every case of a suite shares, hashed once per run (a
    replay checks every verdict of every case against them)."""
    options = {"strict": strict, "correctness_criteria": criteria, "rubric_scale": rubric_scale}
    key = [("params", content_hash(stage_params(stage, options)))]
    scale = _rubric_scale(stage, options)
    if scale is not None:
        key.append((RUBRIC_SCALE_FIELD, content_hash(scale)))
    if judge_id is not None:
        key += [("judge", content_hash(judge_id)), ("judge_version", content_hash(judge_version))]
    return tuple(key)


# Case fields a judge may read; each one a stage reads keys its verdicts.
KEYED_CASE_FIELDS = ("reference", "unanswerable", "rubric")


def keyed_value(case: Case, field: str) -> Any:
    """What of a case field keys a verdict: a rubric by its item texts (weights are applied
    when scoring, so a changed weight needs no new verdict)."""
    if field == "rubric":
        return [text for text, _ in case.rubric or ()]
    return getattr(case, field)


def verdict_key(
    stage: Stage,
    case: Case,
    options: dict[str, Any],
    judge_id: str | None,
    judge_version: str | None,
) -> dict[str, str]:
    """What the judge saw, besides the trace (a new trace always brings new verdicts)."""
    key = dict(
        _suite_part(
            stage.name,
            bool(options["strict"]),
            options["correctness_criteria"],
            options.get("rubric_scale", "binary"),
            judge_id,
            judge_version,
        )
    )
    for field in KEYED_CASE_FIELDS:
        if field in stage.reads:
            key[field] = content_hash(keyed_value(case, field))
    if isinstance(stage, DeclaredStage):  # a suite's own: its criteria, or its metric's source
        key.update(stage.key_fields)
        for field in stage.keyed_case_fields:
            key[field] = content_hash(keyed_value(case, field))
    return key


def verdict_labels(
    stage: Stage,
    case: Case,
    options: dict[str, Any],
    judge_id: str | None,
    judge_version: str | None,
) -> dict[str, str]:
    """Labels of `verdict_key`'s fields, where a person can read one (store/keys.py `Labels`)."""
    found: dict[str, str | None] = {}
    if stage.name == "faithfulness":
        found["params"] = f"strict={'true' if options['strict'] else 'false'}"
    elif stage.name == "correctness":
        found["params"] = value_label(options["correctness_criteria"])
    found[RUBRIC_SCALE_FIELD] = _rubric_scale(stage.name, options)
    if judge_id is not None:
        found["judge"] = name_label(judge_id)
        found["judge_version"] = name_label(judge_version or "")
    for field in KEYED_CASE_FIELDS:
        if field in stage.reads:
            found[field] = value_label(keyed_value(case, field))
    if isinstance(stage, DeclaredStage):
        found.update(stage.key_labels)
        for field in stage.keyed_case_fields:
            found[field] = value_label(keyed_value(case, field))
    return {name: label for name, label in found.items() if label is not None}


# Where a suite's judge came from; the two overrides are named in stale-verdict advice.
JUDGE_OPTION, JUDGE_INI, JUDGE_SUITE = "--eval-judge", "ini eval_judge", "suite"


def judge_source_advice(
    changed: set[str],
    recorded: dict[str, str] | None,
    recorded_from: str | None,
    current_judge: str | None,
    current_from: str | None,
) -> str | None:
    """When a verdict is stale only because the judge differs and an override explains it, the
    advice that says so (else None: the usual `re-record with --live-judges`). `recorded` are
    the verdict's recorded labels; `*_from` where each judge came from."""
    if "judge" not in changed or not changed <= {"judge", "judge_version"}:
        return None
    recorded_judge = (recorded or {}).get("judge")
    if recorded_judge and recorded_from == JUDGE_OPTION:
        return (
            f'recorded with --eval-judge {recorded_judge}; pass the same option, set "judge" '
            "in the suite, or re-judge with --live-judges"
        )
    if recorded_judge and recorded_from == JUDGE_INI:
        return (
            f"recorded with ini eval_judge = {recorded_judge}; pass --eval-judge "
            f'{recorded_judge}, set "judge" in the suite, or re-judge with --live-judges'
        )
    if recorded_judge and recorded_from == JUDGE_SUITE and current_from == JUDGE_OPTION:
        return (
            f"recorded with the suite's judge {recorded_judge}, while this run's "
            f"{current_judge} comes from --eval-judge; run without the option, or re-judge with "
            "--live-judges"
        )
    return None


def judged_stages(names: list[str], suite: Suite) -> list[Stage]:
    stages = [stage_of(suite, name) for name in names]
    return [stage for stage in stages if stage.judged]


def applicable(stages: list[Stage], case: Case, trace: dict[str, Any]) -> list[Stage]:
    """Judged stages that get a verdict for this case (the others are shown as skipped)."""
    return [stage for stage in stages if judged_skip_reason(stage, case, trace) is None]


def judged_units(
    stages: list[Stage], case: Case, trace: dict[str, Any]
) -> list[tuple[str, Stage, Case, dict[str, Any]]]:
    """(verdict name, stage, the case and trace it judges) for every verdict a recording needs:
    one per applicable stage, or for a conversation, one per applicable stage of each scored
    turn (`turn2.faithfulness`, judging that turn as a case of its own)."""
    if case.turns is None:
        return [(stage.name, stage, case, trace) for stage in applicable(stages, case, trace)]
    return [
        (verdict_name(unit.number, stage.name), stage, unit.case, unit.trace)
        for unit in turn_units(case, trace)
        for stage in applicable(stages, unit.case, unit.trace)
    ]


def judged_part(trace: dict[str, Any], name: str) -> dict[str, Any]:
    """The part of a recorded trace verdict `name` judged: a turn's trace for `turn<N>.<stage>`."""
    if not name.startswith("turn") or "." not in name:
        return trace
    turns = trace.get("turns")
    try:
        part = turns[int(name[4:].split(".", 1)[0]) - 1] if isinstance(turns, list) else {}
    except (ValueError, IndexError):
        return {}
    return part if isinstance(part, dict) else {}


def repeats_problem(
    verdict: dict[str, Any], expected: dict[str, str], wanted: int | None
) -> str | None:
    """Why a recorded verdict's repeats do not hold today (None: they do). `wanted` is the count
    this run asks for (None: whatever was recorded); the verdict's own key is checked apart."""
    later = verdict.get(LATER_REPEATS)
    if later is None and wanted in (None, 1):  # the default path: one verdict, nothing asked
        return None
    recorded = repeats_of(verdict)
    if wanted is not None and len(recorded) != wanted:
        return f"judge repeats changed ({len(recorded)} -> {wanted})"
    for number, repeat in enumerate(recorded[1:], start=2):
        if not isinstance(repeat, dict) or repeat.get("key") != repeat_key(expected, number):
            return f"repeat {number} was recorded under another key"
    return None


def judged_inputs(judged: list[Stage], case: Case, trace: dict[str, Any]) -> dict[str, str]:
    """A conversation's verdicts -> the input each judged on `trace` (the turns before it, with
    their answers: a verdict on turn 2 no longer holds when turn 1's answer changed). Empty for a
    one-question case, whose input is the case's own (in the key)."""
    if case.turns is None:
        return {}
    return {name: unit.input for name, _, unit, _ in judged_units(judged, case, trace)}
