"""End to end: bad input gives a clear error on the item it concerns, and never stops the run.

File-level problems become one item for that file that errors in setup; case-level problems error
only that case while the rest of the file runs; unsafe case ids never write anything anywhere.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    make_case,
    output,
    suite_doc,
)

BROKEN_JSON = """{"name": "broken", "system": "mysys:system",
 "stages": ["tools"],
 "cases": [
  {"id": "a", "input": "x"},
 ]
}
"""

UNSAFE_IDS = ["../x", "a/b", "a\u0001b", ".."]

MIXED_CASES = [
    make_case("ok1", "ok1 text"),
    {"id": "bad-input", "input": 5, "expected_docs": "storage"},
    {"input": "a case without an id"},
    make_case("ok1", "the same id again"),
    *({"id": case_id, "input": "unsafe text"} for case_id in UNSAFE_IDS),
    make_case("bad-category", "bad category", category="has space"),
    make_case("ok2", "ok2 text"),
]
MIXED_ERRORS = {
    "cases/mixed.json::bad-input": ["cases[1].input", "cases[1].expected_docs"],
    "cases/mixed.json::cases[2]": ["cases[2].id", "required"],
    "cases/mixed.json::ok1-duplicate-2": ["duplicate case id 'ok1'"],
    "cases/mixed.json::bad-category": ["cases[8].category", "has space"],
}


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One project holding every bad input that must not stop the run: first a --live run (the
    case-level problems are in it), then a replay after adding the file-level problems."""
    project = Project(tmp_path_factory.mktemp("bad-input")).write_base()
    project.write_suite(
        suite_doc("good", cases=[make_case("g1", "g1 text"), make_case("g2", "g2 text")])
    )
    project.write_suite(suite_doc("mixed", cases=MIXED_CASES))
    twin = suite_doc("twin", cases=[make_case("t1", "t1 text")])
    project.write_suite(twin, file="cases/dup_a.json")
    base_files = project.all_files()
    live = project.run("--live", "-v", "-p", "no:cacheprovider")
    written = project.all_files() - base_files

    project.write_text("cases/broken.json", BROKEN_JSON)
    project.write_suite(
        {
            "name": "schema",
            "system": "mysys:system",
            "stages": "tools",
            "threshold": 2,
            "thresholds": {"tools": "high"},
            "stagez": [],
            "cases": [],
        },
        file="cases/schema.json",
    )
    project.write_suite(twin, file="cases/dup_b.json")
    project.write_suite(suite_doc("stages", stages=["tools", "bogus"], report_only=["nope"]))
    project.write_suite(suite_doc("nosys", system="nosuchmodule:system"))
    project.write_suite(suite_doc("noattr", system="mysys:no_such_attribute"))
    project.write_text("importboom.py", "raise RuntimeError('needs a config file at import')\n")
    project.write_suite(suite_doc("importboom", system="importboom:system"))
    project.write_suite(suite_doc("noinput", inputs=["data/kb.txt", "data/absent.txt"]))
    project.write_text("cases/notobject.json", "[1, 2, 3]")
    replay = project.run("-v", "-p", "no:cacheprovider")
    return SimpleNamespace(project=project, live=live, written=written, replay=replay)


FILE_LEVEL = ["broken", "schema", "stages", "nosys", "noattr", "importboom", "noinput", "notobject"]
# Two files declaring the suite `twin`: once the second is there, the case of each errors.
DUPLICATE_SUITE = ["cases/dup_a.json::t1", "cases/dup_b.json::t1"]


def test_bad_files_never_stop_the_run(bad: SimpleNamespace) -> None:
    for result in (bad.live, bad.replay):
        assert_not_aborted(result)
    good = ["good.json::g1", "good.json::g2", "mixed.json::ok1", "mixed.json::ok2"]
    for result in (bad.live, bad.replay):
        passed = {
            line.split()[0]
            for line in result.outlines
            if line.endswith("PASSED") or " PASSED " in line
        }
        assert {f"cases/{name}" for name in good} <= passed, output(result)
    bad.live.assert_outcomes(passed=5, errors=len(MIXED_ERRORS) + len(UNSAFE_IDS))
    bad.replay.assert_outcomes(
        passed=4,
        errors=len(MIXED_ERRORS) + len(UNSAFE_IDS) + len(FILE_LEVEL) + len(DUPLICATE_SUITE),
    )


def test_malformed_json_names_file_line_and_column(bad: SimpleNamespace) -> None:
    with pytest.raises(json.JSONDecodeError) as python_says:
        json.loads(BROKEN_JSON)
    block = error_block(bad.replay, "cases/broken.json")
    assert "broken.json" in block
    assert re.search(rf"line {python_says.value.lineno}\b", block), block
    assert re.search(rf"column {python_says.value.colno}\b", block), block


def test_suite_schema_violations_name_field_paths(bad: SimpleNamespace) -> None:
    block = error_block(bad.replay, "cases/schema.json")
    for path in ("stages", "threshold", "thresholds.tools", "stagez"):
        assert re.search(rf"^E?\s*{re.escape(path)}: ", block, re.MULTILINE), (path, block)


def test_duplicate_suite_names_error_both_files(bad: SimpleNamespace) -> None:
    blocks = error_block(bad.replay, "twin::t1")  # both cases are twin::t1
    for nodeid, other in zip(DUPLICATE_SUITE, reversed(DUPLICATE_SUITE), strict=True):
        bad.replay.stdout.fnmatch_lines([f"ERROR {nodeid} - *"])
        file, other_file = nodeid.split("::")[0], other.split("::")[0]
        assert f"{file}: suite name 'twin' is also declared by {other_file};" in blocks, blocks


def test_unknown_stage_names_list_the_known_ones(bad: SimpleNamespace) -> None:
    block = error_block(bad.replay, "cases/stages.json")
    assert "bogus" in block and "nope" in block
    known = re.search(r"known stages: (.*)", block)
    assert known, block
    assert {"tools", "retrieval", "exact_match", "token_f1"} <= set(
        name.strip(" ;.") for name in known.group(1).split(",")
    )


@pytest.mark.parametrize(
    ("suite", "named"),
    [
        ("nosys", "nosuchmodule:system"),
        ("noattr", "mysys:no_such_attribute"),
        ("importboom", "importboom:system"),
    ],
)
def test_unimportable_system_is_named(bad: SimpleNamespace, suite: str, named: str) -> None:
    block = error_block(bad.replay, f"cases/{suite}.json")
    assert named in block
    if suite == "importboom":  # it ran and raised: the advice is to build clients lazily
        assert "needs a config file at import" in block
        assert "raised while being imported" in block and "lazily" in block
        assert "check the module path" not in block
    else:  # not found: the advice is the path
        assert "check the module path" in block


def test_missing_input_file_is_named(bad: SimpleNamespace) -> None:
    assert "data/absent.txt" in error_block(bad.replay, "cases/noinput.json")


def test_case_file_that_is_not_an_object(bad: SimpleNamespace) -> None:
    assert "notobject.json" in error_block(bad.replay, "cases/notobject.json")


@pytest.mark.parametrize("nodeid", list(MIXED_ERRORS))
def test_case_level_errors_name_the_case_and_field(bad: SimpleNamespace, nodeid: str) -> None:
    for result in (bad.live, bad.replay):
        result.stdout.fnmatch_lines([f"ERROR {nodeid.replace('[', '[[]')} - *"])
        block = error_block(result, nodeid)
        for text in MIXED_ERRORS[nodeid]:
            assert text in block, (text, block)


def test_duplicate_case_id_first_runs_the_repeat_errors(bad: SimpleNamespace) -> None:
    bad.replay.stdout.fnmatch_lines(["cases/mixed.json::ok1 PASSED*"])
    assert (
        json.loads((bad.project.root / "cassettes/mixed/ok1.json").read_text())["trace"]["answer"]
        == "ok1 text"
    )  # recorded from the first case, not the repeat


def test_unsafe_ids_error_and_nothing_is_written_for_them(bad: SimpleNamespace) -> None:
    for result in (bad.live, bad.replay):
        for index, case_id in enumerate(UNSAFE_IDS, start=4):
            result.stdout.fnmatch_lines([f"ERROR cases/mixed.json::cases[[]{index}[]] - *"])
            block = error_block(result, f"cases/mixed.json::cases[{index}]")
            assert repr(case_id) in block and "nothing was recorded" in block, block
    recorded = ["good/g1", "good/g2", "mixed/ok1", "mixed/ok2", "twin/t1"]
    assert sorted(bad.written) == sorted(
        ["calls.log"]
        + [f"cassettes/{case}.json" for case in recorded]
        + [f"cassettes/{case}.http.json" for case in recorded]
    )
    outside = bad.project.root.parent
    assert not (outside / "x.json").exists() and not (outside / "cassettes").exists()


def test_malformed_trace_lists_the_bad_fields(project: Project) -> None:
    project.write_suite(suite_doc())
    project.steer(malformed=["gamma"])

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=1)
    block = error_block(result, "suite::gamma")
    assert "malformed trace for suite::gamma" in block
    assert (
        "bad fields: answer (a number, not a string), tool_calls[0].name (missing), "
        "retrieved (a string, not a list)"
    ) in block, block
    assert not project.cassette_path("suite", "gamma").exists()


def test_case_that_is_not_an_object_errors_only_that_case(project: Project) -> None:
    project.write_suite(
        suite_doc(cases=[make_case("alpha", "alpha beta"), 42, make_case("gamma", "gamma delta")])
    )

    result = project.run("--live", "-v")

    assert_not_aborted(result)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["cases/suite.json::alpha PASSED*"])
    assert re.search(r"cases\[1\]", output(result))


def test_case_file_that_is_not_utf8_is_an_error_item(project: Project) -> None:
    project.write_suite(suite_doc("good", cases=[make_case("alpha", "alpha beta")]))
    project.write_text("cases/latin1.json", '{"name": "caf\xe9", "cases": []}'.encode("latin-1"))

    result = project.run("--live", "-v")

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, errors=1)
    assert "latin1.json" in error_block(result, "cases/latin1.json")


FAILING_FINGERPRINTS = {
    "raises": "raise FileNotFoundError('prompts/answer.txt')",
    "not-json": "return {'prompt_file': pathlib.Path('prompts/answer.txt')}",
}


@pytest.mark.parametrize("how", list(FAILING_FINGERPRINTS))
def test_fingerprint_failure_errors_only_that_suite(project: Project, how: str) -> None:
    project.write_text(
        "fpsys.py",
        "import pathlib\nfrom mysys import System\n\n\n"
        "class Fp(System):\n    def fingerprint(self):\n"
        f"        {FAILING_FINGERPRINTS[how]}\n\n\nsystem = Fp()\n",
    )
    project.write_suite(suite_doc("good", cases=[make_case("alpha", "alpha beta")]))
    project.write_suite(suite_doc("fp", system="fpsys:system"))

    result = project.run("--live", "-v")

    assert_not_aborted(result)
    result.stdout.fnmatch_lines(["cases/good.json::alpha PASSED*"])
    result.assert_outcomes(passed=1, errors=1)
    assert "fpsys:system" in error_block(result, "cases/fp.json")
