"""ragas: an evaluation dataset of single-turn samples as ragas writes it (`to_jsonl`, `to_csv`,
or a JSON array of `to_list()`)

    {"user_input", "reference", "retrieved_contexts": [...], "reference_contexts": [...],
     "response", "multi_responses", "rubrics", "retrieved_context_ids", "reference_context_ids",
     ...}

In a CSV file a list is written as a Python list literal (`['a', 'b']`), as ragas's `to_csv`
leaves it. Datasets of ragas before 0.2 (`question`, `ground_truth`, `answer`, `contexts`) are
read under their new names.

Each sample is a case (`sample-001`, ...): `user_input` -> `input`, `reference` -> `reference`,
`reference_contexts` -> `expected_context`, `reference_context_ids` -> `expected_docs`. What
the sample recorded of a run (`response`, `multi_responses`, `retrieved_contexts`,
`retrieved_context_ids`) is kept in `metadata.recorded`: never given to the system and never
graded; a run grades the system's own answer, recorded with --live (a ragas response has no
tool calls, no retrieval ids and no code fingerprint: replaying it would grade an answer no
version of your system is known to give). The rest (`rubrics`, a synthetic sample's
`persona_name`, ...) is kept in `metadata.ragas`. A multi-turn sample (`user_input` a list of
messages) is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed, RecordReader, Unit
from .peer_files import (
    TableRow,
    json_cell,
    keep_recorded,
    numbered_id,
    read_table_or_json,
    row_place,
    text_list,
    without_nulls,
)

FORMAT = "ragas"
DESCRIPTION = "ragas: an evaluation dataset (JSONL, CSV or JSON, as ragas writes it)"
NEXT_STEP = "; fix it, or write the dataset again with ragas's EvaluationDataset.to_jsonl()"
# ragas before 0.2 -> its names since
LEGACY_NAMES = {
    "question": "user_input",
    "ground_truth": "reference",
    "answer": "response",
    "contexts": "retrieved_contexts",
}
MAPPED = frozenset({"user_input", "reference", "reference_contexts", "reference_context_ids"})
RECORDED_FIELDS = ("response", "multi_responses", "retrieved_contexts", "retrieved_context_ids")

read = read_table_or_json


def parse(path: Path, records: list[Any]) -> Parsed:
    legacy = bool(records) and all(
        isinstance(record, dict) and "user_input" not in record and "question" in record
        for record in records
    )
    units = [
        _unit(path, index, record, len(records), legacy) for index, record in enumerate(records)
    ]
    cases = [unit.case for unit in units]
    with_reference = any("reference" in case for case in cases)
    report_only = ["token_f1"] if with_reference else []
    if any("expected_context" in case for case in cases):
        report_only.append("context_coverage")
    if any("expected_docs" in case for case in cases):
        report_only.append("retrieval")
    notes = {"legacy_names": "question, ground_truth, answer, contexts"} if legacy else {}
    return Parsed(
        units,
        stages=["answer_accuracy"] if with_reference else ["answer_relevancy"],
        report_only=report_only,
        source_notes=notes,
    )


def _unit(path: Path, index: int, record: Any, count: int, legacy: bool) -> Unit:
    if legacy and isinstance(record, dict):
        renamed = type(record)({LEGACY_NAMES.get(key, key): value for key, value in record.items()})
        if isinstance(record, TableRow):
            renamed.line = record.line
        record = renamed
    record = without_nulls(record)
    reader = RecordReader(path, index, record, None, row_place(record, index), NEXT_STEP)
    if isinstance(reader.record.get("user_input"), list):
        raise reader.error(
            "user_input",
            "is a list of messages: a multi-turn sample, which is not imported; import a "
            "dataset of single-turn samples",
        )
    case: dict[str, Any] = {
        "id": numbered_id("sample", index, count),
        "input": reader.text("user_input"),
    }
    reference = reader.text("reference", required=False)
    if reference is not None and reference.strip():
        case["reference"] = reference
    gold_contexts = text_list(reader, "reference_contexts")
    if gold_contexts:
        case["expected_context"] = gold_contexts
    gold_ids = _ids(reader, "reference_context_ids")
    if gold_ids:
        case["expected_docs"] = gold_ids
    keep_recorded(
        case,
        {
            "response": reader.text("response", required=False),
            "multi_responses": text_list(reader, "multi_responses"),
            "retrieved_contexts": text_list(reader, "retrieved_contexts"),
            "retrieved_context_ids": _ids(reader, "retrieved_context_ids"),
        },
    )
    others = {
        key: value
        for key, value in reader.record.items()
        if key not in MAPPED and key not in RECORDED_FIELDS and value not in (None, "", [], {})
    }
    if "rubrics" in others:  # a mapping (in a CSV cell: its Python literal)
        others["rubrics"] = json_cell(reader, "rubrics")
    if others:
        case.setdefault("metadata", {})["ragas"] = others
    return Unit(case)


def _ids(reader: RecordReader, name: str) -> list[str] | None:
    """Context ids: ragas allows strings and integers (kept as their digits)."""
    value = reader.record.get(name)
    if isinstance(value, list) and all(
        isinstance(item, int) and not isinstance(item, bool) for item in value
    ):
        return [str(item) for item in value]
    if isinstance(value, list):
        value = [
            str(item) if isinstance(item, int) and not isinstance(item, bool) else item
            for item in value
        ]
        reader.record[name] = value
    return text_list(reader, name)
