"""`schema`: the answer parses as JSON and validates against the case's `answer_schema`, else the
suite's (a JSON Schema; its `$schema` picks the draft, else 2020-12). Each violation is named by
its JSON path.

Needs the `jsonschema` package (the `schema` extra), imported on the first case that has an
`answer_schema`: a run that does not use this stage never imports it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ...core.errors import CaseFileError
from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .registry import register

MAX_LISTED = 20  # violations kept in the metrics (all are counted)
INSTALL_HINT = "pip install 'pytest-evalcases[schema]' (or pip install jsonschema)"


def _jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError:
        raise CaseFileError(
            f"the schema stage needs the jsonschema package, which is not installed: {INSTALL_HINT}"
        ) from None
    return jsonschema


def json_path(parts: Any) -> str:
    """`$.items[0].price` from a jsonschema error's absolute_path."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> Any:
    """One validator per distinct schema (cases of a suite usually share one)."""
    jsonschema = _jsonschema()
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)  # raises SchemaError for a schema that is not one
    return cls(schema)


def violations(answer: Any, schema: dict[str, Any] | bool, where: str) -> list[dict[str, str]]:
    """Each place `answer` breaks `schema`, as {"path", "message"}, sorted by path."""
    jsonschema = _jsonschema()
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
    except jsonschema.SchemaError as exc:
        raise CaseFileError(
            f"{where}: answer_schema is not a valid JSON Schema: {exc.message} (at "
            f"{json_path(exc.absolute_path)} of the schema); fix it in the case file"
        ) from None
    found = [
        {"path": json_path(error.absolute_path), "message": error.message}
        for error in validator.iter_errors(answer)
    ]
    return sorted(found, key=lambda v: (v["path"], v["message"]))


def score_schema(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    schema = case.answer_schema if case.answer_schema is not None else suite.answer_schema
    if schema is None:
        return skipped("no answer_schema")
    text = trace.get("answer") or ""
    try:
        answer = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or a number too long to read
        shown = text if len(text) <= 60 else text[:57] + "..."
        return StageResult(
            0.0, False, f"the answer is not JSON ({exc}): {shown!r}", 1.0, metrics={"parsed": False}
        )
    found = violations(answer, schema, f"case {case.id!r}")
    listed = [f"{v['path']}: {v['message']}" for v in found[:MAX_LISTED]]
    metrics = {"parsed": True, "violations": len(found), "errors": listed}
    if not found:
        return StageResult(
            1.0, True, "the answer is valid JSON and fits answer_schema", 1.0, metrics=metrics
        )
    count = f"{len(found)} violation{'s' if len(found) > 1 else ''}"
    return StageResult(0.0, False, f"{count}: {'; '.join(listed)}", 1.0, metrics=metrics)


register(Stage("schema", score_schema))
