"""Clear errors (issue 21, "What to build" 10): deep nesting, lone surrogates, invalid JSON Schemas
and wrong-shaped cassette fields each give one error naming the file, the case and the field,
never a raw traceback; the MuSiQue importer accepts an empty `answer` on an unanswerable record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc

from pytest_evalcases.__main__ import main
from pytest_evalcases.store.cassette import integrity_of


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    """Passed, failed and error counts (a warning an in-process run may add is no outcome)."""
    counts = result.parseoutcomes()
    return {name: counts[name] for name in ("passed", "failed", "errors") if name in counts}


# A system whose trace for a case is steered by the case id: 100,000 nested lists, a lone
# surrogate in the answer, or a plain good trace.
HOSTILE_SYSTEM = """\
def _deep(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


def run(case):
    text = case["input"]
    trace = {"answer": text, "tool_calls": [{"name": "search", "args": {"query": text}}],
             "retrieved": text.split(), "context": [text]}
    if case["id"] == "deep":
        trace["steps"] = _deep(100_000)
    if case["id"] == "surrogate":
        trace["answer"] = "caf\\ud800"
    return trace
"""

RAW_TRACEBACK_MARKERS = ("Traceback", "RecursionError", "PydanticSerializationError", "INTERNAL")


def _hostile_project(project: Project, *cases: dict[str, Any], **suite: Any) -> None:
    project.write_text("hostilesys.py", HOSTILE_SYSTEM)
    project.write_suite(suite_doc(cases=list(cases), system="hostilesys:run", **suite))


def _no_raw_traceback(text: str) -> None:
    for marker in RAW_TRACEBACK_MARKERS:
        assert marker not in text, f"{marker!r} in output:\n{text}"


def test_a_trace_nested_100000_deep_under_live_is_one_error_naming_case_and_field(
    project: Project,
) -> None:
    """Break: a 100,000-deep trace returned under --live gives a RecursionError traceback."""
    _hostile_project(project, make_case("deep", "alpha beta"), make_case("fine", "gamma delta"))
    result = project.run("--live", "-q")
    block = error_block(result, "deep")
    assert "malformed trace for suite::deep: " in block, output(result)
    assert "$.steps[0][0]" in block and "nests deeper than 100 levels" in block, output(result)
    _no_raw_traceback(block)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)
    assert not project.cassette_path("suite", "deep").exists()


def test_a_trace_nested_100000_deep_in_a_cassette_is_one_error_naming_the_file(
    project: Project,
) -> None:
    """Break: a 100,000-deep trace in a cassette gives a RecursionError traceback at replay.
    (The cassette reader already refused it, naming the file: this test keeps it so.)"""
    project.write_suite(
        suite_doc(cases=[make_case("deep", "alpha beta"), make_case("fine", "gamma delta")])
    )
    assert project.run("--live", "-q").ret == 0
    path = project.cassette_path("suite", "deep")
    text = path.read_text()
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(text.replace('"trace": {', f'"trace": {{"steps": {deep}, ', 1))
    result = project.run("-q")
    block = error_block(result, "deep")
    assert "cassette cassettes/suite/deep.json is not valid JSON" in block, output(result)
    assert "record again with --live" in block, output(result)
    _no_raw_traceback(block)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)


def test_a_lone_surrogate_in_the_answer_under_live_is_one_error_naming_the_field(
    project: Project,
) -> None:
    """Break: a lone surrogate in an answer (`"\\ud800"`) gives PydanticSerializationError when
    the trace is saved under --live."""
    _hostile_project(
        project, make_case("surrogate", "alpha beta"), make_case("fine", "gamma delta")
    )
    result = project.run("--live", "-q")
    block = error_block(result, "surrogate")
    assert "malformed trace for suite::surrogate: " in block, output(result)
    assert "$.answer holds a lone surrogate" in block, output(result)
    _no_raw_traceback(block)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)
    assert not project.cassette_path("suite", "surrogate").exists()


def test_an_answer_schema_that_is_not_a_json_schema_is_reported_as_one(project: Project) -> None:
    """Break: `answer_schema: {"type": 12}` is never reported as an invalid schema (the answer is
    not JSON, so the stage fails on that and the schema is never looked at)."""
    bad = make_case("bad-schema", "alpha beta", answer_schema={"type": 12})
    _hostile_project(project, bad, make_case("fine", "gamma delta"), stages=["tools", "schema"])
    result = project.run("--live", "-q")
    block = error_block(result, "bad-schema")
    assert "cases/suite.json: invalid case bad-schema" in block, output(result)
    assert "cases[0].answer_schema: Value error, not a valid JSON Schema" in block, output(result)
    assert "$.type" in block, output(result)
    _no_raw_traceback(block)


def _rewrite_trace(project: Project, case_id: str, edit: Any) -> None:
    """Edit a recorded cassette as a tool would, its content hashes made to match (so only the
    shape of what it holds is wrong)."""
    path = project.cassette_path("suite", case_id)
    doc = json.loads(path.read_text())
    edit(doc)
    doc["integrity"] = integrity_of(
        doc["trace"], doc.get("verdicts") or {}, doc["integrity"].get("http")
    )
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))


WRONG_SHAPES = {
    "tool_calls": "x",
    "retrieved": 5,
    "context": {"a": 1},
    "tool_outputs": "text",
    "answer": ["a", "list"],
    "usage": 3,
    "latency_ms": "slow",
    "tool_calls[0].args": [{"name": "search", "args": "q"}],
}


@pytest.mark.parametrize(("field", "value"), list(WRONG_SHAPES.items()), ids=list(WRONG_SHAPES))
def test_a_wrong_shaped_trace_field_in_a_cassette_is_one_error_naming_it(
    project: Project, field: str, value: Any
) -> None:
    """Break: wrong-shaped trace fields in a cassette (`"tool_calls": "x"`, `"retrieved": 5`)
    raise raw AttributeError/TypeError at replay."""
    project.write_suite(
        suite_doc(
            cases=[make_case("c1", "alpha beta"), make_case("c2", "gamma delta")],
            stages=["tools", "retrieval", "exact_match", "token_f1"],
        )
    )
    assert project.run("--live", "-q").ret == 0
    top = field.split("[")[0]
    _rewrite_trace(project, "c1", lambda doc: doc["trace"].__setitem__(top, value))
    result = project.run("-q")
    block = error_block(result, "c1")
    assert "cassette cassettes/suite/c1.json of suite::c1: " in block, output(result)
    assert f"trace.{field}" in block, output(result)
    _no_raw_traceback(block)
    for raw in ("AttributeError", "TypeError"):
        assert raw not in block, output(result)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)


def _verdict_as_a_list(doc: dict[str, Any]) -> None:
    doc["verdicts"]["faithfulness"] = [doc["verdicts"]["faithfulness"]]


def _verdict_key_as_a_list(doc: dict[str, Any]) -> None:
    doc["verdicts"]["faithfulness"]["key"] = ["judge", "lexical"]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_verdict_as_a_list, "malformed verdict for faithfulness"),
        (_verdict_key_as_a_list, "verdicts.faithfulness.key is list, not an object"),
    ],
    ids=["verdict", "verdict-key"],
)
def test_a_verdict_that_is_a_list_in_a_cassette_is_one_error_naming_it(
    project: Project, edit: Any, named: str
) -> None:
    """Break: a verdict that is a list (or holds a list where an object belongs) in a cassette
    raises a raw error at replay (`ValueError: dictionary update sequence element #0`)."""
    project.write_suite(
        suite_doc(
            cases=[make_case("c1", "alpha beta"), make_case("c2", "gamma delta")],
            stages=["tools", "faithfulness"],
            judge="lexical",
        )
    )
    assert project.run("--live", "-q").ret == 0
    _rewrite_trace(project, "c1", edit)
    result = project.run("-q")
    block = error_block(result, "c1")
    assert "cassettes/suite/c1.json" in block and named in block, output(result)
    _no_raw_traceback(block)
    assert "Error:" not in block, output(result)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)


MUSIQUE_UNANSWERABLE = {
    "id": "2hop__9_9",
    "paragraphs": [
        {"idx": 0, "title": "Ostmere", "paragraph_text": "A port.", "is_supporting": False}
    ],
    "question": "Who founded Ostmere?",
    "question_decomposition": [
        {"id": 1, "question": "Which town?", "answer": "Ostmere", "paragraph_support_idx": 0},
        {"id": 2, "question": "Who founded #1?", "answer": "", "paragraph_support_idx": None},
    ],
    "answer": "",
    "answer_aliases": [],
    "answerable": False,
}


def test_musique_accepts_an_unanswerable_record_with_an_empty_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break: the MuSiQue importer refuses an unanswerable record whose `answer` is empty."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "musique.jsonl").write_text(json.dumps(MUSIQUE_UNANSWERABLE) + "\n")
    assert main(["import", "musique", "musique.jsonl", "-o", "cases/bench.json"]) == 0
    (case,) = json.loads((tmp_path / "cases" / "bench.json").read_text())["cases"]
    assert case["unanswerable"] is True
    assert case["reference"] == "The paragraphs do not answer this question."
    assert case["metadata"]["answer"] == ""
