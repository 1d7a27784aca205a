"""inspect-ai: a dataset of samples as `json_dataset` reads it (JSON Lines, or a JSON array)

    {"input": "..." | [{"role": "system" | "user" | "assistant" | "tool", "content": ...}, ...],
     "target": "..." | ["...", ...], "id": "..." | 7, "metadata": {...}, "choices": [...],
     "sandbox", "files", "setup"}

Each sample is a case: `target` -> `reference` (a list: its first entry, the others
`reference_aliases`, which inspect's scorers also accept), `id` -> the case id (else
`sample-001`, ...), `metadata` -> `metadata`. An `input` that is a list of chat messages is a
conversation so far: the case's `input` is its last user message, and the whole list is the
case field `messages`, an input for the system (inspect-ai hands the model all of it).
`choices` stays an input for the system. What only inspect-ai's sandbox uses (`sandbox`,
`files`, `setup`) is kept in `metadata.inspect_ai`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.names import unsafe_id_reason
from .base import Parsed, RecordReader, Unit, read_records
from .peer_files import numbered_id, without_nulls

FORMAT = "inspect-ai"
DESCRIPTION = "inspect-ai: samples (JSONL or JSON: input, target, id, metadata)"
NEXT_STEP = "; fix the sample (inspect-ai's Sample fields: input, target, id, metadata)"
ROLES = frozenset({"system", "user", "assistant", "tool"})
SANDBOX_FIELDS = ("sandbox", "files", "setup")

read = read_records


def parse(path: Path, records: list[Any]) -> Parsed:
    units = [_unit(path, index, record, len(records)) for index, record in enumerate(records)]
    with_reference = any("reference" in unit.case for unit in units)
    return Parsed(
        units,
        stages=["answer_accuracy"] if with_reference else ["answer_relevancy"],
        report_only=["exact_match", "token_f1"] if with_reference else [],
    )


def _unit(path: Path, index: int, record: Any, count: int) -> Unit:
    record = without_nulls(record)
    reader = RecordReader(path, index, record, None, f"sample {index}", NEXT_STEP)
    case: dict[str, Any] = {"id": _case_id(reader, index, count)}
    raw_input = reader.get("input", (str, list))
    if isinstance(raw_input, str):
        case["input"] = reader.text("input")
    else:
        case["input"] = _last_user_message(reader, raw_input)
        case["messages"] = raw_input
    targets = _targets(reader)
    if targets:
        case["reference"] = targets[0]
        if len(targets) > 1:
            case["reference_aliases"] = targets[1:]
    choices = reader.get("choices", list, required=False)
    if choices is not None:
        if not all(isinstance(choice, str) for choice in choices):
            raise reader.error("choices", "must be a list of strings")
        case["choices"] = choices
    metadata = reader.get("metadata", dict, required=False)
    if metadata:
        case["metadata"] = dict(metadata)
    sandbox = {name: reader.record[name] for name in SANDBOX_FIELDS if reader.record.get(name)}
    if sandbox:
        case.setdefault("metadata", {})["inspect_ai"] = sandbox
    return Unit(case)


def _case_id(reader: RecordReader, index: int, count: int) -> str:
    value = reader.get("id", (str, int), required=False)
    if value is None:
        return numbered_id("sample", index, count)
    case_id = str(value)
    unsafe = unsafe_id_reason(case_id)
    if unsafe:
        raise reader.error("id", f"cannot name a recording: {unsafe}")
    return case_id


def _targets(reader: RecordReader) -> list[str]:
    value = reader.get("target", (str, list), required=False)
    if value is None:
        return []
    targets = [value] if isinstance(value, str) else value
    if not all(isinstance(target, str) for target in targets):
        raise reader.error("target", "must be a string or a list of strings")
    return [target for target in targets if target.strip()]


def _last_user_message(reader: RecordReader, messages: list[Any]) -> str:
    """The text of the last user message of a chat-message input."""
    if not messages:
        raise reader.error("input", "is an empty list of messages")
    text = None
    for number, message in enumerate(messages):
        where = f"input[{number}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise reader.error(
                where, f"must be a chat message with a role ({', '.join(sorted(ROLES))})"
            )
        if message["role"] == "user":
            text = _message_text(reader, message.get("content"), f"{where}.content")
    if text is None or not text.strip():
        raise reader.error("input", "has no user message with text")
    return text


def _message_text(reader: RecordReader, content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict) and part.get("type") == "text"]
        if all(isinstance(part.get("text"), str) for part in parts):
            return "\n".join(part["text"] for part in parts)
    raise reader.error(where, 'must be a string or a list of content parts ({"type": "text", ...})')
