"""Human-labelled sets as calibration suites, end to end (issue 31 part 1): imported, recorded
with the offline lexical judge or a loopback LLM judge (scripted replies), replayed offline; and
the committed examples/judge-calibration, imported from the shared TruthfulQA file, replays
green with the figures docs/judges.md states."""

from __future__ import annotations

import json
import shutil
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
from judge_server import POISON, JudgeServer, judge_server_fixture

from pytest_evalcases.__main__ import main

judge_server = judge_server_fixture()
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "data" / "benchmarks"
EXAMPLE = ROOT / "examples" / "judge-calibration"
SHARED_TRUTHFULQA = ROOT.parent / "shared" / "data" / "TruthfulQA_60.csv"


def _import(project: Project, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    monkeypatch.chdir(project.root)
    assert main(["import", *args, "-o", "cases/labels.json"]) == 0
    return json.loads((project.root / "cases" / "labels.json").read_text(encoding="utf-8"))


def _run(root: Path, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(root, "-p", "no:cacheprovider", *args)


def test_truthfulqa_labels_record_with_the_lexical_judge_and_replay_offline(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _import(project, monkeypatch, "truthfulqa", str(SAMPLES / "truthfulqa.csv"))
    cases = len(suite["cases"])

    recorded = _run(project.root, "--live", "--eval-judge", "lexical")
    assert_not_aborted(recorded)
    assert f"recordings: {cases} recorded" in output(recorded)
    replayed = _run(project.root, "--eval-judge", "lexical", "--eval-report", "out")
    assert_not_aborted(replayed)

    results = json.loads((project.root / "out" / "results.json").read_text())
    rows = {row["case"].split("::")[1]: row for row in results["calibration"]["cases"]}
    assert len(rows) == cases
    # "It is red" shares no content word with "The harbour lantern shows green at night": the
    # judge fails it, as people did; "Anna Brisk wrote it" shares most of 'Anna Brisk wrote
    # "The Vell Bridge"' (token F1 0.75): it passes, as people said
    assert rows["tqa-000-incorrect-1"]["status"] == "caught"
    assert rows["tqa-000-incorrect-1"]["scores"] == [0.0]
    assert (rows["tqa-001-correct-1"]["status"], rows["tqa-001-correct-1"]["scores"]) == (
        "ok",
        [0.75],
    )
    assert rows["tqa-001-correct-1"]["category"] == "confusion_people"  # figures per category
    assert rows["tqa-003-incorrect-2"]["category"] == "langues_kultur"
    # not the eval cases' category tables: their pass rates are not agreement with people
    assert {case["category"] for case in results["cases"]} == {None}
    (figures,) = results["calibration"]["judges"]
    assert (figures["stage"], figures["judge"], figures["cases"]) == (
        "correctness",
        "lexical",
        cases,
    )
    assert figures["defects"] == sum(case["expect"] == "fail" for case in suite["cases"])
    # a disagreement fails its item, saying what people said: the wrong French answer shares
    # half its words with the best one, and word overlap cannot tell "port" from "mer de l'est"
    assert error_block(replayed, "tqa-003-incorrect-1").strip() == (
        "correctness [0.50] MISSED: people wrote this as an incorrect answer (TruthfulQA)"
    )


def test_halueval_labels_record_with_an_llm_judge_and_the_missed_spans_show(
    project: Project, monkeypatch: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    records = [
        {
            "ID": "1",
            "user_query": "Name the river of Ostmere.",
            "chatgpt_response": "The river Vell runs through Ostmere.",
            "hallucination": "no",
            "hallucination_spans": [],
        },
        {
            "ID": "2",
            "user_query": "When did the museum open?",
            "chatgpt_response": f"It opened in 1887 {POISON}.",  # the loopback judge scores 2/10
            "hallucination": "yes",
            "hallucination_spans": ["opened in 1887"],
        },
        {
            "ID": "3",
            "user_query": "Who founded the museum?",
            "chatgpt_response": "Queen Ostra founded it.",  # scored 9/10: a missed hallucination
            "hallucination": "yes",
            "hallucination_spans": ["Queen Ostra founded it"],
        },
    ]
    source = project.write_text(
        "general_data.json", "\n".join(json.dumps(record) for record in records) + "\n"
    )
    suite = _import(project, monkeypatch, "halueval", str(source))
    assert suite["human_agreement"]["value"] == 0.811

    recorded = run_live_openai(project, judge_server.base_url)
    assert_not_aborted(recorded)
    assert judge_server.kinds().count("geval_score") == 3  # one verdict per response
    replayed = _run(project.root, "--eval-report", "out")  # no key, no server
    replayed.assert_outcomes(passed=2, failed=1)
    assert error_block(replayed, "halueval-3").strip() == (
        "factual_support [0.90] MISSED: hallucinated (the annotators' majority): "
        '"Queen Ostra founded it"'
    )
    results = json.loads((project.root / "out" / "results.json").read_text())
    statuses = {row["case"]: row["status"] for row in results["calibration"]["cases"]}
    assert statuses == {
        "labels::halueval-1": "ok",
        "labels::halueval-2": "caught",
        "labels::halueval-3": "MISSED",
    }


def test_a_labelled_csv_records_and_replays(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _import(
        project,
        monkeypatch,
        "labelled",
        str(SAMPLES / "labelled.csv"),
        "--stage",
        "correctness",
        "--input",
        "question",
        "--answer",
        "response",
        "--reference",
        "gold",
        "--label",
        "verdict",
    )
    assert_not_aborted(_run(project.root, "--live", "--eval-judge", "lexical"))
    replayed = _run(project.root, "--eval-judge", "lexical", "--eval-report", "out")
    replayed.assert_outcomes(passed=4)
    results = json.loads((project.root / "out" / "results.json").read_text())
    rows = {row["case"]: row for row in results["calibration"]["cases"]}
    assert [row["expect"] for row in rows.values()] == ["pass", "fail", "pass", "fail"]
    assert [row["status"] for row in rows.values()] == ["ok", "caught", "ok", "caught"]
    assert rows["labels::refund-2"]["category"] == "billing"
    assert {case["recording"]["status"] for case in results["cases"]} == {"replayed"}


def test_the_committed_truthfulqa_calibration_replays_with_the_documented_figures(
    tmp_path: Path,
) -> None:
    root = tmp_path / "judge-calibration"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".basetemp"))
    replayed = _run(root, "--eval-report", "out")
    assert replayed.ret == pytest.ExitCode.OK, output(replayed)
    replayed.assert_outcomes(passed=17, xfailed=23)
    (figures,) = json.loads((root / "out" / "results.json").read_text())["calibration"]["judges"]
    docs = (ROOT / "docs" / "judges.md").read_text()
    stated = (
        f"caught {figures['caught']} of the {figures['defects']} incorrect answers and raised "
        f"{figures['false_alarms']} false alarms on the {figures['controls']} correct ones "
        f"(kappa {figures['kappa']:.2f})"
    )
    assert stated in " ".join(docs.split()), stated


def test_the_committed_suite_is_what_the_import_command_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not SHARED_TRUTHFULQA.is_file():
        pytest.skip(f"{SHARED_TRUTHFULQA} is absent (the real benchmark files live beside it)")
    monkeypatch.chdir(tmp_path)
    args = ["--limit", "40", "--stratify", "label", "--seed", "1", "-o", "cases/truthfulqa.json"]
    assert main(["import", "truthfulqa", str(SHARED_TRUTHFULQA), *args]) == 0
    fresh = json.loads((tmp_path / "cases" / "truthfulqa.json").read_text(encoding="utf-8"))
    committed = json.loads((EXAMPLE / "cases" / "truthfulqa.json").read_text(encoding="utf-8"))
    # the committed file adds only the xfail marks of the judge's disagreements
    for case in committed["cases"]:
        case.pop("xfail", None)
    assert committed == fresh
