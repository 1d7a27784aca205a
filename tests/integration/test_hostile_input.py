"""End to end: hostile case files (issue 14) end in a clear error on the item they concern.

A file nested 100,000 deep, a 5,000-digit number, thresholds out of range or naming a stage the
suite does not run, ids too long to name a file, two files declaring one suite name and inputs
outside the rootdir: each errors its own item, naming the file, the case and the next step; the
other suites still run, a replay changes no cassette and `--live` records nothing for them.
"""

from __future__ import annotations

import os
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

from pytest_evalcases.core.names import MAX_NAME_BYTES

DEEP_JSON = '{"name": "deep", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}"
BIG_NUMBER_JSON = '{"name": "bignumber", "k": ' + "7" * 5_000 + ', "cases": []}'
LONG_ID = "x" * 300
ACCENTED_ID = "é" * 101  # 101 characters, 202 bytes in UTF-8
LONGEST_ID = "b" * MAX_NAME_BYTES
LONG_SUITE_NAME = "é" * 100 + "s"  # 101 characters, 201 bytes
NAN, INF = float("nan"), float("inf")

# Every hostile file but the duplicate suite name: its node id and what its error must say.
FILE_ERRORS = {
    "cases/deep.json::suite": ["cases/deep.json: the JSON nests deeper", "flatten it"],
    "cases/bignumber.json::suite": [
        "cases/bignumber.json: cannot read the JSON: Exceeds the limit (4300 digits)",
        "write numbers this long as strings",
    ],
    "cases/threshold_values.json::suite": [
        "cases/threshold_values.json: invalid suite",
        "threshold: Input should be a finite number",
        "thresholds.tools: Input should be greater than or equal to 0",
        "thresholds.retrieval: Input should be a finite number",
        "thresholds.exact_match: Input should be a finite number",
    ],
    "cases/threshold_names.json::suite": [
        "cases/threshold_names.json: \"thresholds\": unknown stage 'retreival' "
        "(did you mean 'retrieval'?)",
        'stage \'faithfulness\' is not run by this suite: add it to "stages" or "report_only", '
        "or remove its threshold",
        "this suite runs tools, retrieval, exact_match",
    ],
    "cases/longname.json::suite": [
        f"suite name {LONG_SUITE_NAME[:40]!r}… (101 characters) cannot name a folder: it is 201 "
        "bytes long in UTF-8, over the limit of 200; rename the suite",
    ],
    "cases/input_absolute.json::suite": [
        "cases/input_absolute.json: input '/etc/hostname' is an absolute path",
        "must be files inside the rootdir",
    ],
    "cases/input_parent.json::suite": [
        "cases/input_parent.json: input '../{outside}' resolves to {outside_path}, outside the "
        "rootdir",
    ],
    "cases/input_symlink.json::suite": [
        "cases/input_symlink.json: input 'data/outside-link.txt' resolves to {outside_path}, "
        "outside the rootdir",
    ],
}
CASE_ERRORS = {
    "cases/longids.json::cases[1]": [
        f"case id {LONG_ID[:40]!r}… (300 characters) (cases[1]) cannot name a cassette file: it "
        "is 300 bytes long in UTF-8, over the limit of 200; rename it (nothing was recorded",
    ],
    "cases/longids.json::cases[2]": [
        f"case id {ACCENTED_ID[:40]!r}… (101 characters) (cases[2]) cannot name a cassette file: "
        "it is 202 bytes long in UTF-8",
    ],
}
TWINS = {"cases/dup_a.json": "t1", "cases/dup_b.json": "t2"}  # both declare the suite `twin`


def _write_hostile_files(project: Project) -> str:
    """Every hostile file but the first of the duplicates; returns the outside file's name."""
    root = project.root
    project.write_text("cases/deep.json", DEEP_JSON)
    project.write_text("cases/bignumber.json", BIG_NUMBER_JSON)
    project.write_suite(
        suite_doc(
            "threshold_values",
            threshold=NAN,
            thresholds={"tools": -1, "retrieval": NAN, "exact_match": INF},
        )
    )
    project.write_suite(
        suite_doc(
            "threshold_names", thresholds={"retreival": 0.5, "faithfulness": 0.7, "tools": 1.0}
        )
    )
    project.write_suite(
        suite_doc(
            "longids",
            cases=[
                make_case("short", "short text"),
                make_case(LONG_ID, "long text"),
                make_case(ACCENTED_ID, "accented text"),
                make_case(LONGEST_ID, "longest text"),
            ],
        )
    )
    project.write_suite(suite_doc(LONG_SUITE_NAME), file="cases/longname.json")
    project.write_suite(
        suite_doc("twin", cases=[make_case("t2", "t2 text")]), file="cases/dup_b.json"
    )
    # A file outside the project, named after it: the parent folder is shared with other tests.
    outside = f"{root.name}-outside.txt"
    (root.parent / outside).write_text("not part of the project\n")
    os.symlink(root.parent / outside, root / "data" / "outside-link.txt")
    for name, inputs in (
        ("input_absolute", "/etc/hostname"),
        ("input_parent", f"../{outside}"),
        ("input_symlink", "data/outside-link.txt"),
    ):
        project.write_suite(suite_doc(name, inputs=["data/kb.txt", inputs]))
    return outside


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A recorded project (`good`, and `twin` in dup_a.json), then every hostile file added and
    the project run four ways: replay, --live, --live on one node id and --live under xdist."""
    project = Project(tmp_path_factory.mktemp("hostile")).write_base()
    project.write_suite(
        suite_doc("good", cases=[make_case("g1", "g1 text"), make_case("g2", "g2 text")])
    )
    project.write_suite(
        suite_doc("twin", cases=[make_case("t1", "t1 text")]), file="cases/dup_a.json"
    )
    assert_not_aborted(project.run("--live", "-p", "no:cacheprovider"))
    recorded = project.files()
    outside = _write_hostile_files(project)
    runs = SimpleNamespace(replay=project.run("-v", "-p", "no:cacheprovider"))
    after_replay = project.files()
    runs.live = project.run("--live", "-v", "-p", "no:cacheprovider")
    runs.one_file = project.run(
        "--live", "-v", "-p", "no:cacheprovider", "cases/dup_a.json::t1", "cases/good.json"
    )
    runs.xdist = project.run("--live", "-v", "-p", "no:cacheprovider", "-n", "2", "-k", "t1 or t2")
    return SimpleNamespace(
        project=project,
        runs=runs,
        recorded=recorded,
        after_replay=after_replay,
        after_live=project.files(),
        outside=outside,
        outside_path=project.root.parent / outside,
    )


def test_hostile_files_never_stop_the_run(hostile: SimpleNamespace) -> None:
    runs = hostile.runs
    for result in vars(runs).values():
        assert_not_aborted(result)
    refused = len(FILE_ERRORS) + len(CASE_ERRORS) + len(TWINS)
    runs.replay.assert_outcomes(passed=2, errors=refused + 2)  # + 2 missing: short, LONGEST_ID
    runs.live.assert_outcomes(passed=4, errors=refused)
    runs.one_file.assert_outcomes(passed=2, errors=1)
    runs.xdist.assert_outcomes(errors=2)
    for result in (runs.replay, runs.live, runs.one_file):
        result.stdout.fnmatch_lines(["cases/good.json::g1 PASSED*", "cases/good.json::g2 PASSED*"])


@pytest.mark.parametrize("nodeid", list(FILE_ERRORS) + list(CASE_ERRORS))
def test_each_hostile_file_or_case_errors_alone_and_says_why(
    hostile: SimpleNamespace, nodeid: str
) -> None:
    expected = {**FILE_ERRORS, **CASE_ERRORS}[nodeid]
    for result in (hostile.runs.replay, hostile.runs.live):
        result.stdout.fnmatch_lines([f"ERROR {nodeid.replace('[', '[[]')} - *"])
        block = error_block(result, nodeid)
        for text in expected:
            text = text.format(outside=hostile.outside, outside_path=hostile.outside_path)
            assert text in block, (text, block)


def test_duplicate_suite_names_error_both_files_under_any_selection(
    hostile: SimpleNamespace,
) -> None:
    runs = hostile.runs
    # replay, --live and -n 2 collect both files; one node id selected collects only dup_a.json.
    for result, twins in (
        (runs.replay, TWINS),
        (runs.live, TWINS),
        (runs.xdist, TWINS),
        (runs.one_file, {"cases/dup_a.json": "t1"}),
    ):
        for file, case_id in twins.items():
            result.stdout.fnmatch_lines([f"ERROR {file}::{case_id} - *"])
            other = next(other for other in TWINS if other != file)
            block = error_block(result, f"twin::{case_id}")
            assert (
                f"{file}: suite name 'twin' is also declared by {other}; suite names name "
                "the cassette folders, so rename the suite in one of these files (nothing "
                "is recorded for any of them until then)"
            ) in block, block


def test_replay_changes_no_cassette(hostile: SimpleNamespace) -> None:
    assert hostile.after_replay == hostile.recorded


def test_live_records_nothing_for_what_it_refused(hostile: SimpleNamespace) -> None:
    written = set(hostile.after_live) - set(hostile.recorded)
    assert written == {f"cassettes/longids/{case_id}.json" for case_id in ("short", LONGEST_ID)}
    # twin/t1.json predates dup_b.json: no run since (-n 2 and one node id included) touched it.
    twin = "cassettes/twin/t1.json"
    assert hostile.after_live[twin] == hostile.recorded[twin]


def test_orphan_detection_skips_unreadable_case_files(hostile: SimpleNamespace) -> None:
    for result in (hostile.runs.replay, hostile.runs.live, hostile.runs.one_file):
        assert (
            "orphaned (not checked: unreadable case file cases/bignumber.json, cases/deep.json)"
        ) in output(result), output(result)


def test_unexpected_error_loading_a_suite_is_an_error_item(project: Project) -> None:
    # A fault nobody foresaw (here: a patched resolver raising ZeroDivisionError) while loading
    # one suite: that file errors, the others run.
    # (Patched for the run only: the run may share its process with other tests.)
    project.write_text(
        "conftest.py",
        "import pytest_evalcases.pytest_plugin.suite_contexts as collect\n\n"
        "real = collect.resolve_system\n\n\n"
        "def resolve(spec, *args):\n"
        "    if spec == 'mysys:other_system':\n"
        "        raise ZeroDivisionError('nobody saw this coming')\n"
        "    return real(spec, *args)\n\n\n"
        "def pytest_configure(config):\n"
        "    collect.resolve_system = resolve\n\n\n"
        "def pytest_unconfigure(config):\n"
        "    collect.resolve_system = real\n",
    )
    project.write_suite(suite_doc("good", cases=[make_case("alpha", "alpha beta")]))
    project.write_suite(suite_doc("odd", system="mysys:other_system"))

    result = project.run("--live", "-v")

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, errors=1)
    assert (
        "cases/odd.json: cannot load the suite (ZeroDivisionError: nobody saw this coming); "
        "fix the file, or report a bug if it looks right"
    ) in error_block(result, "odd.json")


# ------------------------------------------------------------------------------ pure checks
