"""HotpotQA (distractor or fullwiki dev file): a JSON array of records

    {"_id", "question", "answer", "type": "bridge" | "comparison", "level",
     "supporting_facts": [[title, sentence index], ...],
     "context": [[title, [sentence, ...]], ...]}

Each record is a case: `reference` = answer, `expected_docs` = the titles of the supporting
paragraphs, category = type, the level in `metadata`; every context paragraph goes to the
corpus file the system indexes (the suite's `inputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed, RecordReader, Unit, marker_name, paragraphs_of, supporting_titles

FORMAT = "hotpotqa"
DESCRIPTION = "HotpotQA: multi-hop questions over Wikipedia paragraphs"


def parse(path: Path, records: list[Any]) -> Parsed:
    return Parsed(
        [unit(RecordReader(path, index, record, "_id")) for index, record in enumerate(records)],
        stages=["retrieval", "context_completeness", "answer_accuracy"],
        report_only=["hotpotqa_em", "hotpotqa_f1", "hotpotqa_sp_f1", "context_coverage"],
    )


def unit(reader: RecordReader, extra_metadata: dict[str, Any] | None = None) -> Unit:
    """A HotpotQA-shaped record as a case (2WikiMultihopQA shares this shape)."""
    context = reader.get("context", list)
    paragraphs = paragraphs_of(reader, context, "context")
    facts = reader.get("supporting_facts", list)
    docs = supporting_titles(reader, facts, "supporting_facts")
    gold_sentences = supporting_sentences(context, facts)
    case: dict[str, Any] = {"id": reader.id, "input": reader.text("question")}
    metadata: dict[str, Any] = {}
    kind = reader.text("type", required=False)
    if kind is not None:  # absent from some files: then no category
        case["category"] = marker_name(kind)
        metadata["type"] = kind
    case["expected_docs"] = docs
    case["expected_facts"] = [list(fact) for fact in dict.fromkeys(map(tuple, facts))]
    if gold_sentences:  # none in the fullwiki setting when no supporting paragraph is given
        case["expected_context"] = gold_sentences
    case["reference"] = reader.text("answer", numbers=True)
    level = reader.text("level", required=False)
    if level is not None:
        metadata["level"] = level
    metadata.update(extra_metadata or {})
    if metadata:
        case["metadata"] = metadata
    return Unit(case, paragraphs)


def supporting_sentences(context: list[Any], facts: list[Any]) -> list[str]:
    """The text of each supporting fact whose paragraph and sentence the record holds, once
    each, in the facts' order (both lists already checked by paragraphs_of/supporting_titles)."""
    sentences = {title: lines for title, lines in context}
    found: list[str] = []
    for title, index in facts:
        lines = sentences.get(title) or []
        if 0 <= index < len(lines) and lines[index].strip() and lines[index].strip() not in found:
            found.append(lines[index].strip())
    return found
