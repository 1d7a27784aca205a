"""Calibration suites (issue 10 §1): judge test cases as pytest items, recorded and replayed.

The end-to-end tests write a small calibration suite, record it with `--live` (the lexical
judge, or the OpenAI judge against the loopback server scripted to answer differently on its
repeats), and replay it offline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    output,
    run_live_openai,
    run_pytest_env_in_process,
)
from judge_server import JudgeServer, judge_server_fixture

judge_server = judge_server_fixture()
ROOT = Path(__file__).resolve().parents[2]

CONTEXT = [
    "Jotter can export notes with jotter export --format <fmt>, where the formats are "
    "markdown, html and json."
]


# ---- end to end with the lexical judge -----------------------------------------------------
def _calibration_suite(**fields: Any) -> dict[str, Any]:
    cases = [
        {
            "id": "invented",
            "stage": "faithfulness",
            "context": CONTEXT,
            "expect": "fail",
            "answer": "Jotter exports notes as markdown, html and json. Every export is uploaded "
            "to the cloud overnight.",
            "defect": "invents an upload to the cloud",
        },
        {
            "id": "csv",
            "stage": "faithfulness",
            "context": CONTEXT,
            "expect": "fail",
            "answer": "The csv format removes colour codes from every export.",
            "defect": "claims --format csv removes colour codes",
        },
        {
            "id": "csv-strict",
            "stage": "faithfulness",
            "faithfulness": {"strict": True},
            "context": CONTEXT,
            "expect": "fail",
            "answer": "The csv format removes colour codes from every export.",
            "defect": "claims --format csv removes colour codes",
        },
        {
            "id": "control",
            "stage": "faithfulness",
            "context": CONTEXT,
            "expect": "pass",
            "answer": "Jotter can export notes as markdown, html and json.",
        },
    ]
    doc: dict[str, Any] = {"name": "cal", "kind": "calibration", "judge": "lexical", "cases": cases}
    doc.update(fields)
    return doc


def _run(project: Project, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", *args)


def _section(result: pytest.RunResult, title: str) -> list[str]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and f" {title} " in line)
    section = []
    for line in lines[start + 1 :]:
        if line.startswith(("=", "eval reports: ")):
            break
        section.append(line)
    return section


def test_a_calibration_suite_records_replays_and_reports_what_the_judge_missed(
    project: Project,
) -> None:
    project.write_suite(_calibration_suite())
    recorded = _run(project, "--live")
    assert_not_aborted(recorded)
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED, output(recorded)
    assert "recordings: 4 recorded" in output(recorded)

    replayed = _run(project, "--eval-report", "out")  # offline, nothing but the cassettes
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED, output(replayed)
    assert "1 failed, 3 passed" in output(replayed)
    assert error_block(replayed, "invented").strip() == (
        "faithfulness [0.50, 0.50, 0.50] MISSED: invents an upload to the cloud"
    )
    section = _section(replayed, "judge calibration")
    assert section[0] == "suite cal:"
    # As the eval cases' table: the cases the judge got wrong, the others counted (-v: all).
    rows = {line.split()[0]: line.split() for line in section[2:3]}
    assert rows["invented"][1:] == ["faithfulness", "[0.50,", "0.50,", "0.50]", "MISSED", "failed"]
    assert section[3] == "(3 calibration cases judged right not shown; -v shows every case)"
    every = _section(_run(project, "-v"), "judge calibration")
    rows = {line.split()[0]: line.split() for line in every[2:6]}
    assert rows["csv"][-2:] == ["caught", "passed"]
    assert rows["control"][-2:] == ["ok", "passed"]
    assert "judge lexical:" in section
    header = section[section.index("judge lexical:") + 1].split()
    assert header[:6] == ["stage", "defects", "caught", "missed", "controls", "false"]
    figures = next(line.split() for line in section if line.startswith("faithfulness  "))
    # defects caught missed controls false-alarms precision recall F1 kappa spread
    assert figures[1:] == ["3", "2", "1", "1", "0", "1.00", "0.67", "0.80", "0.50", "0.00"]
    assert "per-stage summary" in output(replayed)

    results = json.loads((project.root / "out" / "results.json").read_text())
    calibration = results["calibration"]
    assert [c["status"] for c in calibration["cases"]] == ["MISSED", "caught", "caught", "ok"]
    assert calibration["cases"][0]["scores"] == [0.5, 0.5, 0.5]
    assert calibration["judges"] == [
        {
            "stage": "faithfulness",
            "judge": "lexical",
            "cases": 4,
            "defects": 3,
            "caught": 2,
            "missed": 1,
            "controls": 1,
            "false_alarms": 0,
            "ok": 1,
            "precision": 1.0,
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(0.8),
            "kappa": pytest.approx(0.5),
            "mean_spread": 0.0,
        }
    ]
    report = (project.root / "out" / "report.md").read_text()
    assert "### Judge calibration" in report
    assert "| cal::invented | faithfulness | [0.50, 0.50, 0.50] | MISSED | failed |" in report
    dashboard = (project.root / "out" / "dashboard.html").read_text()
    assert '<section id="calibration">' in dashboard and "MISSED" in dashboard


def test_a_calibration_cassette_keys_every_repeat_and_stales_on_what_the_judge_read(
    project: Project,
) -> None:
    project.write_suite(_calibration_suite())
    _run(project, "--live")
    doc = project.cassette("cal", "csv-strict")
    verdict = doc["verdicts"]["faithfulness"]
    repeats = [verdict, *verdict["later_repeats"]]
    assert len(repeats) == 3  # the default repeats
    assert {"judge", "judge_version", "params", "material"} <= set(verdict["key"])
    assert [r["key"].get("repeat") for r in repeats] == [None, "2", "3"]
    assert verdict["params"] == {"strict": True}
    assert (
        doc["verdicts"]["faithfulness"]["key"]["params"]
        != (project.cassette("cal", "csv")["verdicts"]["faithfulness"]["key"]["params"])
    )

    def edit(change: Any) -> None:
        project.edit_suite("cases/cal.json", change)

    edit(lambda d: d["cases"][3].update(answer="Jotter exports notes as markdown."))
    stale = _run(project, "-k", "control")
    assert "stale recording: material changed" in output(stale), output(stale)
    edit(
        lambda d: d["cases"][3].update(
            answer="Jotter can export notes as markdown, html and json.",
            xfail="only a reason, not read",
        )
    )
    assert _run(project, "-k", "control").ret == 0  # what the judge does not read: no re-record

    edit(lambda d: d.update(repeats=2))
    fewer = _run(project, "-k", "csv")
    assert "stale recording (verdict faithfulness): judge repeats changed (3 -> 2)" in output(
        fewer
    ), output(fewer)
    edit(lambda d: d.update(repeats=3))
    edit(lambda d: d["cases"][1].update(faithfulness={"strict": True}))
    strict = _run(project, "-k", "csv and not strict")
    assert (
        "stale recording (verdict faithfulness): params changed (strict=false -> strict=true)"
        in output(strict)
    ), output(strict)
    other = _run(project, "-k", "control", "--eval-judge", "openai:gpt-4o-mini")
    assert "judge changed (lexical -> openai:gpt-4o-mini)" in output(other), output(other)


def test_calibration_cases_run_beside_eval_cases_and_dry_runs_write_nothing(
    project: Project,
) -> None:
    project.write_suite(_calibration_suite())
    dry = _run(project, "--live-dry-run")
    assert not (project.root / "cassettes" / "cal").exists(), output(dry)
    assert "recordings: 0 recorded, 4 dry run (not written)" in output(dry)
    _run(project, "--live")
    again = _run(project, "--live")
    assert "0 changed" in output(again) and "4 unchanged" in output(again)
    stale_run = _run(project, "--live-stale")
    assert "recordings: 0 recorded, 4 replayed" in output(stale_run)
    only = _run(project, "-m", "calibration", "-k", "control")
    assert "1 passed" in output(only)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["cases"][0].pop("defect"),
            'cases[0]: Value error, a case with "expect": "fail" plants a defect: describe it in '
            '"defect"',
        ),
        (
            lambda d: d["cases"][0].update(stage="tools"),
            "cases[0].stage: Value error, stage 'tools' is not a judged stage to calibrate; one "
            "of 'faithfulness'",
        ),
        (
            lambda d: d["cases"][3].update(answer_relevancy={"threshold": 0.9}),
            "cases[3]: Value error, options for answer_relevancy in a case judged at faithfulness",
        ),
        (
            lambda d: d["cases"][3].update(expect="maybe"),
            "cases[3].expect: Input should be 'fail' or 'pass'",
        ),
        (  # found when the file is read, not by the judge of a --live run
            lambda d: d["cases"][0].update(stage="answer_accuracy"),
            'cases[0]: Value error, stage answer_accuracy reads a "reference"',
        ),
    ],
)
def test_a_bad_calibration_case_errors_alone_naming_the_file_and_the_case(
    project: Project, edit: Any, message: str
) -> None:
    doc = _calibration_suite()
    edit(doc)
    project.write_suite(doc)
    result = _run(project, "--live")
    assert_not_aborted(result)
    text = output(result)
    assert "cases/cal.json: invalid calibration case" in text and message in text, text
    assert "3 passed" in text or "2 passed" in text  # the other cases still ran


def test_a_bad_calibration_suite_errors_naming_the_file(project: Project) -> None:
    project.write_suite(_calibration_suite(repeats=0))
    result = _run(project)
    assert_not_aborted(result)
    assert (
        "cases/cal.json: invalid calibration suite\nrepeats: Input should be greater than "
        "or equal to 1"
    ) in output(result)


# ---- end to end with a judge whose repeats disagree ----------------------------------------
def test_a_judge_that_answers_differently_on_repeats_misses_and_false_alarms(
    project: Project, judge_server: JudgeServer
) -> None:
    cases = [
        {
            "id": "wrong-number",
            "stage": "answer_accuracy",
            "input": "How many backups?",
            "reference": "Seven backups are kept.",
            "answer": "Thirty backups are kept.",
            "expect": "fail",
            "defect": "thirty instead of seven",
        },
        {
            "id": "right-number",
            "stage": "answer_accuracy",
            "input": "How many backups?",
            "reference": "Seven backups are kept.",
            "answer": "Seven backups are kept, daily.",
            "expect": "pass",
        },
    ]
    project.write_suite({"name": "cal", "kind": "calibration", "cases": cases})
    # The loopback judge answers CORRECT unless scripted: the defect is caught once in three,
    # the control failed once in three.
    judge_server.answer_in_turn("Thirty backups", True, False, False)
    judge_server.answer_in_turn("Seven backups are kept, daily", False, True, False)
    recorded = run_live_openai(project, judge_server.base_url, "--eval-report", "out")
    assert_not_aborted(recorded)
    assert len([r for r in judge_server.requests if r.kind == "accuracy"]) == 6
    results = json.loads((project.root / "out" / "results.json").read_text())
    by_id = {c["case"]: c for c in results["calibration"]["cases"]}
    missed, alarm = by_id["cal::wrong-number"], by_id["cal::right-number"]
    assert missed["status"] == "MISSED" and sorted(missed["scores"]) == [0.0, 1.0, 1.0]
    assert alarm["status"] == "false alarm" and sorted(alarm["scores"]) == [0.0, 1.0, 1.0]
    assert missed["spread"] == 1.0
    figures = results["calibration"]["judges"][0]
    assert figures["judge"] == "openai:gpt-4o-mini"
    assert (figures["caught"], figures["missed"], figures["false_alarms"]) == (0, 1, 1)
    assert figures["mean_spread"] == 1.0

    replayed = _run(project)  # no key, no server: the recorded repeats
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED
    block = error_block(replayed, "wrong-number")
    assert (
        block.strip().startswith("answer_accuracy [") and "MISSED: thirty instead of seven" in block
    )
    assert "a repeat failed this clean control" in error_block(replayed, "right-number")


def test_the_readme_states_the_demo_calibration_figures_as_measured(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/calibration.json",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'basetemp'}",
            "--eval-report",
            str(tmp_path / "out"),
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "14 passed, 5 xfailed" in result.stdout
    judges = json.loads((tmp_path / "out" / "results.json").read_text())["calibration"]["judges"]
    caught = sum(j["caught"] for j in judges)
    defects = sum(j["defects"] for j in judges)
    alarms = sum(j["false_alarms"] for j in judges)
    controls = sum(j["controls"] for j in judges)
    readme = (ROOT / "README.md").read_text()
    assert (caught, defects, alarms, controls) == (7, 11, 1, 8)
    assert (
        f"caught {caught} of {defects} planted defects and raised {alarms} false alarm on "
        f"{controls}\nclean controls"
    ) in readme
    by_stage = {
        j["stage"]: (j["caught"], j["defects"], j["false_alarms"], j["controls"], round(j["f1"], 2))
        for j in judges
    }
    assert by_stage == {
        "faithfulness": (2, 3, 0, 1, 0.8),
        "contextual_recall": (1, 1, 0, 1, 1.0),
        "contextual_precision": (1, 1, 0, 1, 1.0),
        "contextual_relevancy": (1, 1, 0, 1, 1.0),
        "answer_accuracy": (1, 2, 0, 1, 0.67),
        "context_completeness": (1, 1, 1, 1, 0.67),
        "answer_relevancy": (0, 1, 0, 1, 0.0),
        "correctness": (0, 1, 0, 1, 0.0),
    }


def test_a_judge_error_while_calibrating_keeps_the_old_recording_and_fails_the_run(
    project: Project, judge_server: JudgeServer
) -> None:
    case = {
        "id": "wrong-number",
        "stage": "answer_accuracy",
        "input": "How many backups?",
        "reference": "Seven backups are kept.",
        "answer": "Thirty backups are kept.",
        "expect": "fail",
        "defect": "thirty instead of seven",
    }
    project.write_suite({"name": "cal", "kind": "calibration", "repeats": 2, "cases": [case]})
    judge_server.fail_next("401", "401")
    result = run_live_openai(project, judge_server.base_url)
    assert_not_aborted(result)
    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert not project.cassette_path("cal", "wrong-number").exists()
    assert "judge error for answer_accuracy: " in text and "HTTP 401" in text
    assert "not recorded: cal::wrong-number (judge error (" in text
    assert "the previous recording was kept" not in text  # there was none (issue 20)
