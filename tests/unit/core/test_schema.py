"""The case contract: CaseModel validates a raw case, a run keeps it as a small `Case`."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_evalcases.core.schema import (
    Case,
    CaseModel,
    ToolExpectation,
    ValidationError,
    validate_case,
)
from pytest_evalcases.core.validation import format_validation_error
from pytest_evalcases.domain.system import key_view, system_view


def test_case_has_the_model_fields_and_the_extra_ones() -> None:
    """A field added to CaseModel must reach the Case the stages read (beside the case file's
    other fields: the system's, and those the suite's own stages read)."""
    assert [f.name for f in dataclasses.fields(Case)] == [
        *CaseModel.model_fields,
        "extra",
        "stage_fields",
    ]


def test_validated_case_keeps_every_field() -> None:
    raw = {
        "id": "c1",
        "input": "q",
        "category": "sync",
        "group": "g",
        "marks": ["slow"],
        "xfail": "known",
        "expected_tools": ["search", {"name": "fetch", "args": {"id": 1}}],
        "expected_docs": ["d1"],
        "reference": "r",
        "unanswerable": True,
    }
    case = validate_case(raw)
    assert case == Case(
        **{
            **raw,
            "marks": ("slow",),
            "expected_tools": ["search", ToolExpectation(name="fetch", args={"id": 1})],
        }
    )
    assert case.extra is None and case.skip is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.input = "other"  # type: ignore[misc]


def test_extra_fields_go_to_the_system_and_into_the_key() -> None:
    case = validate_case(
        {
            "id": "c1",
            "input": "q",
            "reference": "r",
            "persona": "pirate",
            "history": [{"role": "user", "content": "hi"}],
        }
    )
    assert case.extra == {"persona": "pirate", "history": [{"role": "user", "content": "hi"}]}
    view = system_view(case)
    assert view == {
        "id": "c1",
        "input": "q",
        "persona": "pirate",
        "history": [{"role": "user", "content": "hi"}],
    }
    assert view.persona == "pirate"
    assert key_view(view) == {
        "input": "q",
        "persona": "pirate",
        "history": [{"role": "user", "content": "hi"}],
    }


def test_invalid_case_raises_as_the_model_does() -> None:
    raw = {"id": "", "input": 7, "marks": ["xfail"]}
    with pytest.raises(ValidationError) as exc:
        validate_case(raw)
    assert format_validation_error(exc.value, prefix="cases[0]").splitlines() == [
        "cases[0].id: String should have at least 1 character",
        "cases[0].input: Input should be a valid string",
        "cases[0].marks: Value error, 'xfail' is a pytest marker with its own meaning; rename it",
    ]


def test_a_case_s_inputs_are_kept_apart_from_what_the_system_sees() -> None:
    case = validate_case({"id": "c1", "input": "q", "inputs": ["data/a.txt"], "tone": "dry"})
    assert case.inputs == ("data/a.txt",) and case.extra == {"tone": "dry"}
    assert system_view(case) == {"id": "c1", "input": "q", "tone": "dry"}
    assert validate_case({"id": "c2", "input": "q", "inputs": []}).inputs == ()
    assert validate_case({"id": "c3", "input": "q"}).inputs is None  # the suite's inputs
