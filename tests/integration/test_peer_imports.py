"""A suite imported from another eval tool's file runs as any suite: recorded live, its recorded
outputs (a ragas `response`) never handed to the system, replayed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evalhelpers import SPY_SYSTEM, Project, output, seen_fields
from judge_server import JudgeServer, judge_server_fixture, use_judge_server

from pytest_evalcases.__main__ import main

PEERS = Path(__file__).parents[1] / "data" / "peers"


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    """Passed, failed and error counts (a warning a run may add is no outcome)."""
    counts = result.parseoutcomes()
    return {name: counts[name] for name in ("passed", "failed", "errors") if name in counts}


def test_an_imported_ragas_dataset_records_and_replays_without_its_responses(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root)
    project.write_text("spy.py", SPY_SYSTEM)
    source = PEERS / "ragas_dataset.jsonl"
    assert (
        main(["import", "ragas", str(source), "-o", "cases/rag.json", "--system", "spy:run"]) == 0
    )

    live = project.run("--live", "--eval-judge", "lexical", "-q")
    assert live.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output(live)
    outcomes = _outcomes(live)
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 3, output(live)
    assert "errors" not in outcomes, output(live)
    # Only the question reaches the system: the recorded response and contexts stay aside.
    assert seen_fields(project) == [["id", "input"]] * 3

    replay = project.run("--eval-judge", "lexical", "-q")
    assert _outcomes(replay) == outcomes, output(replay)
    assert seen_fields(project) == [["id", "input"]] * 3  # replayed: the system not called again


judge_server = judge_server_fixture()


def test_an_imported_promptfoo_file_records_on_an_llm_judge_and_replays(
    project: Project, monkeypatch: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    """The importer's written stage module (contains, regex, python, ...) and its judged stage
    (the shared llm-rubric) run as any suite's: recorded live on the loopback LLM judge, then
    replayed with the same outcomes and no judge call."""
    monkeypatch.chdir(project.root)
    use_judge_server(monkeypatch, judge_server)
    project.write_text("spy.py", SPY_SYSTEM)
    shutil.copytree(PEERS / "checks", project.root / "checks")
    source = PEERS / "promptfooconfig.yaml"
    assert (
        main(["import", "promptfoo", str(source), "-o", "cases/pf.json", "--system", "spy:run"])
        == 0
    )
    suite = json.loads((project.root / "cases" / "pf.json").read_text())
    assert suite["judged_stages"] and suite["stage_modules"]

    live = project.run("--live", "--eval-judge", "openai:gpt-4o-mini", "-q", "-rA")
    assert "errors" not in _outcomes(live), output(live)
    judged = [request for request in judge_server.requests if request.kind == "geval_score"]
    assert len(judged) == 3, output(live)  # the shared rubric graded each case once
    # The spy echoes the question: `contains "30 days"` fails the first case at that stage.
    assert "first failing stage: promptfoo_contains" in output(live), output(live)

    asked = len(judge_server.requests)
    replay = project.run("--eval-judge", "openai:gpt-4o-mini", "-q")
    assert _outcomes(replay) == _outcomes(live), output(replay)
    assert len(judge_server.requests) == asked  # replayed: no judge call
