"""Side-by-side comparison (issue 13 §3), the command: `python -m pytest_evalcases compare A/ B/
[-o OUT]` on two real report folders (one system recorded into two cassette folders, as two
models are)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from evalhelpers import make_case, record_template, suite_doc


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Model A recorded into cassettes/, model B (its answers carry a suffix, so exact_match
    fails) into cassettes-b/, each replayed with --eval-report; `only-a` is only in run A."""
    root = tmp_path_factory.mktemp("compare")
    cases = [
        make_case("alpha", "alpha beta", category="storage"),
        make_case("gamma", "gamma delta", category="sync"),
        make_case("epsilon", "epsilon zeta", category="sync"),
    ]
    only_a = make_case("only-a", "only a")
    project = record_template(root, suite_doc(cases=[*cases, only_a]))
    in_b = ["-p", "no:cacheprovider", "-o", "eval_cassettes=cassettes-b"]
    project.write_suite(suite_doc(cases=cases))
    project.steer(suffix=" (model b)")
    assert project.run("--live", *in_b).ret == 1, "model B fails exact_match"
    assert project.run("--eval-report", "b", *in_b).ret == 1
    project.write_suite(suite_doc(cases=[*cases, only_a]))
    assert project.run("-p", "no:cacheprovider", "--eval-report", "a").ret == 0
    return root


def test_the_compare_command_writes_both_files(reports: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "compare", "a", "b", "-o", "cmp"],
        cwd=reports,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote cmp/compare.md" in proc.stdout and "wrote cmp/compare.html" in proc.stdout
    assert "compared 3 shared cases (1 only in A, 0 only in B)" in proc.stdout
    assert "exact_match: 1.000 -> 0.000 (-1.000" in proc.stdout
    md = (reports / "cmp" / "compare.md").read_text()
    assert "## pytest-evalcases: a vs b" in md
    assert "### Passed in A, not in B (3)" in md
    assert "failed at exact_match" in md
    html = (reports / "cmp" / "compare.html").read_text()
    assert html.startswith("<!doctype html>") and "suite::gamma" in html
    a_doc = json.loads((reports / "a" / "results.json").read_text())
    assert a_doc["run"]["run_id"] in md  # the runs are named by their ids


def test_the_compare_command_names_a_folder_without_results(reports: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "compare", "a", "nowhere"],
        cwd=reports,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "error: nowhere: no such file; each report folder (from --eval-report) must " in (
        proc.stderr
    )
    assert not (reports / "compare.md").exists()
