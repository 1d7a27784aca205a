"""`python -m pytest_evalcases import deepeval|promptfoo|inspect-ai|ragas FILE`: each format on a
small file in that tool's own format (tests/data/peers/: the DeepEval files written by DeepEval's
own `save_as`, the others as each tool's docs and writers lay them out), what each field becomes,
the stage module a promptfoo file gets (run here against a stand-in for `ev.stage`, the shape
the user-stage feature registers), sampling, and bad files: one error naming the file, the row
and the next step, nothing written."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pytest_evalcases
from pytest_evalcases.__main__ import main
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.core.validation import misspelled_fields

from .conftest import written_files

PEERS = Path(__file__).parents[2] / "data" / "peers"


def run_import(fmt: str, source: Path | str, *args: str) -> int:
    return main(["import", fmt, str(source), "-o", "cases/peer.json", *args])


def imported(fmt: str, file: str, *args: str) -> dict[str, Any]:
    assert run_import(fmt, PEERS / file, *args) == 0
    suite = json.loads(Path("cases/peer.json").read_text())
    Suite.model_validate(suite)  # the plugin loads it
    for case in suite["cases"]:
        extra = validate_case(case).extra
        assert misspelled_fields(extra, suite.get("system_fields", ())) == [], case["id"]
    return suite


# ---- DeepEval --------------------------------------------------------------------------------


@pytest.mark.parametrize("file", ["deepeval_goldens.json", "deepeval_goldens.csv"])
def test_deepeval_goldens_map_to_cases_from_json_and_csv_alike(project: Path, file: str) -> None:
    suite = imported("deepeval", file)

    first, second, third = suite["cases"]
    assert first == {
        "id": "refund-window",  # the golden's name
        "input": "How many days do I have to ask for a refund?",
        "reference": "You can ask for a refund within 30 days of purchase.",
        "expected_context": [
            "Refunds are accepted within 30 days of purchase.",
            "Refunds go back to the original payment method.",
        ],
        "expected_tools": [{"name": "search_policies", "args": {"topic": "refunds"}}],
        "metadata": {
            "team": "billing",
            "difficulty": "easy",
            "deepeval": {"comments": "from the support FAQ", "source_file": "faq.md"},
        },
    }
    assert second["id"] == "golden-002" and second["expected_tools"] == ["lookup_order"]
    # What the golden recorded of a run is kept aside, never an input, never graded.
    assert second["metadata"]["recorded"] == {
        "actual_output": "Yes, until the parcel ships.",
        "retrieval_context": ["Addresses can be changed until shipping."],
        "tools_called": [{"name": "lookup_order", "type": "FUNCTION"}],
    }
    assert "expected_output" not in third and third["reference"].startswith("Yes, we ship")
    assert suite["stages"] == ["answer_accuracy", "tools"]
    assert suite["report_only"] == ["token_f1", "context_coverage"]
    assert suite["source"]["recorded_outputs"] == 1


def test_a_tools_expected_output_is_kept_where_the_tools_stage_does_not_check_it(
    project: Path,
) -> None:
    tool = {"name": "lookup_order", "inputParameters": {"id": 7}, "output": {"status": "sent"}}
    (project / "goldens.json").write_text(json.dumps([{"input": "q", "expected_tools": [tool]}]))
    assert run_import("deepeval", "goldens.json") == 0
    case = json.loads(Path("cases/peer.json").read_text())["cases"][0]
    assert case["expected_tools"] == [{"name": "lookup_order", "args": {"id": 7}}]
    assert case["metadata"]["deepeval"]["expected_tools"] == [tool]


def test_a_multi_turn_golden_is_refused_with_the_next_step(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "convo.json").write_text(json.dumps([{"scenario": "angry customer", "turns": []}]))
    assert run_import("deepeval", "convo.json") == 2
    err = capsys.readouterr().err
    assert "convo.json: record 0: field 'scenario' makes this a multi-turn golden" in err
    assert "import a dataset of single-turn goldens" in err


# ---- inspect-ai ------------------------------------------------------------------------------


def test_inspect_ai_samples_map_target_id_metadata_and_chat_messages(project: Path) -> None:
    suite = imported("inspect-ai", "inspect_samples.jsonl")

    first, second, third = suite["cases"]
    assert first == {
        "id": "capital-fr",
        "input": "What is the capital of France?",
        "reference": "Paris",
        "metadata": {"topic": "geography"},
    }
    # A chat-message input: the last user message is the input, the list an input as well.
    assert second["id"] == "2" and second["input"] == "Which planet is known as the red planet?"
    assert second["messages"][0] == {"role": "system", "content": "Answer in one word."}
    assert second["reference"] == "Mars" and second["reference_aliases"] == ["Planet Mars"]
    assert third["id"] == "sample-003" and third["choices"] == ["4", "6", "7"]
    assert third["metadata"]["inspect_ai"] == {"files": {"notes.txt": "primes have two divisors"}}
    assert "target" not in third and third["reference"] == "C"
    assert suite["stages"] == ["answer_accuracy"]


# ---- ragas -----------------------------------------------------------------------------------


@pytest.mark.parametrize("file", ["ragas_dataset.jsonl", "ragas_dataset.csv", "ragas_legacy.json"])
def test_a_ragas_dataset_keeps_recorded_responses_aside(project: Path, file: str) -> None:
    suite = imported("ragas", file)

    first, second, third = suite["cases"]
    assert first["id"] == "sample-001"
    assert first["input"] == "When was the Harbour Lantern Museum opened?"
    assert first["reference"] == "1911"
    assert second["metadata"]["recorded"] == {
        "response": "The Vell, it's said, runs through it.",
        "retrieved_contexts": ["Ostmere is a small port town.", "The Vell runs to the sea."],
    }
    assert "response" not in second  # never an input for the system
    assert third == {
        "id": "sample-003",
        "input": "Who founded the museum?",
        "reference": "Anna Brisk",
    }
    assert suite["source"]["recorded_outputs"] == 2
    if file == "ragas_legacy.json":  # question/ground_truth/answer/contexts, ragas before 0.2
        assert suite["source"]["legacy_names"] == "question, ground_truth, answer, contexts"
        assert "expected_context" not in first
    else:
        assert first["expected_context"] == [
            "The Harbour Lantern Museum opened in 1911 in Ostmere."
        ]
        assert second["metadata"]["ragas"]["rubrics"]["score5_description"] == "names the Vell"


def test_the_command_says_what_it_kept_aside(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_import("ragas", PEERS / "ragas_dataset.jsonl") == 0
    out = capsys.readouterr().out
    assert "2 cases hold outputs the file recorded (kept in metadata.recorded, never graded)" in out


# ---- promptfoo -------------------------------------------------------------------------------


def test_promptfoo_tests_map_their_assertions_to_stages(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = imported("promptfoo", "promptfooconfig.yaml")

    assert suite["stages"] == [
        "promptfoo_contains",
        "promptfoo_icontains",
        "promptfoo_regex",
        "promptfoo_equals",
        "schema",
        "promptfoo_python_1",
        "promptfoo_python_2",
        "rubric",
        "promptfoo_rubric",
    ]
    # defaultTest's rubric is on every test: a judged stage the suite declares.
    assert suite["judged_stages"] == {
        "promptfoo_rubric": {
            "criteria": "The answer is courteous and does not blame the customer.",
            "reads": ["input", "answer"],
            "threshold": 0.7,
        }
    }
    assert suite["stage_modules"] == ["cases.peer_promptfoo"]
    assert (project / "cases" / "peer_promptfoo.py").is_file()
    refund, status, greeting = suite["cases"]
    assert refund["input"] == "How many days do I have to ask for a refund?"
    assert refund["max_words"] == 40  # a var: an input for the system, as promptfoo's prompt's
    assert status["order"] == "1042"
    assert status["answer_schema"] == {"type": "object", "required": ["order", "status"]}
    icontains = status["metadata"]["promptfoo"]["assert"][2]
    assert icontains == {"type": "icontains", "value": "1042", "stage": "promptfoo_icontains"}
    # One test's own rubric: the case's rubric item, for the built-in judged rubric stage.
    assert greeting["rubric"] == ["The greeting uses the customer's name."]
    assert greeting["reference"] == "Hello, Ada!"  # equals' value is the gold answer
    assert greeting["expected"] == "Hello, Ada!" and suite["system_fields"] == ["expected"]
    # No counterpart: listed in the suite's source and by the command, kept in the case.
    assert suite["source"]["unmapped"] == [
        {"case": "test-003", "type": "similar", "why": "no counterpart here"},
        {"case": "test-003", "type": "javascript", "why": "no counterpart here"},
    ]
    kept = [a for a in greeting["metadata"]["promptfoo"]["assert"] if a["stage"] is None]
    assert [a["type"] for a in kept] == ["similar", "javascript"]
    out = capsys.readouterr().out
    assert "not reproduced here (2; listed in the suite's source.unmapped):" in out
    assert "  similar: no counterpart here (test-003)" in out
    assert "wrote cases/peer_promptfoo.py" in out


class _Registry:
    """A stand-in for the user-stage feature's `ev.stage` and `ev.Score` (issue 29 part 1):
    `@ev.stage(name, threshold=...)` over `(case, trace)`, returning a score with a reason
    (`ev.Score(None, reason=...)`: the stage does not apply to the case)."""

    def __init__(self) -> None:
        self.stages: dict[str, tuple[Any, float]] = {}

    def stage(self, name: str, threshold: float) -> Any:
        def register(function: Any) -> Any:
            self.stages[name] = (function, threshold)
            return function

        return register

    @staticmethod
    def Score(value: float | None, reason: str = "") -> SimpleNamespace:  # noqa: N802 (ev.Score)
        return SimpleNamespace(value=value, reason=reason)


def _load_module(path: Path, registry: _Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_evalcases, "stage", registry.stage, raising=False)
    monkeypatch.setattr(pytest_evalcases, "Score", registry.Score, raising=False)
    spec = importlib.util.spec_from_file_location("written_stages", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "written_stages", module)
    spec.loader.exec_module(module)


def test_the_written_stage_module_checks_each_case_by_its_own_values(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = imported("promptfoo", "promptfooconfig.yaml")
    registry = _Registry()
    _load_module(project / "cases" / "peer_promptfoo.py", registry, monkeypatch)
    assert set(registry.stages) == {s for s in suite["stages"] if s.startswith("promptfoo_")} - {
        "promptfoo_rubric"  # judged: declared by the suite, not written here
    }
    cases = {c["id"]: SimpleNamespace(**c, fields={}) for c in suite["cases"]}

    def score(stage: str, case_id: str, answer: str) -> tuple[float | None, str]:
        function, _ = registry.stages[stage]
        result = function(cases[case_id], SimpleNamespace(answer=answer))
        return result.value, result.reason

    assert score("promptfoo_contains", "test-001", "Within 30 days, yes.")[0] == 1.0
    assert score("promptfoo_contains", "test-001", "Within a month.") == (
        0.0,
        "0 of 1 held; failed: ['30 days']",
    )
    assert score("promptfoo_contains", "test-002", "anything") == (  # skipped: not its check
        None,
        "no assertion of this case maps to promptfoo_contains",
    )
    json_answer = '{"order": "1042", "status": "shipped"}'
    assert score("promptfoo_icontains", "test-002", json_answer.upper())[0] == 1.0
    assert score("promptfoo_regex", "test-002", json_answer)[0] == 1.0
    assert score("promptfoo_regex", "test-002", '{"status": "lost"}')[0] == 0.0
    assert score("promptfoo_equals", "test-003", "Hello, Ada!")[0] == 1.0
    assert score("promptfoo_equals", "test-003", "hello, ada!")[0] == 0.0  # promptfoo: exact
    as_json = {"type": "equals", "value": {"order": 1042}, "stage": "promptfoo_equals"}
    cases["json"] = SimpleNamespace(input="q", metadata={"promptfoo": {"assert": [as_json]}})
    assert score("promptfoo_equals", "json", '{"order":  1042}')[0] == 1.0  # the same JSON
    assert score("promptfoo_equals", "json", "order 1042")[0] == 0.0
    assert score("promptfoo_python_2", "test-003", "Hello there") == (1.0, "returned True")
    assert score("promptfoo_python_2", "test-003", "Hi")[0] == 0.0
    # file://checks/length.py:short_enough, with promptfoo's context (vars.max_words is 40)
    assert score("promptfoo_python_1", "test-001", "ok " * 10) == (1.0, "10 words (limit 40)")
    assert score("promptfoo_python_1", "test-001", "word " * 41)[0] == 0.0
    assert registry.stages["promptfoo_contains"][1] == 1.0


def test_promptfoo_needs_to_know_which_var_is_the_input(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = (
        "tests:\n  - vars: {city: Paris, country: France}\n"
        "    assert: [{type: contains, value: Paris}]\n"
    )
    (project / "tests.yaml").write_text(tests)
    assert run_import("promptfoo", "tests.yaml") == 2
    err = capsys.readouterr().err
    assert (
        "tests.yaml: which of the tests' vars is the input for your system (city, country)?" in err
    )
    assert "pass --input-var NAME" in err
    assert run_import("promptfoo", "tests.yaml", "--input-var", "city") == 0
    case = json.loads(Path("cases/peer.json").read_text())["cases"][0]
    assert case["input"] == "Paris" and case["country"] == "France"
    assert run_import("ragas", PEERS / "ragas_dataset.jsonl", "--input-var", "x", "--force") == 2
    assert "--input-var applies to promptfoo files only" in capsys.readouterr().err


def test_promptfoo_without_pyyaml_names_the_extra(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    assert run_import("promptfoo", PEERS / "promptfooconfig.yaml") == 2
    err = capsys.readouterr().err
    assert "reading YAML needs the PyYAML package, which is not installed" in err
    assert "pip install 'pytest-evalcases[peers]'" in err
    assert written_files(project) == set()


# ---- every format: sampling, the source, bad files -------------------------------------------


def test_sampling_options_and_the_source_apply_to_peer_formats(project: Path) -> None:
    sample = PEERS / "deepeval_goldens.csv"
    suite = imported("deepeval", "deepeval_goldens.csv", "--limit", "2", "--seed", "4")
    assert suite["source"] == {
        "format": "deepeval",
        "file": "deepeval_goldens.csv",
        "sha256": hashlib.sha256(sample.read_bytes()).hexdigest(),
        "records": 3,
        "cases": 2,
        "limit": 2,
        "seed": 4,
        "sampling": "the `limit` cases with the lowest sha256(seed:id), in file order",
        **({"recorded_outputs": 1} if "golden-002" in [c["id"] for c in suite["cases"]] else {}),
    }
    (project / "ids.txt").write_text("golden-003\n0\n")
    suite = imported("deepeval", "deepeval_goldens.csv", "--ids", "ids.txt", "--force")
    assert [c["id"] for c in suite["cases"]] == ["refund-window", "golden-003"]


BAD_FILES = [
    (
        "ragas",
        "bad.csv",
        "reference,response\nParis,It is Paris\n",
        "row 1 (line 2): field "
        "'user_input' is missing; fix it, or write the dataset again with ragas's "
        "EvaluationDataset.to_jsonl()",
    ),
    (
        "ragas",
        "bad.jsonl",
        '{"user_input": "a"}\n{"user_input": 3}\n',
        "record 1: field 'user_input' is int, expected str; fix it",
    ),
    (
        "inspect-ai",
        "bad.jsonl",
        '{"input": "q", "target": 4}\n{"input": "r"}\n',
        "sample 0: "
        "field 'target' is int, expected str or list; fix the sample (inspect-ai's Sample fields",
    ),
    (
        "inspect-ai",
        "bad.jsonl",
        '{"input": [{"role": "user", "content": 5}]}\n{"input": "r"}\n',
        "sample 0: field 'input[0].content' must be a string or a list of content parts",
    ),
    (
        "deepeval",
        "bad.csv",
        "input,expected_output\n,Paris\n",
        "row 1 (line 2): field 'input' "
        "is missing; fix it, or save the dataset again with DeepEval's dataset.save_as()",
    ),
    (
        "deepeval",
        "bad.json",
        '[{"input": "q", "expected_tools": "search"}]',
        "record 0: field 'expected_tools' is str, expected a list; fix it",
    ),
    ("deepeval", "empty.csv", "", "the file is empty; expected a header row and rows"),
    ("ragas", "empty.jsonl", "  \n", "the file is empty; expected a JSON array of records"),
    ("inspect-ai", "none.json", "[]", "holds no records; check that it is the inspect-ai file"),
    ("promptfoo", "empty.yaml", "", "the file is empty; expected a YAML document"),
    ("promptfoo", "bad.yaml", "tests: [\n", "not valid YAML (line 2, column 1)"),
    (
        "promptfoo",
        "far.yaml",
        "tests: file://tests.csv\n",
        "`tests: file://tests.csv` loads its tests from another file; import that file",
    ),
    (
        "promptfoo",
        "bad.yaml",
        "tests:\n  - vars: {input: q}\n    assert: [{value: x}]\n",
        "tests[0]: field 'assert[0]' must be an assertion with a `type`; fix the test in the file",
    ),
    (
        "promptfoo",
        "bad.yaml",
        "tests:\n  - vars: {input: q, reference: x}\n    assert: [{type: contains, value: q}]\n",
        "tests[0]: field 'vars.reference' is named as a case field here",
    ),
    (
        "promptfoo",
        "bad.yaml",
        "tests:\n  - vars: {input: q}\n    assert: [{type: python, value: 'output ==='}]\n",
        "tests[0]: field 'assert[0].value' is not valid Python",
    ),
    (
        "promptfoo",
        "bad.yaml",
        "tests:\n  - vars: {input: q}\n    assert: [{type: similar, value: q}]\n",
        "no assertion of its tests maps to a stage here (not mapped: similar)",
    ),
]


@pytest.mark.parametrize(
    ("fmt", "name", "text", "message"),
    BAD_FILES,
    ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_FILES)],
)
def test_a_bad_peer_file_is_one_error_naming_the_row_and_the_next_step(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    name: str,
    text: str,
    message: str,
) -> None:
    (project / name).write_text(text)
    before = written_files(project)

    assert run_import(fmt, name) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"error: {name}: {message}"), err
    assert err.count("error:") == 1 and err.rstrip().endswith("nothing was written")
    assert written_files(project) == before


def test_promptfoo_negations_and_what_changes_a_checks_meaning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = """
tests:
  - vars: {question: "Where is Ada?", name: Ada}
    assert:
      - {type: not-contains, value: "sorry"}
      - {type: contains, value: "{{name}}", weight: 2}
      - {type: contains, value: "{{ name | upper }}"}
      - {type: icontains, value: "ada", transform: "output.lower()"}
"""
    (project / "tests.yaml").write_text(tests)
    assert run_import("promptfoo", "tests.yaml") == 0
    suite = json.loads(Path("cases/peer.json").read_text())
    assert suite["stages"] == ["promptfoo_not_contains", "promptfoo_contains"]
    assert suite["source"]["unmapped"] == [
        {
            "case": "test-001",
            "type": "contains",
            "why": "weight 2 not reproduced (stages here are not weighted)",
        },
        {"case": "test-001", "type": "contains", "why": "its value uses templating beyond {{var}}"},
        {
            "case": "test-001",
            "type": "icontains",
            "why": "sets transform, which no stage here reproduces",
        },
    ]
    asserted = suite["cases"][0]["metadata"]["promptfoo"]["assert"]
    assert [a["stage"] for a in asserted] == [
        "promptfoo_not_contains",
        "promptfoo_contains",  # weighted: mapped, the weight listed
        None,
        None,
    ]
    assert asserted[1]["value"] == "Ada"  # {{name}} filled in
    registry = _Registry()
    _load_module(project / "cases" / "peer_promptfoo.py", registry, monkeypatch)
    case = SimpleNamespace(**suite["cases"][0], fields={})
    not_contains, _ = registry.stages["promptfoo_not_contains"]
    assert not_contains(case, SimpleNamespace(answer="Ada is here")).value == 1.0
    assert not_contains(case, SimpleNamespace(answer="sorry, no idea")).value == 0.0
