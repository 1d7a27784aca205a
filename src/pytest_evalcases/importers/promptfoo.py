"""promptfoo: a test file, or a config's `tests:` (YAML)

    defaultTest: {vars: {...}, assert: [...]}        # applies to every test
    tests:
      - description: "..."
        vars: {question: "...", tier: "gold"}
        assert:
          - {type: contains, value: "Paris"}
          - {type: llm-rubric, value: "Is polite", threshold: 0.7}
          - {type: python, value: "len(output) < 200"}

(a top-level list of tests is read the same way). Each test is a case (`test-001`, ...): one
var is the case's `input` (`--input-var`, else the only var, else the one named input,
question, query, prompt or message); the other vars are case fields, inputs for the system as
they are promptfoo's prompt's (a var named as another tool names the gold answer is listed in
`system_fields`). `{{var}}` in an assertion's value is filled in from the test's vars.

Assertions map to stages:
- `equals`, `contains`, `icontains`, `regex` (and their `not-` forms): user stages in the module
  written next to the suite (promptfoo_stages.py), reading their values from the case;
- `is-json`: the built-in `schema` stage (the value, a JSON Schema, is the case's
  `answer_schema`; none: any JSON);
- `llm-rubric`: a rubric every test has (e.g. from defaultTest) is a judged stage the suite
  declares (`judged_stages`); one some tests have is the case's `rubric` (the built-in judged
  `rubric` stage);
- `python`: a user stage per distinct code (inline, or `file://path.py[:function]`).
Every other assertion (and what a mapped one sets that has no counterpart here: `transform`,
`provider`, a weight) is listed by the command and in the suite's `source.unmapped`, and kept
in the case's `metadata.promptfoo.assert` (with `"stage": null`): never dropped silently.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.field_checks import PEER_REFERENCE_NAMES
from ..core.schema import CaseModel
from .base import BenchmarkFormatError, Parsed, RecordReader, Unit
from .peer_files import numbered_id, read_yaml
from .promptfoo_stages import TEXT_CHECKS, PythonCheck, compiles, module_source

FORMAT = "promptfoo"
DESCRIPTION = "promptfoo: a test file or config (YAML tests: with vars and assert)"
OPTIONS = ("input_var",)
NEXT_STEP = "; fix the test in the file (promptfoo's test: description, vars, assert)"
INPUT_VARS = ("input", "question", "query", "prompt", "message")
DEFAULT_RUBRIC_THRESHOLD = 0.5
DEFAULT_PYTHON_THRESHOLD = 0.5
# Assertion keys that change what a check means, which no stage here reproduces.
CHANGES_MEANING = ("transform", "provider", "rubricPrompt", "contextTransform")
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def read(path: Path) -> list[Any]:
    """The tests, each with defaultTest's vars and assertions merged in (its own vars win)."""
    doc = read_yaml(path)
    default: Any = {}
    if isinstance(doc, dict):
        tests = doc.get("tests")
        default = doc.get("defaultTest") or {}
        if tests is None:
            raise BenchmarkFormatError(
                f"{path}: no `tests:` list; give the promptfoo config or test file that has one"
            )
        if isinstance(tests, str):
            raise BenchmarkFormatError(
                f"{path}: `tests: {tests}` loads its tests from another file; import that file"
            )
        if isinstance(default, str):
            raise BenchmarkFormatError(
                f"{path}: `defaultTest: {default}` loads from another file; inline it to import"
            )
    else:
        tests = doc
    if not isinstance(tests, list):
        raise BenchmarkFormatError(
            f"{path}: expected a list of tests (or a mapping with `tests:`), found "
            f"{type(tests).__name__}"
        )
    if not isinstance(default, dict):
        raise BenchmarkFormatError(f"{path}: defaultTest must be a mapping")
    merged = []
    for test in tests:
        if not isinstance(test, dict):
            merged.append(test)  # named by parse, with its position
            continue
        entry = dict(test)
        entry["vars"] = {**(default.get("vars") or {}), **(test.get("vars") or {})}
        entry["assert"] = [*(default.get("assert") or []), *(test.get("assert") or [])]
        entry["metadata"] = {**(default.get("metadata") or {}), **(test.get("metadata") or {})}
        for key in ("options", "threshold"):
            if key not in entry and key in default:
                entry[key] = default[key]
        merged.append(entry)
    return merged


def parse(path: Path, records: list[Any], input_var: str | None = None) -> Parsed:
    readers = [
        RecordReader(path, index, record, None, f"tests[{index}]", NEXT_STEP)
        for index, record in enumerate(records)
    ]
    for reader in readers:
        reader.get("vars", dict)
        reader.get("assert", list)
    chosen = _input_var(path, readers, input_var)
    rubrics = [_rubrics(reader) for reader in readers]
    shared = _shared_rubric(rubrics)
    plan = _Plan(path)
    units = [_unit(reader, len(readers), chosen, shared, plan) for reader in readers]
    return plan.parsed(units, shared)


def _input_var(path: Path, readers: list[RecordReader], wanted: str | None) -> str:
    names = list(dict.fromkeys(name for r in readers for name in r.record["vars"]))
    if wanted is None:
        if len(names) == 1:
            wanted = names[0]
        else:
            wanted = next((name for name in INPUT_VARS if name in names), None)
        if wanted is None:
            raise BenchmarkFormatError(
                f"{path}: which of the tests' vars is the input for your system "
                f"({', '.join(names) or 'none'})? pass --input-var NAME"
            )
    for reader in readers:
        if wanted not in reader.record["vars"]:
            raise reader.error(f"vars.{wanted}", "is missing (it is the input: --input-var)")
        value = reader.record["vars"][wanted]
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise reader.error(f"vars.{wanted}", f"is {type(value).__name__}, expected text")
    return wanted


def _filled(value: Any, variables: dict[str, Any]) -> tuple[Any, bool]:
    """An assertion's value with `{{var}}` filled in from the test's vars; False when it holds
    templating beyond that (filters, tags), which is not reproduced."""
    if not isinstance(value, str):
        return value, True

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(variables[name]) if name in variables else match.group(0)

    text = _VAR.sub(fill, value)
    return text, "{{" not in text and "{%" not in text


def _rubrics(reader: RecordReader) -> list[tuple[str, float]]:
    """The test's llm-rubric texts (filled in) and thresholds, for the shared-rubric check."""
    found = []
    for assertion in reader.record["assert"]:
        if isinstance(assertion, dict) and assertion.get("type") == "llm-rubric":
            text, plain = _filled(assertion.get("value"), reader.record["vars"])
            if plain and isinstance(text, str) and not _changes_meaning(assertion):
                threshold = assertion.get("threshold", DEFAULT_RUBRIC_THRESHOLD)
                found.append((text, float(threshold)))
    return found


def _shared_rubric(rubrics: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The rubrics every test has (same text, same threshold): judged stages of the suite."""
    if not rubrics:
        return []
    common = [rubric for rubric in rubrics[0] if all(rubric in other for other in rubrics[1:])]
    return list(dict.fromkeys(common))


def _changes_meaning(assertion: dict[str, Any]) -> list[str]:
    return [key for key in CHANGES_MEANING if key in assertion]


class _Plan:
    """The stages the file's assertions map to, gathered test by test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text_kinds: list[str] = []
        self.python: dict[tuple[Any, ...], PythonCheck] = {}
        self.schema = False
        self.case_rubric = False
        self.system_fields: list[str] = []

    def python_stage(self, reader: RecordReader, where: str, assertion: dict[str, Any]) -> str:
        value = assertion.get("value")
        if not isinstance(value, str) or not value.strip():
            raise reader.error(f"{where}.value", "must be Python code or file://path.py")
        threshold = float(assertion.get("threshold", DEFAULT_PYTHON_THRESHOLD))
        if value.startswith("file://"):
            target, _, function = value[len("file://") :].partition(":")
            file = (self.path.parent / target).resolve()
            if not file.is_file():
                raise reader.error(f"{where}.value", f"names {file}, which is not a file")
            key: tuple[Any, ...] = ("file", file, function or "get_assert", threshold)
        else:
            problem = compiles(value)
            if problem:
                raise reader.error(f"{where}.value", f"is not valid Python: {problem}")
            key = ("code", value, threshold)
        if key not in self.python:
            metric = assertion.get("metric")
            label = (
                re.sub(r"\W+", "_", metric).strip("_").lower() if isinstance(metric, str) else ""
            )
            stage = f"promptfoo_{label}" if label else f"promptfoo_python_{len(self.python) + 1}"
            if any(check.stage == stage for check in self.python.values()):
                stage = f"{stage}_{len(self.python) + 1}"
            if key[0] == "file":
                check = PythonCheck(stage, threshold, file=key[1], function=key[2])
            else:
                check = PythonCheck(stage, threshold, code=value)
            self.python[key] = check
        return self.python[key].stage

    def parsed(self, units: list[Unit], shared: list[tuple[str, float]]) -> Parsed:
        judged = {
            (f"promptfoo_rubric_{number}" if number > 1 else "promptfoo_rubric"): {
                "criteria": text,
                "reads": ["input", "answer"],
                "threshold": threshold,
            }
            for number, (text, threshold) in enumerate(shared, start=1)
        }
        stages = [TEXT_CHECKS[kind][0] for kind in self.text_kinds]
        stages += ["schema"] if self.schema else []
        stages += [check.stage for check in self.python.values()]
        stages += ["rubric"] if self.case_rubric else []
        stages += list(judged)
        if not stages:
            listed = sorted({item["type"] for unit in units for item in unit.unmapped})
            raise BenchmarkFormatError(
                f"{self.path}: no assertion of its tests maps to a stage here (not mapped: "
                f"{', '.join(listed) or 'no assertions at all'}); give the tests an assertion "
                "of a type that does (equals, contains, icontains, regex, is-json, llm-rubric, "
                "python)"
            )
        fields: dict[str, Any] = {}
        if judged:
            fields["judged_stages"] = judged
        if self.system_fields:
            fields["system_fields"] = self.system_fields
        parsed = Parsed(units, stages=stages, report_only=[], suite_fields=fields)
        if self.text_kinds or self.python:
            kinds, checks, path = list(self.text_kinds), list(self.python.values()), self.path

            def source(module_dir: Path, suite: str) -> str:
                return module_source(suite, path.name, kinds, checks, module_dir)

            parsed.modules["promptfoo"] = source
        return parsed


def _unit(
    reader: RecordReader,
    count: int,
    input_var: str,
    shared: list[tuple[str, float]],
    plan: _Plan,
) -> Unit:
    variables: dict[str, Any] = reader.record["vars"]
    case: dict[str, Any] = {
        "id": numbered_id("test", reader.index, count),
        "input": str(variables[input_var]),
    }
    for name, value in variables.items():
        if name == input_var:
            continue
        if name in CaseModel.model_fields:
            raise reader.error(
                f"vars.{name}",
                f"is named as a case field here ({name!r} means something of its own): rename "
                "the var",
            )
        if isinstance(value, str) and value.startswith("file://"):
            raise reader.error(f"vars.{name}", "loads a file (file://): inline its content")
        if name in PEER_REFERENCE_NAMES and name not in plan.system_fields:
            plan.system_fields.append(name)  # a var is an input: promptfoo's prompt reads it
        case[name] = value
    mapped: list[dict[str, Any]] = []
    unit = Unit(case)
    rubric_items: list[str] = []
    for number, assertion in enumerate(reader.record["assert"]):
        where = f"assert[{number}]"
        if not isinstance(assertion, dict) or not isinstance(assertion.get("type"), str):
            raise reader.error(where, "must be an assertion with a `type`")
        entry = {key: assertion[key] for key in ("type", "value", "threshold") if key in assertion}
        stage, why = _map(reader, where, assertion, variables, shared, plan, case, rubric_items)
        if stage is not None and "value" in entry:
            entry["value"] = _filled(entry["value"], variables)[0]
        entry["stage"] = stage
        mapped.append(entry)
        if why:
            unit.unmapped.append({"case": case["id"], "type": assertion["type"], "why": why})
    if rubric_items:
        case["rubric"] = rubric_items
    metadata: dict[str, Any] = dict(reader.record.get("metadata") or {})
    promptfoo: dict[str, Any] = {"vars": variables, "assert": mapped}
    description = reader.record.get("description")
    if isinstance(description, str) and description:
        promptfoo["description"] = description
    for key in ("options", "threshold"):
        if key in reader.record:
            promptfoo[key] = reader.record[key]
            unit.unmapped.append(
                {"case": case["id"], "type": f"test {key}", "why": "not reproduced here"}
            )
    metadata["promptfoo"] = promptfoo
    case["metadata"] = metadata
    return unit


def _map(
    reader: RecordReader,
    where: str,
    assertion: dict[str, Any],
    variables: dict[str, Any],
    shared: list[tuple[str, float]],
    plan: _Plan,
    case: dict[str, Any],
    rubric_items: list[str],
) -> tuple[str | None, str | None]:
    """(the stage an assertion maps to or None, why it is listed as not mapped or None)."""
    kind = assertion["type"]
    changes = _changes_meaning(assertion)
    if changes:
        return None, f"sets {', '.join(changes)}, which no stage here reproduces"
    value, plain = _filled(assertion.get("value"), variables)
    if not plain:
        return None, "its value uses templating beyond {{var}}"
    weight = assertion.get("weight")
    note = f"weight {weight} not reproduced (stages here are not weighted)" if weight else None
    if kind in TEXT_CHECKS:
        if value is None or (isinstance(value, str) and value.startswith("file://")):
            return None, "needs an inline value"
        if kind not in plan.text_kinds:
            plan.text_kinds.append(kind)
        if kind == "equals" and isinstance(value, str) and "reference" not in case:
            case["reference"] = value  # the gold answer, for judged stages a user adds
        return TEXT_CHECKS[kind][0], note
    if kind == "is-json":
        if value is not None and not isinstance(value, dict):
            return None, "its schema is not an inline JSON Schema object"
        if "answer_schema" in case:
            return None, "a second is-json (a case has one answer_schema)"
        case["answer_schema"] = value if value is not None else True
        plan.schema = True
        return "schema", note
    if kind == "llm-rubric":
        if not isinstance(value, str) or not value.strip():
            return None, "its rubric is not text"
        threshold = float(assertion.get("threshold", DEFAULT_RUBRIC_THRESHOLD))
        if (value, threshold) in shared:
            number = shared.index((value, threshold)) + 1
            return (f"promptfoo_rubric_{number}" if number > 1 else "promptfoo_rubric"), note
        rubric_items.append(value)
        plan.case_rubric = True
        if "threshold" in assertion:
            note = "its threshold is the suite's rubric threshold here"
        return "rubric", note
    if kind == "python":
        return plan.python_stage(reader, where, assertion), note
    return None, "no counterpart here"


__all__ = ["FORMAT", "parse", "read"]
