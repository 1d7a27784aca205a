"""Checks of single case-file fields that a type cannot state: an `answer_schema` must be a valid
JSON Schema, a category or mark must be a marker name pytest leaves alone, an `http_volatile`
entry must be a JSONPath or a response header name, and a field another eval tool gives the gold
answer (`expected_output`, `ground_truth`, `target`, ...) is not an input for the system. The
case and suite models (`core/schema.py`, `core/suite_schema.py`) attach them as pydantic field
validators; each raises ValueError with the message the user sees under the field's path (the
peers' names are checked with a case's typos, by core/validation.py, where the suite's
`system_fields` are known).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from .json_paths import parse_json_path

# Markers pytest (or a common plugin) acts on: a category named `xfail` would hide failures.
RESERVED_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
        "asyncio",
        "flaky",
        "repeat",
        "timeout",
    }
)

# The names other eval tools (and common habit) give a case's gold answer, which is `reference`
# here, with whose name each is (as their docs name it). A case field of one of these names would
# reach the system as an input (the gold answer handed to the agent) while the stages that grade
# against `reference` skip the case for want of one: so it is an error, unless the suite lists it
# in `system_fields` (an input of that name on purpose).
PEER_REFERENCE_NAMES: dict[str, str] = {
    "expected_output": "DeepEval's name for the gold answer (a Golden's expected_output)",
    "expected_answer": "a common name for the gold answer",
    "ground_truth": "ragas's name for the gold answer before ragas 0.2 (`reference` since)",
    "gold_answer": "a common name for the gold answer",
    "expected": "Braintrust's name for the gold answer (an eval case's expected)",
    "golden": "DeepEval's word for a gold case (a Golden)",
    "target": "inspect-ai's name for the gold answer (a Sample's target)",
}


def peer_field_problem(name: str) -> str | None:
    """What is wrong with a case field named as another tool names the gold answer, or None."""
    whose = PEER_REFERENCE_NAMES.get(name)
    if whose is None:
        return None
    return (
        f'{whose}; here the gold answer goes in "reference": rename the field (as it stands it '
        "is handed to your system as an input, and no stage grades the answer against it), or, "
        "if it is an input for your system on purpose, list it in the suite's "
        f'"system_fields": [{json.dumps(name)}]'
    )


# A response header name as `http_volatile` lists it (RFC 9110 token), `*` at the end: a prefix.
_HEADER_NAME = re.compile(r"[!#$%&'+.^_`|~0-9A-Za-z-]+\*?")


def json_schema_problem(schema: Any) -> str | None:
    """Why `schema` (an `answer_schema`) is not a valid JSON Schema, or None. Checked when the
    case file is read, so a broken schema is named at once rather than never (a non-JSON answer
    fails the stage before the schema is looked at). Without the optional jsonschema package
    nothing is checked here: the schema stage names the package when it runs."""
    if isinstance(schema, bool):
        return None
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: pydantic's own check of the field names it
        return None
    return _schema_text_problem(text)


@lru_cache(maxsize=64)
def _schema_text_problem(text: str) -> str | None:
    """json_schema_problem once per distinct schema: the cases of a suite usually share one."""
    try:
        import jsonschema  # optional and heavy: only for a file with an answer_schema
    except ImportError:
        return None
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
        )
        return f"not a valid JSON Schema: {error.message} (at ${where} of the schema)"
    return None


def checked_answer_schema(value: Any) -> Any:
    """An `answer_schema` (of a case, or a suite's default), refused when it is not valid."""
    problem = None if value is None else json_schema_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def checked_marker_names(value: Any) -> Any:
    """A `category` or the `marks` of a case: each must be usable as a pytest marker."""
    names = value if isinstance(value, list) else [value] if value else []
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"{name!r} cannot be a pytest marker: use letters, digits, _")
        if name in RESERVED_MARKERS:
            raise ValueError(f"{name!r} is a pytest marker with its own meaning; rename it")
    return value


def checked_json_paths(paths: list[str]) -> list[str]:
    """`http_ignore`: JSONPaths of request body fields."""
    for path in paths:
        parse_json_path(path)  # its ValueError names the path and the forms it reads
    return paths


def checked_volatile_entries(entries: list[str]) -> list[str]:
    """`http_volatile`: JSONPaths of body fields, or response header names (`x-trace-*`)."""
    for entry in entries:
        if entry.startswith("$"):
            parse_json_path(entry)
        elif not _HEADER_NAME.fullmatch(entry):
            raise ValueError(
                f"{entry!r} is neither a JSONPath of a body field ('$.trace_id') nor a "
                "response header name ('x-trace-id', or 'x-trace-*' for every header "
                "starting so)"
            )
    return entries
