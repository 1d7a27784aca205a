"""TruthfulQA (`TruthfulQA.csv`): questions with human-written correct and incorrect answers,
as a calibration suite of judge test cases.

    Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source

Each (question, candidate answer) is a case: every correct answer `"expect": "pass"`, every
incorrect one `"expect": "fail"`, the best answer the `reference` the judge compares with;
category = the question's category (as a marker-safe name), its type and category as written in
`metadata`. The answer lists are split on `;` as TruthfulQA's own code does
(`split_multi_answer`): an answer holding a `;` becomes two answers there and here alike.
A correct answer that is the best answer itself is left out (a judge comparing an answer with
itself measures nothing), and so is an answer the row lists as both correct and incorrect.
Ids are `tqa-<row>-correct-<n>` / `tqa-<row>-incorrect-<n>` (row from 0, n from 1), so the first
rows of the whole file keep their ids in a file cut from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import BenchmarkFormatError, Parsed, Unit, marker_name
from .labelled_files import read_csv

FORMAT = "truthfulqa"
DESCRIPTION = "TruthfulQA: questions with human-written correct and incorrect answers (labels)"
OPTIONS = ("stage",)
STAGES = ("correctness", "answer_accuracy")
REQUIRED = ("Question", "Best Answer", "Correct Answers", "Incorrect Answers")
NEXT_STEP = "; TruthfulQA.csv's header is Type,Category,Question,Best Answer,Correct Answers,..."


def read(path: Path) -> list[dict[str, Any]]:
    return read_csv(path)


def parse(path: Path, records: list[Any], stage: str | None = None) -> Parsed:
    stage = stage or STAGES[0]
    if stage not in STAGES:
        raise BenchmarkFormatError(
            f"--stage {stage}: TruthfulQA's cases are judged at {' or '.join(STAGES)} (they "
            "compare an answer with the best answer)"
        )
    missing = [name for name in REQUIRED if name not in records[0]]
    if missing:
        found = ", ".join(name for name in records[0] if not name.startswith("_")) or "none"
        raise BenchmarkFormatError(
            f"{path}: no column {', '.join(map(repr, missing))} (columns: {found}){NEXT_STEP}"
        )
    units: list[Unit] = []
    skipped = {"same_as_best": 0, "contradictory": 0}
    width = max(3, len(str(len(records) - 1)))
    for index, row in enumerate(records):
        units.extend(_question(path, index, row, stage, width, skipped))
    return Parsed(
        units,
        stages=[],
        report_only=[],
        suite_fields={"kind": "calibration"},
        source_notes={
            "questions": len(records),
            "left_out": {
                "correct answer identical to the best answer": skipped["same_as_best"],
                "answer listed as both correct and incorrect": skipped["contradictory"],
            },
        },
    )


def split_answers(text: str) -> list[str]:
    """TruthfulQA's `split_multi_answer` without the added full stop: `;`-separated, stripped,
    empty parts and repeats dropped."""
    return list(dict.fromkeys(part.strip() for part in text.split(";") if part.strip()))


def _same(one: str, other: str) -> bool:
    return one.strip().rstrip(".").casefold() == other.strip().rstrip(".").casefold()


def _question(
    path: Path, index: int, row: dict[str, Any], stage: str, width: int, skipped: dict[str, int]
) -> list[Unit]:
    where = f"{path}: row {index} (line {row['_line']})"
    if row.get("_extra"):
        raise BenchmarkFormatError(
            f"{where}: more cells than the header has columns; quote a cell that holds a comma"
        )
    cells = {name: (row.get(name) or "").strip() for name in REQUIRED}
    for name in ("Question", "Best Answer"):
        if not cells[name]:
            raise BenchmarkFormatError(f"{where}: {name!r} is empty{NEXT_STEP}")
    correct = split_answers(cells["Correct Answers"])
    incorrect = split_answers(cells["Incorrect Answers"])
    both = {a.casefold() for a in correct} & {a.casefold() for a in incorrect}
    skipped["contradictory"] += 2 * len(both)
    category = (row.get("Category") or "").strip()
    metadata = {"row": index}
    for name in ("Type", "Category", "Source"):
        if (row.get(name) or "").strip():
            metadata[name.lower()] = row[name].strip()
    prefix = f"tqa-{index:0{width}d}"
    units = []
    for label, answers in (("correct", correct), ("incorrect", incorrect)):
        for number, answer in enumerate(answers, start=1):
            if answer.casefold() in both:
                continue
            if label == "correct" and _same(answer, cells["Best Answer"]):
                skipped["same_as_best"] += 1
                continue
            case: dict[str, Any] = {
                "id": f"{prefix}-{label}-{number}",
                "stage": stage,
                "input": cells["Question"],
                "answer": answer,
                "reference": cells["Best Answer"],
                "expect": "pass" if label == "correct" else "fail",
            }
            if label == "incorrect":
                case["defect"] = "people wrote this as an incorrect answer (TruthfulQA)"
            if category:
                case["category"] = marker_name(category)
            case["metadata"] = metadata
            units.append(Unit(case))
    return units
