"""core/validation.py: a validation error as one line per field, or all on one line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_evalcases.core.validation import format_validation_error, one_line_validation_error
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
