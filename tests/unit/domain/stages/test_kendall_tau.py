"""`kendall_tau` as Cognee defines BEAM's: tau-b of the answer's order over the items it names,
normalised to [0, 1], times the event-coverage F1; worked by hand."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES


def tau(order: list[str], answer: str):
    case = validate_case({"id": "c", "input": "q", "expected_order": order})
    suite = Suite.model_validate({"name": "s", "stages": ["tools"], "cases": []})
    return STAGES["kendall_tau"].score(case, {"answer": answer}, suite, None)


def test_the_same_order_is_one_and_the_reverse_zero():
    same = tau(["Paris", "Rome", "Oslo"], "Paris, then Rome, then Oslo.")
    assert same.score == 1.0 and same.metrics["tau_b"] == 1.0
    reversed_ = tau(["Paris", "Rome", "Oslo"], "Oslo first, Rome, and Paris last")
    # raw tau-b -1 (kept in the metrics), normalised (-1 + 1) / 2 = 0, coverage F1 1
    assert reversed_.score == 0.0 and reversed_.metrics["tau_b"] == -1.0
    assert reversed_.passed is False


def test_two_of_three_events_in_order_score_the_coverage_f1():
    # tau-b over the two named items: 1, normalised 1; precision 2/2, recall 2/3,
    # F1 = 2 * 1 * (2/3) / (1 + 2/3) = 0.8
    result = tau(["alpha", "beta", "gamma"], "First alpha, later gamma.")
    assert result.score == pytest.approx(0.8)
    assert result.metrics["coverage_recall"] == pytest.approx(2 / 3)
    assert result.metrics["coverage_precision"] == 1.0
    assert result.metrics["unnamed"] == ["beta"]
    assert result.reason == (
        "BEAM kendall_tau 0.80 >= 0.50 (tau-b 1.00, coverage F1 0.80; not named: beta)"
    )


def test_one_swapped_pair_of_three():
    # pairs (a,b) and (a,c) concordant, (b,c) discordant: tau-b (2 - 1) / 3 = 1/3,
    # normalised (1/3 + 1) / 2 = 2/3, coverage F1 1
    result = tau(["a1", "b1", "c1"], "a1 c1 b1")
    assert result.score == pytest.approx(2 / 3)
    assert result.metrics["tau_b"] == pytest.approx(1 / 3)
    assert result.passed is True


def test_a_list_answer_with_events_not_expected_loses_precision():
    # four list entries, three of them expected, in order: precision 3/4, recall 1,
    # F1 = 2 * 0.75 / 1.75 = 6/7; tau 1
    answer = "1. breakfast\n2. a walk\n3. lunch\n4. dinner"
    result = tau(["breakfast", "lunch", "dinner"], answer)
    assert result.metrics["coverage_precision"] == 0.75
    assert result.score == pytest.approx(6 / 7)


def test_an_item_matches_whole_tokens_only():
    # "cat" is not found inside "category": dog (1) comes before cat (2): reversed, 0
    assert tau(["cat", "dog"], "category: dog, then cat").score == 0.0


def test_an_answer_ordering_fewer_than_two_items_fails_and_a_single_item_is_skipped():
    none = tau(["a1", "b1"], "I cannot rank these")
    assert (none.score, none.passed) == (0.0, False)
    one = tau(["a1", "b1", "c1"], "only b1 happened")
    assert (one.score, one.passed) == (0.0, False)
    assert one.reason == "the answer orders fewer than two of the items"
    assert tau(["a1"], "a1").passed is None
