"""Bounded: files (issue 21, "What to build" 7 and 8). A case file that cannot be read (a
dangling symlink, a symlink loop, a folder, a device, a FIFO) is one error item naming why; FIFOs
and devices are refused before reading, as a case file or as a cassette; cassettes, HTTP
recordings and case files have a size cap, checked on the open file before anything is read.

The runs that hung or ate the memory before (a FIFO, `/dev/zero`) run in another interpreter,
one the module's runs share (tests/guarded.py), with a timeout and a cap on its address space: a
hang or a read of everything then fails the test instead of the suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, output, suite_doc
from guarded import GuardedInterpreter, guarded_interpreter_fixture

from pytest_evalcases.store.files import CASE_FILE_CAP, CASSETTE_CAP

HANG_GUARD = 120  # seconds before a run that hangs is killed (not a timed assertion)
MEMORY_CAP = 700_000_000  # bytes of address space a guarded run may take

guarded_interpreter = guarded_interpreter_fixture(MEMORY_CAP, HANG_GUARD)


def make_dangling(path: Path) -> None:
    path.symlink_to("missing.json")


def make_loop(path: Path) -> None:
    path.symlink_to(path.name)


def make_folder(path: Path) -> None:
    path.mkdir()


def make_device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        pytest.param(make_dangling, "is a dangling symlink to missing.json", id="dangling"),
        pytest.param(make_loop, "is a symlink loop", id="loop"),
        pytest.param(make_folder, "is a directory", id="directory"),
        pytest.param(make_device, "is a device", id="dev-zero"),
        pytest.param(make_fifo, "is a FIFO (named pipe)", id="fifo"),
    ],
)
def test_an_unreadable_case_file_is_one_error_item_naming_why(
    project: Project, guarded_interpreter: GuardedInterpreter, make, why: str
) -> None:
    """Break: a case file that cannot be read (a dangling symlink, a symlink loop, a directory
    named `x.json`, a symlink to `/dev/zero`, a FIFO) was silently not run, exit 0 (and the FIFO
    hung the orphan scan)."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    make(project.root / "cases" / "x.json")

    result = guarded_interpreter.run(project.root)

    assert_not_aborted(result)
    result.assert_outcomes(passed=3, errors=1)
    assert error_block(result, "cases/x.json::suite").strip() == (
        f"cases/x.json: {why}, not a case file: nothing was read from it; make it a regular "
        "JSON file, or remove it"
    )


@pytest.mark.parametrize(
    ("make", "why"),
    [
        pytest.param(make_fifo, "is a FIFO (named pipe)", id="fifo"),
        pytest.param(make_device, "is a device", id="dev-zero"),
    ],
)
def test_a_fifo_or_device_as_a_cassette_is_refused_before_reading(
    project: Project, guarded_interpreter: GuardedInterpreter, make, why: str
) -> None:
    """Break: a FIFO as a cassette hung the replay; `<id>.json` -> `/dev/zero` ended in
    `INTERNALERROR MemoryError`."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    cassette = project.cassette_path("suite", "alpha")
    cassette.unlink()
    make(cassette)

    result = guarded_interpreter.run(project.root)

    assert_not_aborted(result)
    result.assert_outcomes(passed=2, errors=1)
    assert error_block(result, "alpha").strip() == (
        f"cassette cassettes/suite/alpha.json {why}, not a regular file: it was not read; "
        "remove it and record again with --live"
    )


def oversize(path: Path, size: int) -> None:
    """Make the file at `path` `size` bytes long without writing them (a sparse file)."""
    os.truncate(path, size)


def test_a_cassette_over_the_cap_is_refused_naming_its_size_and_the_cap(project: Project) -> None:
    """Break: a cassette had no size cap: any size was read whole into memory (a 60 MB
    cassette was read, then reported as invalid JSON)."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    oversize(project.cassette_path("suite", "alpha"), CASSETTE_CAP + 10_000_000)

    result = project.run()

    result.assert_outcomes(passed=2, errors=1)
    assert error_block(result, "alpha").strip() == (
        "cassette cassettes/suite/alpha.json is 60.0 MB, over the cap of 50 MB: "
        "pytest-evalcases never writes one this big; look at what it holds, then delete it and "
        "record again with --live"
    )


def test_an_http_recording_over_the_cap_is_refused(project: Project) -> None:
    """Break: an `<id>.http.json` had no size cap under `--replay-http` (a 60 MB file was
    read whole, then reported as invalid JSON)."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    oversize(project.root / "cassettes/suite/alpha.http.json", CASSETTE_CAP + 10_000_000)

    result = project.run("--replay-http")

    result.assert_outcomes(passed=2, errors=1)
    assert (
        "HTTP recording cassettes/suite/alpha.http.json is 60.0 MB, over the cap of 50 MB: "
        "pytest-evalcases never writes one this big" in output(result)
    )


def test_a_case_file_over_the_cap_is_refused_naming_its_size_and_the_cap(
    project: Project,
) -> None:
    """Break: a case file had no size cap: any size was read whole into memory, twice
    (collection and the orphan scan)."""
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    big = project.write_suite(suite_doc("big", cases=[]))
    oversize(big, CASE_FILE_CAP + 50_000_000)

    result = project.run()

    result.assert_outcomes(passed=3, errors=1)
    assert error_block(result, "cases/big.json::suite").strip() == (
        "cases/big.json: is 150.0 MB, over the cap of 100 MB; split the suite into several "
        "case files"
    )
