"""MuSiQue (answerable or full): JSON Lines (or a JSON array) of records

    {"id", "question", "answer", "answer_aliases": [...], "answerable": true | false,
     "paragraphs": [{"idx", "title", "paragraph_text", "is_supporting"}, ...],
     "question_decomposition": [{"question", "answer", "paragraph_support_idx"}, ...]}

Each record is a case: category = hop count (`hop2`, `hop3`, `hop4`, from the decomposition),
`expected_docs` = the titles of the supporting paragraphs, `reference` = answer. A record with
`"answerable": false` is `unanswerable` (the right answer is to abstain): its reference states
the absence, and the dataset's answer (which may be empty) is kept in `metadata`. Paragraphs go
to the corpus file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed, RecordReader, Unit

FORMAT = "musique"
DESCRIPTION = "MuSiQue: 2-4 hop questions composed from single-hop ones, some unanswerable"
UNANSWERABLE_REFERENCE = "The paragraphs do not answer this question."


def parse(path: Path, records: list[Any]) -> Parsed:
    return Parsed(
        [_unit(RecordReader(path, index, record, "id")) for index, record in enumerate(records)],
        stages=["retrieval", "context_completeness", "answer_accuracy"],
        report_only=["musique_em", "musique_f1", "musique_sp_f1", "context_coverage"],
    )


def _unit(reader: RecordReader) -> Unit:
    paragraphs, supporting, supporting_texts = [], [], []
    for number, entry in enumerate(reader.get("paragraphs", list)):
        where = f"paragraphs[{number}]"
        if not isinstance(entry, dict):
            raise reader.error(where, "must be an object with title and paragraph_text")
        title = reader.text("title", entry, f"{where}.title")
        text = reader.text("paragraph_text", entry, f"{where}.paragraph_text")
        if reader.get("is_supporting", bool, entry, f"{where}.is_supporting", required=False):
            supporting.append(title)
            supporting_texts.append(text)
        paragraphs.append({"title": title, "text": text})
    steps = reader.get("question_decomposition", list)
    if not steps:
        raise reader.error("question_decomposition", "is empty (it gives the hop count)")
    for number, step in enumerate(steps):
        if not isinstance(step, dict):
            raise reader.error(f"question_decomposition[{number}]", "must be an object")
        reader.text("question", step, f"question_decomposition[{number}].question")
    answerable = reader.get("answerable", bool, required=False)
    # An unanswerable record may have an empty answer (the benchmark's own unanswerable
    # questions often do): the case's reference states the absence, not the dataset's answer.
    answer = reader.text("answer", numbers=True, required=answerable is not False) or ""
    aliases = reader.get("answer_aliases", list, required=False) or []
    if not all(isinstance(alias, str) for alias in aliases):
        raise reader.error("answer_aliases", "must be a list of strings")
    case: dict[str, Any] = {
        "id": reader.id,
        "input": reader.text("question"),
        "category": f"hop{len(steps)}",
        "metadata": {
            "answer": answer,
            "answer_aliases": aliases,
            "decomposition": [step["question"] for step in steps],
        },
    }
    if answerable is False:
        case["unanswerable"] = True
        case["reference"] = UNANSWERABLE_REFERENCE
    else:
        if not supporting:
            raise reader.error(
                "paragraphs",
                "has no paragraph with is_supporting true, though the question is answerable",
            )
        case["expected_docs"] = list(dict.fromkeys(supporting))
        case["expected_context"] = list(dict.fromkeys(supporting_texts))
        case["reference"] = answer
        if aliases:  # musique_em and musique_f1 take the best over the answer and these
            case["reference_aliases"] = aliases
    return Unit(case, paragraphs)
