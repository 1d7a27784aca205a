"""End to end: suite users. Each user's files key that user's cases only (`user.<id>`),
`setup_user(user)` runs once per user before its first live case (never in replay), a failing
one errors only that user's cases, and the user is the case's group in every report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, error_block, output, summary_section

MEMORY_SYSTEM = '''\
"""A memory system: setup_user indexes a user's chats; run answers from that user's memory."""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MEMORY = {}


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


class Memory:
    def setup(self, suite):
        log(f"setup {suite.name}")

    def setup_user(self, user):
        fields = sorted(name for name in user if name != "id")
        log(f"setup_user {user.id} {' '.join(fields)}")
        for name in fields:
            paths = user[name] if isinstance(user[name], list) else [user[name]]
            assert all(Path(p).is_absolute() for p in paths), paths
        if user.id in json.loads((ROOT / "broken.json").read_text() or "[]"):
            raise RuntimeError(f"cannot ingest {user.id}")
        MEMORY[user.id] = json.loads(Path(user.chats).read_text())

    def run(self, case):
        log(f"run {case['id']} {case['user']}")
        facts = MEMORY[case["user"]]
        hit = [fact for fact in facts if any(w in fact for w in case["input"].split())]
        return {"answer": hit[0] if hit else "I don't know.", "context": hit,
                "retrieved": [case["user"]] if hit else []}


system = Memory()
'''


def users_suite(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "memory",
        "system": "memsys:system",
        "judge": "lexical",
        "inputs": ["data/kb.txt"],  # suite-wide: in every case's key, beside the user's files
        "stages": ["context_completeness", "answer_accuracy"],
        "users": [
            {"id": "u-ana", "chats": "data/ana/chats.json", "notes": ["data/ana/notes.md"]},
            {"id": "u-bo", "chats": "data/bo/chats.json"},
        ],
        "cases": [
            {
                "id": "ana-cat",
                "input": "cat name",
                "user": "u-ana",
                "category": "pets",
                "reference": "The cat name is Miso.",
            },
            {
                "id": "ana-city",
                "input": "city",
                "user": "u-ana",
                "category": "places",
                "reference": "Ana lives in the city of Porto.",
            },
            {
                "id": "bo-car",
                "input": "car",
                "user": "u-bo",
                "category": "things",
                "reference": "Bo drives a red car.",
            },
            {
                "id": "bo-dog",
                "input": "dog",
                "user": "u-bo",
                "category": "pets",
                "reference": "Bo has no dog.",
                "unanswerable": True,
            },
        ],
    }
    doc.update(fields)
    return doc


def write_memory_project(project: Project) -> None:
    project.write_text("memsys.py", MEMORY_SYSTEM)
    project.write_text("broken.json", "[]")
    project.write_text(
        "data/ana/chats.json",
        json.dumps(["The cat name is Miso.", "Ana lives in the city of Porto."]),
    )
    project.write_text("data/ana/notes.md", "# notes\n")
    project.write_text("data/bo/chats.json", json.dumps(["Bo drives a red car."]))


@pytest.fixture
def memory(project: Project) -> Project:
    write_memory_project(project)
    project.write_suite(users_suite())
    project.run("--live").assert_outcomes(passed=4)
    return project


def stale_cases(result: pytest.RunResult) -> list[str]:
    text = output(result)
    return sorted(
        case
        for case in ("ana-cat", "ana-city", "bo-car", "bo-dog")
        if f"ERROR cases/memory.json::{case}" in text
    )


def test_setup_user_runs_once_per_user_after_setup_and_never_in_replay(memory: Project) -> None:
    calls = memory.calls()

    assert calls[0] == "setup memory"
    assert calls.count("setup_user u-ana chats notes") == 1
    assert calls.count("setup_user u-bo chats") == 1
    first_ana = min(i for i, c in enumerate(calls) if c.startswith("run ana-"))
    first_bo = min(i for i, c in enumerate(calls) if c.startswith("run bo-"))
    assert calls.index("setup_user u-ana chats notes") < first_ana
    assert calls.index("setup_user u-bo chats") < first_bo

    memory.clear_calls()
    memory.run().assert_outcomes(passed=4)
    assert memory.calls() == []  # replay: neither setup nor setup_user nor run


def test_each_users_files_key_that_users_cases_only(memory: Project) -> None:
    keys = {
        case: memory.cassette("memory", case)["key"]
        for case in ("ana-cat", "ana-city", "bo-car", "bo-dog")
    }

    assert "user.u-ana" in keys["ana-cat"] and "user.u-bo" not in keys["ana-cat"]
    assert keys["ana-cat"]["user.u-ana"] == keys["ana-city"]["user.u-ana"]
    assert "user.u-bo" in keys["bo-car"] and "user.u-ana" not in keys["bo-car"]
    assert all(
        {name for name in key if name.startswith("data/")} == {"data/kb.txt"}
        for key in keys.values()
    )


def test_editing_one_users_file_stales_only_that_users_cases(memory: Project) -> None:
    memory.write_text("data/ana/notes.md", "# notes\nAna moved.\n")

    result = memory.run()

    result.assert_outcomes(passed=2, errors=2)
    assert stale_cases(result) == ["ana-cat", "ana-city"]
    message = error_block(result, "::ana-cat")
    # Only the file that changed is named, with its old and new short hashes.
    assert "user.u-ana changed (data/ana/notes.md@" in message, message
    assert "chats.json" not in message, message

    memory.clear_calls()
    memory.run("--live-stale").assert_outcomes(passed=4)
    calls = memory.calls()
    assert calls[:2] == ["setup memory", "setup_user u-ana chats notes"], calls
    assert sorted(calls[2:]) == ["run ana-cat u-ana", "run ana-city u-ana"], calls


def test_a_failing_setup_user_errors_only_that_users_cases(project: Project) -> None:
    write_memory_project(project)
    project.write_suite(users_suite())
    project.write_text("broken.json", '["u-bo"]')

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=2)
    message = error_block(result, "::bo-car")
    assert "setup_user('u-bo') of suite 'memory' raised RuntimeError: cannot ingest u-bo" in message
    assert "setup_user('u-bo')" in error_block(result, "::bo-dog")
    assert project.calls().count("setup_user u-bo chats") == 1  # not retried per case
    assert not project.cassette_path("memory", "bo-car").exists()
    assert project.cassette_path("memory", "ana-cat").exists()


def test_unknown_user_and_missing_user_file_error_only_their_cases(project: Project) -> None:
    write_memory_project(project)
    doc = users_suite()
    doc["users"][1]["chats"] = "data/bo/missing.json"
    doc["cases"].append({"id": "cy-x", "input": "x", "user": "u-cy", "reference": "x"})
    project.write_suite(doc)

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=3)
    bo = error_block(result, "::bo-car")
    assert "user 'u-bo', field 'chats': input file 'data/bo/missing.json' cannot be read" in bo
    cy = error_block(result, "::cy-x")
    assert "user 'u-cy' is not declared by the suite (its \"users\": 'u-ana', 'u-bo')" in cy
    # The broken cases count in their user's row (cases, not scored), not in a `-` row.
    section = summary_section(result)
    users = section[next(i for i, line in enumerate(section) if line.startswith("user ")) :]
    rows = {line.split()[0]: line.split()[1:4] for line in users if line.startswith(("u-", "- "))}
    assert rows == {"u-ana": ["2", "2", "100%"], "u-bo": ["0", "0", "-"], "u-cy": ["0", "0", "-"]}


def test_a_user_field_that_is_not_a_file_is_a_suite_error(project: Project) -> None:
    write_memory_project(project)
    project.write_suite(users_suite(users=[{"id": "u-ana", "age": 31}]))

    result = project.run()

    assert "users[0]: Value error, field 'age' must be a file path" in output(result)


def test_the_user_is_the_group_in_terminal_report_and_dashboard(memory: Project) -> None:
    result = memory.run("--eval-report", "out")

    result.assert_outcomes(passed=4)
    section = summary_section(result)
    header = next(line for line in section if line.startswith("user "))
    assert header.split() == [
        "user",
        "passed",
        "scored",
        "pass",
        "rate",
        "95%",
        "CI",
        "C/P/I",
        "right/wrong",
        "mean",
        "context_completeness",
        "mean",
        "answer_accuracy",
    ]
    rows = {
        line.split()[0]: line.split() for line in section if line.startswith(("u-ana ", "u-bo "))
    }
    # bo-dog is unanswerable: no completeness verdict, an abstention is CORRECT.
    assert rows["u-ana"][1:] == ["2", "2", "100%", "34%-100%", "2/0/0", "2/0", "1.000", "1.000"]
    assert rows["u-bo"][1:] == ["2", "2", "100%", "34%-100%", "1/0/0", "2/0", "1.000", "1.000"]
    category = next(line for line in section if line.startswith("category "))
    assert category.split()[-2:] == ["C/P/I", "right/wrong"]
    assert section.count("C/P/I: cases whose context was COMPLETE / PARTIAL / INSUFFICIENT") == 1

    doc = json.loads((memory.root / "out" / "results.json").read_text())
    assert doc["group_kind"] == "user"
    assert doc["groups"]["u-ana"]["completeness"] == {
        "COMPLETE": 2,
        "PARTIAL": 0,
        "INSUFFICIENT": 0,
    }
    assert doc["groups"]["u-bo"]["accuracy"] == {"CORRECT": 2, "WRONG": 0}
    assert doc["categories"]["pets"]["completeness"]["COMPLETE"] == 1
    report = (memory.root / "out" / "report.md").read_text()
    assert "### Users" in report
    assert (
        "| INSUFFICIENT | CORRECT | WRONG | complete rate | mean context_completeness |" in report
    )
    assert (
        "| u-ana | 2 | 2 | 0 | 100.0% | 34.2–100.0% | 2 | 0 | 0 | 2 | 0 | 100.0% | 1.000 | 1.000 |"
        in report
    )
    dashboard = (memory.root / "out" / "dashboard.html").read_text()
    assert "<h2>Users</h2>" in dashboard and "<th>user</th>" in dashboard
    assert '<p>user <span class="mono">u-ana</span></p>' in dashboard  # a case's detail


def test_the_system_sees_its_cases_user(memory: Project) -> None:
    trace = memory.cassette("memory", "bo-car")["trace"]

    assert trace["answer"] == "Bo drives a red car."
    assert Path(memory.root / "cassettes" / "memory" / "bo-dog.json").exists()


def test_replay_http_runs_setup_user_once_per_user_then_the_cases(memory: Project) -> None:
    memory.clear_calls()

    result = memory.run("--replay-http")

    result.assert_outcomes(passed=4)
    calls = memory.calls()
    assert calls.count("setup_user u-ana chats notes") == 1
    assert calls.count("setup_user u-bo chats") == 1
    assert sorted(c for c in calls if c.startswith("run ")) == [
        "run ana-cat u-ana",
        "run ana-city u-ana",
        "run bo-car u-bo",
        "run bo-dog u-bo",
    ]
