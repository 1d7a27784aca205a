"""End to end: names, not hashes. A cassette keeps a readable label beside each key hash (judge
spec, system spec, short fingerprint values, input paths, code paths, the case) and stale
messages show them; a judge that differs only because of an --eval-judge or ini eval_judge
override is named in the advice (the issue's `--live-judges --eval-judge openai:gpt-4o-mini` on a
suite whose judge is `lexical`)."""

from __future__ import annotations

import pytest
from evalhelpers import Project, error_block, make_case, run_pytest_env_in_process, suite_doc
from judge_server import JudgeServer, judge_server_fixture

OPENAI = "openai:gpt-4o-mini"
INI = (
    "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
    "asyncio_default_fixture_loop_scope = function\n"
)

judge_server = judge_server_fixture()


def judged_suite(**fields: object) -> dict[str, object]:
    return suite_doc(
        stages=["tools", "faithfulness"],
        cases=[make_case("alpha", "alpha beta"), make_case("gamma", "gamma delta")],
        **fields,
    )


def stale_line(result: pytest.RunResult, case_id: str) -> str:
    block = error_block(result, f"suite::{case_id}")
    return next(line.strip() for line in block.splitlines() if "stale recording" in line)


def test_a_cassette_keeps_a_label_beside_each_key_hash(project: Project) -> None:
    project.write_suite(judged_suite(judge="lexical"))

    project.run("--live").assert_outcomes(passed=2)

    doc = project.cassette("suite", "alpha")
    assert doc["labels"]["key"] == {
        "case": '"alpha beta"',
        "code.mysys": "mysys.py",
        "data/kb.txt": "data/kb.txt",
        "fingerprint.model": '"echo-1"',
        "fingerprint.prompt": '"answer briefly"',
        "system": "mysys:system",
    }
    assert set(doc["labels"]["key"]) <= set(doc["key"])  # a label per hash, where one exists
    assert doc["labels"]["verdicts"] == {
        "faithfulness": {"judge": "lexical", "judge_version": "lexical-1", "params": "strict=false"}
    }
    assert doc["labels"]["judge_from"] == "suite"


def test_the_issue_scenario_names_the_override_the_verdicts_were_recorded_with(
    project: Project, judge_server: JudgeServer
) -> None:
    project.write_suite(judged_suite(judge="lexical"))
    project.run("--live").assert_outcomes(passed=2)
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": judge_server.base_url}
    rejudged = run_pytest_env_in_process(
        project.root, "-p", "no:cacheprovider", "--live-judges", "--eval-judge", OPENAI, env=env
    )
    rejudged.assert_outcomes(passed=2)
    assert project.cassette("suite", "alpha")["labels"]["judge_from"] == "--eval-judge"

    replay = project.run()

    replay.assert_outcomes(errors=2)
    assert stale_line(replay, "alpha") == (
        f"stale recording (verdict faithfulness): judge changed ({OPENAI} -> lexical); "
        f'recorded with --eval-judge {OPENAI}; pass the same option, set "judge" in the suite, '
        "or re-judge with --live-judges"
    )
    # The advice holds: the same option replays the new verdicts, with no key and no server.
    project.run("--eval-judge", OPENAI).assert_outcomes(passed=2)


def test_an_ini_judge_is_named_when_the_suite_now_sets_another(project: Project) -> None:
    project.write_text("pytest.ini", INI + "eval_judge = lexical\n")
    project.write_suite(judged_suite())
    project.run("--live").assert_outcomes(passed=2)
    project.edit_suite("cases/suite.json", lambda doc: doc.update(judge=OPENAI))

    replay = project.run()

    replay.assert_outcomes(errors=2)
    assert stale_line(replay, "gamma") == (
        f"stale recording (verdict faithfulness): judge changed (lexical -> {OPENAI}); "
        'recorded with ini eval_judge = lexical; pass --eval-judge lexical, set "judge" in the '
        "suite, or re-judge with --live-judges"
    )
    project.run("--eval-judge", "lexical").assert_outcomes(passed=2)


def test_an_override_of_the_suite_s_judge_is_named(project: Project) -> None:
    project.write_suite(judged_suite(judge="lexical"))
    project.run("--live").assert_outcomes(passed=2)

    replay = project.run("--eval-judge", OPENAI)

    replay.assert_outcomes(errors=2)
    assert stale_line(replay, "alpha") == (
        f"stale recording (verdict faithfulness): judge changed (lexical -> {OPENAI}); "
        f"recorded with the suite's judge lexical, while this run's {OPENAI} comes from "
        "--eval-judge; run without the option, or re-judge with --live-judges"
    )


def test_a_verdict_setting_is_named_and_the_usual_advice_stays(project: Project) -> None:
    project.write_suite(judged_suite(judge="lexical"))
    project.run("--live").assert_outcomes(passed=2)
    project.edit_suite("cases/suite.json", lambda doc: doc.update(strict=True))

    replay = project.run()

    assert stale_line(replay, "alpha") == (
        "stale recording (verdict faithfulness): params changed (strict=false -> strict=true); "
        "re-record with --live-judges"
    )


def test_labels_are_redacted_like_the_rest_of_a_recording(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "s3cret-Token-123456")
    project.steer(fingerprint={"prompt": "answer briefly", "token": "s3cret-Token-123456"})
    project.write_suite(suite_doc())

    project.run("--live").assert_outcomes(passed=3)

    text = project.cassette_path("suite", "alpha").read_text()
    assert "s3cret-Token-123456" not in text
    assert project.cassette("suite", "alpha")["labels"]["key"]["fingerprint.token"] == (
        '"[REDACTED:MY_SERVICE_TOKEN]"'
    )
