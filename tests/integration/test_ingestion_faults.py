"""The recorded ingestion where it can go wrong (issue 23; found by a second, hostile read of its
change, each test failing on the code before its fix): a new memory id is recorded as new, the
spend of every worker's ingestion is counted, --eval-budget counts ingestion, nothing is
written through a symlinked suite folder, user_ready's and ready's errors name them, a failed
ingestion reports no figures, a dry run says so, an interrupted ingestion is not started again,
and a data file named `ingestion.*` is not an ingestion setting."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from evalhelpers import Project, output
from fact_model import FactModel
from loopback import JsonServer

from .test_ingestion_recorded import extracting_project, plan, user_doc
from .test_users import users_suite, write_memory_project

# ---- 1. a re-ingested memory id is recorded as the old one --------------------------------------

MEMORY_SERVICE_SYSTEM = """\
import json
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


def call(method, path, body=None):
    request = urllib.request.Request(
        (ROOT / "service_url.txt").read_text() + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError:
        return None


class Memory:
    def setup_user(self, user):
        facts = json.loads(Path(user.chats).read_text())
        made = call("POST", "/memories", {"user": user.id, "facts": facts})
        log(f"setup_user {user.id} -> {made['id']}")
        return {"memory_id": made["id"]}

    def user_ready(self, user, result):
        there = call("GET", "/memories/" + result["memory_id"]) is not None
        log(f"user_ready {user.id} {result['memory_id']} {there}")
        return there

    def run(self, case):
        return {"answer": "I don't know.", "context": []}


system = Memory()
"""


class MemoryService:
    """A memory service (Zep-, mem0-like): POST /memories builds a user's memory under a fresh
    id, replacing that user's previous one; GET /memories/<id> is 404 for a replaced id."""

    def __init__(self) -> None:
        self.current: dict[str, str] = {}
        self._counter = itertools.count(1)
        self.server = JsonServer(self._answer)
        self.url = self.server.url

    def _answer(self, method: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if method == "POST":
            memory_id = f"mem_{next(self._counter):08d}"
            self.current[body["user"]] = memory_id
            return 200, {"id": memory_id, "facts": len(body["facts"])}, {}
        memory_id = path.rsplit("/", 1)[-1]
        if memory_id in self.current.values():
            return 200, {"id": memory_id}, {}
        return 404, {"error": "no such memory"}, {}


@pytest.fixture
def service() -> Iterator[MemoryService]:
    server = MemoryService()
    yield server
    server.server.close()


def test_a_reingested_users_recorded_result_names_the_memory_the_service_now_holds(
    project: Project, service: MemoryService
) -> None:
    write_memory_project(project)
    project.write_text("memsys.py", MEMORY_SERVICE_SYSTEM)
    project.write_text("service_url.txt", service.url)
    suite = users_suite(stages=["answer_accuracy"])
    suite["users"] = suite["users"][1:]
    suite["cases"] = [case for case in suite["cases"] if case["user"] == "u-bo"]
    project.write_suite(suite)
    project.run("--eval-ingest-only")
    assert user_doc(project, "u-bo")["result"] == {"memory_id": "mem_00000001"}
    service.current.clear()  # the service lost its memories (a reset): user_ready says no

    project.run("--eval-ingest-only")  # ingested again: the service now holds mem_00000002
    assert service.current == {"u-bo": "mem_00000002"}

    # Today the recording still says mem_00000001 (a fresh `$.id` put back in its old form, and
    # "unchanged", nothing written): the next run's user_ready says no again, and every run
    # ingests (and pays) once more: ['user_ready u-bo mem_00000001 False', 'setup_user ...'].
    assert user_doc(project, "u-bo")["result"] == {"memory_id": "mem_00000002"}
    project.clear_calls()
    project.run("--eval-ingest-only")
    assert project.calls() == ["user_ready u-bo mem_00000002 True"]


# ---- 2. xdist: a user ingested once per worker, and counted once -------------------------------


def many_cases_suite() -> dict[str, Any]:
    suite = users_suite(ingestion={"ontology": "people"})
    suite["cases"] += [
        dict(case, id=f"{case['id']}-{n}") for n in range(10) for case in suite["cases"]
    ]
    return suite


def test_under_xdist_every_workers_ingestion_is_counted(project: Project, model: FactModel) -> None:
    """Each worker ingests the users of the cases it runs (docs/memory.md): the figures are what
    was spent, as the model counted it, never one worker's share."""
    extracting_project(project, model)
    project.write_suite(many_cases_suite())

    live = project.run("--live", "-n", "2", "--eval-report", "r")

    live.assert_outcomes(passed=44)
    total = json.loads((project.root / "r/results.json").read_text())["ingestion"]["total"]
    ingestions = project.calls().count("setup_user u-ana") + project.calls().count(
        "setup_user u-bo"
    )
    assert total["ingestions"] == ingestions
    assert total["requests"] == model.requests  # 1 request a chat line, each ingestion
    assert total["total_tokens"] == 10 * model.requests  # 10 tokens a reply


SAVED_MEMORY_USER_READY = """

class Saved(Memory):
    def user_ready(self, user, result):
        log(f"user_ready {user.id}")
        return (ROOT / "memory" / f"{user.id}.json").exists()


system = Saved()
"""


def test_under_xdist_a_system_with_user_ready_pays_each_ingestion_once(
    project: Project, model: FactModel
) -> None:
    """The workers running one user's cases take turns: the first ingests and records, the
    others find the recording current and ask user_ready, which says the memory is there."""
    extracting_project(project, model)
    source = (project.root / "memsys.py").read_text()
    project.write_text(
        "memsys.py", source.replace("\n\nsystem = Memory()\n", SAVED_MEMORY_USER_READY)
    )
    project.write_suite(many_cases_suite())
    plan(project, slow=0.5)  # both workers reach a user while its ingestion runs

    live = project.run("--live", "-n", "2", "--eval-report", "r")

    live.assert_outcomes(passed=44)
    calls = project.calls()
    assert (calls.count("setup_user u-ana"), calls.count("setup_user u-bo")) == (1, 1)
    assert model.requests == 3  # each chat line sent once
    total = json.loads((project.root / "r/results.json").read_text())["ingestion"]["total"]
    assert (total["ingestions"], total["total_tokens"]) == (2, 30)


# ---- 3. --eval-budget does not see the ingestion's cost -----------------------------------------


def test_the_budget_counts_what_the_ingestion_spent(project: Project, model: FactModel) -> None:
    extracting_project(project, model)

    # Ana's ingestion costs (14 * 0.15 + 6 * 0.60) / 1e6 = $0.0000057: over this budget.
    live = project.run("--live", "--eval-budget", "0.000001", "--eval-concurrency", "1")

    assert "--eval-budget" in output(live) and "reached" in output(live)
    assert model.requests < 3  # before: both users were ingested and every case ran


def test_ingest_only_starts_no_user_once_the_budget_is_spent(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model)

    stopped = project.run("--eval-ingest-only", "--eval-budget", "0.000001")

    assert stopped.ret == 1  # an incomplete live run fails
    assert model.requests == 2  # Ana's two lines; Bo not started
    text = output(stopped)
    assert (
        "memory::u-bo: not ingested: --eval-budget $0.000001 reached (recorded cost $0.0000057)"
        in text
    )
    assert "not recorded: memory::bo-car (not run: user 'u-bo' not ingested: " in text
    assert not (project.root / "cassettes/memory/users/u-bo.json").exists()


# ---- 4. the HTTP file is written through a symlinked suite folder -------------------------------


def test_nothing_is_written_through_a_symlinked_suite_folder(
    project: Project, model: FactModel, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    extracting_project(project, model)
    (project.root / "cassettes").mkdir(exist_ok=True)
    (project.root / "cassettes/memory").symlink_to(elsewhere, target_is_directory=True)

    live = project.run("--live")

    assert "memory/ is a symlink" in output(live)
    # today: ['users', 'users/u-ana.http.json', 'users/u-bo.http.json']
    assert sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*")) == []


# ---- 5. an error of user_ready / ready is said as setup_user's ----------------------------------

USER_READY_DOWN = """

class Checking(Memory):
    def user_ready(self, user, result):
        if json.loads((ROOT / "plan.json").read_text()).get("down"):
            raise ConnectionError("memory service down")
        return True


system = Checking()
"""


def project_with_user_ready_down(project: Project, model: FactModel) -> Project:
    extracting_project(project, model)
    source = (project.root / "memsys.py").read_text()
    project.write_text("memsys.py", source.replace("\n\nsystem = Memory()\n", USER_READY_DOWN))
    project.run("--live").assert_outcomes(passed=4)
    plan(project, down=True)
    return project


def test_an_error_of_user_ready_names_user_ready(project: Project, model: FactModel) -> None:
    # not retried (docs/system.md#retries-of-the-systems-calls): the error as user_ready raised it
    live = project_with_user_ready_down(project, model).run("--live", "--eval-system-retries", "0")

    live.assert_outcomes(errors=4)
    assert "user_ready('u-ana') of suite 'memory' raised ConnectionError" in output(live)


# ---- 6. a failed ingestion is reported as "replayed" --------------------------------------------


def test_a_failed_ingestion_is_not_reported_as_replayed(project: Project, model: FactModel) -> None:
    down = project_with_user_ready_down(project, model)
    live = down.run("--live", "--eval-report", "r", "--eval-system-retries", "0")

    live.assert_outcomes(errors=4)
    sources = {
        case["id"]: (case.get("ingestion") or {}).get("source")
        for case in json.loads((project.root / "r/results.json").read_text())["cases"]
    }
    assert "replayed" not in sources.values(), sources  # today: every case says "replayed"
    assert "ingestion: 2 users: 2 replayed" not in output(live)


# ---- 7. --live-dry-run says "recorded" ----------------------------------------------------------


def test_a_dry_runs_ingestion_is_not_called_recorded(project: Project, model: FactModel) -> None:
    extracting_project(project, model)

    dry = project.run("--live-dry-run")

    assert not (project.root / "cassettes/memory/users").exists()
    assert "ingestion: 2 users: 2 recorded" not in output(dry)  # today it is printed


# ---- 8. an interrupted ingestion is started again by the user's next case -----------------------


def test_an_interrupted_ingestion_is_not_started_again(project: Project, model: FactModel) -> None:
    extracting_project(project, model)
    plan(project, interrupt=["u-bo"])

    stopped = project.run("--live")

    assert stopped.ret == 2
    # today: ['setup memory', 'setup_user u-bo', 'setup_user u-ana', 'setup_user u-bo', ...]
    assert project.calls().count("setup_user u-bo") == 1


# ---- 9. an input file named ingestion.* reads as an ingestion setting ---------------------------


def test_a_suite_input_file_is_not_an_ingestion_setting(project: Project, model: FactModel) -> None:
    extracting_project(project, model, inputs=["ingestion.md"])
    project.write_text("ingestion.md", "how we ingest\n")
    project.run("--live").assert_outcomes(passed=4)
    project.write_text("ingestion.md", "how we ingest, v2\n")

    replay = project.run()
    project.clear_calls()
    project.run("--live-stale").assert_outcomes(passed=4)

    # today: "ingestion.u-ana changed: ingestion.md d9f299 -> 9f718a", and both users re-ingested
    assert "stale recording: ingestion.md changed" in output(replay)
    assert not any(call.startswith("setup_user") for call in project.calls())


def test_ingest_only_names_a_users_error_and_goes_on(project: Project, model: FactModel) -> None:
    extracting_project(project, model)
    source = (project.root / "memsys.py").read_text()
    project.write_text(
        "memsys.py",
        source.replace(
            '        log(f"setup_user {user.id}")\n',
            '        log(f"setup_user {user.id}")\n'
            '        if user.id == "u-ana":\n'
            '            raise RuntimeError("key sk-proj-Ab3dEfGh1jKlMn0pQrStUvWxYz01234")\n',
        ),
    )

    run = project.run("--eval-ingest-only")

    run.assert_outcomes(errors=2, skipped=2)  # Ana's cases error with it; Bo is ingested
    text = output(run)
    assert "memory::u-ana: error: setup_user('u-ana') of suite 'memory' raised RuntimeError" in text
    assert "Ab3dEfGh1jKlMn0pQrStUvWxYz01234" not in text  # redacted, as every error is
    assert "memory::u-bo: recorded in " in text
