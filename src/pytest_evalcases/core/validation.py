"""Messages for bad case files and traces: a validation error as one line per field path, or all
on one line (`retrieved (a string, not a list)`), and the near-miss field names of a case
(`expected_doc`: did you mean `expected_docs`?)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from .field_checks import PEER_REFERENCE_NAMES, peer_field_problem
from .schema import CaseModel, RubricItem, ToolExpectation, TurnModel
from .suite_schema import CitationOptions, GraphOptions, RubricOptions, Suite


def misspelled_fields(
    extra: Mapping[str, Any] | None, system_fields: Collection[str] = ()
) -> list[str]:
    """`<field>: ... did you mean '<known>'?` for each extra field of a case that is a near miss
    of a case field (`expected_doc`, `refrence`): a typo would reach the system as an input and
    the stage it meant would silently not run, so the case passes. Fields far from every known
    one stay inputs, and so do those the suite lists in `system_fields` (an input whose name
    happens to be near a case field's, e.g. `references`). A field named as another tool names the
    gold answer (`expected_output`, `ground_truth`, `target`) is an error of its own: it says
    `reference`, whose name it is, and the same way out."""
    if not extra:
        return []
    import difflib  # only for a case with extra fields: not on every replay's path

    known = list(CaseModel.model_fields)
    problems = []
    for name in extra:
        if name in system_fields:
            continue
        peer = peer_field_problem(name)
        if peer:
            problems.append(f"{name}: {peer}")
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if close:
            problems.append(
                f"{name}: not a case field; did you mean {close[0]!r}? (if it is an input for "
                f'your system, list it in the suite\'s "system_fields": [{json.dumps(name)}])'
            )
    return problems


def _field_path(loc: tuple[Any, ...], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "<root>"


# Models whose unknown fields are errors, by the name pydantic gives them in an error's location
# (a union member: `turns[0].TurnModel.refrence`) or title, and suite fields holding one.
_STRICT_MODELS = {
    model.__name__: model
    for model in (
        Suite,
        TurnModel,
        ToolExpectation,
        RubricItem,
        GraphOptions,
        CitationOptions,
        RubricOptions,
    )
}
_STRICT_SUITE_FIELDS = {
    "graph": GraphOptions,
    "citations": CitationOptions,
    "rubric": RubricOptions,
}


def _did_you_mean(item: Any, title: str) -> str:
    """` (did you mean 'reference'?)` for an unknown field near a known one of its model: the
    same suggestion a case's extra fields get (misspelled_fields), for the models that forbid
    unknown fields (a suite, a conversation turn, a tool expectation, ...)."""
    loc = item["loc"]
    if item["type"] != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
        return ""
    parent = loc[-2] if len(loc) > 1 else title
    model = _STRICT_MODELS.get(parent) or _STRICT_SUITE_FIELDS.get(parent)
    if model is None:
        return ""
    whose = PEER_REFERENCE_NAMES.get(loc[-1])
    if whose is not None and "reference" in model.model_fields:  # a conversation turn's
        return f" (did you mean 'reference'? {loc[-1]!r} is {whose})"
    import difflib  # only for an error: not on every run's path

    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def format_validation_error(error: ValidationError, prefix: str = "") -> str:
    """One line per problem, each naming the field path: `cases[3].input: Field required`; an
    unknown field near a known one names it (`stage: … (did you mean 'stages'?)`)."""
    return "\n".join(
        f"{_field_path(item['loc'], prefix)}: {item['msg']}{_did_you_mean(item, error.title)}"
        for item in error.errors()
    )


# What a pydantic error type expected, and what a JSON value is, in words.
_EXPECTED = {
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "string_type": "a string",
    "int_type": "a number",
    "int_parsing": "a number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
}
_KINDS = (
    (bool, "a boolean"),
    (str, "a string"),
    (int | float, "a number"),
    (list | tuple, "a list"),
    (dict, "a mapping"),
    (type(None), "null"),
)


def _kind(value: Any) -> str:
    return next((kind for types, kind in _KINDS if isinstance(value, types)), type(value).__name__)


def one_line_validation_error(error: ValidationError, prefix: str = "") -> str:
    """Every problem on one line, each naming its field and what is wrong in a few words:
    `retrieved (a string, not a list), tool_calls[0].name (missing)`."""
    parts = []
    for item in error.errors():
        kind = item["type"]
        if kind == "missing":
            why = "missing"
        elif kind in _EXPECTED:
            why = f"{_kind(item.get('input'))}, not {_EXPECTED[kind]}"
        else:
            why = " ".join(str(item["msg"]).split())
            why = why[:1].lower() + why[1:]
        parts.append(f"{_field_path(item['loc'], prefix)} ({why})")
    return ", ".join(parts)
