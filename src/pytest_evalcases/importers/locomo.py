"""LoCoMo (locomo10.json): a JSON array of conversations

    {"sample_id", "conversation": {"speaker_a", "speaker_b",
                                   "session_1_date_time": "...", "session_1": [
                                       {"speaker", "dia_id": "D1:1", "text"}, ...], ...},
     "qa": [{"question", "answer", "evidence": ["D1:3", ...], "category": 1-5}, ...]}

One suite user per conversation (its sessions, in order, go to the user's `conversations`
file); each QA is a case of that user, named by its category: 1 multi_hop, 2 temporal,
3 open_domain, 4 single_hop, 5 adversarial. `expected_docs` = the evidence dialogue ids. An
adversarial question is `unanswerable` (the right answer is to abstain): its reference states
the absence, and its `adversarial_answer` (the trap) is kept in `metadata`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.names import unsafe_id_reason
from .base import BenchmarkFormatError, Parsed, RecordReader, Unit

FORMAT = "locomo"
DESCRIPTION = "LoCoMo: questions over long multi-session conversations, one user each"
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
ADVERSARIAL = 5
UNANSWERABLE_REFERENCE = "The conversations do not say."
# The totals papers report: categories 1-4 (Mem0, Zep: adversarial questions have no gold
# answer), and Cognee's: every category but open-domain, the adversarial questions in (right
# when the answer says the information is not there).
PUBLISHED_TOTALS = [
    {"name": "categories 1-4", "exclude": {"category": ["adversarial"]}},
    {"name": "without open-domain", "exclude": {"category": ["open_domain"]}},
]
# With --exclude-ids (Cognee's list of questions with a corrupted gold answer): Cognee's headline
# total, its categories and the list together.
GOLD_EXCLUSION_TOTAL = {
    "name": "without open-domain or gold exclusions",
    "exclude": {"category": ["open_domain"]},
}
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D(\d+):")


def parse(path: Path, records: list[Any], max_sessions: int | None = None) -> Parsed:
    """`max_sessions`: keep each conversation's first N sessions, and only the questions whose
    evidence lies in them (a question without evidence is kept; one whose evidence names no
    session is left out)."""
    units: list[Unit] = []
    users: dict[str, dict[str, Any]] = {}
    left_out = 0
    for index, record in enumerate(records):
        reader = RecordReader(path, index, record, "sample_id")
        unsafe = unsafe_id_reason(reader.id)
        if unsafe:
            raise reader.error("sample_id", f"cannot name a user and its cases: {unsafe}")
        if reader.id in users:
            raise reader.error("sample_id", "repeats an earlier conversation's id")
        conversation = _conversation(reader)
        turns = {
            turn["dia_id"]: turn["text"]
            for session in conversation["sessions"]
            for turn in session["turns"]
        }
        if max_sessions is not None:
            conversation["sessions"] = conversation["sessions"][:max_sessions]
        kept_sessions = {session["session"] for session in conversation["sessions"]}
        users[reader.id] = {"conversations": conversation}
        for number, qa in enumerate(reader.get("qa", list)):
            unit = _case(reader, number, qa, turns)
            if max_sessions is None or _within(unit.case.get("expected_docs"), kept_sessions):
                units.append(unit)
            else:
                left_out += 1
    notes: dict[str, Any] = {}
    if max_sessions is not None:
        notes = {"max_sessions": max_sessions, "questions_beyond_sessions": left_out}
    return Parsed(
        units,
        stages=["context_completeness", "answer_accuracy"],
        report_only=["retrieval", "locomo_f1", "context_coverage"],
        k=10,
        users=users,
        totals=PUBLISHED_TOTALS,
        exclusion_total=GOLD_EXCLUSION_TOTAL,
        source_notes=notes,
    )


def _within(evidence: list[str] | None, sessions: set[int]) -> bool:
    """Every session the evidence names is kept (`D3:5` is session 3; one entry may name more
    than one, as a few of the release's do)."""
    if not evidence:
        return True
    named = [int(number) for entry in evidence for number in _EVIDENCE.findall(entry)]
    return bool(named) and all(number in sessions for number in named)


def _conversation(reader: RecordReader) -> dict[str, Any]:
    conversation = reader.get("conversation", dict)
    speakers = {
        name: reader.text(name, conversation, f"conversation.{name}")
        for name in ("speaker_a", "speaker_b")
    }
    sessions = []
    for key in sorted(
        (k for k in conversation if _SESSION.fullmatch(k)), key=lambda k: int(k.split("_")[1])
    ):
        where = f"conversation.{key}"
        turns = reader.get(key, list, conversation, where)
        for number, turn in enumerate(turns):
            if not isinstance(turn, dict):
                raise reader.error(f"{where}[{number}]", "must be an object")
            for name in ("speaker", "dia_id", "text"):
                reader.text(name, turn, f"{where}[{number}].{name}")
        sessions.append(
            {
                "session": int(key.split("_")[1]),
                "date_time": reader.text(
                    f"{key}_date_time",
                    conversation,
                    f"conversation.{key}_date_time",
                    required=False,
                ),
                "turns": turns,
            }
        )
    if not sessions:
        raise reader.error("conversation", "has no session_<n> list of turns")
    return {**speakers, "sessions": sessions}


def _case(reader: RecordReader, number: int, qa: Any, turns: dict[str, str]) -> Unit:
    where = f"qa[{number}]"
    if not isinstance(qa, dict):
        raise reader.error(where, "must be an object")
    category = reader.get("category", int, qa, f"{where}.category")
    if category not in CATEGORIES:
        raise reader.error(f"{where}.category", f"is {category}; LoCoMo categories are 1 to 5")
    evidence = reader.get("evidence", list, qa, f"{where}.evidence", required=False) or []
    if not all(isinstance(item, str) for item in evidence):
        raise reader.error(f"{where}.evidence", "must be a list of dialogue ids (strings)")
    case: dict[str, Any] = {
        "id": f"{reader.id}-q{number + 1:03d}",
        "input": reader.text("question", qa, f"{where}.question"),
        "user": reader.id,
        "category": CATEGORIES[category],
    }
    if evidence:
        case["expected_docs"] = evidence
        said = [turns[dia_id] for dia_id in dict.fromkeys(evidence) if dia_id in turns]
        if said:  # the evidence turns' words, for context_coverage
            case["expected_context"] = said
    if category == ADVERSARIAL:
        trap = reader.text(
            "adversarial_answer", qa, f"{where}.adversarial_answer", required=False, numbers=True
        )
        case["unanswerable"] = True
        case["reference"] = UNANSWERABLE_REFERENCE
        if trap is not None:
            case["metadata"] = {"adversarial_answer": trap}
    else:
        case["reference"] = reader.text("answer", qa, f"{where}.answer", numbers=True)
    return Unit(case)


__all__ = ["BenchmarkFormatError", "CATEGORIES", "FORMAT", "parse"]
