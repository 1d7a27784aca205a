"""A kill cannot strand a pair (issue 21, "What to build" 3): a case's `<id>.http.json` and its
cassette `<id>.json` are two files, written one after the other. A process killed between the
two writes leaves a pair whose cassette names another HTTP file's hash; the next live run finds
it and records the case again, so `--replay-http` and plain replay pass.

The kill is a real one (`os._exit` in a fresh interpreter), at each point between the writes:
the project's conftest wraps the step of store/pair.py that puts a file in place and ends the
process where `fault.txt` says. The killed run is a subprocess (a test process cannot `os._exit`
itself); the runs before and after it, with no fault set, run in this process and leave the
writer alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from echo_server import EchoServer
from evalhelpers import Project, output
from integration.test_http_cassettes import LEAKY_ENV, http_case, http_project, http_suite

from pytest_evalcases.store.http import interactions_hash

# Ends the recording process at one point between the two writes of a pair (fault.txt says
# which): after the HTTP file is written; after the cassette is written but with the HTTP write
# lost. (A kill while the temp files are written leaves both files as they were:
# tests/hostile/test_recording_pairs.py.)
FAULTS = """\
import os
from pathlib import Path

from pytest_evalcases.store import pair

FAULT = Path(__file__).with_name("fault.txt")
real_replace = pair._replace


def fault():
    return FAULT.read_text().strip() if FAULT.exists() else ""


def _replace(source, target):
    if fault() == "lose_http" and target.name.endswith(".http.json"):
        return  # the write never reached the disk
    real_replace(source, target)
    if fault() == "after_http" and target.name.endswith(".http.json"):
        os._exit(9)
    if fault() == "lose_http" and not target.name.endswith(".http.json"):
        os._exit(9)


# Only a run with a fault wraps the writer: the runs without one are in the test's process.
if fault():
    pair._replace = _replace
"""


@pytest.fixture
def echo_server() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)


def _paired(project: Project) -> bool:
    """The cassette names the hash of the HTTP file on disk."""
    folder = project.root / "cassettes" / "http"
    http = json.loads((folder / "alpha.http.json").read_text())
    cassette = json.loads((folder / "alpha.json").read_text())
    return cassette["integrity"].get("http") == interactions_hash(http["interactions"])


@pytest.mark.parametrize(
    "fault, style, mode",
    [
        ("after_http", "pirate", "--live"),
        ("after_http", "plain", "--live"),
        ("lose_http", "pirate", "--live"),
        ("after_http", "pirate", "--live-stale"),
    ],
    ids=[
        "http new, cassette old",
        "http new, cassette old, repaired with the old requests",
        "http old, cassette new",
        "http new, cassette old, repaired by --live-stale",
    ],
)
def test_a_kill_between_the_two_writes_is_repaired_by_the_next_live_run(
    project: Project, echo_server: EchoServer, fault: str, style: str, mode: str
) -> None:
    """Break: a kill between writing `<id>.http.json` and `<id>.json` left a mismatched pair
    that --replay-http refused and --live kept mismatched forever (0 of 6 repaired), because an
    unchanged exchange reused the old cassette's `integrity.http` unchecked."""
    http_project(project, echo_server, http_suite("http", "httpx", [http_case("alpha", "a b")]))
    project.write_text("conftest.py", FAULTS)
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    project.steer(style="pirate")  # the next recording sends another request
    project.write_text("fault.txt", fault)

    killed = project.run_in_subprocess("--live", "-p", "no:cacheprovider")

    assert killed.ret == 9, output(killed)
    assert not _paired(project), "the kill left a matching pair: the test proves nothing"

    project.write_text("fault.txt", "")
    project.steer(style=style)
    repaired = project.run(mode, "-p", "no:cacheprovider")

    repaired.assert_outcomes(passed=1)
    assert "repaired 1 mismatched recording" in output(repaired)
    assert _paired(project)
    assert sorted(p.name for p in (project.root / "cassettes" / "http").iterdir()) == [
        "alpha.http.json",
        "alpha.json",
    ]
    echo_server.stop()  # from here on, nothing may reach the network
    project.run("--replay-http", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    project.run("-p", "no:cacheprovider").assert_outcomes(passed=1)
