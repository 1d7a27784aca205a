"""`context_coverage`: the share of the gold context the retrieved context covers, worked by
hand (tokens after SQuAD normalisation, as multisets; ids matched exactly)."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES


def coverage(expected: list, trace: dict, **suite_fields):
    case = validate_case({"id": "c", "input": "q", "expected_context": expected})
    suite = Suite.model_validate({"name": "s", "stages": ["tools"], "cases": [], **suite_fields})
    return STAGES["context_coverage"].score(case, {"answer": "x", **trace}, suite, None)


def test_a_text_counts_the_share_of_its_tokens_the_context_holds():
    # gold [cat, sat, on, mat] ("The" dropped); the two passages hold cat, sat, mat: 3/4
    result = coverage(["The cat sat on the mat."], {"context": ["A cat sat.", "Mat!"]})
    assert result.score == pytest.approx(0.75)
    assert result.metrics["item_coverage"] == [0.75]


def test_tokens_count_with_multiplicity_and_ids_match_exactly():
    # gold [new, york, new, jersey]: the context holds one "new" -> 3/4; the id d2 is retrieved
    result = coverage(
        ["New York, New Jersey", {"id": "d2"}, {"id": "d9"}],
        {"context": ["new york jersey"], "retrieved": ["d1", "d2"]},
    )
    assert result.metrics["item_coverage"] == [0.75, 1.0, 0.0]
    assert result.score == pytest.approx(1.75 / 3)
    assert "1 of 3 gold items fully covered" in result.reason


def test_nothing_retrieved_covers_nothing_and_fails_at_the_threshold():
    result = coverage(["Pebble is a grey cat"], {}, thresholds={"context_coverage": 0.9})
    assert (result.score, result.passed) == (0.0, False)
    assert result.reason.startswith("context coverage 0.00 < 0.90")


def test_a_case_without_gold_context_is_skipped():
    case = validate_case({"id": "c", "input": "q"})
    suite = Suite.model_validate({"name": "s", "stages": ["tools"], "cases": []})
    assert STAGES["context_coverage"].score(case, {"answer": "x"}, suite, None).passed is None


def test_a_gold_item_must_be_a_text_or_an_id_object():
    with pytest.raises(ValueError, match="expected_context"):
        validate_case({"id": "c", "input": "q", "expected_context": [{"doc": "d1"}]})
