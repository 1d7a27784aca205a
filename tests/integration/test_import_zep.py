"""A Zep eval-harness folder (tests/data/zep/, written for these tests in Zep's layout) imported
as a suite, recorded with --live by examples/memory-qa's offline agent, and replayed offline:
the round trip, on a copy of the example's agent (its committed suite and cassettes untouched)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evalhelpers import TEST_COLUMNS, output
from inprocess import run_pytest_in_process

from pytest_evalcases.__main__ import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "memory-qa"
ZEP = REPO / "tests" / "data" / "zep"
OUTCOMES = {"passed": 5, "failed": 1}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The memory example's agent and ini, and a copy of the Zep folder, in a fresh project."""
    root = tmp_path / "zep-qa"
    ignore = shutil.ignore_patterns("__pycache__", ".memory-store")
    shutil.copytree(EXAMPLE / "memory_agent", root / "memory_agent", ignore=ignore)
    shutil.copy(EXAMPLE / "pytest.ini", root / "pytest.ini")
    shutil.copytree(ZEP, root / "zep-harness")
    monkeypatch.chdir(root)
    return root


def run_in(root: Path, *args: str) -> pytest.RunResult:
    return run_pytest_in_process(
        root, "-p", "no:cacheprovider", *args, env={"COLUMNS": TEST_COLUMNS}
    )


def cassettes(root: Path) -> dict[str, bytes]:
    base = root / "cassettes"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def test_a_zep_folder_records_with_the_memory_agent_and_replays_offline(project: Path) -> None:
    assert (
        main(
            ["import", "zep", "zep-harness", "-o", "cases/zep.json"]
            + ["--system", "memory_agent.agent:system"]
        )
        == 0
    )
    suite = json.loads((project / "cases" / "zep.json").read_text())
    suite["judge"] = "lexical"  # the offline judge the example records with
    (project / "cases" / "zep.json").write_text(json.dumps(suite))

    live = run_in(project, "--live")

    live.assert_outcomes(**OUTCOMES)
    assert "6 new" in output(live)
    # Each user's ingestion read its conversations: Priya's two conversations hold 3 + 2
    # messages, Tomas's one 3. The two shared documents are the suite's, ingested once by
    # setup_documents (Zep's document graph): their paragraphs (headings left out) are 2 + 2.
    assert suite["documents"] == {
        "files": ["data/zep/documents/cycling_notes.txt", "data/zep/documents/tenancy_guide.md"]
    }
    assert not any("documents" in user for user in suite["users"])
    results = {
        user: json.loads((project / "cassettes" / "zep" / "users" / f"{user}.json").read_text())[
            "result"
        ]
        for user in ("zep_user_a01", "zep_user_b02")
    }
    assert {user: (r["messages"], r["documents"], r["chunks"]) for user, r in results.items()} == {
        "zep_user_a01": (5, 0, 0),
        "zep_user_b02": (3, 0, 0),
    }
    shared = json.loads((project / "cassettes/zep/documents/ingestion.json").read_text())
    assert (shared["result"]["documents"], shared["result"]["chunks"]) == (2, 4)
    # The documents question is answered from a shared document's paragraph.
    deposit = json.loads(
        (project / "cassettes" / "zep" / "zep_user_a01-a01_deposit_days.json").read_text()
    )
    assert "tenancy_guide.md#1" in deposit["trace"]["retrieved"]
    assert "within 30 days" in deposit["trace"]["answer"]
    # The example's agent reads no telemetry: the question only Priya's telemetry answers fails
    # at its first stage, as it should.
    assert "FAILED cases/zep.json::zep_user_a01-a01_saved_flat - first failing stage: con" in (
        output(live)
    )
    recorded = cassettes(project)

    replay = run_in(project)

    replay.assert_outcomes(**OUTCOMES)
    assert "recordings: 0 recorded, 6 replayed, 0 stale, 0 missing" in output(replay)
    assert "ingestion: 2 users and the documents: 3 replayed" in output(replay)
    assert cassettes(project) == recorded  # a replay writes nothing
