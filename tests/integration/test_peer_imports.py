"""A suite imported from another eval tool's file runs as any suite: recorded live, its recorded
outputs (a ragas `response`) never handed to the system, replayed."""

from __future__ import annotations

from pathlib import Path

import pytest
from evalhelpers import SPY_SYSTEM, Project, output, seen_fields

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
