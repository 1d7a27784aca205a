"""core/validation.py: a validation error as one line per field, or all on one line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_evalcases.core.field_checks import PEER_REFERENCE_NAMES
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.validation import (
    format_validation_error,
    misspelled_fields,
    one_line_validation_error,
)
from pytest_evalcases.schema import Trace


def trace_error(value: dict) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Trace.model_validate(value)
    return caught.value


def test_every_bad_field_on_one_line_in_words() -> None:
    error = trace_error({"answer": "x", "retrieved": "abc", "usage": 5, "tool_calls": [{}]})
    text = one_line_validation_error(error)
    assert "\n" not in text
    assert "retrieved (a string, not a list)" in text
    assert "usage (a number, not a mapping)" in text
    assert "tool_calls[0].name (missing)" in text


def test_one_line_per_field_is_unchanged() -> None:
    error = trace_error({"answer": "x", "retrieved": "abc"})
    assert format_validation_error(error).startswith("retrieved: ")


def test_a_peers_gold_answer_field_names_reference_and_whose_name_it_is() -> None:
    extra = {name: "gold" for name in PEER_REFERENCE_NAMES} | {"customer_tier": "gold"}
    problems = misspelled_fields(extra)
    assert len(problems) == len(PEER_REFERENCE_NAMES)  # customer_tier stays an input
    assert problems[0] == (
        "expected_output: DeepEval's name for the gold answer (a Golden's expected_output); here "
        'the gold answer goes in "reference": rename the field (as it stands it is handed to your '
        "system as an input, and no stage grades the answer against it), or, if it is an input "
        'for your system on purpose, list it in the suite\'s "system_fields": ["expected_output"]'
    )
    assert problems[-1].startswith("target: inspect-ai's name for the gold answer")
    assert misspelled_fields({"target": "kids"}, system_fields=["target"]) == []


def test_a_peers_gold_answer_field_in_a_conversation_turn_names_reference() -> None:
    with pytest.raises(ValidationError) as caught:
        validate_case({"id": "c", "turns": [{"input": "hi", "ground_truth": "hello"}]})
    assert (
        "(did you mean 'reference'? 'ground_truth' is ragas's name for the gold"
        in format_validation_error(caught.value)
    )
