"""Every reader is bounded (issue 21's closing note: "Readers without a size bound: `inputs`
hashing, code fingerprints, the `scan` command and `--eval-manifest` (a FIFO there would
hang)"). A FIFO, a device or an oversized file given to any of them is one error naming the
file, the field or option, and the next step; an input file of any size is hashed in chunks.

Every run of the reader under test is in another interpreter with a hang guard and a cap on its
address space, one the module's runs share (tests/guarded.py): on the old code a FIFO blocked it
(killed at the guard: the test fails instead of hanging the suite) and `/dev/zero` or a huge
file was read whole (a MemoryError under the cap, instead of the machine's memory)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc
from guarded import GuardedInterpreter, guarded_interpreter_fixture

from pytest_evalcases.domain.code import CODE_FILE_CAP
from pytest_evalcases.store.files import REPORT_FILE_CAP

HANG_GUARD = 60  # seconds before a run that blocks is killed (not a timed assertion)
MEMORY_CAP = 700_000_000  # bytes of address space a guarded run may take
# A sparse data file bigger than MEMORY_CAP (by 15%): hashed whole, it cannot fit. No bigger
# than that: reading a sparse file's holes costs the kernel ~2.5 s a GiB.
HUGE_INPUT = 3 * 2**28
# sha256 of 3 * 2**28 zero bytes, worked out once outside the plugin:
# `head -c 805306368 /dev/zero | sha256sum`.
HUGE_INPUT_SHA256 = "d8492a624b5ded59e8a2185b0755f195a58642456e8387ba2817e46f1e05b358"

guarded_interpreter = guarded_interpreter_fixture(MEMORY_CAP, HANG_GUARD)

Guarded = Callable[..., pytest.RunResult]


@pytest.fixture
def guarded(guarded_interpreter: GuardedInterpreter) -> Guarded:
    """`guarded(project, *args, module="pytest")`: `python -m <module> <args>` in the project's
    folder, in the guarded interpreter under MEMORY_CAP; the test fails if it blocks for
    HANG_GUARD seconds."""

    def run(project: Project, *args: str, module: str = "pytest") -> pytest.RunResult:
        return guarded_interpreter.run(project.root, *args, module=module)

    return run


def make_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def make_device(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")


def make_sparse(path: Path, size: int) -> None:
    """A file of `size` zero bytes, none of them written (a sparse file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.truncate(path, size)


NOT_REGULAR = [
    pytest.param(make_fifo, "is a FIFO (named pipe)", id="fifo"),
    pytest.param(make_device, "is a device", id="dev-zero"),
]


# ---- `inputs` and the users' data files ------------------------------------------------------


def test_a_fifo_in_a_suites_inputs_is_one_error_naming_it(
    project: Project, guarded: Guarded
) -> None:
    """Break: a FIFO named in the suite's `inputs` blocked collection forever (hashing opened it
    for reading and waited for a writer). A device cannot be named there: it resolves outside
    the rootdir, which was refused already."""
    project.write_suite(suite_doc(inputs=["data/kb.txt", "data/pipe"]))
    make_fifo(project.root / "data" / "pipe")

    result = guarded(project)

    result.assert_outcomes(errors=1)
    assert error_block(result, "cases/suite.json::suite").strip() == (
        "cases/suite.json: input 'data/pipe' is a FIFO (named pipe), not a regular file: "
        "nothing was read from it (inputs are hashed into the recordings' keys); make it a "
        'regular file, or take it out of "inputs"'
    )


def test_a_fifo_in_a_cases_inputs_errors_that_case_alone(
    project: Project, guarded: Guarded
) -> None:
    """Break: a FIFO named in one case's own `inputs` blocked collection of every suite."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    project.edit_suite(
        "cases/suite.json",
        lambda doc: doc["cases"].append(make_case("delta", "delta", inputs=["data/pipe"])),
    )
    make_fifo(project.root / "data" / "pipe")

    result = guarded(project)

    result.assert_outcomes(passed=3, errors=1)
    assert error_block(result, "::delta").strip() == (
        "cases/suite.json: case 'delta' (cases[3]): input 'data/pipe' is a FIFO (named pipe), "
        "not a regular file: nothing was read from it (inputs are hashed into the recordings' "
        'keys); make it a regular file, or take it out of "inputs"'
    )


def test_a_fifo_as_a_users_data_file_errors_that_users_cases(
    project: Project, guarded: Guarded
) -> None:
    """Break: a FIFO as a suite user's data file (hashed into `user.<id>`) blocked collection."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)

    def add_user(doc: dict) -> None:
        doc["users"] = [{"id": "u1", "chats": "data/u1/chats"}]
        doc["cases"].append(make_case("delta", "delta", user="u1"))

    project.edit_suite("cases/suite.json", add_user)
    make_fifo(project.root / "data" / "u1" / "chats")

    result = guarded(project)

    result.assert_outcomes(passed=3, errors=1)
    assert error_block(result, "::delta").strip() == (
        "cases/suite.json: case 'delta' (cases[3]): user 'u1', field 'chats': input "
        "'data/u1/chats' is a FIFO (named pipe), not a regular file: nothing was read from it "
        "(inputs are hashed into the recordings' keys); make it a regular file, or take it out "
        "of the user's files"
    )


def test_an_input_bigger_than_the_memory_is_hashed_in_chunks(
    project: Project, guarded: Guarded
) -> None:
    """Break: an input file was read whole to be hashed: a 1 GiB data file took 1 GiB of
    memory (here a sparse 768 MiB one: a MemoryError under this run's cap). A data file may be
    big: it has no size cap, its hash is the hash of all its bytes."""
    project.write_suite(suite_doc(inputs=["data/kb.txt", "data/big.bin"]))
    make_sparse(project.root / "data" / "big.bin", HUGE_INPUT)

    result = guarded(project, "--live")

    result.assert_outcomes(passed=3)
    assert project.cassette("suite", "alpha")["key"]["data/big.bin"] == HUGE_INPUT_SHA256[:16]


def test_a_fifo_as_a_totals_ids_file_is_one_error_naming_it(
    project: Project, guarded: Guarded
) -> None:
    """Break: a total whose `"exclude": {"ids": FILE}` named a FIFO blocked collection."""
    totals = [{"name": "gold", "exclude": {"ids": "data/exclusions.json"}}]
    project.write_suite(suite_doc(totals=totals))
    make_fifo(project.root / "data" / "exclusions.json")

    result = guarded(project)

    result.assert_outcomes(errors=1)
    assert error_block(result, "cases/suite.json::suite").strip() == (
        "cases/suite.json: total 'gold': \"exclude\": {\"ids\": 'data/exclusions.json'}: "
        "data/exclusions.json is a FIFO (named pipe), not a regular file: nothing was read from "
        "it; name a JSON array of case ids in a regular file"
    )


def test_a_fifo_in_place_of_the_live_run_marker_does_not_block_the_run(
    project: Project, guarded: Guarded
) -> None:
    """Break: every run reads `<cassettes>/.live-run-in-progress.json` (the marker of a live run
    that never ended); a FIFO there blocked every run, a plain replay too. Refused unread, it is
    no marker: nothing to report."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    make_fifo(project.root / "cassettes" / ".live-run-in-progress.json")

    result = guarded(project)

    result.assert_outcomes(passed=3)
    assert "the previous --live run ended without a summary" not in output(result)


# ---- code fingerprints -----------------------------------------------------------------------


@pytest.mark.parametrize(("make", "why"), NOT_REGULAR)
def test_a_fifo_or_device_among_the_code_files_is_one_error_naming_it(
    project: Project, guarded: Guarded, make, why: str
) -> None:
    """Break: a `.py` entry of a folder named in `"code"` that is a FIFO blocked collection;
    one that links to `/dev/zero` was read until the memory ran out."""
    (project.root / "app").mkdir()
    (project.root / "app" / "__init__.py").write_text("TOOLS = ['search']\n")
    make(project.root / "app" / "odd.py")
    project.write_suite(suite_doc(code=["app/"]))

    result = guarded(project)

    result.assert_outcomes(errors=1)
    odd = project.root.resolve() / "app" / "odd.py"
    assert error_block(result, "cases/suite.json::suite").strip() == (
        f'cases/suite.json: "code": {odd} {why}, not a regular file: nothing was read from it; '
        'fix the file or leave it out of "code"'
    )


def test_a_code_file_over_the_cap_is_refused_naming_its_size_and_the_cap(
    project: Project,
    guarded: Guarded,
) -> None:
    """Break: a source file had no size cap: any size was read whole and parsed (a 12 MB
    module of one statement and a long comment was keyed as any other)."""
    assert CODE_FILE_CAP == 10_000_000
    project.write_text("generated.py", "TABLE = 1\n" + "#" * 12_000_000 + "\n")
    project.write_suite(suite_doc(code=["generated.py"]))

    result = guarded(project)

    result.assert_outcomes(errors=1)
    generated = project.root.resolve() / "generated.py"
    assert error_block(result, "cases/suite.json::suite").strip() == (
        f'cases/suite.json: "code": {generated} is 12.0 MB, over the cap of 10 MB for a source '
        'file: nothing was read from it; fix the file or leave it out of "code"'
    )


# ---- scan ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "why"), NOT_REGULAR)
@pytest.mark.parametrize("name", ["odd.json", "odd.md"])
def test_scan_of_a_fifo_or_device_lists_it_as_not_checked(
    project: Project, guarded: Guarded, make, why: str, name: str
) -> None:
    """Break: `scan` of a FIFO (a `.json` read as a document, a `.md` as text) blocked; of a
    link to `/dev/zero`, read until the memory ran out."""
    make(project.root / "reports" / name)

    result = guarded(project, "scan", f"reports/{name}", module="pytest_evalcases")

    assert result.ret == 1, output(result)
    assert result.outlines == [
        f"reports/{name}: not checked: {why}, not a regular file: nothing was read from it; "
        "name regular files (or their folders) to scan",
        "found 1 file not checked (1 scanned): re-record with --live (recording redacts "
        "secrets), or fix the files by hand",
    ]


def test_scan_of_a_file_over_the_cap_lists_it_as_not_checked(
    project: Project, guarded: Guarded
) -> None:
    """Break: `scan` read a file of any size whole (a 150 MB file was read, then reported as
    not JSON)."""
    assert REPORT_FILE_CAP == 100_000_000
    make_sparse(project.root / "reports" / "results.json", REPORT_FILE_CAP + 50_000_000)

    result = guarded(project, "scan", "reports", module="pytest_evalcases")

    assert result.ret == 1, output(result)
    assert result.outlines[0] == (
        "reports/results.json: not checked: is 150.0 MB, over the cap of 100 MB for a scanned "
        "file: nothing was read from it; look at what it holds, or leave it out of the paths "
        "scanned"
    )


# ---- --eval-manifest, --eval-baseline, merge and compare -------------------------------------


@pytest.mark.parametrize(("make", "why"), NOT_REGULAR)
def test_a_fifo_or_device_as_the_manifest_stops_the_run_naming_it(
    project: Project, guarded: Guarded, make, why: str
) -> None:
    """Break: `--eval-manifest` naming a FIFO blocked the run before it started; naming a link
    to `/dev/zero`, read until the memory ran out."""
    project.write_suite(suite_doc())
    make(project.root / "lock" / "manifest.json")

    result = guarded(project, "--eval-manifest", "lock/manifest.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert result.errlines[0] == (
        f"ERROR: --eval-manifest lock/manifest.json: {why}, not a regular file: nothing was "
        "read from it; write one with --eval-report DIR (DIR/manifest.json)"
    )


def test_a_manifest_over_the_cap_stops_the_run_naming_its_size(
    project: Project, guarded: Guarded
) -> None:
    """Break: a manifest of any size was read whole (150 MB, then reported as invalid JSON)."""
    project.write_suite(suite_doc())
    make_sparse(project.root / "lock" / "manifest.json", REPORT_FILE_CAP + 50_000_000)

    result = guarded(project, "--eval-manifest", "lock/manifest.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert result.errlines[0] == (
        "ERROR: --eval-manifest lock/manifest.json: is 150.0 MB, over the cap of 100 MB: nothing "
        "was read from it; write one with --eval-report DIR (DIR/manifest.json)"
    )


def test_a_fifo_as_the_baseline_stops_the_run_naming_it(project: Project, guarded: Guarded) -> None:
    """Break: `--eval-baseline` naming a FIFO blocked the run before it started."""
    project.write_suite(suite_doc())
    make_fifo(project.root / "base" / "results.json")

    result = guarded(project, "--eval-baseline", "base/results.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert result.errlines[0] == (
        f"ERROR: baseline file {project.root / 'base' / 'results.json'} is a FIFO (named pipe), "
        "not a regular file: nothing was read from it; point the baseline option at a "
        "results.json written by pytest-evalcases (the one in an earlier run's report folder), "
        "or drop the option"
    )


@pytest.mark.parametrize(("make", "why"), NOT_REGULAR)
def test_merge_of_a_fifo_or_device_errors_naming_it(
    project: Project, guarded: Guarded, make, why: str
) -> None:
    """Break: `merge` of a shard given as a FIFO blocked; as a link to `/dev/zero`, read until
    the memory ran out."""
    make(project.root / "shard" / "results.json")

    result = guarded(
        project, "merge", "shard/results.json", "-o", "merged", module="pytest_evalcases"
    )

    assert result.ret == 2, output(result)
    assert result.errlines == [
        f"error: shard/results.json: {why}, not a regular file: nothing was read from it; "
        "each shard folder must contain the results.json a run wrote"
    ]
    assert not (project.root / "merged").exists()


def test_compare_of_a_results_file_over_the_cap_errors_naming_its_size(
    project: Project, guarded: Guarded
) -> None:
    """Break: `compare` (and `merge`) read a results.json of any size whole (150 MB, then
    reported as not valid JSON)."""
    make_sparse(project.root / "a" / "results.json", REPORT_FILE_CAP + 50_000_000)
    (project.root / "b").mkdir()
    (project.root / "b" / "results.json").write_text(json.dumps({"cases": []}))

    result = guarded(project, "compare", "a", "b", module="pytest_evalcases")

    assert result.ret == 2, output(result)
    assert result.errlines == [
        "error: a/results.json: is 150.0 MB, over the cap of 100 MB: nothing was read from it; "
        "each report folder (from --eval-report) must contain the results.json a run wrote"
    ]
