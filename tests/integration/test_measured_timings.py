"""The timings the plugin measures itself (issue 32 part 4): while recording, the wall time of
each system run (and of each turn it drives), of each ingestion and of each judged stage's
requests; reported beside the steps the trace names in results.json, report.md and the
dashboard; a replay reports the recorded ones; a re-record that changes only them writes
nothing.

The system sleeps a known few ms (run, each turn, setup_user) and the loopback judge answers
after a known latency: each measured time is at least that (never an upper bound: no timed
assertion)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from evalhelpers import Project, changes_section, output, run_live_openai
from judge_server import JudgeServer

SLEEPY = '''\
"""Sleeps as sleeps.json says (seconds): per run, per turn, per ingestion."""
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def sleeps():
    return json.loads((ROOT / "sleeps.json").read_text())


class Sleepy:
    def setup_user(self, user):
        time.sleep(sleeps()["ingest"])
        return {"ingested": user.id}

    def run(self, case):
        time.sleep(sleeps()["run"])
        return {"answer": case.input, "tool_calls": [{"name": "search", "args": {}}],
                "timings": {"search_ms": 5.0}}

    def run_turn(self, case, history):
        time.sleep(sleeps()["turn"])
        return {"answer": case.input, "tool_calls": [{"name": "search", "args": {}}]}


system = Sleepy()
'''

RUN_S, TURN_S, INGEST_S, JUDGE_S = 0.03, 0.02, 0.05, 0.04


def suite() -> dict[str, Any]:
    return {
        "name": "timed",
        "system": "sleepy:system",
        "stages": ["tools", "answer_accuracy"],
        "users": [{"id": "u1", "notes": "data/u1.txt"}],
        "cases": [
            {
                "id": "plain",
                "input": "Porto",
                "user": "u1",
                "expected_tools": ["search"],
                "reference": "Porto",
            },
            {
                "id": "talk",
                "turns": [
                    {"input": "Lisbon", "expected_tools": ["search"], "reference": "Lisbon"},
                    {"input": "Braga", "expected_tools": ["search"], "reference": "Braga"},
                ],
            },
        ],
    }


@pytest.fixture
def slow_judge() -> Iterator[JudgeServer]:
    server = JudgeServer(latency=JUDGE_S).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def timed(project: Project) -> Project:
    project.write_text("sleepy.py", SLEEPY)
    project.write_text("data/u1.txt", "Ana lives in Porto.")
    project.write_text(
        "sleeps.json", json.dumps({"run": RUN_S, "turn": TURN_S, "ingest": INGEST_S})
    )
    project.write_suite(suite(), "cases/timed.json")
    return project


def results(project: Project, folder: str) -> dict[str, Any]:
    return json.loads((project.root / folder / "results.json").read_text())


def timings_table(md: str) -> dict[str, list[str]]:
    """report.md's Timings table: step -> [count, mean, p95]."""
    table = md.split("### Timings\n\n")[1].split("\n\n")[0].splitlines()[2:]
    rows = [line.strip("| ").split(" | ") for line in table]
    return {row[0]: row[1:] for row in rows}


def user_recording(project: Project) -> dict[str, Any]:
    (path,) = (project.root / "cassettes").rglob("u1.json")
    return json.loads(path.read_text())


def test_a_live_run_measures_each_step_and_reports_it_everywhere(
    timed: Project, slow_judge: JudgeServer
) -> None:
    live = run_live_openai(timed, slow_judge.base_url, "--eval-report", "live")
    assert live.ret == 0, output(live)

    plain, talk = timed.cassette("timed", "plain"), timed.cassette("timed", "talk")
    assert plain["trace"]["measured"]["run_ms"] >= RUN_S * 1000
    turns = talk["trace"]["measured"]["turns_ms"]
    assert len(turns) == 2 and min(turns) >= TURN_S * 1000
    assert talk["trace"]["measured"]["run_ms"] >= sum(turns)
    assert plain["verdicts"]["answer_accuracy"]["latency_ms"] >= JUDGE_S * 1000
    assert user_recording(timed)["duration_s"] >= INGEST_S

    doc = results(timed, "live")
    section = doc["timings"]
    steps = [  # ingestion, the trace's own step, the measured run, the judge
        "measured ingestion_ms",
        "search_ms",
        "measured run_ms",
        "measured turn_ms",
        "judge_ms",
        "judge answer_accuracy_ms",
        "judge turn1.answer_accuracy_ms",
        "judge turn2.answer_accuracy_ms",
    ]
    assert sorted(section) == sorted(steps)  # the file's keys are sorted; report.md's order:
    assert section["measured run_ms"]["cases"] == 2
    # the plain case's run and the talk's two turns, over the two cases
    assert section["measured run_ms"]["mean"] >= (RUN_S + 2 * TURN_S) * 1000 / 2
    assert section["measured turn_ms"]["cases"] == 1 and section["measured turn_ms"]["turns"] == 2
    assert section["measured turn_ms"]["mean"] >= TURN_S * 1000
    assert section["measured ingestion_ms"]["users"] == 1
    assert section["measured ingestion_ms"]["mean"] >= INGEST_S * 1000
    assert section["judge answer_accuracy_ms"]["mean"] >= JUDGE_S * 1000
    by_id = {case["id"]: case for case in doc["cases"]}
    assert by_id["plain"]["timings"]["measured run_ms"] == plain["trace"]["measured"]["run_ms"]
    assert by_id["plain"]["timings"]["search_ms"] == 5.0
    assert by_id["talk"]["timings"]["measured turns_ms"] == turns

    table = timings_table((timed.root / "live" / "report.md").read_text())
    assert list(table) == [step.removesuffix("_ms") for step in steps]
    assert table["measured run"][0] == "2" and table["measured turn"][0] == "1 (2 turns)"
    assert table["measured ingestion"][0] == "1 user"
    page = (timed.root / "live" / "dashboard.html").read_text()
    panel = page.split('<section id="timings">')[1].split("</section>")[0]
    for step in ("measured run", "measured turn", "measured ingestion", "search", "judge"):
        assert f"<td>{step}</td>" in panel, step


def test_a_replay_reports_the_recorded_times_and_an_only_slower_rerecord_writes_nothing(
    timed: Project, slow_judge: JudgeServer
) -> None:
    assert run_live_openai(timed, slow_judge.base_url).ret == 0
    recorded = timed.cassette("timed", "plain")["trace"]["measured"]["run_ms"]
    ingested = user_recording(timed)["duration_s"]
    before = timed.files(http=True)

    replay = timed.run("--eval-report", "replay")

    assert replay.ret == 0, output(replay)
    doc = results(timed, "replay")
    by_id = {case["id"]: case for case in doc["cases"]}
    assert by_id["plain"]["timings"]["measured run_ms"] == recorded
    assert doc["timings"]["measured ingestion_ms"]["mean"] == pytest.approx(ingested * 1000)
    assert "measured run" in timings_table((timed.root / "replay" / "report.md").read_text())
    # --replay-http runs the system with its HTTP served offline: not the system's time, so the
    # recorded live run's is reported, and --live-stale has nothing to write
    offline = timed.run("--replay-http", "--live-stale", "--eval-report", "offline")
    assert offline.ret == 0, output(offline)
    again = {case["id"]: case for case in results(timed, "offline")["cases"]}
    assert again["plain"]["timings"]["measured run_ms"] == recorded
    assert timed.files(http=True) == before

    # Twice as slow everywhere, nothing else changed: every file stays byte for byte.
    timed.write_text("sleeps.json", json.dumps({"run": 0.06, "turn": 0.04, "ingest": 0.1}))
    slower = run_live_openai(timed, slow_judge.base_url, "--eval-report", "slower")

    assert slower.ret == 0, output(slower)
    assert changes_section(slower) == [
        "2 unchanged, 0 changed, 0 new; ingestion recordings: 1 unchanged, 0 changed, 0 new"
    ]
    assert timed.files(http=True) == before  # no byte and no mtime changed
    # ...while the run itself reports what it measured today
    today = {case["id"]: case for case in results(timed, "slower")["cases"]}
    assert today["plain"]["timings"]["measured run_ms"] >= 60
