"""The spine's side of judged stages: which verdicts a case needs and the key each is made under.

Kept free of deepeval and of any network client, so replay can check verdict keys cheaply.
"""

from __future__ import annotations

from typing import Any

from .cassette import content_hash
from .schema import Case, Suite
from .stages import STAGES, Stage
from .stages.judged import judged_skip_reason

DEFAULT_CORRECTNESS_CRITERIA = (
    "The answer conveys the same key facts as the reference and nothing contradicting it."
)


def canonical_judge(spec: str) -> str:
    """The judge id keys are made with (`OpenAI:x` and `openai:x` are one judge). Checks the
    form only, no key, so replay can validate it; raises JudgeConfigError listing the forms."""
    from .judges.spec import parse_spec

    return parse_spec(spec).id


def judge_options(suite: Suite) -> dict[str, Any]:
    """The suite settings judges receive."""
    return {
        "strict": suite.strict,
        "correctness_criteria": suite.correctness_criteria or DEFAULT_CORRECTNESS_CRITERIA,
        "accept_partial": suite.accept_partial,
    }


def stage_params(stage: str, options: dict[str, Any]) -> dict[str, Any]:
    """The settings that change a stage's verdict (not gating rules such as `accept_partial`)."""
    if stage == "faithfulness":
        return {"strict": bool(options["strict"])}
    if stage == "correctness":
        return {"criteria_sha": content_hash(options["correctness_criteria"])}
    return {}


def verdict_key(
    stage: Stage,
    case: Case,
    options: dict[str, Any],
    judge_id: str | None,
    judge_version: str | None,
) -> dict[str, str]:
    """What the judge saw, besides the trace (a new trace always brings new verdicts)."""
    key = {"params": content_hash(stage_params(stage.name, options))}
    if judge_id is not None:
        key["judge"] = content_hash(judge_id)
        key["judge_version"] = content_hash(judge_version)
    for field in ("reference", "unanswerable"):
        if field in stage.reads:
            key[field] = content_hash(getattr(case, field))
    return key


def judged_stages(names: list[str]) -> list[Stage]:
    return [STAGES[name] for name in names if STAGES[name].judged]


def applicable(stages: list[Stage], case: Case, trace: dict[str, Any]) -> list[Stage]:
    """Judged stages that get a verdict for this case (the others are shown as skipped)."""
    return [stage for stage in stages if judged_skip_reason(stage, case, trace) is None]
