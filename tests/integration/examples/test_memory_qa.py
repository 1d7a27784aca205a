"""examples/memory-qa: an offline memory agent over three users' conversations, each scenario on
a copy of the example: the committed replay, one user's data edited, setup_user failing for one
user, and a LoCoMo file imported and recorded with the same agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bytecode import bytecode_env
from evalhelpers import TEST_COLUMNS, error_block, output, summary_section
from inprocess import run_pytest_in_process

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "memory-qa"
LOCOMO_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "benchmarks" / "locomo.json"
GREEN = {"passed": 16, "xfailed": 2}
USERS = {"u-ana": 6, "u-ben": 5, "u-chen": 5}


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "memory-qa"
    shutil.copytree(
        EXAMPLE,
        root,
        ignore=shutil.ignore_patterns(
            "__pycache__", ".pytest_cache", ".basetemp", ".deepeval", ".memory-store"
        ),
    )
    return root


def run_in(root: Path, *args: str, module: str = "pytest") -> pytest.RunResult:
    """`python -m pytest` (in this process: inprocess.py) or `python -m <module>` in `root`."""
    if module == "pytest":
        return run_pytest_in_process(
            root, "-p", "no:cacheprovider", *args, env={"COLUMNS": TEST_COLUMNS}
        )
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(bytecode_env(), COLUMNS=TEST_COLUMNS)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    return pytest.RunResult(
        proc.returncode,
        proc.stdout.splitlines(),
        proc.stderr.splitlines(),
        time.perf_counter() - started,
    )


def user_rows(result: pytest.RunResult) -> dict[str, list[str]]:
    return {
        line.split()[0]: line.split()[1:]
        for line in summary_section(result)
        if line.split() and line.split()[0] in USERS
    }


def test_the_committed_recordings_replay_green_with_per_user_rows(example: Path) -> None:
    result = run_in(example, "--eval-report", "out")

    result.assert_outcomes(**GREEN)
    rows = user_rows(result)
    assert {user: int(row[1]) for user, row in rows.items()} == USERS  # scored cases
    assert rows["u-chen"][:3] == ["5", "5", "100%"]
    doc = json.loads((example / "out" / "results.json").read_text())
    assert doc["group_kind"] == "user"
    cva = doc["completeness_vs_accuracy"]
    # The multi-hop case had everything in its context and still answered wrong.
    assert cva["complete_but_wrong"] == 1 and cva["complete_and_correct"] == 13
    assert doc["categories"]["unanswerable"]["accuracy"] == {"CORRECT": 3, "WRONG": 1}


def test_editing_one_users_notes_stales_only_that_users_cases(example: Path) -> None:
    notes = example / "data" / "ana" / "notes.md"
    notes.write_text(notes.read_text() + "\nMiso likes the window seat too.\n")

    result = run_in(example)

    stale = sorted(line.split()[0] for line in summary_section(result) if " stale " in line)
    assert stale == sorted(
        f"memory-qa::{c}"
        for c in (
            "ana-kitten-name",
            "ana-adoption-date",
            "ana-kitten-food",
            "ana-commute",
            "ana-trip-flight",
            "ana-kitten-insurance",
        )
    )
    message = error_block(result, "::ana-commute")
    assert "user.u-ana changed (data/ana/notes.md@" in message
    assert "conversations.json" not in message

    rerecord = run_in(example, "--live-stale")
    rerecord.assert_outcomes(**GREEN)
    assert "6 recorded, 12 replayed" in output(rerecord)


def test_a_user_whose_setup_fails_errors_alone(example: Path) -> None:
    (example / "data" / "ben" / "conversations.json").write_text('{"sessions": "oops"}')

    result = run_in(example, "--live")

    errors = sorted(line.split()[0] for line in summary_section(result) if " error " in line)
    assert errors == sorted(
        f"memory-qa::{c}"
        for c in ("ben-race", "ben-injury-date", "ben-meals", "ben-car", "ben-sister-job")
    )
    assert "setup_user('u-ben') of suite 'memory-qa' raised AttributeError" in error_block(
        result, "::ben-race"
    )
    result.assert_outcomes(passed=12, xfailed=1, errors=5)


def test_a_locomo_file_imports_and_records_with_the_same_agent(example: Path) -> None:
    shutil.copy(LOCOMO_SAMPLE, example / "locomo.json")
    imported = run_in(
        example,
        "import",
        "locomo",
        "locomo.json",
        "-o",
        "cases/locomo.json",
        "--system",
        "memory_agent.agent:system",
        module="pytest_evalcases",
    )
    assert imported.ret == 0, output(imported)
    assert "imported 7 of 7 cases, 2 users from locomo.json" in output(imported)
    suite = json.loads((example / "cases" / "locomo.json").read_text())
    suite["judge"] = "lexical"
    (example / "cases" / "locomo.json").write_text(json.dumps(suite))

    live = run_in(example, "cases/locomo.json", "--live")

    assert "7 new" in output(live)
    live.assert_outcomes(passed=4, failed=3)
    rows = {
        line.split()[0]: line.split()[1:]
        for line in summary_section(live)
        if line.startswith("conv-")
    }
    assert set(rows) == {"conv-1", "conv-2"}
    # Adversarial questions are unanswerable: the agent abstains on Lena's instrument, and falls
    # for the trap of Jonas's "dog" (Mira's cat Pebble), as the benchmark means it to.
    replay = run_in(example, "cases/locomo.json", "-m", "adversarial", "-v")
    replay.assert_outcomes(passed=1, failed=1)
    assert (
        "first failing stage: answer_accuracy (WRONG: the case is unanswerable but the "
        "answer does not abstain)" in error_block(replay, "conv-1-q004")
    )


def test_an_imported_locomo_suite_reports_locomo_f1_per_question(example: Path) -> None:
    """The importer declares LoCoMo's own score as a report-only stage: every question gets it
    in results.json, by its category's rule, without gating the case."""
    shutil.copy(LOCOMO_SAMPLE, example / "locomo.json")
    imported = run_in(
        example,
        *("import", "locomo", "locomo.json", "-o", "cases/locomo.json"),
        *("--system", "memory_agent.agent:system"),
        module="pytest_evalcases",
    )
    assert imported.ret == 0, output(imported)
    suite = json.loads((example / "cases" / "locomo.json").read_text())
    assert suite["report_only"] == ["retrieval", "locomo_f1", "context_coverage"]
    suite["judge"] = "lexical"
    (example / "cases" / "locomo.json").write_text(json.dumps(suite))

    live = run_in(example, "cases/locomo.json", "--live", "--eval-report", "report")

    live.assert_outcomes(passed=4, failed=3)  # as without the stage: it does not gate
    results = json.loads((example / "report" / "results.json").read_text())
    scores = {case["id"]: case["stages"]["locomo_f1"] for case in results["cases"]}
    assert len(scores) == 7
    assert all(stage["gating"] is False for stage in scores.values())
    assert all(0.0 <= stage["score"] <= 1.0 for stage in scores.values())
    # conv-1-q004 is adversarial: 1 only if the answer uses LoCoMo's abstention phrases
    cassette = json.loads((example / "cassettes" / "locomo" / "conv-1-q004.json").read_text())
    said = cassette["trace"]["answer"].lower()
    abstains = "no information available" in said or "not mentioned" in said
    assert scores["conv-1-q004"]["score"] == float(abstains)
    assert scores["conv-1-q004"]["reason"].endswith("(adversarial)")
