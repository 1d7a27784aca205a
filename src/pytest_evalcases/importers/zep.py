"""Zep's eval harness (getzep/zep, zep-eval-harness/): a folder, not one file.

    data/users.json                         [{"user_id", "first_name", "last_name", ...}]
    data/conversations/{user_id}_*.json     {"conversation_id", "user_id",
                                             "messages": [{"role", "content", "timestamp"}]}
    data/telemetry/{user_id}_*.json         any JSON (Zep adds each file as one JSON episode)
    data/test_cases/*_tests.json            {"user_id", "test_cases": [{"id", "category",
                                             "query", "golden_answer", "needles"}]}
    data/documents/*                        text files: the shared document graph

DIR is the folder holding `data/`, or `data/` itself. One suite user per Zep user with test
cases: its conversations become one `conversations` file in the layout the LoCoMo importer
writes (each conversation a session, oldest first as Zep orders them), its telemetry files are
copied as they are (`telemetry`). The shared documents are copied once and become the suite's
`"documents"` (Zep's document graph: ingested once for all users by `setup_documents`,
recorded apart from the users' ingestions). Each test case is a case of its user.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.names import unsafe_id_reason
from .base import BenchmarkFormatError, Parsed, RecordReader, TextFiles, Unit, read_file

FORMAT = "zep"
DESCRIPTION = (
    "Zep's eval harness: a folder of users, their conversations and telemetry, test cases "
    "and shared documents"
)
ASSISTANT = "Assistant"
DOCUMENTS = "documents"  # the shared documents' folder, in Zep's data/ and under --data
_NEXT = "; fix it there (Zep's harness reads the same field), then import again"


@dataclass(slots=True)
class Layout:
    """Zep's data/ folder, read whole: each file's bytes by its path relative to data/."""

    folder: Path  # the data/ folder
    files: dict[str, bytes]

    def path(self, relative: str) -> Path:
        return self.folder / relative

    def under(self, subfolder: str, suffix: str = "") -> list[str]:
        prefix = f"{subfolder}/"
        return sorted(
            name
            for name in self.files
            if name.startswith(prefix) and "/" not in name[len(prefix) :] and name.endswith(suffix)
        )

    def digests(self) -> dict[str, str]:
        """Each file's sha256, by its path relative to data/, sorted."""
        return {name: hashlib.sha256(self.files[name]).hexdigest() for name in sorted(self.files)}


def load(path: Path) -> tuple[list[Layout], str]:
    """Every file of Zep's layout the harness reads, and a digest of them all: the sha256 of
    the sorted `<path relative to data/> <sha256 of its bytes>` lines."""
    folder = data_folder(path)
    files = {"users.json": read_file(folder / "users.json", what="Zep's users file")}
    wanted = {"conversations": ".json", "telemetry": ".json", "test_cases": "_tests.json"}
    for subfolder in (*wanted, DOCUMENTS):
        place = folder / subfolder
        if not place.is_dir():
            continue
        for entry in sorted(place.iterdir()):
            if entry.name.startswith(".") or not entry.name.endswith(wanted.get(subfolder, "")):
                continue  # .gitkeep and the like; in the JSON folders, what Zep's globs skip
            if entry.is_dir():
                continue
            files[f"{subfolder}/{entry.name}"] = read_file(entry, what="a file of Zep's layout")
    layout = Layout(folder, files)
    lines = "".join(f"{name} {digest}\n" for name, digest in layout.digests().items())
    return [layout], hashlib.sha256(lines.encode()).hexdigest()


def data_folder(path: Path) -> Path:
    """DIR itself when it holds users.json (DIR is data/), else DIR/data."""
    if not path.is_dir():
        raise BenchmarkFormatError(
            f"{path}: not a folder; give Zep's harness folder (the one holding data/) or its "
            "data/ folder"
        )
    for folder in (path, path / "data"):
        if (folder / "users.json").exists():
            return folder
    raise BenchmarkFormatError(
        f"{path}: holds neither users.json nor data/users.json; give Zep's harness folder (the "
        "one holding data/) or its data/ folder"
    )


def parse(path: Path, records: list[Any]) -> Parsed:
    (layout,) = records
    people = _users(layout)
    documents = _documents(layout)  # checked before any user's files
    owners = _owners(layout, people)
    test_files = layout.under("test_cases", "_tests.json")
    if not test_files:
        raise BenchmarkFormatError(
            f"{layout.path('test_cases')}: holds no *_tests.json file, so there is no "
            "case to import; add the test cases there (Zep's evaluation reads the same files)"
        )
    units = [unit for name in test_files for unit in _cases(layout, name, people)]
    users = {user_id: _user_files(layout, person, owners) for user_id, person in people.items()}
    conversations = [user["conversations"]["sessions"] for user in users.values()]
    counts = {
        "conversations": sum(len(sessions) for sessions in conversations),
        "messages": sum(len(s["turns"]) for sessions in conversations for s in sessions),
        "telemetry": sum(len(user.get("telemetry", ())) for user in users.values()),
    }
    return Parsed(
        units,
        stages=["context_completeness", "answer_accuracy"],
        report_only=["context_coverage"],
        users=users,
        documents=documents or None,
        source_notes={
            "users": len(people),
            **counts,
            "documents": len(documents),
            "test_case_files": len(test_files),
            "files": {f"data/{name}": digest for name, digest in layout.digests().items()},
        },
    )


def _user_files(layout: Layout, person: dict[str, Any], owners: dict[str, str]) -> dict[str, Any]:
    """A user's data files: its conversations as sessions, its telemetry files as they are."""
    user_id = person["id"]
    conversations = [n for n in layout.under("conversations", ".json") if owners[n] == user_id]
    telemetry = [n for n in layout.under("telemetry", ".json") if owners[n] == user_id]
    fields: dict[str, Any] = {
        "conversations": {
            "speaker_a": person["name"],
            "speaker_b": ASSISTANT,
            **_info(person),
            "sessions": _sessions(layout, conversations, user_id, person),
        }
    }
    if telemetry:
        fields["telemetry"] = TextFiles(
            {f"{user_id}/{name}": _telemetry(layout, name) for name in telemetry}
        )
    return fields


def _json(layout: Layout, name: str) -> Any:
    path = layout.path(name)
    try:
        return json.loads(layout.files[name].decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: cannot read the file as UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){_NEXT}"
        ) from None


def _text(layout: Layout, name: str) -> str:
    try:
        return layout.files[name].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(
            f"{layout.path(name)}: cannot read the file as UTF-8 text ({exc}); Zep's harness "
            "reads it as UTF-8: save it so"
        ) from None


def _users(layout: Layout) -> dict[str, dict[str, Any]]:
    path = layout.path("users.json")
    doc = _json(layout, "users.json")
    if not isinstance(doc, list) or not doc:
        raise BenchmarkFormatError(
            f'{path}: expected a non-empty JSON array of users ({{"user_id", "first_name", '
            f"...}}){_NEXT}"
        )
    people: dict[str, dict[str, Any]] = {}
    for index, record in enumerate(doc):
        reader = RecordReader(path, index, record, "user_id", f"user {index}", _NEXT)
        unsafe = unsafe_id_reason(reader.id)
        if unsafe:
            raise reader.error("user_id", f"cannot name a user and its files: {unsafe}")
        if reader.id in people:
            raise reader.error("user_id", "repeats an earlier user's id")
        first = reader.text("first_name")  # Zep's harness requires it to create the user
        last = reader.text("last_name", required=False) or ""
        people[reader.id] = {"id": reader.id, "record": record, "name": f"{first} {last}".strip()}
    return people


def _info(person: dict[str, Any]) -> dict[str, Any]:
    """What users.json says of the user beyond its name (email, metadata), kept beside the
    conversations for a system that adds it to the user as Zep does."""
    record = person["record"]
    extra = {k: v for k, v in record.items() if k not in ("user_id", "first_name", "last_name")}
    return {"user": extra} if extra else {}


def _owners(layout: Layout, people: dict[str, Any]) -> dict[str, str]:
    """Each conversation and telemetry file's user: the longest user id its name starts with
    followed by `_` (Zep's `{user_id}_*.json`, without its overlap between `u1` and `u10`)."""
    owners: dict[str, str] = {}
    by_length = sorted(people, key=len, reverse=True)
    for subfolder in ("conversations", "telemetry"):
        for name in layout.under(subfolder, ".json"):
            stem = name.split("/", 1)[1]
            owner = next((uid for uid in by_length if stem.startswith(f"{uid}_")), None)
            if owner is None:
                raise BenchmarkFormatError(
                    f"{layout.path(name)}: its name starts with no user id of users.json "
                    f"({', '.join(people)}) followed by '_', so no user's ingestion reads it; "
                    "rename it <user_id>_<name>.json, add its user to users.json, or move it out"
                )
            owners[name] = owner
    return owners


def _sessions(
    layout: Layout, names: list[str], user_id: str, person: dict[str, Any]
) -> list[dict[str, Any]]:
    """The user's conversations as sessions: oldest first when every message has a timestamp
    (as Zep's ingestion orders them), else in file-name order; turns numbered D<session>:<n>."""
    conversations = []
    for name in names:
        path = layout.path(name)
        reader = RecordReader(path, 0, _json(layout, name), None, "the conversation", _NEXT)
        owner = reader.text("user_id", required=False)
        if owner is not None and owner != user_id:
            raise reader.error("user_id", f"is {owner!r}, but the file name says {user_id!r}")
        messages = reader.get("messages", list)
        turns = []
        for number, message in enumerate(messages):
            where = f"messages[{number}]"
            if not isinstance(message, dict):
                raise reader.error(where, "must be an object")
            role = reader.text("role", message, f"{where}.role")
            turn = {
                "speaker": person["name"] if role == "user" else _speaker(role),
                "dia_id": "",  # numbered below, once the sessions are in order
                "text": reader.text("content", message, f"{where}.content"),
                "role": role,
            }
            stamp = reader.text("timestamp", message, f"{where}.timestamp", required=False)
            if stamp is not None:
                turn["timestamp"] = stamp
            turns.append(turn)
        conversation_id = reader.text("conversation_id", required=False)
        conversations.append((name, conversation_id, turns))
    if all(turn.get("timestamp") for _, _, turns in conversations for turn in turns):
        conversations.sort(key=lambda item: item[2][0]["timestamp"] if item[2] else "")
    sessions = []
    for number, (name, conversation_id, turns) in enumerate(conversations, start=1):
        for position, turn in enumerate(turns, start=1):
            turn["dia_id"] = f"D{number}:{position}"
        sessions.append(
            {
                "session": number,
                "date_time": turns[0].get("timestamp") if turns else None,
                "conversation_id": conversation_id or f"conv_{number}",
                "file": f"data/{name}",
                "turns": turns,
            }
        )
    return sessions


def _speaker(role: str) -> str:
    return ASSISTANT if role == "assistant" else role.capitalize()


def _telemetry(layout: Layout, name: str) -> str:
    """A telemetry file as it is (Zep adds its JSON as one episode), once checked to be JSON."""
    _json(layout, name)
    return _text(layout, name)


def _documents(layout: Layout) -> TextFiles:
    """The shared documents (Zep skips a blank one), by their path under --data."""
    documents = TextFiles()
    for name in layout.under(DOCUMENTS):
        text = _text(layout, name)
        if text.strip():
            documents[name] = text
    return documents


def _cases(layout: Layout, name: str, people: dict[str, Any]) -> list[Unit]:
    path = layout.path(name)
    reader = RecordReader(path, 0, _json(layout, name), "user_id", "the test cases file", _NEXT)
    if reader.id not in people:
        raise reader.error(
            "user_id",
            f"is {reader.id!r}, which users.json does not declare ({', '.join(people)}): add "
            "the user there or remove this file",
        )
    units = []
    for number, record in enumerate(reader.get("test_cases", list)):
        where = f"test_cases[{number}]"
        if not isinstance(record, dict):
            raise reader.error(where, "must be an object")
        own_id = reader.text("id", record, f"{where}.id", required=False) or f"q{number + 1:03d}"
        case: dict[str, Any] = {
            "id": f"{reader.id}-{own_id}",
            "input": reader.text("query", record, f"{where}.query"),
            "reference": reader.text("golden_answer", record, f"{where}.golden_answer"),
            "user": reader.id,
        }
        category = reader.text("category", record, f"{where}.category", required=False)
        if category is not None:
            case["category"] = category
        metadata: dict[str, Any] = {}
        needles = reader.get("needles", list, record, f"{where}.needles", required=False)
        if needles:
            excerpts = []
            for index, needle in enumerate(needles):
                if not isinstance(needle, dict):
                    raise reader.error(f"{where}.needles[{index}]", "must be an object")
                excerpt = reader.text(
                    "excerpt", needle, f"{where}.needles[{index}].excerpt", required=False
                )
                if excerpt is not None:
                    excerpts.append(excerpt)
            if excerpts:  # the needles' words, for context_coverage
                case["expected_context"] = excerpts
            metadata["needles"] = needles
        telemetry = reader.get(
            "requires_telemetry", bool, record, f"{where}.requires_telemetry", required=False
        )
        if telemetry is not None:
            metadata["requires_telemetry"] = telemetry
        if metadata:
            case["metadata"] = metadata
        units.append(Unit(case))
    return units


__all__ = ["BenchmarkFormatError", "FORMAT", "load", "parse"]
