"""Agreement with people end to end (issue 31 parts 2-4): a labelled calibration suite recorded
with the lexical judge and with the loopback LLM judge (scripted replies), replayed offline, the
agreement figures in the terminal, results.json, report.md and the dashboard, and the two runs
side by side with `python -m pytest_evalcases compare`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    output,
    run_live_openai,
    run_pytest_env_in_process,
)
from judge_server import Fault, JudgeServer, judge_server_fixture

from pytest_evalcases.cli import main as cli_main
from pytest_evalcases.domain.calibration_schema import CalibrationCase, CalibrationSuite

judge_server = judge_server_fixture()

CONTEXT = [
    "Jotter can export notes with jotter export --format <fmt>, where the formats are "
    "markdown, html and json.",
]
REFERENCE = "Seven backups are kept."


def _labelled(case_id: str, stage: str, expect: str, **material: Any) -> dict[str, Any]:
    """A labelled item: people's label is `expect` (a fail label names its `defect`)."""
    found = {"id": case_id, "stage": stage, "expect": expect, **material}
    if expect == "fail":
        found["defect"] = "labelled wrong by people"
    return found


def _faithfulness_suite() -> dict[str, Any]:
    """Six items people labelled, judged at faithfulness: the lexical judge scores each answer
    sentence by its content words found in one passage (threshold 0.5)."""

    def case(case_id: str, expect: str, answer: str) -> dict[str, Any]:
        return _labelled(case_id, "faithfulness", expect, answer=answer, context=CONTEXT)

    return {
        "name": "people",
        "kind": "calibration",
        "judge": "lexical",
        "repeats": 1,
        "cases": [
            case("cloud", "fail", "Every export is uploaded to the cloud overnight."),
            case(
                "half",
                "fail",
                "Jotter exports notes as markdown, html and json. Every export is uploaded "
                "to the cloud overnight.",
            ),
            case("csv", "fail", "The csv format removes colour codes from every export."),
            case("formats", "pass", "Jotter can export notes as markdown, html and json."),
            case("command", "pass", "Use jotter export --format markdown to export notes."),
            case(
                "aside",
                "pass",
                "Jotter exports notes as markdown, html and json. It is quick to learn.",
            ),
        ],
    }


def _run(project: Project, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", *args)


def _section(result: pytest.RunResult) -> list[str]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if " judge calibration " in line)
    return [line for line in lines[start + 1 :] if not line.startswith("eval reports: ")]


def test_the_lexical_judge_against_labels_recorded_replayed_and_reported(
    project: Project,
) -> None:
    project.write_suite(_faithfulness_suite())
    assert_not_aborted(_run(project, "--live"))
    replayed = _run(project, "--eval-report", "out")  # offline: the cassettes only
    assert_not_aborted(replayed)
    results = json.loads((project.root / "out" / "results.json").read_text())
    calibration = results["calibration"]
    status = {row["case"].split("::")[1]: row["status"] for row in calibration["cases"]}
    scores = {row["case"].split("::")[1]: row["scores"][0] for row in calibration["cases"]}
    # what the lexical judge gives these six answers (its sentence rule, threshold 0.5)
    assert scores == {
        "cloud": 0.0,
        "half": 0.5,
        "csv": 0.0,
        "formats": 1.0,
        "command": 1.0,
        "aside": 0.5,
    }
    assert status == {
        "cloud": "caught",
        "half": "MISSED",
        "csv": "caught",
        "formats": "ok",
        "command": "ok",
        "aside": "ok",
    }
    (group,) = calibration["agreement"]
    # tp 2 (cloud, csv), fn 1 (half), fp 0, tn 3: p_o = 5/6, judge fails 2 of 6, people 3 of 6:
    # p_e = (2/6)(3/6) + (4/6)(3/6) = 1/2, kappa = (5/6 - 1/2) / (1/2) = 2/3
    assert group["confusion"] == {
        "label_fail": {"judge_fail": 2, "judge_pass": 1},
        "label_pass": {"judge_fail": 0, "judge_pass": 3},
    }
    assert (group["graded"], group["ungraded"]) == (6, 0)
    assert group["kappa"] == pytest.approx(2 / 3)
    assert group["accuracy"] == pytest.approx(5 / 6)
    low, high = group["kappa_ci95"]
    assert low <= 2 / 3 <= high
    # the 0.5 of `half` (fail) and `aside` (pass) cannot be told apart by any threshold; the
    # best is 0.75 (fails half and aside: tp 3, fp 1, kappa 2/3) or 0.25 (kappa 2/3): the lower
    threshold = group["threshold"]
    assert threshold["current"] == 0.5 and threshold["current_kappa"] == pytest.approx(2 / 3)
    assert threshold["best"] == pytest.approx(0.25) and threshold["best_kappa"] == pytest.approx(
        2 / 3
    )
    assert group["disagreements"] == [
        {
            "case": "people::half",
            "category": None,
            "label": "fail",
            "judge": "pass",
            "scores": [0.5],
            "reason": group["disagreements"][0]["reason"],
        }
    ]
    assert "1 of 2 answer sentences" in group["disagreements"][0]["reason"]

    section = _section(replayed)
    assert "agreement with people: faithfulness, judge lexical" in section
    assert "  6 of 6 items graded (0 not graded, 0%); accuracy 0.83" in section
    assert any(
        line.startswith("  fail class: precision 1.00, recall 0.67, F1 0.80; Cohen's kappa 0.67 [")
        for line in section
    ), section
    threshold_line = next(line for line in section if line.startswith("  threshold "))
    assert threshold_line.startswith("  threshold 0.25 agrees best with people (kappa 0.67 [")
    assert threshold_line.endswith(
        ", the lowest of those that do); the suite's 0.5 does as well (3 thresholds tried)"
    )
    assert "  1 item the judge and people disagree on:" in section
    assert any(
        line.startswith("    people::half: people fail, judge pass [0.50]: ") for line in section
    )

    report = (project.root / "out" / "report.md").read_text()
    assert "#### Agreement with people: faithfulness, judge lexical" in report
    assert "Items the judge and people disagree on: 1" in report
    assert "| people::half | fail | pass | [0.50] |" in report
    dashboard = (project.root / "out" / "dashboard.html").read_text()
    assert "<h3>Agreement with people: faithfulness, judge lexical</h3>" in dashboard
    assert "threshold 0.25 agrees best with people" in dashboard


def _accuracy_suite() -> dict[str, Any]:
    def case(case_id: str, expect: str, answer: str) -> dict[str, Any]:
        material = {"input": "How many backups?", "reference": REFERENCE, "answer": answer}
        return _labelled(case_id, "answer_accuracy", expect, **material)

    return {
        "name": "people",
        "kind": "calibration",
        "repeats": 1,
        "cases": [
            case("thirty", "fail", "Thirty backups are kept."),
            case("not-seven", "fail", "Seven backups are kept? No, thirty backups are kept."),
            case("eight", "fail", "Eight backups are kept."),
            case("seven", "pass", "Seven backups are kept, daily."),
            case("seven-plain", "pass", "Seven backups are kept."),
            case("weekly", "pass", "Seven weekly backups are kept."),
        ],
    }


def test_two_judges_on_the_same_labels_compared(
    project: Project, judge_server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lexical judge and the loopback LLM judge (scripted: it calls `thirty` and
    `not-seven` WRONG, everything else CORRECT; its request for `thirty` fails, so `thirty` is
    not graded) on one labelled set, then `compare`."""
    project.write_suite(_accuracy_suite())
    assert_not_aborted(_run(project, "--live", "--eval-judge", "lexical"))
    lexical = _run(project, "--eval-report", "lexical")
    assert_not_aborted(lexical)

    judge_server.answer_in_turn("No, thirty backups", True)
    judge_server.answer_in_turn("Thirty backups are kept.", True)
    # `thirty`'s request fails, whichever comes first (the live batch judges side by side)
    judge_server.rules.append(({"accuracy"}, "Thirty backups are kept.", Fault("401")))
    llm = run_live_openai(project, judge_server.base_url, "--eval-report", "llm")
    assert_not_aborted(llm)
    results = json.loads((project.root / "llm" / "results.json").read_text())
    status = {row["case"].split("::")[1]: row["status"] for row in results["calibration"]["cases"]}
    assert status == {
        "thirty": "judge error",
        "not-seven": "caught",
        "eight": "MISSED",
        "seven": "ok",
        "seven-plain": "ok",
        "weekly": "ok",
    }, output(llm)
    (group,) = results["calibration"]["agreement"]
    assert (group["items"], group["graded"], group["ungraded"]) == (6, 5, 1)
    assert "ungraded_share" in group and group["ungraded_share"] == pytest.approx(1 / 6)
    assert group["threshold"] is None  # answer_accuracy is decided by its labels
    assert "5 of 6 items graded (1 not graded, 17%)" in output(llm)

    lexical_doc = json.loads((project.root / "lexical" / "results.json").read_text())
    lexical_status = {
        row["case"].split("::")[1]: row["status"] for row in lexical_doc["calibration"]["cases"]
    }
    # the lexical judge: CORRECT when >= 80% of the reference's content words are in the answer
    assert lexical_status == {
        "thirty": "caught",
        "not-seven": "MISSED",
        "eight": "caught",
        "seven": "ok",
        "seven-plain": "ok",
        "weekly": "ok",
    }

    assert (
        cli_main(
            [
                "compare",
                str(project.root / "lexical"),
                str(project.root / "llm"),
                "-o",
                str(project.root / "cmp"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    cmp_md = (project.root / "cmp" / "compare.md").read_text()
    # graded by both: the five but `thirty`. lexical: tp 1 (eight) fn 1 (not-seven) tn 3;
    # LLM: tp 1 (not-seven) fn 1 (eight) tn 3. Both: p_o = 4/5, p_e = (1/5)(2/5) + (4/5)(3/5)
    # = 14/25, kappa = (20/25 - 14/25) / (11/25) = 6/11 = 0.545. They split on two items, one
    # each way: McNemar b = 1, c = 1, p = 1.
    assert "  judges: answer_accuracy (5 items graded by both): kappa A 0.55 [" in printed, printed
    assert "; B - A +0.00 [" in printed
    assert "McNemar: 1 only A right, 1 only B right, exact p = 1" in printed
    assert "### Judges against people (the same labelled items)" in cmp_md
    assert "#### answer_accuracy: the judges disagree on 2" in cmp_md
    assert "| people::not-seven | fail | pass " in cmp_md
    assert "| people::eight | fail | fail " in cmp_md
    html = (project.root / "cmp" / "compare.html").read_text()
    assert "Judges against people" in html and "people::eight" in html


@pytest.mark.skipif(
    "human_agreement" not in CalibrationSuite.model_fields
    or "category" not in CalibrationCase.model_fields,
    reason="the suite fields of the labelled-set importers (issue 31 part 1) are not in this tree",
)
def test_people_agreement_and_categories_from_the_suite(project: Project) -> None:
    doc = _faithfulness_suite()
    doc["human_agreement"] = {
        "statistic": "fleiss_kappa",
        "value": 0.811,
        "annotators": 3,
        "source": "HaluEval (Li et al., 2023)",
    }
    for case, category in zip(doc["cases"], ["a", "b", "a", "a", "b", "b"], strict=True):
        case["category"] = category
    project.write_suite(doc)
    _run(project, "--live")
    replayed = _run(project, "--eval-report", "out")
    assert_not_aborted(replayed)
    (group,) = json.loads((project.root / "out" / "results.json").read_text())["calibration"][
        "agreement"
    ]
    assert group["people"][0]["value"] == 0.811
    assert set(group["categories"]) == {"a", "b"}
    assert group["categories"]["a"]["kappa"] == 1.0  # cloud, csv caught; formats ok
    assert any(
        line.startswith("  people agree at fleiss_kappa 0.811 (3 annotators; HaluEval")
        for line in _section(replayed)
    )
