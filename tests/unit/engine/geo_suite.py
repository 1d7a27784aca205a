"""A one-case suite the engine's unit tests plan and score without a pytest session: its
context built as pytest_plugin/suite_contexts.suite_context builds one (no system resolved), and
verdicts made under today's key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_evalcases.core.schema import Case, validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.context import SuiteContext
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.verdicts import judge_options, judged_stages, verdict_key
from pytest_evalcases.engine.recording import JudgeBinding

KEY = {"system": "aaaa1111", "case": "bbbb2222"}
JUDGE = JudgeBinding("lexical", "1")
TRACE = {"answer": "Paris", "context": ["Paris is the capital of France."]}
# faithfulness reads the answer and the context; correctness the answer, not the context
JUDGED = ("faithfulness", "correctness")


def geo_context(
    tmp_path: Path, runs: int | None = None, stages: tuple[str, ...] = ("exact_match", *JUDGED)
) -> SuiteContext:
    suite = Suite.model_validate(
        {
            "name": "geo",
            "system": "geo_system:run",
            "stages": list(stages),
            "cases": [{"id": "capital", "input": "Capital of France?", "reference": "Paris"}],
        }
    )
    return SuiteContext(
        path=tmp_path / "geo.json",
        suite=suite,
        system=None,  # type: ignore[arg-type]  # nothing here runs it
        cassette_root=tmp_path / "cassettes",
        cassette_dir=str(tmp_path / "cassettes" / "geo"),
        rootdir=tmp_path,
        key_fields={"system": KEY["system"]},
        input_fields={},
        key_labels={"system": "geo_system:run"},
        gating=list(suite.stages),
        report_only=[],
        judged=judged_stages(list(suite.stages), suite),
        judge_spec="lexical",
        judge_from="suite",
        judge_options=judge_options(suite),
        timeout=30.0,
        runs=runs,
    )


def geo_case() -> Case:
    return validate_case({"id": "capital", "input": "Capital of France?", "reference": "Paris"})


def verdict(ctx: SuiteContext, case: Case, name: str, judge: JudgeBinding = JUDGE) -> dict:
    """A finished verdict of `judge`, made under today's key."""
    key = verdict_key(STAGES[name], case, ctx.judge_options, judge.id, judge.version)
    return {"score": 1.0, "reason": "holds", "key": key}


def verdicts(ctx: SuiteContext, case: Case) -> dict[str, Any]:
    return {name: verdict(ctx, case, name) for name in JUDGED}
