"""Conversation cases, the pure parts: each scored turn is judged with the conversation before
it, a turn's unstable verdict is the case's, the case's own structured expectations go to
the last turn."""

from __future__ import annotations


def test_each_scored_turn_is_judged_with_the_conversation_before_it() -> None:
    from pytest_evalcases.core.schema import validate_case
    from pytest_evalcases.domain.turns import turn_units

    case = validate_case(
        {"id": "c", "reference": "Yes.", "turns": ["Where is A-1?", "Can I cancel it?"]}
    )
    trace = {"answer": "Yes.", "turns": [{"answer": "It is processing."}, {"answer": "Yes."}]}

    (unit,) = turn_units(case, trace)  # only the last turn has expectations (the case's)

    assert unit.number == 2 and unit.trace == {"answer": "Yes."}
    assert unit.case.input == (
        "user: Where is A-1?\nassistant: It is processing.\nuser: Can I cancel it?"
    )
    assert unit.case.reference == "Yes." and unit.case.turns is None


def test_an_unstable_verdict_of_a_turn_is_unstable_for_the_case() -> None:
    """--eval-judge-repeats on a conversation: the case's stage row (what the summary's
    `unstable` column and the baseline gate read) keeps the turn's instability."""
    from pytest_evalcases.core.schema import validate_case
    from pytest_evalcases.core.suite_schema import Suite
    from pytest_evalcases.domain.scoring import result_stages, score_case

    suite = Suite(name="s", stages=["faithfulness"], cases=[])
    case = validate_case({"id": "c", "turns": ["Where is A-1?", "Can I cancel it?"]})
    trace = {"answer": "Yes.", "turns": [{"answer": "Hi."}, {"answer": "Yes.", "context": ["x"]}]}

    def repeats(*scores: float) -> dict:
        parts = [{"score": s, "key": {"n": str(i)}} for i, s in enumerate(scores)]
        return {**parts[0], "later_repeats": parts[1:]}

    unstable = score_case(
        suite, case, trace, {"turn2.faithfulness": repeats(0.0, 1.0, 1.0)}, ["faithfulness"], []
    )
    stage = result_stages(unstable)["faithfulness"]
    assert stage["passed"] is False and stage["unstable"] is True
    assert stage["repeat_scores"] == [0.0, 1.0, 1.0]
    passing = score_case(
        suite, case, trace, {"turn2.faithfulness": repeats(1.0, 1.0, 1.0)}, ["faithfulness"], []
    )
    assert result_stages(passing)["faithfulness"]["unstable"] is False


def test_the_case_own_structured_expectations_go_to_the_last_turn_only() -> None:
    """`answer_schema`, `rubric` and `expected_triples` given beside `turns` are the case's own
    expectations: the last turn takes them, an earlier turn with expectations of its own not."""
    from pytest_evalcases.core.schema import validate_case
    from pytest_evalcases.domain.turns import turn_units

    case = validate_case(
        {
            "id": "c",
            "turns": [{"input": "Where is my order?", "expected_tools": ["lookup"]}, "A-1"],
            "answer_schema": {"type": "object"},
            "rubric": ["names the order"],
            "expected_triples": [["A-1", "status", "shipped"]],
        }
    )
    trace = {"answer": "{}", "turns": [{"answer": "Which order?"}, {"answer": "{}"}]}

    first, last = turn_units(case, trace)

    assert (first.case.answer_schema, first.case.rubric, first.case.expected_triples) == (
        None,
        None,
        None,
    )
    assert last.case.answer_schema == {"type": "object"}
    assert last.case.rubric == (("names the order", 1.0),)
    assert last.case.expected_triples == case.expected_triples
