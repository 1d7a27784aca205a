"""End to end: a suite's own judged stages (`"judged_stages"`, graded by deepeval's GEval on the
suite's LLM judge) and its own deepeval metric classes (`"metrics"`), in pytest runs of a small
project: recorded live against the loopback judge server (tests/judge_server.py), replayed,
staled by an edited criterion, and replayed where the metric's class and deepeval cannot be
imported.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from evalhelpers import (
    Project,
    make_case,
    output,
    run_live_openai,
    run_pytest_env_in_process,
    suite_doc,
)
from judge_server import POISON, JudgeServer, judge_server_fixture
from judgehelpers import brand_voice_metric

judge_server = judge_server_fixture()

POLITE = "The answer is courteous and does not blame the user."


def own_suite(**fields: Any) -> dict[str, Any]:
    cases = [
        make_case("kind", "thanks for asking here it is"),
        make_case("rude", f"{POISON} you should have read the manual"),
    ]
    doc = suite_doc(
        "own",
        cases=cases,
        stages=["polite", "brand_voice"],
        judged_stages={
            "polite": {"criteria": POLITE, "reads": ["input", "answer"], "threshold": 0.7}
        },
        metrics={"brand_voice": "team_metrics:BrandVoice"},
    )
    doc.update(fields)
    return doc


def write_project(project: Project, **fields: Any) -> None:
    metric = "from team_voice import VOICE\n" + brand_voice_metric("VOICE")
    project.write_text("team_metrics.py", metric)
    project.write_text("team_voice.py", 'VOICE = "Warm, plain words."\n')
    project.write_suite(own_suite(**fields))


def results(project: Project, folder: str = "out") -> dict[str, Any]:
    return json.loads((project.root / folder / "results.json").read_text())


def stage_row(doc: dict[str, Any], case: str, stage: str) -> dict[str, Any]:
    found = next(c for c in doc["cases"] if c["id"] == case)
    return found["stages"][stage]


def replay(project: Project, *args: str) -> pytest.RunResult:
    """A replay that sees no judge key or endpoint (nothing could be judged live)."""
    return run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", *args)


def test_own_stages_are_judged_live_recorded_and_replayed(
    project: Project, judge_server: JudgeServer
) -> None:
    write_project(project)
    live = run_live_openai(project, judge_server.base_url, "--eval-report", "out")
    live.assert_outcomes(passed=1, failed=1)
    text = output(live)
    assert "first failing stage: polite (0.20 < 0.70; canned GEval reasoning)" in text
    assert "brand_voice  0.20   0.60       FAIL  0.20 < 0.60; canned: brand voice" in text
    # GEval drafted the criteria's steps once for both cases; each case: one GEval score, one
    # request of the metric
    assert sorted(judge_server.kinds()) == sorted(
        ["geval_steps", "geval_score", "geval_score", "own_metric", "own_metric"]
    )
    doc = project.cassette("own", "rude")
    polite, voice = doc["verdicts"]["polite"], doc["verdicts"]["brand_voice"]
    assert polite["score"] == 0.2 and polite["details"]["evaluation_steps"]
    assert set(polite["key"]) == {"criteria", "reads", "params", "judge", "judge_version"}
    assert doc["labels"]["verdicts"]["polite"]["criteria"] == json.dumps(POLITE)
    # the metric's verdict: keyed by its class and its source (its module and what it
    # imports of the project), its threshold and cost recorded
    assert voice["score"] == 0.2 and voice["details"]["threshold"] == 0.6
    assert {"metric", "code.team_metrics", "code.team_voice", "reference"} <= set(voice["key"])
    assert voice["usage"]["cost_usd"] >= 0.25
    recorded = results(project)
    assert recorded["cost"]["judge"]["cost_usd"] >= 0.5  # the metric's own cost, both cases
    assert stage_row(recorded, "kind", "polite")["passed"] is True
    assert stage_row(recorded, "kind", "brand_voice")["threshold"] == 0.6

    replayed = replay(project, "--eval-report", "again")
    replayed.assert_outcomes(passed=1, failed=1)
    assert "2 replayed" in output(replayed)
    again = results(project, "again")
    for case in ("kind", "rude"):
        for stage in ("polite", "brand_voice"):
            assert stage_row(again, case, stage) == stage_row(recorded, case, stage)
    assert len(judge_server.requests) == 5  # nothing judged again
    # --replay-http runs the system again (its HTTP served from the recording) and scores the
    # new trace with the recorded verdicts, checked against their keys
    offline = replay(project, "--replay-http")
    offline.assert_outcomes(passed=1, failed=1)
    assert "first failing stage: polite (0.20 < 0.70; canned GEval reasoning)" in output(offline)
    assert len(judge_server.requests) == 5

    # --thresholds names the suite's own stages like any other
    project.edit_suite("cases/own.json", lambda d: d.update(thresholds={"brand_voice": 0.1}))
    lowered = replay(project)
    assert "brand_voice  0.20   0.10       pass  0.20 >= 0.10" in output(lowered)


def test_a_changed_criterion_or_metric_source_stales_exactly_those_verdicts(
    project: Project, judge_server: JudgeServer
) -> None:
    write_project(project)
    run_live_openai(project, judge_server.base_url).assert_outcomes(passed=1, failed=1)

    def reword(doc: dict[str, Any]) -> None:
        doc["judged_stages"]["polite"]["criteria"] = POLITE.replace("courteous", "kind")

    project.edit_suite("cases/own.json", reword)
    stale = replay(project)
    stale.assert_outcomes(errors=2)
    assert (
        'stale recording (verdict polite): criteria changed ("The answer is courteous and does '
        'not blame the user." -> "The answer is kind and does not blame the user."); re-record '
        "with --live-judges"
    ) in output(stale)
    assert "verdict brand_voice" not in output(stale)

    before = len(judge_server.requests)
    rejudged = run_pytest_env_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        "--live-judges",
        "--eval-judge",
        "openai:gpt-4o-mini",
        env={"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": judge_server.base_url},
    )
    rejudged.assert_outcomes(passed=1, failed=1)
    # only the stale verdicts were judged again: polite's steps and two scores, no metric
    assert sorted(judge_server.kinds()[before:]) == ["geval_score", "geval_score", "geval_steps"]
    project.write_text("team_voice.py", 'VOICE = "Warm, plain, short words."\n')
    stale = replay(project)
    stale.assert_outcomes(errors=2)
    assert re.search(
        r"stale recording \(verdict brand_voice\): code\.team_voice changed \([0-9a-f]{6} -> "
        r"[0-9a-f]{6}\); re-record with --live-judges",
        output(stale),
    )
    assert "verdict polite" not in output(stale)


GUARD = """\
import sys


class NoDeepEval:
    \"\"\"Replay must need neither deepeval nor the suite's metric class.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("deepeval", "team_metrics"):
            raise ImportError(f"{name} is not installed here")
        return None


sys.meta_path.insert(0, NoDeepEval())
try:
    import team_metrics  # noqa: F401
except ImportError:
    GUARDED = "guarded"
else:
    GUARDED = "not guarded"


def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("deepeval", "team_metrics"))
    with open("guard.txt", "w") as handle:
        handle.write(GUARDED + " " + ",".join(loaded))
"""


@pytest.mark.subprocess
def test_replay_needs_neither_deepeval_nor_the_metric_class(
    project: Project, judge_server: JudgeServer
) -> None:
    write_project(project)
    run_live_openai(project, judge_server.base_url).assert_outcomes(passed=1, failed=1)
    project.write_text("conftest.py", GUARD)
    guarded = project.run("-p", "no:cacheprovider")
    guarded.assert_outcomes(passed=1, failed=1)
    assert "first failing stage: polite (0.20 < 0.70" in output(guarded)
    assert "2 replayed" in output(guarded)
    assert (project.root / "guard.txt").read_text() == "guarded "  # and nothing of either loaded


def test_mistakes_in_a_suites_own_stages_are_collection_errors(project: Project) -> None:
    write_project(project)
    polite = {"criteria": POLITE}
    bad = {
        "lexical": own_suite(name="lexical", judge="lexical"),
        "builtin": own_suite(
            name="builtin", stages=["faithfulness"], judged_stages={"faithfulness": polite}
        ),
        "twice": own_suite(
            name="twice", stages=["brand_voice"], judged_stages={"brand_voice": polite}
        ),
        "typo": own_suite(name="typo", stages=["polit"]),
        "nomodule": own_suite(name="nomodule", metrics={"brand_voice": "no_such:Metric"}),
        "bands": own_suite(
            name="bands",
            judged_stages={
                "polite": {
                    **polite,
                    "rubric": [
                        {"score_range": [0, 5], "expected_outcome": "rude"},
                        {"score_range": [5, 10], "expected_outcome": "kind"},
                    ],
                }
            },
        ),
    }
    for name, doc in bad.items():
        project.write_suite(doc, f"cases/{name}.json")
    # deepeval's own metric, from the installed package: keyed by its release, collected
    installed = own_suite(
        name="installed",
        stages=["bias"],
        metrics={"bias": "deepeval.metrics:BiasMetric"},
        judged_stages={},
    )
    project.write_suite({**installed, "cases": installed["cases"][:1]}, "cases/installed.json")
    (project.root / "cases" / "own.json").unlink()
    result = run_pytest_env_in_process(project.root, "-p", "no:cacheprovider")
    result.assert_outcomes(errors=len(bad) + 1)
    text = output(result)
    assert "no recording for installed::kind; record it with --live" in text  # collected
    assert (
        'stage(s) polite, brand_voice (the suite\'s own "judged_stages"/"metrics") need an LLM '
        "judge, and this suite's judge is lexical (from the suite's \"judge\")"
    ) in text
    assert (
        "cases/builtin.json: \"judged_stages\" declares 'faithfulness', already the name of a "
        "stage of the plugin's (built in, or registered by a stage module)"
    ) in text
    assert (
        'cases/twice.json: \'brand_voice\' declared both in "judged_stages" and in "metrics"'
    ) in text
    assert "cases/typo.json: unknown stage(s) polit (did you mean 'polite'?)" in text
    assert "cases/nomodule.json: \"metrics\": 'no_such:Metric': its source keys" in text
    assert "rubric bands [0, 5] and [5, 10] overlap" in text


def test_own_stages_take_repeats_and_runs_and_replay_under_xdist(
    project: Project, judge_server: JudgeServer
) -> None:
    write_project(project)
    live = run_live_openai(
        project, judge_server.base_url, "--eval-judge-repeats", "2", "--eval-runs", "2"
    )
    live.assert_outcomes(passed=1, failed=1)
    doc = project.cassette("own", "kind")
    for stage in ("polite", "brand_voice"):
        assert len(doc["verdicts"][stage]["later_repeats"]) == 1  # repeat 2 beside repeat 1
    (run2,) = doc["later_runs"]  # run 2 beside run 1, judged alike
    assert set(run2["verdicts"]) == {"polite", "brand_voice"}
    replayed = replay(project, "-n", "2")  # each worker builds the suite's own stages
    replayed.assert_outcomes(passed=1, failed=1)
    text = output(replayed)
    assert (
        "0/2 runs passed (pass^k needs all); run 1: first failing stage: polite (0.20 < 0.70 "
        "over 2 repeats [0.20, 0.20])"
    ) in text
    assert "brand_voice  0.20   0.60       FAIL  0.20 < 0.60 over 2 repeats [0.20, 0.20]" in text


def test_a_calibration_suite_tests_the_suites_own_criteria(
    project: Project, judge_server: JudgeServer
) -> None:
    polite = {"criteria": POLITE, "reads": ["input", "answer"], "threshold": 0.7}
    cases = [
        {
            "id": "blames",
            "stage": "polite",
            "input": "Why was I charged twice?",
            "answer": f"You clicked twice {POISON}.",
            "expect": "fail",
            "defect": "blames the user for the double charge",
        },
        {
            "id": "kind",
            "stage": "polite",
            "input": "Why was I charged twice?",
            "answer": "Sorry about that: the second charge is refunded today.",
            "expect": "pass",
        },
    ]
    cal = {"name": "cal", "kind": "calibration", "judged_stages": {"polite": polite}}
    project.write_suite({**cal, "repeats": 2, "cases": cases})
    recorded = run_live_openai(project, judge_server.base_url, "--eval-report", "out")
    recorded.assert_outcomes(passed=2)
    assert judge_server.kinds().count("geval_score") == 4  # two repeats of each case
    by_id = {c["case"]: c for c in results(project)["calibration"]["cases"]}
    assert by_id["cal::blames"]["scores"] == [0.2, 0.2]
    assert by_id["cal::kind"]["scores"] == [0.9, 0.9]
    replay(project).assert_outcomes(passed=2)
    project.edit_suite(
        "cases/cal.json", lambda d: d["judged_stages"]["polite"].update(criteria="Be brief.")
    )
    stale = replay(project)
    stale.assert_outcomes(errors=2)
    assert "stale recording (verdict polite): criteria changed (" in output(stale)
