"""2WikiMultihopQA: a JSON array of records shaped like HotpotQA's

    {"_id", "question", "answer", "type": "comparison" | "inference" | "compositional" |
     "bridge_comparison", "supporting_facts": [[title, sentence index], ...],
     "context": [[title, [sentence, ...]], ...],
     "evidences": [[subject, relation, object], ...]}

Mapped as HotpotQA (see hotpotqa.py); the evidence triples are kept in the case's `metadata`
(never given to the system).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed, RecordReader
from .hotpotqa import unit

FORMAT = "2wikimultihopqa"
DESCRIPTION = "2WikiMultihopQA: multi-hop questions with evidence triples"


def parse(path: Path, records: list[Any]) -> Parsed:
    units = []
    for index, record in enumerate(records):
        reader = RecordReader(path, index, record, "_id")
        evidences = reader.get("evidences", list, required=False) or []
        for number, triple in enumerate(evidences):
            if not (
                isinstance(triple, list)
                and len(triple) == 3
                and all(isinstance(part, str) for part in triple)
            ):
                raise reader.error(
                    f"evidences[{number}]",
                    "must be a [subject, relation, object] triple of strings",
                )
        units.append(unit(reader, {"evidences": evidences}))
    return Parsed(
        units,
        stages=["retrieval", "context_completeness", "answer_accuracy"],
        report_only=[
            "2wikimultihopqa_em",
            "2wikimultihopqa_f1",
            "2wikimultihopqa_sp_f1",
            "context_coverage",
        ],
    )
