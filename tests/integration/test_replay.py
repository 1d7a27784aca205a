"""End to end: replaying cassettes. A missing recording errors in setup, a stale one names each
changed key field with old -> new labels (or short hashes), editing expectations never stales,
an unreadable cassette errors naming its file, and replay never writes anything."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from evalhelpers import (
    Project,
    error_block,
    make_case,
    output,
    record_template,
    suite_doc,
    summary_section,
)

SHORT = r"[0-9a-f]{6}"

# Editing these case fields must never stale the recording (deterministic stages recompute).
CASE_LEVEL_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "expected_tools": lambda c: c.update(expected_tools=["search", "lookup"]),
    "expected_tools_args": lambda c: c.update(
        expected_tools=[{"name": "search", "args": {"query": c["input"]}}]
    ),
    "expected_docs": lambda c: c.update(expected_docs=["w2", "missing-doc"]),
    "reference": lambda c: c.update(reference="a different reference"),
    "category": lambda c: c.update(category="billing"),
    "marks": lambda c: c.update(marks=["nightly", "smoke"]),
    "xfail": lambda c: c.update(xfail="known gap"),
}

# Editing these suite settings must never stale the recording either.
SUITE_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "threshold": lambda s: s.update(threshold=0.9),
    "thresholds": lambda s: s.update(thresholds={"retrieval": 0.5, "exact_match": 0.2}),
    "k": lambda s: s.update(k=1),
    "stages": lambda s: s.update(stages=["retrieval", "tools"]),
    "report_only": lambda s: s.update(report_only=["token_f1"]),
}

# Suites whose one key field is edited by the staleness run: name -> suite fields.
STALE_SUITES: dict[str, dict[str, Any]] = {
    "st-input-file": {"inputs": ["data/one.txt"]},
    "st-input-added": {"inputs": ["data/kb.txt"]},
    "st-fp-prompt": {"system": "mysys:fp_prompt"},
    "st-fp-model": {"system": "mysys:fp_model"},
    "st-fp-added": {"system": "mysys:fp_added"},
    "st-system": {"system": "mysys:system"},
}

MAIN_CASES = ["alpha", "gamma", "epsilon", "eta"]
TOTAL = len(MAIN_CASES) + len(CASE_LEVEL_EDITS) + len(SUITE_EDITS) + len(STALE_SUITES)


def template_suites() -> list[dict[str, Any]]:
    main = suite_doc(
        cases=[
            make_case("alpha", "alpha beta", category="storage"),
            make_case("gamma", "gamma delta", category="sync", persona="pirate"),
            make_case("epsilon", "epsilon zeta", category="sync"),
            make_case("eta", "eta theta", category="sync"),
        ]
    )
    wide = suite_doc(
        "wide",
        cases=[make_case(f"w-{field}", f"w{n} text") for n, field in enumerate(CASE_LEVEL_EDITS)],
    )
    knobs = [
        suite_doc(f"knob-{name}", cases=[make_case("only", "knob text")]) for name in SUITE_EDITS
    ]
    stale = [
        suite_doc(name, cases=[make_case("c1", "c1 text")], **fields)
        for name, fields in STALE_SUITES.items()
    ]
    return [main, wide, *knobs, *stale]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project recorded once with --live; tests copy it and replay the copy."""
    root = tmp_path_factory.mktemp("replay-template")
    (root / "data").mkdir()
    (root / "data" / "one.txt").write_text("one\n")
    record_template(root, *template_suites())
    return root


@pytest.fixture
def recorded(project: Project, template: Path) -> Project:
    project.copy_from(template)
    return project


def test_replay_passes_without_running_the_system(recorded: Project) -> None:
    result = recorded.run("-q")

    result.assert_outcomes(passed=TOTAL)
    assert recorded.calls() == []  # neither run() nor setup() is called in replay
    assert any(
        line.startswith(f"recordings: 0 recorded, {TOTAL} replayed, 0 stale, 0 missing")
        for line in summary_section(result)
    )


@pytest.fixture(scope="module")
def missing_run(tmp_path_factory: pytest.TempPathFactory, template: Path) -> SimpleNamespace:
    project = Project(tmp_path_factory.mktemp("missing"))
    project.copy_from(template)
    project.cassette_path("suite", "alpha").unlink()
    return SimpleNamespace(project=project, result=project.run("cases/suite.json"))


def test_missing_cassette_errors_in_setup(missing_run: SimpleNamespace) -> None:
    result = missing_run.result
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of suite::alpha*"])
    assert "no recording for suite::alpha; record it with --live" in error_block(result, "alpha")
    assert not missing_run.project.cassette_path("suite", "alpha").exists()  # never records


def test_missing_recording_error_is_the_message_not_a_pytest_traceback(
    missing_run: SimpleNamespace,
) -> None:
    """errors.py: 'the item shows the message alone (no plugin traceback)'; a clear error."""
    block = error_block(missing_run.result, "suite::alpha")
    assert "no recording for suite::alpha; record it with --live" in block
    assert "pluggy" not in block and "_pytest/runner.py" not in block, (
        f"the error shows a {len(block.splitlines())}-line traceback through pytest internals"
    )


# scenario -> (suite, case, key field named in the message, verb, the labels the message shows
# (None: the short hashes; an input file's path reads the same before and after))
STALENESS: dict[str, tuple[str, str, str, str, tuple[str, str] | None]] = {
    "case-input": ("suite", "alpha", "case", "changed", ('"alpha beta"', '"alpha beta?"')),
    "case-extra-field-added": (
        "suite",
        "epsilon",
        "case",
        "changed",
        ('"epsilon zeta"', '{"input":"epsilon zeta","persona":"pirate"}'),
    ),
    "case-extra-field-edited": (
        "suite",
        "gamma",
        "case",
        "changed",
        ('{"input":"gamma delta","persona":"pirate"}', '{"input":"gamma delta","persona":"robot"}'),
    ),
    "input-file": ("st-input-file", "c1", "data/one.txt", "changed", None),
    "input-file-added": ("st-input-added", "c1", "data/two.txt", "added", ("-", "data/two.txt")),
    "fingerprint-prompt": (
        "st-fp-prompt",
        "c1",
        "fingerprint.prompt",
        "changed",
        ('"answer briefly"', '"answer at length"'),
    ),
    "fingerprint-model": (
        "st-fp-model",
        "c1",
        "fingerprint.model",
        "changed",
        ('"echo-1"', '"echo-2"'),
    ),
    "fingerprint-entry-added": (
        "st-fp-added",
        "c1",
        "fingerprint.temperature",
        "added",
        ("-", "0.2"),
    ),
    "system-spec": ("st-system", "c1", "system", "changed", ("mysys:system", "mysys:other_system")),
}


def drop_labels(project: Project) -> None:
    """Make every cassette look recorded before labels existed."""
    for path in (project.root / "cassettes").rglob("*.json"):
        doc = json.loads(path.read_text())
        if doc.pop("labels", None) is not None:
            path.write_text(json.dumps(doc))


def stale_replay(project: Project) -> pytest.RunResult:
    """One replay after editing one key field per scenario, each in its own suite or case."""

    def edit_main(doc: dict[str, Any]) -> None:
        doc["cases"][0]["input"] = "alpha beta?"
        doc["cases"][2]["persona"] = "pirate"
        doc["cases"][1]["persona"] = "robot"

    project.edit_suite("cases/suite.json", edit_main)
    project.write_text("data/one.txt", "one, edited\n")
    project.write_text("data/two.txt", "two\n")
    project.edit_suite(
        "cases/st-input-added.json", lambda doc: doc.update(inputs=["data/kb.txt", "data/two.txt"])
    )
    base = {"prompt": "answer briefly", "model": "echo-1"}
    project.steer(
        fingerprints={
            "fp_prompt": {**base, "prompt": "answer at length"},
            "fp_model": {**base, "model": "echo-2"},
            "fp_added": {**base, "temperature": 0.2},
        }
    )
    project.edit_suite("cases/st-system.json", lambda doc: doc.update(system="mysys:other_system"))
    return project.run("-v", "-p", "no:cacheprovider")


@pytest.fixture(scope="module")
def stale_run(tmp_path_factory: pytest.TempPathFactory, template: Path) -> SimpleNamespace:
    project = Project(tmp_path_factory.mktemp("stale"))
    project.copy_from(template)
    old_keys = {
        (suite, case): project.cassette(suite, case)["key"]
        for suite, case, _, _, _ in STALENESS.values()
    }
    return SimpleNamespace(project=project, result=stale_replay(project), old_keys=old_keys)


@pytest.fixture(scope="module")
def unlabelled_stale_run(
    tmp_path_factory: pytest.TempPathFactory, template: Path
) -> SimpleNamespace:
    """The same edits over cassettes recorded before labels: messages show hashes as before."""
    project = Project(tmp_path_factory.mktemp("stale-unlabelled"))
    project.copy_from(template)
    drop_labels(project)
    old_keys = {
        (suite, case): project.cassette(suite, case)["key"]
        for suite, case, _, _, _ in STALENESS.values()
    }
    return SimpleNamespace(project=project, result=stale_replay(project), old_keys=old_keys)


def stale_message(run: SimpleNamespace, suite: str, case_id: str) -> str:
    block = error_block(run.result, f"{suite}::{case_id}")
    return next((line for line in block.splitlines() if "stale recording: " in line), block)


def assert_hash_message(run: SimpleNamespace, scenario: str, message: str) -> None:
    suite, case_id, field, verb, _ = STALENESS[scenario]
    named = re.findall(
        rf"([\w./-]+) (?:changed|added|removed) \((-|{SHORT}) -> (-|{SHORT})\)", message
    )
    assert [name for name, _, _ in named] == [field], message
    _, old, new = named[0]
    if verb == "changed":
        assert old == run.old_keys[suite, case_id][field][:6] != new, message
    else:
        assert old == "-" and re.fullmatch(SHORT, new), message


@pytest.mark.parametrize("scenario", list(STALENESS))
def test_stale_recording_names_the_changed_field(stale_run: SimpleNamespace, scenario: str) -> None:
    suite, case_id, field, verb, shown = STALENESS[scenario]
    message = stale_message(stale_run, suite, case_id)
    if shown is None:
        assert_hash_message(stale_run, scenario, message)
    else:
        old, new = shown
        assert f"stale recording: {field} {verb} ({old} -> {new}); re-record with --live" in (
            message
        ), message
    assert "re-record with --live" in message


@pytest.mark.parametrize("scenario", list(STALENESS))
def test_cassettes_without_labels_still_name_the_change_by_hashes(
    unlabelled_stale_run: SimpleNamespace, scenario: str
) -> None:
    suite, case_id, _, _, _ = STALENESS[scenario]
    message = stale_message(unlabelled_stale_run, suite, case_id)
    assert_hash_message(unlabelled_stale_run, scenario, message)
    assert message.endswith("re-record with --live"), message


def test_only_the_edited_cases_and_suites_go_stale(stale_run: SimpleNamespace) -> None:
    result = stale_run.result
    result.assert_outcomes(passed=TOTAL - len(STALENESS), errors=len(STALENESS))
    result.stdout.fnmatch_lines(["cases/suite.json::eta PASSED*"])  # untouched case, same suite
    rows = {
        line.split()[0]: line.split()[2]
        for line in summary_section(result)
        if "::" in line.split(" ", 1)[0]
    }
    assert sorted(case for case, outcome in rows.items() if outcome == "stale") == sorted(
        f"{suite}::{case_id}" for suite, case_id, _, _, _ in STALENESS.values()
    )
    recordings = next(line for line in summary_section(result) if line.startswith("recordings:"))
    assert f"{len(STALENESS)} stale" in recordings


def test_editing_expectations_and_settings_never_stales(recorded: Project) -> None:
    def edit_wide(doc: dict[str, Any]) -> None:
        for case in doc["cases"]:
            CASE_LEVEL_EDITS[case["id"].removeprefix("w-")](case)

    recorded.edit_suite("cases/wide.json", edit_wide)
    for name, edit in SUITE_EDITS.items():
        recorded.edit_suite(f"cases/knob-{name}.json", edit)
    before = recorded.files()

    result = recorded.run("-rA")

    text = output(result)
    assert "stale recording" not in text
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) == 0, text
    # The edits did change what the stages say, from the same recordings:
    failed = {line.split()[1] for line in result.outlines if line.startswith("FAILED ")}
    assert failed == {
        "cases/wide.json::w-expected_tools",
        "cases/wide.json::w-expected_docs",
        "cases/wide.json::w-reference",
    }
    assert outcomes.get("xpassed") == 1  # the case that gained an xfail still passes its stages
    assert recorded.files() == before


def test_unreadable_cassette_errors_naming_the_file(recorded: Project) -> None:
    bad = {
        "alpha": "{ this is not JSON",
        "gamma": json.dumps([1, 2, 3]),
        "epsilon": json.dumps("just a string"),
    }
    for case_id, text in bad.items():
        recorded.cassette_path("suite", case_id).write_text(text)

    result = recorded.run("cases/suite.json")

    result.assert_outcomes(passed=1, errors=3)
    for case_id, text in bad.items():
        block = error_block(result, f"suite::{case_id}")
        assert f"cassettes/suite/{case_id}.json" in block
        assert "stale recording" not in block and "no recording for" not in block
        assert recorded.cassette_path("suite", case_id).read_text() == text  # never re-recorded
    assert "not valid JSON" in error_block(result, "suite::alpha")


def test_replay_never_writes(recorded: Project) -> None:
    recorded.cassette_path("suite", "alpha").unlink()  # missing
    recorded.edit_suite("cases/suite.json", lambda doc: doc["cases"][1].update(input="changed"))
    recorded.cassette_path("suite", "epsilon").write_text("[]")  # unreadable
    recorded.write_text(
        "cassettes/suite/orphan.json", recorded.cassette_path("suite", "eta").read_text()
    )
    files_before, cassettes_before = recorded.all_files(), recorded.files()

    result = recorded.run("-p", "no:cacheprovider")

    result.assert_outcomes(passed=TOTAL - 3, errors=3)
    assert recorded.all_files() == files_before
    assert recorded.files() == cassettes_before  # same bytes and mtimes
