"""Deterministic stages against hand-computed figures."""

from __future__ import annotations

import math

import pytest

from pytest_evalcases.core.schema import Case, validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.stages.retrieval import rank_metrics
from pytest_evalcases.domain.stages.text import normalize_text, token_f1


def suite(**fields) -> Suite:
    return Suite.model_validate({"name": "s", "stages": ["tools"], "cases": [], **fields})


def case(**fields) -> Case:
    return validate_case({"id": "c", "input": "q", **fields})


def score(stage: str, trace: dict, suite_fields: dict | None = None, **case_fields):
    return STAGES[stage].score(case(**case_fields), trace, suite(**(suite_fields or {})), None)


class TestTools:
    def test_absent_expectation_skips(self):
        result = score("tools", {"tool_calls": [{"name": "x"}]})
        assert result.passed is None and result.score is None

    def test_empty_expectation_means_no_call_allowed(self):
        assert score("tools", {"tool_calls": []}, expected_tools=[]).passed is True
        result = score("tools", {"tool_calls": [{"name": "x"}]}, expected_tools=[])
        assert (result.passed, result.score) == (False, 0.0)
        assert "called x" in result.reason

    def test_missing_and_unexpected_are_named(self):
        trace = {"tool_calls": [{"name": "search_docs", "args": {}}, {"name": "delete_all"}]}
        result = score("tools", trace, expected_tools=["search_docs", "get_issue"])
        assert result.passed is False
        assert result.score == 0.5
        assert result.reason == "missing: get_issue; unexpected: delete_all"

    def test_args_checked_when_given(self):
        trace = {"tool_calls": [{"name": "get_issue", "args": {"issue_id": "JOT-1", "x": 1}}]}
        ok = score(
            "tools", trace, expected_tools=[{"name": "get_issue", "args": {"issue_id": "JOT-1"}}]
        )
        assert ok.passed is True and ok.score == 1.0
        bad = score(
            "tools", trace, expected_tools=[{"name": "get_issue", "args": {"issue_id": "JOT-2"}}]
        )
        assert bad.passed is False
        assert "missing: get_issue(issue_id='JOT-2')" in bad.reason

    def test_each_expected_call_consumes_one_call(self):
        trace = {"tool_calls": [{"name": "search"}]}
        result = score("tools", trace, expected_tools=["search", "search"])
        assert (result.passed, result.score) == (False, 0.5)


class TestToolOrderAndBounds:
    ORDER = {"tool_calls": [{"name": "get_order"}, {"name": "search_kb"}]}

    def test_any_order_is_the_default(self):
        assert score("tools", self.ORDER, expected_tools=["search_kb", "get_order"]).passed

    def test_strict_order_names_the_call_out_of_order(self):
        result = score(
            "tools", self.ORDER, expected_tools=["search_kb", "get_order"], tool_order="strict"
        )
        assert (result.passed, result.score) == (False, 0.5)
        assert result.reason == (
            "out of order: get_order (expected search_kb, get_order; called get_order, search_kb)"
        )

    def test_strict_order_allows_repeats_between_and_names_the_missing(self):
        trace = {"tool_calls": [{"name": "a"}, {"name": "b"}, {"name": "a"}, {"name": "c"}]}
        ok = score("tools", trace, expected_tools=["a", "b", "c"], tool_order="strict")
        assert ok.passed is True and ok.score == 1.0
        missing = score("tools", trace, expected_tools=["a", "b", "d", "c"], tool_order="strict")
        assert (missing.reason, missing.score) == ("missing: d", 0.75)

    def test_a_duplicate_call_passes_unless_bounded(self):
        twice = {"tool_calls": [{"name": "search_kb"}, {"name": "search_kb"}]}
        assert score("tools", twice, expected_tools=["search_kb"]).passed is True
        per_tool = score(
            "tools", twice, expected_tools=["search_kb"], max_tool_calls={"search_kb": 1}
        )
        assert per_tool.passed is False
        assert per_tool.reason == "too many calls: search_kb called 2 times, at most 1"
        total = score("tools", twice, expected_tools=["search_kb"], max_tool_calls=1)
        assert total.reason == "too many calls: 2 tool calls, at most 1 allowed"
        assert score("tools", twice, expected_tools=["search_kb"], max_tool_calls=2).passed

    def test_a_bound_alone_gates_without_expected_tools(self):
        three = {"tool_calls": [{"name": "x"}] * 3}
        assert score("tools", three, max_tool_calls=3).passed is True
        assert score("tools", three, max_tool_calls=2).passed is False

    def test_bad_values_are_refused_by_the_schema(self):
        with pytest.raises(ValueError, match="tool_order"):
            case(tool_order="sorted")
        with pytest.raises(ValueError, match="max_tool_calls"):
            case(max_tool_calls=-1)

    def test_editing_them_never_stales_a_recording(self):
        from pytest_evalcases.domain.system import key_view, system_view

        view = key_view(system_view(case(tool_order="strict", max_tool_calls=2)))
        assert view == {"input": "q"}


class TestRetrieval:
    def test_rank_metrics_hand_computed(self):
        # relevant {a, c}; ranked [b, a, d, c] at k=3: a at rank 2 only.
        metrics = rank_metrics(["b", "a", "d", "c"], ["a", "c"], 3)
        assert metrics["hit_at_k"] == 1.0
        assert metrics["recall_at_k"] == 0.5
        assert metrics["precision_at_k"] == pytest.approx(1 / 3)
        assert metrics["mrr"] == 0.5
        ideal = 1 + 1 / math.log2(3)
        assert metrics["ndcg_at_k"] == pytest.approx((1 / math.log2(3)) / ideal)
        assert metrics["map"] == pytest.approx((1 / 2) / 2)

    def test_perfect_and_empty_rankings(self):
        assert rank_metrics(["a", "c"], ["a", "c"], 3) == {
            "k": 3,
            "hit_at_k": 1.0,
            "recall_at_k": 1.0,
            "precision_at_k": pytest.approx(2 / 3),
            "mrr": 1.0,
            "ndcg_at_k": 1.0,
            "map": 1.0,
        }
        empty = rank_metrics([], ["a"], 3)
        assert empty["recall_at_k"] == empty["ndcg_at_k"] == empty["map"] == empty["mrr"] == 0.0

    def test_duplicates_count_once(self):
        metrics = rank_metrics(["a", "a", "b"], ["a", "b"], 2)
        assert metrics["recall_at_k"] == 1.0

    def test_gates_on_recall_and_names_missing(self):
        result = score(
            "retrieval", {"retrieved": ["x", "storage"]}, expected_docs=["storage", "config"]
        )
        assert result.passed is False
        assert result.reason == "recall@3 0.50 < 1.00; missing: config"
        assert result.metrics["hit_at_k"] == 1.0

    def test_suite_threshold_and_k(self):
        trace = {"retrieved": ["x", "storage"]}
        lenient = score(
            "retrieval",
            trace,
            {"thresholds": {"retrieval": 0.5}},
            expected_docs=["storage", "config"],
        )
        assert lenient.passed is True
        shallow = score("retrieval", trace, {"k": 1}, expected_docs=["storage"])
        assert shallow.passed is False and shallow.metrics["k"] == 1

    def test_absent_expected_docs_skips(self):
        assert score("retrieval", {"retrieved": ["a"]}).passed is None


class TestText:
    def test_normalisation(self):
        assert normalize_text("  The   Answer, is: AN apple! ") == "answer is apple"

    def test_exact_match(self):
        assert score("exact_match", {"answer": "In notes.db."}, reference="in notesdb").passed
        assert not score("exact_match", {"answer": "nope"}, reference="yes").passed
        assert score("exact_match", {"answer": "x"}).passed is None

    def test_token_f1_hand_computed(self):
        # predicted [cat, sat, mat], gold [cat, sat, on, mat, today]: 3 common; P=1, R=0.6
        assert token_f1("the cat sat mat", "a cat sat on the mat today") == pytest.approx(0.75)
        assert token_f1("", "") == 1.0
        assert token_f1("x", "") == 0.0

    def test_token_f1_threshold(self):
        result = score("token_f1", {"answer": "cat"}, {"threshold": 0.9}, reference="cat dog")
        assert result.passed is False
        assert result.reason == "token F1 0.67 < 0.90"
