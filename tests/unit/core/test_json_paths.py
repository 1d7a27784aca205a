"""The JSONPaths a suite names body fields with, checked when the case file is read."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.json_paths import parse_json_path
from pytest_evalcases.core.schema import ValidationError
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.core.validation import format_validation_error


def test_parse_json_path() -> None:
    assert parse_json_path("$.messages[*].tool_calls[0].id") == [
        "messages",
        "*",
        "tool_calls",
        0,
        "id",
    ]
    for bad in ("user", "$", "$.a[x]"):
        with pytest.raises(ValueError):
            parse_json_path(bad)


def suite(**fields: object) -> Suite:
    return Suite(name="s", stages=["exact_match"], cases=[], **fields)


def test_http_volatile_takes_json_paths_and_header_names() -> None:
    entries = ["$.meta.trace_id", "$.messages[*].id", "x-trace-id", "X-MyCorp-*"]
    assert suite(http_volatile=entries).http_volatile == entries


@pytest.mark.parametrize(
    ("field", "entry", "message"),
    [
        ("http_volatile", "$.a[x]", "cannot read '[x]'"),
        ("http_volatile", "x trace", "neither a JSONPath of a body field"),
        ("http_volatile", "x-*-id", "neither a JSONPath of a body field"),
        ("http_ignore", "user", "is not a JSONPath"),
    ],
)
def test_a_bad_entry_is_named_when_the_suite_is_read(field: str, entry: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        suite(**{field: [entry]})
    text = format_validation_error(caught.value)
    assert text.startswith(f"{field}: ") and message in text and repr(entry) in text
