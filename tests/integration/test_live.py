"""End to end: recording with --live / --live-stale. Only selected cases are recorded, writes are
atomic, a failing live run keeps the previous good cassette, async systems work, setup() runs once,
the fingerprint is keyed, and orphaned cassettes are listed and deleted by a full --live run."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    changes_section,
    error_block,
    make_case,
    output,
    record_template,
    suite_doc,
    summary_section,
)


def tmp_files(project: Project) -> list[str]:
    return [p.as_posix() for p in (project.root / "cassettes").rglob("*") if ".tmp" in p.name]


def runs(project: Project) -> list[str]:
    return sorted(line for line in project.calls() if not line.startswith("setup"))


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


def sorted_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    assert keys == sorted(keys), f"cassette keys are not sorted: {keys}"
    return dict(pairs)


def test_live_records_every_case_and_rewrites(project: Project) -> None:
    project.write_suite(suite_doc())

    first = project.run("--live")

    first.assert_outcomes(passed=3)
    assert runs(project) == ["run alpha", "run epsilon", "run gamma"]
    assert recordings_line(first).startswith("recordings: 3 recorded, 0 replayed")
    for case_id in ("alpha", "gamma", "epsilon"):
        text = project.cassette_path("suite", case_id).read_text()
        doc = json.loads(text, object_pairs_hook=sorted_object)
        assert "\n  " in text  # indented, so a re-record reads well in a diff
        assert (
            doc["trace"]["answer"]
            == {"alpha": "alpha beta", "gamma": "gamma delta", "epsilon": "epsilon zeta"}[case_id]
        )
        assert {"case", "system", "data/kb.txt", "fingerprint.prompt", "fingerprint.model"} <= set(
            doc["key"]
        )
        assert doc["recorded_at"] and doc["plugin_version"]

    project.clear_calls()
    project.steer(suffix=" (v2)")
    second = project.run("--live")

    assert runs(project) == ["run alpha", "run epsilon", "run gamma"]
    assert recordings_line(second).startswith("recordings: 3 recorded, 0 replayed")
    for case_id in ("alpha", "gamma", "epsilon"):
        assert project.cassette(case_id=case_id, suite="suite")["trace"]["answer"].endswith(" (v2)")
    second.assert_outcomes(failed=3)  # exact_match now fails against the unchanged reference
    assert tmp_files(project) == []


def test_setup_is_called_once_per_system_before_its_first_live_case(project: Project) -> None:
    project.write_suite(suite_doc())
    project.write_suite(
        suite_doc(
            "second",
            system="othersys:system",
            cases=[make_case("one", "one x"), make_case("two", "two x")],
        )
    )

    project.run("--live").assert_outcomes(passed=5)

    calls = project.calls()
    assert calls.count("setup suite") == 1 and calls.count("setup2 second") == 1, calls

    # Each system is set up before its own first case runs (systems set up concurrently, so
    # one system's cases may run before another system's setup).
    def first_run(*case_ids: str) -> int:
        return min(calls.index(f"run {case_id}") for case_id in case_ids)

    assert calls.index("setup suite") < first_run("alpha", "gamma", "epsilon"), calls
    assert calls.index("setup2 second") < first_run("one", "two"), calls

    project.clear_calls()
    project.run().assert_outcomes(passed=5)
    assert project.calls() == []  # replay: no setup, no run


def test_live_stale_records_only_missing_and_stale_cases(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    project.clear_calls()
    project.cassette_path("suite", "alpha").unlink()  # missing
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"][1].update(input="gamma delta!"))
    untouched = project.files()["cassettes/suite/epsilon.json"]

    result = project.run("--live-stale")

    result.assert_outcomes(passed=3)
    assert runs(project) == ["run alpha", "run gamma"]
    assert project.files()["cassettes/suite/epsilon.json"] == untouched  # same bytes and mtime
    assert project.cassette("suite", "gamma")["trace"]["answer"] == "gamma delta!"
    assert project.cassette_path("suite", "alpha").exists()
    assert recordings_line(result).startswith("recordings: 2 recorded, 1 replayed")

    project.clear_calls()
    project.run("-p", "no:cacheprovider").assert_outcomes(passed=3)
    assert project.calls() == []


def test_live_and_live_stale_together_is_a_usage_error(project: Project) -> None:
    project.write_suite(suite_doc())

    result = project.run("--live", "--live-stale")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert "--live" in "\n".join(result.errlines) and "--live-stale" in "\n".join(result.errlines)
    assert project.calls() == []
    assert project.files() == {}


def test_only_selected_cases_are_recorded(project: Project) -> None:
    project.write_suite(suite_doc())

    by_keyword = project.run("--live", "-k", "gamma")

    by_keyword.assert_outcomes(passed=1, deselected=2)
    assert runs(project) == ["run gamma"]
    assert list(project.files()) == ["cassettes/suite/gamma.json"]

    project.clear_calls()
    by_node_id = project.run("--live", "cases/suite.json::epsilon", "-m", "not storage")

    by_node_id.assert_outcomes(passed=1)
    assert runs(project) == ["run epsilon"]
    assert sorted(project.files()) == ["cassettes/suite/epsilon.json", "cassettes/suite/gamma.json"]


@pytest.fixture(scope="module")
def failed_live(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Recorded once; then a --live run where one case's system raises and another returns a
    malformed trace; then a replay."""
    project = record_template(tmp_path_factory.mktemp("failed-live"))
    before = project.files()
    project.steer(**{"raise": ["gamma"], "malformed": ["epsilon"]})
    live = project.run("--live", "-p", "no:cacheprovider")
    after = project.files()
    replay = project.run("-p", "no:cacheprovider")
    return SimpleNamespace(project=project, before=before, after=after, live=live, replay=replay)


def test_failing_live_run_keeps_the_previous_cassette(failed_live: SimpleNamespace) -> None:
    failed_live.live.assert_outcomes(passed=1, errors=2)
    for case_id in ("gamma", "epsilon"):
        path = f"cassettes/suite/{case_id}.json"
        assert failed_live.after[path][0] == failed_live.before[path][0]  # byte for byte
    assert tmp_files(failed_live.project) == []
    failed_live.replay.assert_outcomes(passed=3)  # the old recordings still replay


def test_system_that_raises_errors_with_its_traceback(failed_live: SimpleNamespace) -> None:
    block = error_block(failed_live.live, "suite::gamma")
    assert "RuntimeError: system exploded on gamma" in block
    assert "mysys.py" in block  # the system's own frame is in the traceback
    block = error_block(failed_live.live, "suite::epsilon")
    assert "malformed trace for suite::epsilon" in block


def test_summary_says_the_failed_cases_were_not_re_recorded(failed_live: SimpleNamespace) -> None:
    section = "\n".join(changes_section(failed_live.live))
    assert (
        "  not recorded: suite::gamma (RuntimeError: system exploded on gamma; the previous "
        "recording was kept)"
    ) in section, section
    assert "  not recorded: suite::epsilon (malformed trace" in section, section  # ours: no class
    assert "not recorded: suite::alpha" not in section
    assert "1 unchanged, 0 changed, 0 new; 2 not recorded" in section


def test_a_first_live_run_that_fails_keeps_its_whole_reason_on_one_line(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: `bad fields:` is followed by the fields on the same line, in the recording
    changes and in the short summary; with no earlier recording, none is said to be kept."""
    monkeypatch.setenv("COLUMNS", "300")
    project.write_suite(suite_doc())
    project.steer(malformed=["gamma"])

    result = project.run("--live", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=2, errors=1)
    fields = (
        "bad fields: answer (a number, not a string), tool_calls[0].name (missing), "
        "retrieved (a string, not a list)"
    )
    line = next(x for x in changes_section(result) if x.startswith("  not recorded: suite::gamma"))
    assert line.endswith(f"{fields})"), line
    assert "previous recording" not in line
    short = next(x for x in result.outlines if x.startswith("ERROR") and "gamma" in x)
    assert short.endswith(fields), short


def test_interrupted_live_run_leaves_every_cassette_whole(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    before = project.files()
    project.steer(suffix=" (v2)", interrupt=["gamma"])

    result = project.run_in_subprocess("--live")  # the system sends SIGINT to its own process

    assert result.ret == pytest.ExitCode.INTERRUPTED, output(result)
    after = project.files()
    assert sorted(after) == sorted(before)
    assert after["cassettes/suite/gamma.json"][0] == before["cassettes/suite/gamma.json"][0]
    for path, (content, _) in after.items():  # each one the old recording or a whole new one
        answer = json.loads(content)["trace"]["answer"]
        assert content == before[path][0] or answer.endswith(" (v2)"), path
    assert tmp_files(project) == []


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_async_system_records_in_live_mode(project: Project, xdist: list[str]) -> None:
    project.write_suite(suite_doc(system="mysys:async_system"))

    live = project.run("--live", *xdist)

    live.assert_outcomes(passed=3)
    assert sorted(line for line in project.calls() if line.startswith("arun")) == [
        "arun alpha",
        "arun epsilon",
        "arun gamma",
    ]
    assert project.cassette("suite", "gamma")["trace"]["answer"] == "gamma delta"
    assert tmp_files(project) == []
    project.run().assert_outcomes(passed=3)


def test_ini_eval_system_and_a_plain_callable(project: Project) -> None:
    project.write_text(
        "pytest.ini",
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "eval_system = mysys:plain_run\n",
    )
    doc = suite_doc()
    del doc["system"]
    project.write_suite(doc)

    project.run("--live").assert_outcomes(passed=3)

    assert sorted(project.calls()) == ["plain alpha", "plain epsilon", "plain gamma"]


def test_orphans_are_listed_and_deleted_only_by_a_full_live_run(project: Project) -> None:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"].pop())  # epsilon is gone
    project.write_text(
        "cassettes/gone-suite/old.json", (project.root / "cassettes/suite/alpha.json").read_text()
    )
    orphans = [
        "cassettes/gone-suite/old.json",
        "cassettes/suite/epsilon.http.json",  # its HTTP recording goes with it
        "cassettes/suite/epsilon.json",
    ]

    replay = project.run()

    replay.assert_outcomes(passed=2)
    summary = summary_section(replay)
    assert ", 3 orphaned" in recordings_line(replay)
    for path in orphans:
        assert f"  orphan: {path}" in summary
        assert (project.root / path).exists()

    partial = project.run("--live", "-k", "alpha")

    partial.assert_outcomes(passed=1, deselected=1)
    assert ", 3 orphaned" in recordings_line(partial)
    assert all((project.root / path).exists() for path in orphans)

    full = project.run("--live")

    full.assert_outcomes(passed=2)
    assert ", 3 orphaned" in recordings_line(full) and "deleted" in recordings_line(full)
    assert not any((project.root / path).exists() for path in orphans)
    assert sorted(project.files()) == ["cassettes/suite/alpha.json", "cassettes/suite/gamma.json"]


def test_setup_that_raises_errors_its_cases_and_the_run_goes_on(project: Project) -> None:
    project.write_suite(suite_doc())
    project.write_suite(
        suite_doc("second", system="othersys:system", cases=[make_case("one", "one x")])
    )
    project.steer(setup_raises=True)  # mysys.System.setup raises; othersys overrides setup

    result = project.run("--live")

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, errors=3)
    assert "setup exploded" in error_block(result, "suite::alpha")
    assert project.cassette_path("second", "one").exists()
    assert not project.cassette_path("suite", "alpha").exists()


OVERLAP_SYSTEM = '''\
"""A sync system that notes how many of its runs overlap (the most at once, in most.txt)."""
import threading, time
from pathlib import Path

LOCK, RUNNING, MOST = threading.Lock(), [0], [0]


def run(case):
    with LOCK:
        RUNNING[0] += 1
        MOST[0] = max(MOST[0], RUNNING[0])
        (Path(__file__).parent / "most.txt").write_text(str(MOST[0]))
    time.sleep(0.3)
    with LOCK:
        RUNNING[0] -= 1
    return {"answer": case["input"], "tool_calls": [{"name": "search", "args": {}}],
            "retrieved": [case["input"].split()[0]]}
'''


def test_sync_systems_run_as_many_at_once_as_eval_concurrency(project: Project) -> None:
    """asyncio's default thread pool has min(32, CPUs + 4) threads (6 on a 2-core machine): the
    live loop brings its own, so --eval-concurrency 9 means 9 sync runs at once."""
    project.write_text("overlap.py", OVERLAP_SYSTEM)
    cases = [make_case(f"c{i}", f"case {i}") for i in range(9)]
    project.write_suite(suite_doc(system="overlap:run", cases=cases))

    project.run("--live", "--eval-concurrency", "9").assert_outcomes(passed=9)

    assert (project.root / "most.txt").read_text() == "9"
