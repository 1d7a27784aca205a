"""`kendall_tau`: tau-b of the answer's order against `expected_order`, worked by hand."""

from __future__ import annotations

import math

import pytest

from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES


def tau(order: list[str], answer: str):
    case = validate_case({"id": "c", "input": "q", "expected_order": order})
    suite = Suite.model_validate({"name": "s", "stages": ["tools"], "cases": []})
    return STAGES["kendall_tau"].score(case, {"answer": answer}, suite, None)


def test_the_same_order_is_one_and_the_reverse_minus_one():
    assert tau(["Paris", "Rome", "Oslo"], "Paris, then Rome, then Oslo.").score == 1.0
    assert tau(["Paris", "Rome", "Oslo"], "Oslo first, Rome, and Paris last").score == -1.0


def test_one_swapped_pair_of_three():
    # pairs (a,b) and (a,c) concordant, (b,c) discordant: (2 - 1) / 3
    result = tau(["a1", "b1", "c1"], "a1 c1 b1")
    assert result.score == pytest.approx(1 / 3)
    assert result.passed is False and result.reason == "Kendall tau-b 0.33 < 0.50"


def test_items_the_answer_never_names_tie_after_the_named_ones():
    # ranks a=1, b=0, c=d=2: concordant 4, discordant 1, one tie in the answer's ranks
    # tau-b = (4 - 1) / sqrt(6 * (6 - 1))
    result = tau(["alpha", "beta", "gamma", "delta"], "beta comes before alpha")
    assert result.score == pytest.approx(3 / math.sqrt(30))
    assert result.metrics["unnamed"] == ["gamma", "delta"]
    assert result.reason.endswith("not named (ranked last): gamma, delta")


def test_an_item_matches_whole_tokens_only():
    # "cat" is not found inside "category": dog (1) comes before cat (2)
    assert tau(["cat", "dog"], "category: dog, then cat").score == -1.0


def test_an_answer_naming_no_item_fails_and_a_single_item_is_skipped():
    none = tau(["a1", "b1"], "I cannot rank these")
    assert (none.score, none.passed) == (0.0, False)
    assert tau(["a1"], "a1").passed is None
