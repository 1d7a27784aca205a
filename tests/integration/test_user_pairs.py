"""A user's ingestion recording is a pair like a case's, handled by the same code (issue 28,
parts 1 and 4): a corrupt, missing or torn `users/<id>.json` is an error or a repair in every
mode, never a silent drop; one written by a newer pytest-evalcases is refused and kept; a case's
key holds the ingestion it ran on, so a case recorded on another ingestion is stale, named, in
every mode; workers of one xdist run record a user's cases against one ingestion; a setup_user
result no file can hold is ours to say.

Each test failed on the code before: 20 kinds of broken user recordings passed a plain replay
and --live-stale with exit 0 (the user dropped out of the ingestion figures); a torn user pair
was not repaired by --live-stale; a "format": 99 recording was overwritten; with a service that
makes a fresh memory id per ingestion, `--eval-ingest-only --live` then `--live-stale` left
--replay-http failing every case; `-n 2 --live` passed cases --replay-http then refused.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, error_block, output
from fact_model import FactModel

from . import test_ingestion_faults
from .test_ingestion_faults import MEMORY_SERVICE_SYSTEM, MemoryService
from .test_ingestion_recorded import extracting_project
from .test_users import users_suite, write_memory_project

ANA, BO = ("ana-cat", "ana-city"), ("bo-car", "bo-dog")
service = test_ingestion_faults.service  # the fixture of a loopback memory service
USERS = Path("cassettes/memory/users")


def users_folder(project: Project) -> Path:
    return project.root / USERS


def errored(result: pytest.RunResult) -> list[str]:
    text = output(result)
    return sorted(case for case in ANA + BO if f"ERROR cases/memory.json::{case}" in text)


def passed(result: pytest.RunResult) -> set[str]:
    """The cases a `-v` run passed (`[gw0] [ 4%] PASSED cases/memory.json::ana-cat`, or
    `cases/memory.json::ana-cat PASSED` without xdist)."""
    found = re.findall(
        r"PASSED cases/memory\.json::(\S+)|cases/memory\.json::(\S+) PASSED", output(result)
    )
    return {xdist or plain for xdist, plain in found}


def rewrite(name: str, edit: Callable[[Any], Any]) -> Callable[[Path], None]:
    """A hand edit of one file of the pair: `edit` gets its JSON and returns the new one."""

    def apply(folder: Path) -> None:
        path = folder / name
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))

    return apply


def write(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_text(text)


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


def other_http(doc: dict[str, Any]) -> dict[str, Any]:
    doc["interactions"] = doc["interactions"][:1]
    return doc


# Every way Ana's recording can be broken: corrupt, missing, torn.
BROKEN: dict[str, Callable[[Path], None]] = {
    "not JSON": write("u-ana.json", "{"),
    "a list": write("u-ana.json", "[]"),
    "empty": write("u-ana.json", ""),
    "format a string": rewrite("u-ana.json", lambda d: {**d, "format": "2"}),
    "no format": rewrite("u-ana.json", lambda d: {k: v for k, v in d.items() if k != "format"}),
    "no key": rewrite("u-ana.json", lambda d: {k: v for k, v in d.items() if k != "key"}),
    "a key of numbers": rewrite("u-ana.json", lambda d: {**d, "key": {"user.u-ana": 1}}),
    "no integrity": rewrite("u-ana.json", lambda d: {**d, "integrity": {}}),
    "labels a list": rewrite("u-ana.json", lambda d: {**d, "labels": []}),
    "recording missing": remove("u-ana.json"),
    "HTTP recording missing": remove("u-ana.http.json"),
    "HTTP recording of another": rewrite("u-ana.http.json", other_http),
    "HTTP recording not JSON": write("u-ana.http.json", "{"),
    "HTTP recording a list": write("u-ana.http.json", "[]"),
}


@pytest.fixture
def recorded(project: Project, model: FactModel) -> Project:
    """The memory suite (two users, two cases each) recorded with --live, its ingestions over
    HTTP to the loopback model; the good recordings kept aside in `good/`."""
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    shutil.copytree(users_folder(project), project.root / "good")
    return project


def broken(project: Project, kind: str) -> None:
    """Ana's recording as recorded, then broken in the way `kind` names."""
    shutil.rmtree(users_folder(project))
    shutil.copytree(project.root / "good", users_folder(project))
    BROKEN[kind](users_folder(project))


def test_a_broken_user_recording_errors_that_users_cases_in_a_plain_replay(
    recorded: Project,
) -> None:
    for kind in BROKEN:
        broken(recorded, kind)

        replay = recorded.run()

        assert replay.ret != 0, f"{kind}: {output(replay)}"
        assert errored(replay) == list(ANA), f"{kind}: {output(replay)}"
        block = error_block(replay, "ana-cat")
        assert "cassettes/memory/users/u-ana" in block, f"{kind}: {block}"
        assert "--eval-ingest-only" in block, f"{kind}: {block}"
        replay.assert_outcomes(passed=2, errors=2)


def test_live_stale_repairs_a_broken_user_recording(recorded: Project, model: FactModel) -> None:
    for kind in BROKEN:
        broken(recorded, kind)
        recorded.clear_calls()

        repair = recorded.run("--live-stale")

        assert repair.ret == 0, f"{kind}: {output(repair)}"
        assert "setup_user u-ana" in recorded.calls(), kind  # ingested again
        assert "setup_user u-bo" not in recorded.calls(), kind  # Bo's is current
        offline = recorded.run("--replay-http")
        offline.assert_outcomes(passed=4)
        recorded.run().assert_outcomes(passed=4)


@pytest.mark.parametrize("mode", [("--eval-ingest-only",), ("--eval-ingest-only", "--live")])
def test_the_ingest_only_runs_repair_a_torn_user_pair(recorded: Project, mode: tuple[str]) -> None:
    """Ingested again and written; a torn pair does not say which ingestion the user's cases
    ran on, so they are stale (named) until --live-stale records them on the new one."""
    broken(recorded, "HTTP recording of another")

    recorded.run(*mode)

    offline = recorded.run("--replay-http")
    assert errored(offline) == list(ANA)
    assert "ingested.u-ana changed" in error_block(offline, "ana-cat")
    recorded.run("--live-stale").assert_outcomes(passed=4)
    recorded.run("--replay-http").assert_outcomes(passed=4)


def test_live_repairs_a_torn_user_pair_and_records_the_cases_on_it(recorded: Project) -> None:
    broken(recorded, "HTTP recording of another")

    recorded.run("--live").assert_outcomes(passed=4)

    recorded.run("--replay-http").assert_outcomes(passed=4)
    recorded.run().assert_outcomes(passed=4)


@pytest.mark.parametrize(
    "mode", [("--eval-ingest-only",), ("--eval-ingest-only", "--live"), ("--live",)]
)
def test_a_user_recording_of_a_newer_format_is_refused_and_kept(
    recorded: Project, mode: tuple[str, ...]
) -> None:
    newer = users_folder(recorded) / "u-ana.json"
    newer.write_text(json.dumps({**json.loads(newer.read_text()), "format": 99}))
    before = newer.read_bytes()

    run = recorded.run(*mode)

    assert newer.read_bytes() == before
    assert "newer pytest-evalcases" in output(run)
    assert run.ret != 0


# ---- the ingestion a case ran on is in its key --------------------------------------------------

SERVICE_SYSTEM = (
    MEMORY_SERVICE_SYSTEM.split("class Memory:")[0]
    + """\
class Memory:
    def __init__(self):
        self.ids = {}  # the memory id of each user this process ingested

    def setup_user(self, user):
        facts = json.loads(Path(user.chats).read_text())
        made = call("POST", "/memories", {"user": user.id, "facts": facts})
        log(f"setup_user {user.id} -> {made['id']}")
        self.ids[user.id] = made["id"]
        (ROOT / "ids").mkdir(exist_ok=True)
        (ROOT / "ids" / user.id).write_text(made["id"])  # the last one made, for a reuse
        return {"memory_id": made["id"]}

    def run(self, case):
        user = case["user"]
        memory_id = self.ids.get(user) or (ROOT / "ids" / user).read_text()
        found = call("GET", "/memories/" + memory_id)  # what it finds there is not scored
        log(f"run {case['id']} {memory_id} {found is not None}")
        return {"answer": "I don't know.", "context": []}


system = Memory()
"""
)


def service_project(project: Project, service: MemoryService, cases: int = 0) -> Project:
    """The memory suite on a service that makes a fresh memory id per ingestion (no
    user_ready); `cases` more copies of each case."""
    write_memory_project(project)
    project.write_text("memsys.py", SERVICE_SYSTEM)
    project.write_text("service_url.txt", service.url)
    suite = users_suite(stages=["answer_accuracy"])
    for case in suite["cases"]:
        case.pop("reference", None)
    suite["cases"] += [
        dict(case, id=f"{case['id']}-{n}") for n in range(cases) for case in suite["cases"]
    ]
    project.write_suite(suite)
    return project


def test_a_case_recorded_on_another_ingestion_is_stale_in_every_mode(
    project: Project, service: MemoryService
) -> None:
    service_project(project, service).run("--live").assert_outcomes(passed=4)
    project.run("--eval-ingest-only", "--live")  # a fresh memory id for each user

    replay = project.run()
    offline = project.run("--replay-http")

    for run in (replay, offline):
        assert errored(run) == sorted(ANA + BO), output(run)
        assert "ingested.u-ana changed" in error_block(run, "ana-cat"), output(run)
    # The two users ingest side by side (ids 1 and 2, then 3 and 4): which one gets which id
    # is the order their first cases start in.
    assert re.search(
        r'\{"memory_id":"mem_0000000[12]"\} -> \{"memory_id":"mem_0000000[34]"\}',
        error_block(replay, "ana-cat"),
    ), output(replay)
    stale = project.run("--live-stale")
    assert stale.ret == 0, output(stale)
    assert "4 recorded" in output(stale)
    project.run("--replay-http").assert_outcomes(passed=4)
    project.run().assert_outcomes(passed=4)


def test_an_unchanged_reingestion_stales_nothing(recorded: Project, model: FactModel) -> None:
    """The same result over the same exchanges but for the model's fresh ids: the same
    ingestion."""
    before = (users_folder(recorded) / "u-ana.json").read_bytes()

    recorded.run("--eval-ingest-only", "--live")

    assert "setup_user u-ana" in recorded.calls()
    assert (users_folder(recorded) / "u-ana.json").read_bytes() == before
    recorded.run().assert_outcomes(passed=4)
    recorded.run("--replay-http").assert_outcomes(passed=4)


def test_under_xdist_replay_http_passes_what_live_passed(
    project: Project, service: MemoryService
) -> None:
    """Without user_ready, each worker ingests for itself (a fresh memory id each): the later
    worker's cases of a user are not recorded, never recorded against an ingestion the user's
    recording does not keep."""
    service_project(project, service, cases=5)

    live = project.run("--live", "-n", "2", "-v")

    recorded_cases = passed(live)
    assert recorded_cases, output(live)
    if live.ret != 0:  # both workers ingested a user: the later one says how to share one
        assert "was ingested by another xdist worker of this run" in output(live)
        assert "--eval-ingest-only --live, then run -n with --live-stale" in output(live)
    offline = project.run("--replay-http", "-v")
    assert recorded_cases <= passed(offline), output(offline)


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ('{"name": "\\ud800"}', "lone surrogate"),
        ("deep()", "nests deeper than"),
    ],
    ids=["lone surrogate", "100,000 deep"],
)
def test_a_setup_user_result_no_file_can_hold_is_ours_to_say(
    project: Project, result: str, said: str
) -> None:
    write_memory_project(project)
    source = (project.root / "memsys.py").read_text()
    deep = (
        "def deep():\n    value = []\n    for _ in range(100_000):\n        value = [value]\n"
        "    return value\n\n\n"
    )
    source = source.replace(
        "        MEMORY[user.id] = json.loads(Path(user.chats).read_text())\n",
        "        MEMORY[user.id] = json.loads(Path(user.chats).read_text())\n"
        f"        return {result} if user.id == 'u-ana' else None\n",
    )
    project.write_text("memsys.py", deep + source)
    project.write_suite(users_suite())

    live = project.run("--live")

    assert errored(live) == list(ANA)
    block = error_block(live, "ana-cat")
    assert (
        "setup_user('u-ana') of suite 'memory' returned a result its ingestion recording" in block
    )
    assert said in block and "return a small summary of plain JSON" in block
    assert "raised" not in block
