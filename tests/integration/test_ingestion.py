"""Ingestion (issue 23, parts 3 and 4): a suite's `"ingestion"` settings reach `setup_user` and
key every case (a changed setting stales them, naming it; the manifest records it), and the
system's `ready(user, result)` is polled after `setup_user` until true or
--eval-ingest-timeout (a timeout errors that user's cases only)."""

from __future__ import annotations

import json

from evalhelpers import Project, output

from pytest_evalcases.domain.users import FIRST_POLL

from .test_users import MEMORY_SYSTEM, users_suite, write_memory_project

# The memory system, with setup_user returning a result and a ready() that is true on the
# third look for the users listed in ready_after.json ({"u-ana": 3}), never for "never".
READY_SYSTEM = MEMORY_SYSTEM.replace(
    "system = Memory()",
    """
LOOKS = {}


class SlowMemory(Memory):
    def setup_user(self, user):
        super().setup_user(user)
        log(f"ingestion {user.id} {json.dumps(user.ingestion, sort_keys=True)}")
        return {"memory_id": "mem-" + user.id}

    def ready(self, user, result):
        assert result == {"memory_id": "mem-" + user.id}, result
        plan = json.loads((ROOT / "ready_after.json").read_text())
        LOOKS[user.id] = LOOKS.get(user.id, 0) + 1
        wanted = plan.get(user.id, 1)
        return wanted != "never" and LOOKS[user.id] >= wanted


system = SlowMemory()
""",
)


def ready_project(project: Project, plan: dict, **suite_fields) -> Project:
    write_memory_project(project)
    project.write_text("memsys.py", READY_SYSTEM)
    project.write_text("ready_after.json", json.dumps(plan))
    project.write_suite(users_suite(**suite_fields))
    return project


def test_ingestion_settings_reach_setup_user_and_a_change_stales_every_case(
    project: Project,
) -> None:
    ready_project(project, {}, ingestion={"chunk_size": 200, "ontology": "people, pets"})
    assert project.run("--live").ret == 0
    assert 'ingestion u-ana {"chunk_size": 200, "ontology": "people, pets"}' in project.calls()
    assert project.run().ret == 0  # replay: the settings unchanged

    project.edit_suite("cases/memory.json", lambda doc: doc["ingestion"].update(chunk_size=400))
    replay = project.run()

    replay.assert_outcomes(errors=4)
    assert "ingestion.u-ana changed: ingestion.chunk_size 200 -> 400" in output(replay)
    assert "ingestion.u-bo changed: ingestion.chunk_size 200 -> 400" in output(replay)


def test_the_manifest_records_the_ingestion_settings(project: Project) -> None:
    ready_project(project, {}, ingestion={"chunk_size": 200})
    assert project.run("--live", "--eval-report", "r").ret == 0
    manifest = json.loads((project.root / "r" / "manifest.json").read_text())
    suite = next(iter(manifest["config"]["suites"].values()))
    assert suite["ingestion"] == {"chunk_size": 200}


def test_ready_is_polled_until_true_and_the_wait_is_reported(project: Project) -> None:
    ready_project(project, {"u-ana": 3, "u-bo": 1})

    live = project.run("--live", "--eval-report", "r")

    live.assert_outcomes(passed=4)
    assert "ingestion: waited for ready() of 2 users: u-ana" in output(live)
    results = json.loads((project.root / "r" / "results.json").read_text())
    waits = {c["id"]: c["recording"].get("ready_wait_s") for c in results["cases"]}
    assert waits["ana-cat"] is not None and waits["ana-cat"] > 0  # two back-off pauses
    # Ready at the first look: no back-off pause (the first is FIRST_POLL), only the look's
    # own time, which a busy machine rounds up to a millisecond or two.
    assert 0.0 <= waits["bo-car"] < FIRST_POLL


def test_a_user_never_ready_errors_its_cases_only_at_the_ingest_timeout(project: Project) -> None:
    ready_project(project, {"u-ana": "never"})

    live = project.run("--live", "--eval-ingest-timeout", "0.3")

    live.assert_outcomes(passed=2, errors=2)
    text = output(live)
    assert "ready('u-ana') of suite 'memory' was still false after" in text
    assert "(--eval-ingest-timeout)" in text
