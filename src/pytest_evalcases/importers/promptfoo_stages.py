"""The Python module a promptfoo import writes next to its suite: one user stage per kind of
promptfoo check that has no built-in counterpart (`equals`, `contains`, `icontains`, `regex`,
their `not-` forms, and each distinct `python` assertion), registered with `ev.stage` and named
in the suite's `stage_modules`.

Each stage reads the values to check from the case's `metadata["promptfoo"]["assert"]` (the
assertions the import mapped to it), so the suite stays the one place a check's value lives. A
case none of whose assertions maps to a stage is skipped there (`ev.Score(None, reason=...)`):
every stage of a suite runs on every case.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

# promptfoo type -> (stage name, how the answer is checked against one value, in the module)
TEXT_CHECKS: dict[str, tuple[str, str]] = {
    "equals": ("promptfoo_equals", "_equals(answer, value)"),
    "contains": ("promptfoo_contains", "str(value) in answer"),
    "icontains": ("promptfoo_icontains", "str(value).lower() in answer.lower()"),
    "regex": ("promptfoo_regex", "re.search(str(value), answer) is not None"),
}
TEXT_CHECKS.update(
    {
        f"not-{kind}": (stage.replace("promptfoo_", "promptfoo_not_"), f"not ({check})")
        for kind, (stage, check) in list(TEXT_CHECKS.items())
    }
)

HEADER = '''"""User stages for {suite}, written by
`python -m pytest_evalcases import promptfoo {source}` from its assertions ({kinds}).
The suite names this module in "stage_modules".

Each stage checks the values the case's metadata["promptfoo"]["assert"] gives it; a case with no
such assertion is skipped here (ev.Score(None)). Edit the values in the suite; edit
this module to change how a check is made.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path

import pytest_evalcases as ev

HERE = Path(__file__).resolve().parent


def _assertions(case, stage):
    """The case's promptfoo assertions mapped to `stage`."""
    metadata = getattr(case, "metadata", None)
    if metadata is None:
        metadata = case.fields.get("metadata")
    found = ((metadata or {{}}).get("promptfoo") or {{}}).get("assert") or []
    return [assertion for assertion in found if assertion.get("stage") == stage]


def _vars(case):
    metadata = getattr(case, "metadata", None)
    if metadata is None:
        metadata = case.fields.get("metadata")
    return dict(((metadata or {{}}).get("promptfoo") or {{}}).get("vars") or {{}})


def _not_asserted(stage):
    """Not this case's check: skipped (`ev.Score(None)`), as a built-in stage with nothing to
    compare."""
    return ev.Score(None, reason=f"no assertion of this case maps to {{stage}}")


def _equals(answer, value):
    """promptfoo's equals: the same text; an object or list value: the same JSON."""
    if isinstance(value, (dict, list)):
        try:
            return json.loads(answer) == value
        except ValueError:
            return False
    return answer == str(value)


def _each(case, trace, stage, holds):
    """The share of the case's `stage` assertions whose value holds for the answer."""
    found = _assertions(case, stage)
    if not found:
        return _not_asserted(stage)
    answer = trace.answer if isinstance(trace.answer, str) else json.dumps(trace.answer)
    failed = [assertion["value"] for assertion in found if not holds(answer, assertion["value"])]
    held = len(found) - len(failed)
    reason = f"{{held}} of {{len(found)}} held" + (f"; failed: {{failed!r}}" if failed else "")
    return ev.Score(held / len(found), reason=reason)


def _graded(result, threshold):
    """A promptfoo python assertion's result (bool, number, or {{"pass", "score", "reason"}}) as
    a score."""
    if isinstance(result, dict):
        passed = result.get("pass")
        score = result.get("score", 1.0 if passed else 0.0)
        value = min(max(float(score), 0.0), 1.0)
        if passed is False and value >= threshold:  # promptfoo's own pass: false wins
            value = 0.0
        return ev.Score(value, reason=str(result.get("reason") or f"pass: {{passed}}"))
    if isinstance(result, bool):
        return ev.Score(1.0 if result else 0.0, reason=f"returned {{result}}")
    if isinstance(result, (int, float)):
        return ev.Score(min(max(float(result), 0.0), 1.0), reason=f"returned {{result}}")
    raise TypeError(f"a promptfoo python assertion returned {{type(result).__name__}}")


def _context(case, assertion):
    """What promptfoo hands a python assertion as `context`."""
    variables = _vars(case)
    return {{
        "prompt": case.input,
        "vars": variables,
        "test": {{"vars": variables}},
        "config": assertion.get("config") or {{}},
    }}


@functools.lru_cache(maxsize=None)
def _load(relative, function):
    """A function of a Python file named by a `file://` assertion, relative to this module."""
    path = (HERE / relative).resolve()
    spec = importlib.util.spec_from_file_location(f"promptfoo_assert_{{path.stem}}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)
'''

TEXT_STAGE = '''

@ev.stage({stage!r}, threshold=1.0)
def {function}(case, trace):
    """promptfoo's {kind}, over each of the case's {kind} values."""
    return _each(case, trace, {stage!r}, lambda answer, value: {check})
'''

PYTHON_STAGE = '''

def _{function}_code(output, context):
{body}


@ev.stage({stage!r}, threshold={threshold!r})
def {function}(case, trace):
    """promptfoo python assertion{where}."""
    found = _assertions(case, {stage!r})
    if not found:
        return _not_asserted({stage!r})
    return _graded(_{function}_code(trace.answer, _context(case, found[0])), {threshold!r})
'''


@dataclass(frozen=True, slots=True)
class PythonCheck:
    """One distinct promptfoo `python` assertion: inline code, or a function of a file."""

    stage: str
    threshold: float
    code: str | None = None  # inline: one expression, or a function body that returns
    file: Path | None = None  # file://path.py[:function]
    function: str = "get_assert"


def module_source(
    suite: str, source: str, text_kinds: list[str], python: list[PythonCheck], module_dir: Path
) -> str:
    """The module's text: the stages for the text checks used and each python assertion."""
    kinds = ", ".join([*text_kinds, *(["python"] if python else [])])
    parts = [HEADER.format(suite=suite, source=source, kinds=kinds)]
    for kind in text_kinds:
        stage, check = TEXT_CHECKS[kind]
        parts.append(TEXT_STAGE.format(stage=stage, function=stage, kind=kind, check=check))
    for item in python:
        parts.append(_python_stage(item, module_dir))
    return "".join(parts)


def _python_stage(item: PythonCheck, module_dir: Path) -> str:
    if item.file is not None:
        relative = Path(os.path.relpath(item.file, module_dir)).as_posix()
        body = f"    return _load({relative!r}, {item.function!r})(output, context)"
        where = f" ({relative}:{item.function})"
    else:
        code = textwrap.dedent(item.code or "").strip("\n")
        if "\n" not in code.strip():  # one line: an expression (promptfoo's own rule)
            code = f"return {code.strip()}"
        body = textwrap.indent(code, "    ")
        where = ""
    return PYTHON_STAGE.format(
        function=item.stage, stage=item.stage, threshold=item.threshold, body=body, where=where
    )


def compiles(code: str) -> str | None:
    """Why an inline python assertion would not compile as the module writes it, or None."""
    code = textwrap.dedent(code).strip("\n")
    if "\n" not in code.strip():
        code = f"return {code.strip()}"
    try:
        compile("def check(output, context):\n" + textwrap.indent(code, "    "), "<assert>", "exec")
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    return None


__all__ = ["TEXT_CHECKS", "PythonCheck", "compiles", "module_source"]
