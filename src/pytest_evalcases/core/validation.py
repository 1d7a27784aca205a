"""Messages for bad case files: a validation error as one line per field path, and the near-miss
field names of a case (`expected_doc`: did you mean `expected_docs`?)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .schema import CaseModel


def misspelled_fields(extra: Mapping[str, Any] | None) -> list[str]:
    """`<field>: ... did you mean '<known>'?` for each extra field of a case that is a near miss
    of a case field (`expected_doc`): a typo would reach the system as an input and the stage it
    meant would silently not run. Fields far from every known one stay inputs."""
    if not extra:
        return []
    import difflib  # only for a case with extra fields: not on every replay's path

    known = list(CaseModel.model_fields)
    problems = []
    for name in extra:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if close:
            problems.append(
                f"{name}: not a case field; did you mean {close[0]!r}? (other fields reach the "
                "system as inputs)"
            )
    return problems


def format_validation_error(error: ValidationError, prefix: str = "") -> str:
    """One line per problem, each naming the field path: `cases[3].input: Field required`."""
    lines = []
    for item in error.errors():
        path = prefix
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        lines.append(f"{path or '<root>'}: {item['msg']}")
    return "\n".join(lines)
