"""Nothing silent (issue 21, "What to build" 7): an expectation field's typo is an error with a
suggestion (and a way out for a genuine input of that name); ids and suite names refuse controls,
bidi controls, separators and zero-width characters; a cassette's `format` must be an integer.
(Unreadable case files are held in test_bounded_files.py / test_ours_only.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import SPY_SYSTEM, Project, error_block, make_case, output, seen_fields, suite_doc


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    """Passed, failed and error counts (a warning an in-process run may add is no outcome)."""
    counts = result.parseoutcomes()
    return {name: counts[name] for name in ("passed", "failed", "errors") if name in counts}


def _case_without(case_id: str, text: str, field: str, **typo: Any) -> dict[str, Any]:
    case = make_case(case_id, text, **typo)
    del case[field]
    return case


@pytest.mark.parametrize(
    ("typo", "meant", "value"),
    [("expected_tool", "expected_tools", ["nope"]), ("refrence", "reference", "wrong answer")],
)
def test_an_expectation_field_typo_is_an_error_with_a_suggestion_and_a_way_out(
    project: Project, typo: str, meant: str, value: Any
) -> None:
    """Break: a typo in a case's expectation field (`expected_tool`, `refrence`) is handed to the
    system and its stage is skipped, so the case passes; the error must say what to do when the
    field is a genuine input for the system."""
    bad = _case_without("c1", "alpha beta", meant, **{typo: value})
    project.write_suite(suite_doc(cases=[make_case("c0", "gamma delta"), bad]))
    result = project.run("--live", "-q")
    block = error_block(result, "c1")
    assert f"cases[1].{typo}: not a case field; did you mean {meant!r}?" in block, output(result)
    assert f'list it in the suite\'s "system_fields": ["{typo}"]' in block, output(result)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)
    assert not project.cassette_path("suite", "c1").exists()


def test_a_typo_in_a_conversation_turns_expectation_names_the_field_it_meant(
    project: Project,
) -> None:
    """Break: an expectation-field typo (`refrence`) in a conversation turn errors without the
    suggestion a case's typo gets."""
    turns = [{"input": "alpha beta", "refrence": "alpha beta"}, "gamma"]
    project.write_suite(
        suite_doc(cases=[make_case("c0", "gamma delta"), {"id": "c1", "turns": turns}])
    )
    result = project.run("-q")
    block = error_block(result, "c1")
    assert (
        "cases[1].turns[0].TurnModel.refrence: Extra inputs are not permitted (did you mean "
        "'reference'?)"
    ) in block, output(result)


def test_a_genuine_input_near_a_case_field_runs_when_the_suite_lists_it(project: Project) -> None:
    """Break (the way out): an input for the system whose name is near a case field's
    (`references`) could not be used at all; listed in the suite's `system_fields`, it reaches
    the system and is hashed into the key."""
    cases = [make_case("c1", "alpha beta", references=["doc-1"])]
    project.write_suite(suite_doc(cases=cases, system_fields=["references"]))
    result = project.run("--live", "-q")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert project.cassette_path("suite", "c1").exists()
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"][0].update(references=["d2"]))
    assert "stale recording" in output(project.run("-q"))  # the system's input: in the key


PEER_NAMES = {  # the field -> how its error begins: whose name it is
    "expected_output": "DeepEval's name for the gold answer",
    "expected_answer": "a common name for the gold answer",
    "ground_truth": "ragas's name for the gold answer before ragas 0.2",
    "gold_answer": "a common name for the gold answer",
    "expected": "Braintrust's name for the gold answer",
    "golden": "DeepEval's word for a gold case",
    "target": "inspect-ai's name for the gold answer",
}


def test_a_peers_name_for_the_gold_answer_is_an_error_never_an_input(project: Project) -> None:
    """Break (issue 29): a case from another tool names its gold answer as that tool does
    (`expected_output`, `ground_truth`, `target`, ...): the field was handed to the system as an
    input, the gating answer_accuracy stage was skipped (no reference) and the run passed with
    exit 0. Each is an error naming `reference`, the tool whose name it is, and the way out."""
    project.write_text("spy.py", SPY_SYSTEM)
    cases = [
        {"id": f"c-{name}", "input": "alpha beta", name: "the gold answer"} for name in PEER_NAMES
    ]
    project.write_suite(
        suite_doc(cases=cases, system="spy:run", stages=["answer_accuracy"], judge="lexical")
    )
    result = project.run("--live", "-q")
    assert result.ret != pytest.ExitCode.OK, output(result)
    for index, (name, peer) in enumerate(PEER_NAMES.items()):
        block = error_block(result, f"c-{name}")
        assert f"cases[{index}].{name}: {peer}" in block, block
        assert 'here the gold answer goes in "reference": rename the field' in block, block
        assert f'"system_fields": ["{name}"]' in block, block
    assert _outcomes(result) == {"errors": len(PEER_NAMES)}, output(result)
    assert seen_fields(project) == []  # the system never saw a gold answer


def test_a_peers_name_listed_in_system_fields_is_an_input_on_purpose(project: Project) -> None:
    """The way out: a field named as a peer names its gold answer (`target`) that is genuinely an
    input for the system runs when the suite lists it in `system_fields`, and reaches it."""
    project.write_text("spy.py", SPY_SYSTEM)
    cases = [make_case("c1", "alpha beta", target="the 'target' audience: children")]
    project.write_suite(
        suite_doc(cases=cases, system="spy:run", stages=["exact_match"], system_fields=["target"])
    )
    result = project.run("--live", "-q")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert seen_fields(project) == [["id", "input", "target"]]


UNSAFE = {
    "c1-control-U+0085": "next\u0085line",
    "bidi-U+202E": "evil\u202etxt.exe",
    "bidi-U+2067": "a\u2067b",
    "mark-U+200F": "a\u200fb",
    "line-separator-U+2028": "one\u2028two",
    "paragraph-separator-U+2029": "one\u2029two",
    "zero-width-space-U+200B": "alpha\u200b",
    "zero-width-joiner-U+200D": "al\u200dpha",
    "byte-order-mark-U+FEFF": "\ufeffalpha",
    "soft-hyphen-U+00AD": "alpha\xad",
    "variation-selector-U+FE0F": "alpha\ufe0f",
    "tag-U+E0041": "alpha\U000e0041",
}


@pytest.mark.parametrize("unsafe", list(UNSAFE.values()), ids=list(UNSAFE))
def test_an_id_with_an_invisible_or_control_character_is_refused(
    project: Project, unsafe: str
) -> None:
    """Break: ids with C1 controls (U+0085, which the docs forbid), U+202E, U+2028 or a
    zero-width space are accepted (they print like another id)."""
    project.write_suite(suite_doc(cases=[make_case("fine", "alpha beta"), make_case(unsafe, "x")]))
    result = project.run("--live", "-q")
    block = error_block(result, "cases[1]")
    assert "(cases[1]) cannot name a cassette file:" in block, output(result)
    code = next(ch for ch in unsafe if not ch.isascii())
    assert f"(U+{ord(code):04X}" in block and "are not allowed" in block, output(result)
    assert _outcomes(result) == {"passed": 1, "errors": 1}, output(result)
    recorded = {p.name for p in (project.root / "cassettes" / "suite").iterdir()}
    assert {name.split(".")[0] for name in recorded} == {"fine"}, recorded


@pytest.mark.parametrize("unsafe", ["suite\u202e", "sui\u200bte", "suite\u0085", "suite\xad"])
def test_a_suite_name_with_an_invisible_or_control_character_is_refused(
    project: Project, unsafe: str
) -> None:
    """Break: suite names with C1 controls, bidi controls or zero-width characters are
    accepted (the cassette folder prints like another suite's)."""
    project.write_suite(suite_doc(unsafe), "cases/hostile.json")
    result = project.run("--live", "-q")
    block = error_block(result, "cases/hostile.json")
    assert "cannot name a folder:" in block and "are not allowed" in block, output(result)
    assert not (project.root / "cassettes").exists() or not any(
        (project.root / "cassettes").iterdir()
    )


@pytest.mark.parametrize("fmt", ["99", 99.0, "2", 2.0, True], ids=repr)
def test_a_cassette_format_that_is_not_an_integer_is_refused(project: Project, fmt: Any) -> None:
    """Break: `"format": "99"` or `99.0` in a cassette replays as format 2."""
    project.write_suite(suite_doc(cases=[make_case("c1", "alpha beta")]))
    assert project.run("--live", "-q").ret == pytest.ExitCode.OK
    path = project.cassette_path("suite", "c1")
    doc = json.loads(path.read_text())
    doc["format"] = fmt
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))
    result = project.run("-q")
    block = error_block(result, "c1")
    assert f'cassette cassettes/suite/c1.json has "format": {fmt!r}, not a whole number' in block, (
        output(result)
    )
    assert "record again with --live" in block, output(result)


def test_a_suite_named_as_the_plugins_own_file_is_refused(project: Project) -> None:
    """Break (issue 30): a suite named `.live-run-in-progress.json` puts its cassette folder
    where a live run keeps its marker file, beside every other suite's folder."""
    project.write_suite(suite_doc(".live-run-in-progress.json"), "cases/hostile.json")
    result = project.run("--live", "-q")
    block = error_block(result, "cases/hostile.json")
    assert "cannot name a folder:" in block, output(result)
    assert "the plugin's own file" in block, output(result)
    assert not (project.root / "cassettes" / ".live-run-in-progress.json").is_dir()
