"""End to end: hostile case files (issue 14) end in a clear error on the item they concern.

A file nested 100,000 deep or holding a 5,000-digit number errors its own item, naming the file
and the next step; the other suites still run and a replay changes no cassette.
"""

from __future__ import annotations

import json
from pathlib import Path
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

from pytest_evalcases.session import scan_suites

DEEP_JSON = '{"name": "deep", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}"
BIG_NUMBER_JSON = '{"name": "bignumber", "k": ' + "7" * 5_000 + ', "cases": []}'

# Every hostile file: its node id and what its error must say.
FILE_ERRORS = {
    "cases/deep.json::suite": ["cases/deep.json: the JSON nests deeper", "flatten it"],
    "cases/bignumber.json::suite": [
        "cases/bignumber.json: cannot read the JSON: Exceeds the limit (4300 digits)",
        "write numbers this long as strings",
    ],
}


def _write_hostile_files(project: Project) -> None:
    project.write_text("cases/deep.json", DEEP_JSON)
    project.write_text("cases/bignumber.json", BIG_NUMBER_JSON)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A recorded project (`good`), then every hostile file added and the project run twice:
    replay and --live."""
    project = Project(tmp_path_factory.mktemp("hostile")).write_base()
    project.write_suite(suite_doc("good", cases=[make_case("g1", "g1 text"),
                                                 make_case("g2", "g2 text")]))
    assert_not_aborted(project.run("--live", "-p", "no:cacheprovider"))
    recorded = project.files()
    _write_hostile_files(project)
    runs = SimpleNamespace(replay=project.run("-v", "-p", "no:cacheprovider"))
    after_replay = project.files()
    runs.live = project.run("--live", "-v", "-p", "no:cacheprovider")
    return SimpleNamespace(project=project, runs=runs, recorded=recorded,
                           after_replay=after_replay, after_live=project.files())


def test_hostile_files_never_stop_the_run(hostile: SimpleNamespace) -> None:
    runs = hostile.runs
    for result in vars(runs).values():
        assert_not_aborted(result)
    refused = len(FILE_ERRORS)
    runs.replay.assert_outcomes(passed=2, errors=refused)
    runs.live.assert_outcomes(passed=2, errors=refused)
    for result in (runs.replay, runs.live):
        result.stdout.fnmatch_lines(["cases/good.json::g1 PASSED*", "cases/good.json::g2 PASSED*"])


@pytest.mark.parametrize("nodeid", list(FILE_ERRORS))
def test_each_hostile_file_or_case_errors_alone_and_says_why(hostile: SimpleNamespace,
                                                            nodeid: str) -> None:
    for result in (hostile.runs.replay, hostile.runs.live):
        result.stdout.fnmatch_lines([f"ERROR {nodeid.replace('[', '[[]')} - *"])
        block = error_block(result, nodeid)
        for text in FILE_ERRORS[nodeid]:
            assert text in block, (text, block)


def test_replay_changes_no_cassette(hostile: SimpleNamespace) -> None:
    assert hostile.after_replay == hostile.recorded


def test_live_records_nothing_for_what_it_refused(hostile: SimpleNamespace) -> None:
    assert set(hostile.after_live) == set(hostile.recorded)


def test_orphan_detection_skips_unreadable_case_files(hostile: SimpleNamespace) -> None:
    for result in (hostile.runs.replay, hostile.runs.live):
        assert ("orphaned (not checked: unreadable case file cases/bignumber.json, "
                "cases/deep.json)") in output(result), output(result)


def test_unexpected_error_loading_a_suite_is_an_error_item(project: Project) -> None:
    # A fault nobody foresaw (here: a patched resolver raising ZeroDivisionError) while loading
    # one suite: that file errors, the others run.
    project.write_text("conftest.py", "import pytest_evalcases.collect as collect\n\n"
                       "real = collect.resolve_system\n\n\n"
                       "def resolve(spec, *args):\n"
                       "    if spec == 'mysys:other_system':\n"
                       "        raise ZeroDivisionError('nobody saw this coming')\n"
                       "    return real(spec, *args)\n\n\n"
                       "collect.resolve_system = resolve\n")
    project.write_suite(suite_doc("good", cases=[make_case("alpha", "alpha beta")]))
    project.write_suite(suite_doc("odd", system="mysys:other_system"))

    result = project.run("--live", "-v")

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, errors=1)
    assert ("cases/odd.json: cannot load the suite (ZeroDivisionError: nobody saw this coming); "
            "fix the file, or report a bug if it looks right") in error_block(result, "odd.json")


# ------------------------------------------------------------------------------ pure checks


def test_scan_suites_survives_hostile_files(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "deep.json").write_text(DEEP_JSON)
    (cases / "bignumber.json").write_text(BIG_NUMBER_JSON)
    (cases / "numbername.json").write_text('{"name": 5, "cases": []}')
    (cases / "ok.json").write_text(json.dumps({"name": "ok", "cases": [{"id": "a"}, 3]}))

    suites, unreadable = scan_suites([cases], tmp_path / "cassettes", {})

    assert suites == {"ok": ["a"]}
    assert sorted(p.name for p in unreadable) == ["bignumber.json", "deep.json", "numbername.json"]
