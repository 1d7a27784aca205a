"""The benchmarks' own answer scores against cases worked by hand from each benchmark's published
rules (docs/benchmarks.md names the code each follows): LoCoMo's evaluation.py, HotpotQA's
hotpot_evaluate_v1.py, 2WikiMultihopQA's evaluate script and MuSiQue's metrics. Every figure
below was computed on paper from those rules, not by running our code."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.schema import Case, validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.stages.text import token_f1

EXACT = 1e-9


def suite(**fields) -> Suite:
    return Suite.model_validate({"name": "s", "stages": ["tools"], "cases": [], **fields})


def case(**fields) -> Case:
    return validate_case({"id": "c", "input": "q", **fields})


def score(stage: str, trace: dict, **case_fields):
    return STAGES[stage].score(case(**case_fields), trace, suite(), None)


def locomo(answer: str, reference: str | None, category: str) -> float:
    fields = {"category": category} | ({"reference": reference} if reference is not None else {})
    return score("locomo_f1", {"answer": answer}, **fields).score


class TestLocomoF1:
    def test_stems_and_drops_and_commas_and_articles(self):
        # "the running dogs and cats" -> [run, dog, cat]; "dog runs" -> [dog, run]:
        # 2 shared, P 2/3, R 1, F1 0.8. SQuAD-style token_f1 shares nothing (no stemming).
        assert locomo("The running dogs, and cats", "dog runs", "single_hop") == pytest.approx(
            0.8, abs=EXACT
        )
        assert token_f1("The running dogs, and cats", "dog runs") == 0.0

    def test_multi_hop_averages_each_gold_part_over_its_best_answer_part(self):
        # gold parts Rome 1, Berlin 0, Paris 1 -> 2/3
        assert locomo("Paris, Rome", "Rome, Berlin, Paris", "multi_hop") == pytest.approx(
            2 / 3, abs=EXACT
        )

    def test_open_domain_scores_against_the_first_semicolon_part(self):
        # gold "hiking" -> [hike]; answer [she, went, hike]: P 1/3, R 1, F1 0.5
        assert locomo("She went hiking", "hiking; she likes mountains", "open_domain") == (
            pytest.approx(0.5, abs=EXACT)
        )

    def test_temporal_punctuation_and_numbers(self):
        assert locomo("7 May 2023", "7 May, 2023", "temporal") == 1.0
        assert locomo("3", "3", "single_hop") == 1.0

    def test_nothing_shared_or_empty_scores_zero(self):
        assert locomo("", "Pebble", "single_hop") == 0.0
        assert locomo("the", "a", "single_hop") == 0.0  # both empty after normalisation: 0

    @pytest.mark.parametrize(
        ("answer", "expected"),
        [
            ("Not mentioned in the conversations.", 1.0),
            ("There is NO INFORMATION AVAILABLE about a dog.", 1.0),
            ("No information.", 0.0),
            ("Pebble", 0.0),
        ],
    )
    def test_adversarial_scores_the_abstention_phrases_only(self, answer, expected):
        assert locomo(answer, "The conversations do not say.", "adversarial") == expected
        assert locomo(answer, None, "adversarial") == expected  # the gold is not read

    def test_a_case_without_a_locomo_category_is_skipped_with_the_reason(self):
        result = score("locomo_f1", {"answer": "x"}, reference="x", category="bridge")
        assert result.passed is None and "not a LoCoMo category" in result.reason

    def test_threshold_and_reason(self):
        result = score("locomo_f1", {"answer": "Paris"}, reference="Rome", category="temporal")
        assert (result.score, result.passed) == (0.0, False)
        assert result.reason == "LoCoMo F1 0.00 < 0.50 (temporal)"


class TestHotpotQA:
    def test_yes_no_answers_score_zero_unless_equal(self):
        assert score("hotpotqa_f1", {"answer": "yes"}, reference="no").score == 0.0
        # "yes" gold vs a longer answer containing it: 0, though they share a token
        assert score("hotpotqa_f1", {"answer": "yes it is"}, reference="yes").score == 0.0
        assert token_f1("yes it is", "yes") == pytest.approx(0.5)
        assert score("hotpotqa_f1", {"answer": "Yes."}, reference="yes").score == 1.0

    def test_f1_and_em_with_squad_normalisation(self):
        # [eiffel, tower, in, paris] vs [eiffel, tower]: P 1/2, R 1 -> 2/3
        result = score(
            "hotpotqa_f1", {"answer": "the Eiffel Tower in Paris"}, reference="Eiffel Tower"
        )
        assert result.score == pytest.approx(2 / 3, abs=EXACT)
        assert score("hotpotqa_em", {"answer": "The Beatles!"}, reference="beatles").score == 1.0
        assert score("hotpotqa_em", {"answer": "Beatles band"}, reference="beatles").score == 0.0

    def test_supporting_fact_f1_over_distinct_pairs(self):
        # predicted {A0, A1, B2}, gold {A0, B0}: tp 1, fp 2, fn 1 -> P 1/3, R 1/2 -> F1 0.4
        trace = {"answer": "x", "supporting_facts": [["A", 0], ["A", 1], ["B", 2], ["A", 0]]}
        result = score("hotpotqa_sp_f1", trace, expected_facts=[["A", 0], ["B", 0]])
        assert result.score == pytest.approx(0.4, abs=EXACT)

    def test_supporting_facts_titles_are_case_sensitive_in_hotpotqa_only(self):
        trace = {"answer": "x", "supporting_facts": [["paris", 0]]}
        assert score("hotpotqa_sp_f1", trace, expected_facts=[["Paris", 0]]).score == 0.0
        assert score("2wikimultihopqa_sp_f1", trace, expected_facts=[["Paris", 0]]).score == 1.0

    def test_a_trace_without_supporting_facts_is_skipped_an_empty_list_scores_zero(self):
        result = score("hotpotqa_sp_f1", {"answer": "x"}, expected_facts=[["A", 0]])
        assert result.passed is None and "supporting_facts" in result.reason
        empty = score(
            "hotpotqa_sp_f1", {"answer": "x", "supporting_facts": []}, expected_facts=[["A", 0]]
        )
        assert empty.score == 0.0


class Test2WikiMultihopQA:
    def test_best_over_reference_and_aliases(self):
        fields = {"reference": "United States", "reference_aliases": ["USA", "America"]}
        assert score("2wikimultihopqa_em", {"answer": "USA"}, **fields).score == 1.0
        # [united, states, of, america] vs "United States": P 1/2, R 1 -> 2/3; vs "America":
        # P 1/4, R 1 -> 0.4; vs "USA": 0. The best of the three golds counts.
        result = score("2wikimultihopqa_f1", {"answer": "United States of America"}, **fields)
        assert result.score == pytest.approx(2 / 3, abs=EXACT)
        assert "best of 3 gold answers" in result.reason

    def test_the_yes_no_rule_holds_per_gold(self):
        result = score(
            "2wikimultihopqa_f1", {"answer": "no"}, reference="yes", reference_aliases=[]
        )
        assert result.score == 0.0


class TestMuSiQue:
    def test_best_over_answer_and_aliases(self):
        fields = {"reference": "New York City", "reference_aliases": ["NYC"]}
        assert score("musique_f1", {"answer": "NYC"}, **fields).score == 1.0
        assert score("musique_em", {"answer": "new york city."}, **fields).score == 1.0
        # [in, new, york] vs [new, york, city]: 2 shared, P 2/3, R 2/3 -> 2/3
        assert score("musique_f1", {"answer": "in New York"}, **fields).score == pytest.approx(
            2 / 3, abs=EXACT
        )

    def test_an_empty_side_scores_one_only_when_both_are_empty(self):
        assert score("musique_f1", {"answer": ""}, reference="Paris").score == 0.0
        assert score("musique_f1", {"answer": "the"}, reference="an").score == 1.0  # both empty

    def test_unanswerable_questions_are_not_scored(self):
        result = score("musique_f1", {"answer": "x"}, reference="r", unanswerable=True)
        assert result.passed is None and "unanswerable" in result.reason

    def test_supporting_paragraph_f1_of_the_retrieved_ids(self):
        # retrieved {t1, t2, t3}, gold {t1, t4}: P 1/3, R 1/2 -> 0.4
        trace = {"answer": "x", "retrieved": ["t1", "t2", "t3", "t1"]}
        result = score("musique_sp_f1", trace, expected_docs=["t1", "t4"], reference="r")
        assert result.score == pytest.approx(0.4, abs=EXACT)
