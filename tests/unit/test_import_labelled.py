"""`python -m pytest_evalcases import truthfulqa|halueval|labelled FILE -o OUT` (issue 31 part 1):
human-labelled sets become calibration suites, one judge test case per labelled answer.

The small files under tests/data/benchmarks/ are written for these tests (quotes, `;` inside
answers, an empty incorrect list, unicode); the real files under ../shared/data/ are read where
that folder exists (a user's clone has none: those tests skip, saying so)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.domain.calibration_schema import CalibrationCase, CalibrationSuite
from pytest_evalcases.importers import truthfulqa

SAMPLES = Path(__file__).parents[1] / "data" / "benchmarks"
SHARED = Path(__file__).parents[2].parent / "shared" / "data"
TRUTHFULQA = SAMPLES / "truthfulqa.csv"
HALUEVAL = SAMPLES / "halueval_general.jsonl"
LABELLED_CSV = SAMPLES / "labelled.csv"
LABELLED_JSONL = SAMPLES / "labelled.jsonl"
CSV_COLUMNS = ("--input", "question", "--answer", "response", "--reference", "gold")


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder, the current directory: the project's root the command writes into."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def imported(fmt: str, source: Path, *args: str) -> dict[str, Any]:
    """The suite written, checked as the plugin loads it (the suite, then every case)."""
    assert main(["import", fmt, str(source), "-o", "cases/set.json", *args]) == 0
    suite = json.loads(Path("cases/set.json").read_text(encoding="utf-8"))
    checked = CalibrationSuite.model_validate(suite)
    for case in suite["cases"]:
        CalibrationCase.model_validate(case, context={"declared": checked.judged_stages})
    return suite


def refused(fmt: str, source: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["import", fmt, str(source), "-o", "cases/refused.json", *args]) == 2
    assert not Path("cases/refused.json").exists()  # nothing written
    return capsys.readouterr().err


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the real benchmark files live beside the project)")
    return path


# ---- TruthfulQA ----------------------------------------------------------------------------
def test_truthfulqa_makes_a_case_per_question_and_answer_labelled_as_people_wrote_it() -> None:
    suite = imported("truthfulqa", TRUTHFULQA)

    assert suite["kind"] == "calibration" and suite["repeats"] == 1
    cases = {case["id"]: case for case in suite["cases"]}
    red = cases["tqa-000-incorrect-1"]
    assert red == {
        "id": "tqa-000-incorrect-1",
        "stage": "correctness",
        "input": "What colour is the harbour lantern at night?",
        "answer": "It is red",
        "reference": "The harbour lantern shows green at night",
        "expect": "fail",
        "defect": "people wrote this as an incorrect answer (TruthfulQA)",
        "category": "misconceptions",
        "metadata": {
            "row": 0,
            "type": "Adversarial",
            "category": "Misconceptions",
            "source": "https://example.org/lantern",
        },
    }
    assert cases["tqa-000-correct-2"]["expect"] == "pass"
    assert "defect" not in cases["tqa-000-correct-2"]
    # the best answer is the reference, never a candidate compared with itself
    assert "tqa-000-correct-1" not in cases
    assert suite["source"]["left_out"] == {
        "correct answer identical to the best answer": 3,
        "answer listed as both correct and incorrect": 2,
    }
    assert suite["source"]["questions"] == 5 and suite["source"]["records"] == 16


def test_truthfulqa_quotes_semicolons_an_empty_incorrect_list_and_unicode() -> None:
    cases = {case["id"]: case for case in imported("truthfulqa", TRUTHFULQA)["cases"]}

    ballad = cases["tqa-001-correct-2"]
    assert ballad["input"] == 'Who wrote "The Vell Bridge", the ballad?'  # CSV quotes undone
    assert ballad["answer"] == "Anna Brisk, a poet from Ostmere"  # a comma inside a cell
    assert ballad["category"] == "confusion_people"
    assert ballad["metadata"]["category"] == "Confusion: People"
    # An answer list is split on `;` as TruthfulQA's own code does; the best answer is not.
    river = [case for case in cases.values() if case["id"].startswith("tqa-002-")]
    assert [(c["answer"], c["expect"]) for c in river] == [("The Vell does not freeze", "pass")]
    assert river[0]["reference"] == "No; the Vell's current keeps it open"
    assert truthfulqa.split_answers("A; B;; A ; ") == ["A", "B"]
    french = cases["tqa-003-incorrect-1"]
    assert french["answer"] == "« Ostmere » veut dire « le port »"
    assert french["category"] == "langues_kultur"
    # `One` is listed both correct and incorrect: neither label is kept
    assert [c["answer"] for c in cases.values() if c["id"].startswith("tqa-004-")] == [
        "I have no comment",
        "Seven",
    ]


def test_truthfulqa_stage_is_correctness_or_answer_accuracy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = imported("truthfulqa", TRUTHFULQA, "--stage", "answer_accuracy")
    assert {case["stage"] for case in suite["cases"]} == {"answer_accuracy"}
    assert suite["source"]["stage"] == "answer_accuracy"
    err = refused("truthfulqa", TRUTHFULQA, "--stage", "faithfulness", capsys=capsys)
    assert "--stage faithfulness: TruthfulQA's cases are judged at correctness or " in err


def test_truthfulqa_samples_by_label_or_category_and_records_how(in_project: Path) -> None:
    by_label = imported("truthfulqa", TRUTHFULQA, "--limit", "8", "--stratify", "label")
    labels = [case["expect"] for case in by_label["cases"]]
    assert (labels.count("pass"), labels.count("fail")) == (4, 4)  # 7 of 16 pass: 3.5 -> 4
    source = by_label["source"]
    assert source["file"] == "truthfulqa.csv"
    assert source["sha256"] == hashlib.sha256(TRUTHFULQA.read_bytes()).hexdigest()
    assert source["sampling"].startswith("each label's share of the file kept")
    assert (source["limit"], source["seed"], source["cases"]) == (8, 0, 8)

    by_category = imported(
        "truthfulqa", TRUTHFULQA, "--limit", "8", "--stratify", "category", "--force"
    )
    categories = [case["category"] for case in by_category["cases"]]
    # of 16: misconceptions 6, confusion_people 6, science 1, langues_kultur 3; shares of 8 are
    # 3, 3, 0.5 and 1.5: the tie of the last place goes to the category met first in the file
    assert {name: categories.count(name) for name in dict.fromkeys(categories)} == {
        "misconceptions": 3,
        "confusion_people": 3,
        "science": 1,
        "langues_kultur": 1,
    }

    (in_project / "ids.txt").write_text("tqa-003-incorrect-2\n0\n")
    named = imported("truthfulqa", TRUTHFULQA, "--ids", "ids.txt", "--force")
    assert [case["id"] for case in named["cases"]] == ["tqa-000-correct-2", "tqa-003-incorrect-2"]


def test_truthfulqa_errors_name_the_file_the_row_and_what_to_fix(
    in_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_best = in_project / "no_best.csv"
    no_best.write_text(
        "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers\n"
        "Adversarial,Law,Is it legal?,Yes,Yes,No\n"
        "Adversarial,Law,Is it cheap?,,Yes,No\n"
    )
    err = refused("truthfulqa", no_best, capsys=capsys)
    assert f"{no_best}: row 1 (line 3): 'Best Answer' is empty" in err
    assert "nothing was written" in err

    wrong = in_project / "wrong.csv"
    wrong.write_text("question,answer\nIs it legal?,Yes\n")
    err = refused("truthfulqa", wrong, capsys=capsys)
    assert f"{wrong}: no column 'Question', 'Best Answer'" in err
    assert "(columns: question, answer); TruthfulQA.csv's header is Type,Category" in err


# ---- HaluEval --------------------------------------------------------------------------------
def test_halueval_makes_a_case_per_response_failing_the_hallucinated_ones() -> None:
    suite = imported("halueval", HALUEVAL)

    assert suite["judged_stages"]["factual_support"]["reads"] == ["input", "answer"]
    assert suite["human_agreement"] == {
        "statistic": "fleiss_kappa",
        "value": 0.811,
        "annotators": 3,
        "source": "HaluEval (Li et al., EMNLP 2023): three annotators labelled each "
        "general-query response; their agreement, Fleiss' kappa 0.811",
    }
    cases = {case["id"]: case for case in suite["cases"]}
    assert [case["expect"] for case in cases.values()] == ["pass", "fail", "pass", "fail"]
    museum = cases["halueval-2"]
    assert museum["stage"] == "factual_support"
    assert museum["input"] == "When was the Harbour Lantern Museum opened?"
    assert museum["defect"] == (
        'hallucinated (the annotators\' majority): "opened in 1887"; "founded by Queen Ostra"'
    )
    assert museum["metadata"]["hallucination_spans"] == ["opened in 1887", "founded by Queen Ostra"]
    assert (
        cases["halueval-4"]["defect"] == "hallucinated (the annotators' majority); no span marked"
    )
    assert cases["halueval-3"]["answer"].startswith("La mer de l'est —\n")  # an integer ID too


def test_halueval_quotes_long_spans_shortened_in_the_defect_and_whole_in_metadata() -> None:
    from pytest_evalcases.importers import halueval

    long_span = "| 2001 | 6.202 |\n" * 20
    shown = halueval.defect([long_span])
    assert shown.endswith('..."') and len(shown) < 240 and "\n" not in shown


def test_halueval_a_label_other_than_yes_or_no_names_the_record(
    in_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = in_project / "general.json"
    lines = HALUEVAL.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"hallucination": "yes"', '"hallucination": "maybe"')
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = refused("halueval", bad, capsys=capsys)
    assert f"{bad}: record 1 (2): field 'hallucination' is 'maybe', expected 'yes' or 'no'" in err


def test_a_human_agreement_field_is_checked() -> None:
    base = {"name": "s", "kind": "calibration", "cases": []}
    ok = {"statistic": "cohen_kappa", "value": 0.7, "source": "our two reviewers, 2026"}
    assert CalibrationSuite.model_validate({**base, "human_agreement": ok}).human_agreement
    for wrong in ({**ok, "value": 1.5}, {**ok, "statistic": "vibes"}, {**ok, "annotators": 1}):
        with pytest.raises(ValueError):
            CalibrationSuite.model_validate({**base, "human_agreement": wrong})


# ---- a team's own labels -----------------------------------------------------------------------
def test_a_labelled_csv_names_its_columns_and_reads_pass_fail_yes_no_1_0_labels() -> None:
    suite = imported(
        "labelled", LABELLED_CSV, "--stage", "correctness", *CSV_COLUMNS, "--label", "verdict"
    )

    cases = suite["cases"]
    assert [case["id"] for case in cases] == ["refund-1", "refund-2", "export-1", "export-2"]
    assert [case["expect"] for case in cases] == ["pass", "fail", "pass", "fail"]
    assert cases[1] == {
        "id": "refund-2",
        "stage": "correctness",
        "input": "How long do refunds take?",
        "answer": "Refunds are instant, always.",
        "reference": "Refunds take five working days.",
        "expect": "fail",
        "defect": "people labelled it fail (verdict = FAIL)",
        "category": "billing",
        "metadata": {"row": 2, "label": "FAIL"},
    }
    assert suite["source"]["stage"] == "correctness"


def test_labelled_json_lines_with_score_labels_and_a_threshold() -> None:
    suite = imported(
        "labelled",
        LABELLED_JSONL,
        "--stage",
        "faithfulness",
        "--label",
        "score",
        "--label-threshold",
        "0.7",
    )

    cases = suite["cases"]
    assert [case["id"] for case in cases] == ["row-1", "row-2", "row-3"]
    assert [case["expect"] for case in cases] == ["pass", "fail", "pass"]  # 0.7 >= 0.7 passes
    assert cases[1]["context"] == ["Jotter exports markdown, html and json."]  # a string: one
    assert cases[0]["input"] == "Which formats can Jotter export?"  # kept for the reviewer
    assert suite["source"]["label_threshold"] == 0.7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--stage", "correctness", *CSV_COLUMNS, "--label", "category"),
            "{file}: row 1 (line 2): category 'billing' is not a label: pass/fail, yes/no, "
            "1/0 or true/false; fix the row",
        ),
        (
            ("--stage", "correctness", *CSV_COLUMNS),
            "{file}: no column 'label' for the label (columns: 'id', 'question', 'response', "
            "'gold', 'verdict', 'category'); name the label column with --label COLUMN",
        ),
        (
            ("--stage", "correctness", "--label", "verdict"),
            "{file}: no column 'input' for the input (columns: 'id', 'question', 'response', "
            "'gold', 'verdict', 'category'); name the input column with --input COLUMN",
        ),
        (
            ("--stage", "correctness", *CSV_COLUMNS, "--label", "verdict", "--context", "ctx"),
            "{file}: no column 'ctx' for the context",
        ),
        (
            (*CSV_COLUMNS, "--label", "verdict"),
            "{file}: name the judged stage the labels are for with --stage (one of faithfulness",
        ),
        (
            ("--stage", "rubric", "--label", "verdict"),
            "--stage rubric: not a judged stage to calibrate; one of faithfulness",
        ),
        (
            ("--stage", "correctness", *CSV_COLUMNS, "--label", "verdict", "--system", "a:b"),
            "--system: a labelled file becomes a calibration suite, which runs no system",
        ),
    ],
)
def test_labelled_file_errors_name_the_file_the_row_and_the_next_step(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused("labelled", LABELLED_CSV, *args, capsys=capsys)
    assert message.format(file=LABELLED_CSV) in err


def test_a_score_label_without_a_threshold_says_to_give_one(
    in_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = in_project / "scores.csv"
    scores.write_text("input,answer,reference,label\nq,a,r,1\nq2,a2,r2,0.8\n")
    err = refused("labelled", scores, "--stage", "correctness", capsys=capsys)
    assert (
        f"{scores}: row 2 (line 3): label '0.8' is not a label: pass/fail, yes/no, 1/0 or "
        "true/false; it looks like a score: pass --label-threshold T" in err
    )
    words = in_project / "words.csv"
    words.write_text("input,answer,reference,label\nq,a,r,good\n")
    err = refused(
        "labelled", words, "--stage", "correctness", "--label-threshold", "0.5", capsys=capsys
    )
    assert f"{words}: row 1 (line 2): label 'good' is not a score; with --label-threshold" in err
    empty = in_project / "empty_reference.csv"
    empty.write_text("input,answer,reference,label\nq,a,,pass\n")
    err = refused("labelled", empty, "--stage", "correctness", capsys=capsys)
    assert f"{empty}: row 1 (line 2): reference is empty, and correctness compares" in err


def test_the_labelled_options_belong_to_the_labelled_formats(
    in_project: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = refused("truthfulqa", TRUTHFULQA, "--label", "verdict", capsys=capsys)
    assert "--input/--answer/--reference/--context/--label applies to labelled files only" in err
    err = refused("halueval", HALUEVAL, "--stage", "correctness", capsys=capsys)
    assert "--stage applies to truthfulqa and labelled files only" in err
    err = refused("hotpotqa", SAMPLES / "hotpotqa.json", "--label-threshold", "1", capsys=capsys)
    assert "--label-threshold applies to labelled files only" in err
    err = refused(
        "hotpotqa", SAMPLES / "hotpotqa.json", "--limit", "1", "--stratify", "label", capsys=capsys
    )
    assert "--stratify label applies to labelled sets (truthfulqa, halueval, labelled)" in err
    text = Path("labels.txt")
    text.write_text("input,answer,reference,label\n")
    err = refused("labelled", text, "--stage", "correctness", capsys=capsys)
    assert "a labelled file is CSV (.csv) or JSON Lines (.jsonl); name it so" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_given_as_the_labelled_file_is_refused_before_it_is_read(
    in_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = in_project / "labels.csv"
    os.mkfifo(fifo)
    err = refused("labelled", fifo, "--stage", "correctness", capsys=capsys)
    assert (
        f"{fifo}: the benchmark file is a FIFO (named pipe), not a regular file: it was not read"
        in err
    )


@pytest.mark.parametrize("fmt", ["truthfulqa", "hotpotqa"])
def test_a_device_given_as_the_file_or_the_ids_is_refused_not_read_whole(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30: `/dev/zero` as the benchmark FILE or the --ids file ended in a MemoryError."""
    zero = Path("/dev/zero")
    if not zero.exists():
        pytest.skip("no /dev/zero on this platform")
    err = refused(fmt, zero, capsys=capsys)
    assert "/dev/zero: the benchmark file is a device, not a regular file: it was not read" in err
    sample = TRUTHFULQA if fmt == "truthfulqa" else SAMPLES / "hotpotqa.json"
    err = refused(fmt, sample, "--ids", str(zero), capsys=capsys)
    assert "/dev/zero: the ids file is a device, not a regular file: it was not read" in err


# ---- the real files ------------------------------------------------------------------------
def test_the_shared_truthfulqa_file_imports_every_labelled_answer() -> None:
    suite = imported("truthfulqa", shared("TruthfulQA_60.csv"))

    cases = suite["cases"]
    assert suite["source"]["questions"] == 60
    assert len({case["input"] for case in cases}) == 60  # every question has a candidate
    assert len(cases) == suite["source"]["records"] == 418
    # 256 incorrect answers; 222 correct ones less the 60 that are the best answer itself
    assert sum(case["expect"] == "fail" for case in cases) == 256
    assert suite["source"]["left_out"]["correct answer identical to the best answer"] == 60
    assert len({case["category"] for case in cases}) > 5


def test_the_shared_halueval_file_keeps_the_annotators_majority() -> None:
    suite = imported("halueval", shared("halueval_general_200.json"))

    cases = suite["cases"]
    assert len(cases) == 200
    assert sum(case["expect"] == "fail" for case in cases) == 72  # the README's 'yes' count
    assert cases[1]["id"] == "halueval-2"
    assert cases[1]["metadata"]["hallucination_spans"][0].startswith("6. hear (to perceive")
