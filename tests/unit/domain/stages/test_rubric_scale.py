"""The rubric stage's half scale (BEAM's 0 / 0.5 / 1 per item): scoring by hand-worked values,
the suite option, and the verdict key the scale is part of."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.core.schema import ValidationError, validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES, prepare_stages
from pytest_evalcases.domain.verdicts import judge_options, verdict_key, verdict_labels

RUBRIC = [
    "names the city",
    {"item": "gives the year", "weight": 2},
    "cites a source",
]


def suite(**fields) -> Suite:
    doc = {"name": "s", "stages": ["rubric"], "cases": [], **fields}
    result = Suite.model_validate(doc)
    prepare_stages(result, result.stages, Path("."))
    return result


def case(rubric=RUBRIC):
    return validate_case({"id": "c", "input": "q", "rubric": rubric})


def half_verdict(*grades, texts=("names the city", "gives the year", "cites a source")) -> dict:
    items = [
        {"item": text, "grade": grade, "reason": "r"}
        for text, grade in zip(texts, grades, strict=True)
    ]
    return {"score": 0.0, "label": None, "details": {"items": items, "scale": "half"}}


HALF = {"rubric": {"scale": "half"}}


def score(verdict: dict, items=RUBRIC, **suite_fields):
    return STAGES["rubric"].score(case(items), {"answer": "x"}, suite(**suite_fields), verdict)


class TestScoring:
    def test_weighted_mean_of_the_grades(self):
        # weights 1, 2, 1; grades 1, 0.5, 0: (1*1 + 2*0.5 + 1*0) / 4 = 0.5
        result = score(half_verdict(1, 0.5, 0), **HALF)
        assert result.score == 0.5 and result.passed is True
        assert result.reason == (
            "0.50 >= 0.50 (1 of 3 items met, 1 partly); 0.5 partly: gives the year; "
            "0 unmet: cites a source"
        )
        assert result.metrics == {"items": 3, "met": 1, "partly": 1}

    def test_half_credit_alone_can_fail_the_threshold(self):
        # grades 0.5, 0.5, 0: (0.5 + 1 + 0) / 4 = 0.375
        result = score(half_verdict(0.5, 0.5, 0), **HALF, thresholds={"rubric": 0.4})
        assert result.score == 0.375 and result.passed is False
        assert result.reason.startswith("0.38 < 0.40 (0 of 3 items met, 2 partly); 0.5 partly: ")

    def test_every_item_fully_met_scores_one(self):
        result = score(half_verdict(1, 1, 1), **HALF)
        assert result.score == 1.0 and result.reason == "1.00 >= 0.50 (3 of 3 items met, 0 partly)"

    def test_weights_apply_to_the_grades_when_scoring(self):
        heavier = ["names the city", {"item": "gives the year", "weight": 6}, "cites a source"]
        # weights 1, 6, 1; grades 0, 0.5, 1: (0 + 3 + 1) / 8 = 0.5
        assert score(half_verdict(0, 0.5, 1), heavier, **HALF).score == 0.5

    def test_a_recorded_grade_off_the_scale_is_a_judge_error(self):
        result = score(half_verdict(1, 0.7, 0), **HALF)
        assert result.judge_error is True and result.passed is False and result.score is None
        assert "'gives the year' has grade 0.7, not 0, 0.5 or 1" in result.reason

    def test_the_binary_scale_reads_as_before(self):
        items = [
            {"item": "names the city", "met": True, "reason": "r"},
            {"item": "gives the year", "met": False, "reason": "r"},
            {"item": "cites a source", "met": True, "reason": "r"},
        ]
        result = score({"score": 0.5, "details": {"items": items}})
        assert result.score == 0.5
        assert result.reason == "0.50 >= 0.50 (2 of 3 items met); unmet: gives the year"
        assert result.metrics == {"items": 3, "met": 2}


class TestSuiteOption:
    def test_scale_is_binary_or_half(self):
        assert suite().rubric_scale == "binary"
        assert suite(**HALF).rubric_scale == "half"
        with pytest.raises(ValidationError, match="'binary' or 'half'"):
            suite(rubric={"scale": "third"})

    def test_the_option_without_the_stage_is_an_error(self):
        with pytest.raises(CaseFileError, match='"rubric" configures the rubric stage'):
            suite(stages=["tools"], **HALF)


class TestVerdictKey:
    def test_the_binary_scale_keeps_every_recorded_key(self):
        stage, judged = STAGES["rubric"], case()
        before = {"strict": False, "correctness_criteria": "x"}  # options before the scale
        binary = judge_options(suite())
        binary["correctness_criteria"] = "x"
        assert verdict_key(stage, judged, binary, "lexical", "lexical-1") == verdict_key(
            stage, judged, before, "lexical", "lexical-1"
        )

    def test_the_half_scale_adds_the_rubric_scale_field_only(self):
        stage, judged = STAGES["rubric"], case()
        binary, half = judge_options(suite()), judge_options(suite(**HALF))
        old = verdict_key(stage, judged, binary, "lexical", "lexical-1")
        new = verdict_key(stage, judged, half, "lexical", "lexical-1")
        assert set(new) - set(old) == {"rubric.scale"}
        assert all(new[field] == old[field] for field in old)
        assert verdict_labels(stage, judged, half, "lexical", "x")["rubric.scale"] == "half"
        assert "rubric.scale" not in verdict_labels(stage, judged, binary, "lexical", "x")

    def test_other_stages_never_get_the_field(self):
        half = judge_options(suite(**HALF))
        judged = validate_case({"id": "c", "input": "q", "reference": "r"})
        assert "rubric.scale" not in verdict_key(STAGES["correctness"], judged, half, None, None)
