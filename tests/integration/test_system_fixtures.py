"""End to end: a system built by a pytest fixture (`"system": "fixture:NAME"`, a conftest's
`evalcases_system(request)`). Found at collection without being called (its code keys the
recordings), built only by runs that run the system, once per process for a session-scoped
fixture (xdist workers too), torn down at the end; its error errors its suite's cases."""

from __future__ import annotations

import json
import os
from collections import Counter

from evalhelpers import Project, error_block, output, suite_doc

from .test_users import users_suite, write_memory_project

# The fixture logs each build and teardown, with its process, to builds.log.
CONFTEST = """\
import os
from pathlib import Path

import pytest

import agent_parts

LOG = Path(__file__).resolve().parent / "builds.log"


def note(line):
    with open(LOG, "a") as handle:
        handle.write(f"{line} {os.getpid()}\\n")


@pytest.fixture(scope="session")
def support_agent(tmp_path_factory):
    note("build")
    if (Path(__file__).parent / "fixture_fails").exists():
        raise RuntimeError("the database did not start")
    yield agent_parts.make_agent(tmp_path_factory.mktemp("db"))
    note("teardown")
"""

AGENT_PARTS = '''\
"""What the fixture builds the agent from (its code is in the key: the conftest imports it)."""
from mysys import System

PROMPT = "answer briefly"  # a comment here changes no key


def make_agent(folder):
    assert folder.is_dir()
    return System("fixture-built")
'''


def fixture_project(project: Project, *suites: dict) -> Project:
    project.write_text("conftest.py", CONFTEST)
    project.write_text("agent_parts.py", AGENT_PARTS)
    for suite in suites or (suite_doc(system="fixture:support_agent"),):
        project.write_suite(suite)
    return project


def two_suites(system: str) -> tuple[dict, dict]:
    return suite_doc("first", system=system), suite_doc("second", system=system)


def builds(project: Project) -> list[str]:
    path = project.root / "builds.log"
    return path.read_text().split()[::2] if path.exists() else []


def build_lines(project: Project) -> list[tuple[str, str]]:
    path = project.root / "builds.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(line.split()[0], line.split()[1]) for line in lines]


def test_the_fixture_is_built_by_runs_of_the_system_and_never_to_replay(
    project: Project,
) -> None:
    fixture_project(project)

    project.run("--live").assert_outcomes(passed=3)
    assert builds(project) == ["build", "teardown"]
    assert project.calls().count("setup suite") == 1  # the built object's setup(suite) ran
    assert sorted(c for c in project.calls() if c.startswith("run ")) == [
        "run alpha",
        "run epsilon",
        "run gamma",
    ]

    project.clear_calls()
    project.run().assert_outcomes(passed=3)  # a plain replay: no fixture, no system
    assert builds(project) == ["build", "teardown"]
    assert project.calls() == []

    project.run("--live-judges").assert_outcomes(passed=3)  # judges recorded traces only
    assert builds(project) == ["build", "teardown"]

    project.run("--replay-http").assert_outcomes(passed=3)
    assert builds(project) == ["build", "teardown"] * 2


def test_a_session_fixture_is_built_once_per_process_and_shared_with_tests(
    project: Project,
) -> None:
    fixture_project(project, *two_suites("fixture:support_agent"))
    project.write_text(
        "test_plain.py",
        "def test_uses_the_agent(support_agent):\n"
        "    assert support_agent.name == 'fixture-built'\n",
    )

    project.run("--live").assert_outcomes(passed=7)

    assert builds(project) == ["build", "teardown"]


def test_under_xdist_each_worker_builds_a_session_fixture_once(project: Project) -> None:
    fixture_project(project, *two_suites("fixture:support_agent"))

    project.run("--live", "-n", "2").assert_outcomes(passed=6)

    lines = build_lines(project)
    built = Counter(pid for what, pid in lines if what == "build")
    torn_down = Counter(pid for what, pid in lines if what == "teardown")
    assert str(os.getpid()) not in built  # the controller runs no case: it builds nothing
    assert 1 <= len(built) <= 2 and set(built.values()) == {1}, lines
    assert torn_down == built, lines


def test_the_fixtures_code_and_its_imports_key_the_recordings(project: Project) -> None:
    fixture_project(project)
    project.run("--live").assert_outcomes(passed=3)
    recorded = project.cassette("suite", "alpha")
    assert recorded["labels"]["key"]["system"] == "fixture:support_agent"
    assert {"code.conftest", "code.agent_parts", "code.mysys"} <= set(recorded["key"])

    parts = project.root / "agent_parts.py"
    parts.write_text(parts.read_text().replace("# a comment here", "# another comment"))
    project.run().assert_outcomes(passed=3)  # comments change no key

    parts.write_text(parts.read_text().replace('"answer briefly"', '"answer at length"'))
    stale = project.run()

    stale.assert_outcomes(errors=3)
    assert "code.agent_parts changed" in error_block(stale, "alpha")
    assert builds(project) == ["build", "teardown"]  # found at collection, never called


def test_an_error_in_the_fixture_errors_its_suites_cases_only(project: Project) -> None:
    fixture_project(
        project,
        suite_doc("built", system="fixture:support_agent"),
        suite_doc("imported", system="mysys:system"),
    )
    (project.root / "fixture_fails").write_text("")

    result = project.run("--live")

    result.assert_outcomes(passed=3, errors=3)
    expected = (
        "system 'fixture:support_agent': fixture 'support_agent' (conftest.py:16) raised "
        "RuntimeError: the database did not start (at conftest.py:20 in support_agent)"
    )
    assert expected in error_block(result, "built::alpha")
    assert builds(project) == ["build"]  # built once: its error is every case's


def test_an_unknown_fixture_is_a_collection_error_with_the_name_it_is_close_to(
    project: Project,
) -> None:
    fixture_project(project, suite_doc(system="fixture:suport_agent"))

    result = project.run()

    result.assert_outcomes(errors=1)
    assert (
        "cases/suite.json: system 'fixture:suport_agent': no fixture 'suport_agent' is visible "
        "from this case file (did you mean 'support_agent'?)"
    ) in output(result)


EVALCASES_SYSTEM = '''

@pytest.fixture
def evalcases_system(request, support_agent):
    """One system per suite: the suite is request.param."""
    note(f"evalcases_system:{request.param.name}")
    from mysys import System
    return System(request.param.name)
'''


def test_evalcases_system_builds_the_system_of_each_suite_that_names_none(
    project: Project,
) -> None:
    fixture_project(
        project,
        suite_doc("first", system=None),
        suite_doc("second", system=None),
        suite_doc("named", system="mysys:system"),
    )
    project.write_text("conftest.py", CONFTEST + EVALCASES_SYSTEM)

    project.run("--live").assert_outcomes(passed=9)

    assert sorted(builds(project)) == sorted(
        ["build", "evalcases_system:first", "evalcases_system:second", "teardown"]
    )
    labels = {name: project.cassette(name, "alpha")["labels"]["key"] for name in ("first", "named")}
    assert labels["first"]["system"] == "fixture:evalcases_system"
    assert labels["named"]["system"] == "mysys:system"
    project.run().assert_outcomes(passed=9)
    assert len(builds(project)) == 4


def test_a_function_scoped_fixture_is_built_once_for_each_suite(project: Project) -> None:
    fixture_project(project, *two_suites("fixture:per_suite_agent"))
    project.write_text(
        "conftest.py",
        CONFTEST
        + "\n\n@pytest.fixture\ndef per_suite_agent():\n    note('per-suite')\n"
        + "    from mysys import System\n    yield System('per-suite')\n"
        + "    note('per-suite-down')\n",
    )

    project.run("--live").assert_outcomes(passed=6)

    assert builds(project) == ["per-suite", "per-suite", "per-suite-down", "per-suite-down"]


def test_a_fixtures_system_ingests_its_users_live_and_replays_without_being_built(
    project: Project,
) -> None:
    write_memory_project(project)
    project.write_text(
        "conftest.py",
        "import pytest\nimport memsys\n\n\n@pytest.fixture(scope='session')\n"
        "def memory_system():\n    memsys.log('built')\n    return memsys.Memory()\n",
    )
    project.write_suite(users_suite(system="fixture:memory_system"))

    project.run("--live").assert_outcomes(passed=4)
    calls = project.calls()
    assert calls[:2] == ["built", "setup memory"]
    assert calls.count("setup_user u-ana chats notes") == 1

    project.clear_calls()
    project.run().assert_outcomes(passed=4)
    assert project.calls() == []


def test_a_parametrized_fixture_is_refused(project: Project) -> None:
    fixture_project(project, suite_doc(system="fixture:odd"))
    project.write_text(
        "conftest.py",
        CONFTEST + "\n\n@pytest.fixture(params=['a'])\ndef odd(request):\n    return None\n",
    )

    result = project.run()

    result.assert_outcomes(errors=1)
    assert "system 'fixture:odd': fixture 'odd' (conftest.py:25) is parametrized" in output(result)


def test_the_run_manifest_describes_a_fixture_suite_the_run_did_not_collect(
    project: Project,
) -> None:
    fixture_project(project, *two_suites("fixture:support_agent"))

    project.run("cases/first.json", "--eval-report", "out").assert_outcomes(errors=3)  # missing

    config = json.loads((project.root / "out" / "manifest.json").read_text())["config"]
    assert config["unloadable"] == {}
    second = config["suites"]["second"]
    assert second["system"] == "fixture:support_agent"
    assert {"conftest", "agent_parts", "mysys"} <= set(second["code"])
    assert builds(project) == []
