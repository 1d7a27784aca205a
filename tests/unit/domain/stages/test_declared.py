"""domain/stages/declared.py: the judged stages a suite declares (`judged_stages`, `metrics`),
looked up per suite, scored and keyed from the verdict alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.core.schema import Case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.scoring import score_case
from pytest_evalcases.domain.stages.declared import declared_stages, stage_of
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.verdicts import judge_options, verdict_key, verdict_labels

POLITE = "The answer is courteous and does not blame the user."
CASE = Case(id="c1", input="where is my order?", reference="in transit")
TRACE: dict[str, Any] = {"answer": "It is on its way.", "context": []}


def suite(**fields: Any) -> Suite:
    doc: dict[str, Any] = {
        "name": "s",
        "stages": ["polite"],
        "judged_stages": {"polite": {"criteria": POLITE, "threshold": 0.7}},
        "cases": [],
    }
    doc.update(fields)
    return Suite.model_validate(doc)


def verdict(score: float, **more: Any) -> dict[str, Any]:
    return {"score": score, "label": None, "reason": "why", **more}


def test_each_suite_has_its_own_stage_of_a_name() -> None:
    kind = suite(judged_stages={"polite": {"criteria": "Kind words.", "threshold": 0.2}})
    strict = suite()
    assert stage_of(kind, "polite") is not stage_of(strict, "polite")
    assert "polite" not in STAGES  # never in the global registry
    assert stage_of(strict, "faithfulness") is STAGES["faithfulness"]
    assert stage_of(kind, "polite").score(CASE, TRACE, kind, verdict(0.5)).passed is True
    failed = stage_of(strict, "polite").score(CASE, TRACE, strict, verdict(0.5))
    assert (failed.passed, failed.reason) == (False, "0.50 < 0.70; why")


def test_a_suites_own_stage_is_scored_with_the_others() -> None:
    own = suite(stages=["polite", "exact_match"], thresholds={"polite": 0.4})
    scores = score_case(own, CASE, TRACE, {"polite": verdict(0.5)}, own.stages, [])
    assert [(name, r.passed, r.threshold) for name, r, _ in scores.results[:1]] == [
        ("polite", True, 0.4)  # "thresholds" over the declared threshold
    ]
    missing = score_case(own, CASE, TRACE, {}, own.stages, [])
    assert missing.results[0][1].reason == "no verdict recorded"
    shown = score_case(own, CASE, TRACE, {"polite": verdict(0.1)}, [], ["polite"])
    assert shown.results[0][1].passed is False and shown.first_failure is None  # report_only


def test_reads_decide_when_a_stage_does_not_apply() -> None:
    own = suite(
        judged_stages={
            "grounded": {"criteria": "Uses the context.", "reads": ["answer", "context"]}
        }
    )
    result = stage_of(own, "grounded").score(CASE, TRACE, own, verdict(0.9))
    assert (result.passed, result.reason) == (None, "no context")


def test_repeats_that_disagree_are_unstable_as_the_suite_chooses() -> None:
    repeated = verdict(0.9, later_repeats=[verdict(0.3, key={"repeat": "2"})])
    for rule, passed in (("fail", False), ("pass", True)):
        own = suite(unstable=rule)
        result = stage_of(own, "polite").score(CASE, TRACE, own, repeated)
        assert (result.unstable, result.passed, result.repeat_scores) == (True, passed, [0.9, 0.3])
        assert result.reason.startswith("UNSTABLE [0.90, 0.30]: the repeats disagree")


def test_a_metric_is_gated_by_the_threshold_it_recorded_unless_the_suite_sets_one() -> None:
    own = suite(stages=["voice"], judged_stages={}, metrics={"voice": "nowhere.at_all:Voice"})
    recorded = verdict(0.5, details={"threshold": 0.6, "metric": "nowhere.at_all:Voice"})
    result = stage_of(own, "voice").score(CASE, TRACE, own, recorded)  # never imported
    assert (result.passed, result.threshold) == (False, 0.6)
    lowered = own.model_copy(update={"thresholds": {"voice": 0.5}})
    assert stage_of(lowered, "voice").score(CASE, TRACE, lowered, recorded).passed is True
    # a metric whose own rule is not `score >= threshold` (lower is better: deepeval's bias
    # metric) decides by the success it recorded
    bias = verdict(0.1, details={"threshold": 0.5, "success": True})
    result = stage_of(own, "voice").score(CASE, TRACE, own, bias)
    assert (result.passed, result.reason) == (
        True,
        "0.10 passes the metric's own rule at 0.50; why",
    )
    # a metric reads the reference when there is one, and is judged without one too
    assert stage_of(own, "voice").score(Case(id="c", input="q"), TRACE, own, recorded).threshold


def test_the_key_holds_criteria_steps_reads_and_rubric_each_named() -> None:
    bands = [{"score_range": [0, 4], "expected_outcome": "rude"}]
    own = suite(
        judged_stages={
            "polite": {
                "criteria": POLITE,
                "steps": ["Read the answer.", "Look for blame."],
                "rubric": bands,
                "reads": ["answer", "reference"],
            }
        }
    )
    stage = stage_of(own, "polite")
    key = verdict_key(stage, CASE, judge_options(own), "openai:m", "v1")
    assert {"criteria", "steps", "rubric", "reads", "reference", "params", "judge"} <= set(key)
    other = suite(
        judged_stages={
            "polite": {**own.judged_stages["polite"].model_dump(), "steps": ["Read it."]}
        }
    )
    other_key = verdict_key(stage_of(other, "polite"), CASE, judge_options(other), "openai:m", "v1")
    assert {name for name in key if key[name] != other_key.get(name)} == {"steps"}
    labels = verdict_labels(stage, CASE, judge_options(own), "openai:m", "v1")
    assert labels["criteria"] == f'"{POLITE}"'
    assert labels["steps"] == '["Read the answer.", "Look for blame."]'


def test_judge_options_carry_what_grading_needs() -> None:
    own = suite(metrics={"voice": "team.metrics:Voice"}, stages=["polite", "voice"])
    declared = judge_options(own)["declared"]
    assert declared == {
        "polite": {"kind": "criteria", "criteria": POLITE, "reads": ["input", "answer"]},
        "voice": {"kind": "metric", "class": "team.metrics:Voice"},
    }
    assert "declared" not in judge_options(suite(judged_stages={}, stages=["exact_match"]))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"judged_stages": {"tools": {"criteria": "x"}}},
            "\"judged_stages\" declares 'tools', already the name of a stage of the plugin",
        ),
        (
            {"metrics": {"polite": "team.metrics:Voice"}},
            '\'polite\' declared both in "judged_stages" and in "metrics"',
        ),
    ],
)
def test_a_name_taken_twice_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(CaseFileError, match=message):
        declared_stages(suite(**fields))


def test_a_metric_from_an_installed_package_is_keyed_by_its_release(tmp_path: Path) -> None:
    from importlib.metadata import version

    from pytest_evalcases.domain.code import CodeFingerprints, installed_package

    assert installed_package("deepeval.metrics") == f"deepeval=={version('deepeval')}"
    assert installed_package("no_such_package_anywhere.metrics") is None
    # a package of the project (under the rootdir) is keyed by its source instead; an installed
    # one is not the project's
    (tmp_path / "team_pack").mkdir()
    (tmp_path / "team_pack" / "__init__.py").write_text("")
    fingerprints = CodeFingerprints(tmp_path)
    assert fingerprints.in_project("team_pack.metrics")
    assert not fingerprints.in_project("deepeval.metrics")
