"""A small offline memory agent: it remembers each user's conversations (and notes) and
answers questions about them from that user's memory only, and from a handbook shared by all.

- `setup_user(user)` ingests one user: every message of its `conversations` file (sessions of
  dated turns, the layout `python -m pytest_evalcases import locomo` writes) and every
  paragraph of its `documents` (`paragraphs_per_chunk` of the suite's `ingestion` settings
  make one memory), into a BM25 index (bm25s) of that user alone. It returns what it indexed:
  the counts and a content hash (`ingestion_result`).
  It also saves the index, as a memory service keeps its users, under `.memory-store/<user>/`
  (beside `cases/`; not committed).
- `setup_documents(documents)` ingests the suite's shared documents once, into an index of
  their own (Zep's document graph), chunked by the documents' own `paragraphs_per_chunk`;
  `documents_ready(documents, result)` loads a saved one of the recorded content.
- `ready(user, result)` stands for a memory service that processes an ingestion in the
  background: false on its first poll after a user's ingestion, true from the second.
- `user_ready(user, result)` says whether a recorded ingestion's state is still there: it loads
  the saved index when its content hash is the recorded one (`--live-stale` and `--live` then
  reuse the ingestion instead of indexing again).
- `run(case)` retrieves the `K` best memories of `case.user` for the question and answers with
  the retrieved sentence that shares the most content words with it, prefixed by the date it
  was said; with too little overlap it looks in the shared documents, and failing that abstains
  ("I don't know: ..."). A case of no user asks the shared documents alone.

Deterministic except `latency_ms`. bm25s is imported on the first ingestion only, so a replay
(which imports this module for its fingerprint) never loads it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

K = 3
STORE = Path(__file__).resolve().parents[1] / ".memory-store"  # the saved indexes, per user
MODEL = "extractive-memory-v1"
MIN_OVERLAP = 0.5
NOTE = "note"  # the speaker of a paragraph of the user's documents
SHARED = "handbook"  # the speaker of a paragraph of the suite's shared documents
SHARED_STORE = "_shared-documents"  # their saved index, beside the users' (no user id has "_")
WORD = re.compile(r"\w\w+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be been before but by can could
    did do does doing for from had has have her his how i if in into is it its just me my no
    not of on or our she he should so than that the their them then there these they this
    those to up was we were what when where which while who why will with would you your
    name called""".split()
)
DONT_KNOW = "I don't know: the conversations do not mention {topic}."
ANSWER_RULES = (
    f"Retrieve the user's {K} best memories by BM25; answer with the retrieved sentence sharing "
    "the most content words with the question (ties: the higher-ranked memory, then the earlier "
    f"sentence), prefixed by its date; below {MIN_OVERLAP:.0%} of the question's content words, "
    f"answer exactly: {DONT_KNOW}"
)


def tokenize(text: str) -> list[str]:
    return [word for word in WORD.findall(text.lower()) if word not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Memory:
    id: str  # a dialogue id (D1:3) or a note paragraph (notes.md#2)
    when: str
    speaker: str
    text: str

    def line(self) -> str:
        return f"[{self.when}] {self.speaker}: {self.text}"

    def source(self) -> str:
        """Where a quoted sentence comes from, as the answer names it."""
        if self.speaker == NOTE:
            return f"From the notes ({self.when})"
        if self.speaker == SHARED:
            return f"From the handbook ({self.when})"
        return f"On {self.when}, {self.speaker} said"


def read_memories(user: Mapping[str, Any]) -> list[Memory]:
    """Every message of the user's conversations and every paragraph of its documents."""
    memories = []
    conversations = json.loads(Path(user["conversations"]).read_text(encoding="utf-8"))
    for session in conversations["sessions"]:
        when = session.get("date_time") or f"session {session['session']}"
        for turn in session["turns"]:
            memories.append(Memory(turn["dia_id"], when, turn["speaker"], turn["text"]))
    per_chunk = _paragraphs_per_chunk(getattr(user, "ingestion", None))
    for path in user.get("documents") or []:
        memories += document_memories(Path(path), NOTE, per_chunk)
    return memories


def document_memories(path: Path, speaker: str, per_chunk: int = 1) -> list[Memory]:
    """A document's paragraphs (headings left out), `per_chunk` of them a memory, named by the
    number of the chunk's first paragraph (`notes.md#1`)."""
    paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n")]
    numbered = [(n, p) for n, p in enumerate(paragraphs) if p and not p.startswith("#")]
    chunks = [numbered[i : i + per_chunk] for i in range(0, len(numbered), per_chunk)]
    return [
        Memory(
            f"{path.name}#{chunk[0][0]}",
            path.name,
            speaker,
            " ".join(" ".join(p.split()) for _, p in chunk),
        )
        for chunk in chunks
    ]


def _paragraphs_per_chunk(settings: Mapping[str, Any] | None) -> int:
    return int((settings or {}).get("paragraphs_per_chunk", 1))


def ingestion_result(user: Mapping[str, Any], memories: list[Memory]) -> dict[str, Any]:
    """What an ingestion indexed: counts, and a hash of the memories (ids, dates, speakers,
    texts) that tells two ingestions of different content apart."""
    indexed = json.dumps(
        [[m.id, m.when, m.speaker, m.text] for m in memories], ensure_ascii=False
    ).encode("utf-8")
    return {
        "messages": sum(1 for m in memories if m.speaker not in (NOTE, SHARED)),
        "documents": len(user.get("documents") or []),
        "chunks": sum(1 for m in memories if m.speaker in (NOTE, SHARED)),
        "content_hash": hashlib.sha256(indexed).hexdigest()[:12],
        # A BM25 build calls no model: nothing spent (an unreported cost would read "unknown").
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "cost_usd": 0.0,
    }


class UserMemory:
    def __init__(self, memories: list[Memory]) -> None:
        import bm25s  # lazy: only when a user is ingested (live runs), never in a replay

        self.memories = memories
        self.index = bm25s.BM25()
        # The speaker is part of a memory: "Ana" in a question finds what Ana said.
        self.index.index([tokenize(f"{m.speaker} {m.text}") for m in memories], show_progress=False)

    def save(self, folder: Path, content_hash: str) -> None:
        """The index and its memories, then the content hash last: a folder without it (a
        save cut short) is never loaded."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "content_hash").unlink(missing_ok=True)
        self.index.save(str(folder / "bm25"), show_progress=False)
        rows = [[m.id, m.when, m.speaker, m.text] for m in self.memories]
        (folder / "memories.json").write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
        (folder / "content_hash").write_text(content_hash, "utf-8")

    @classmethod
    def load(cls, folder: Path, content_hash: Any) -> UserMemory | None:
        """The index saved in `folder`, if it holds the memories of `content_hash`."""
        stamp = folder / "content_hash"
        if not stamp.is_file() or stamp.read_text("utf-8") != content_hash:
            return None
        import bm25s  # lazy, as in __init__

        memory = cls.__new__(cls)
        rows = json.loads((folder / "memories.json").read_text("utf-8"))
        memory.memories = [Memory(*row) for row in rows]
        memory.index = bm25s.BM25.load(str(folder / "bm25"), show_progress=False)
        return memory

    def search(self, query: str, k: int) -> list[Memory]:
        terms = tokenize(query)
        if not terms:
            return []
        scores = self.index.get_scores(terms)
        ranked = sorted(range(len(self.memories)), key=lambda i: (-float(scores[i]), i))
        return [self.memories[i] for i in ranked[:k] if scores[i] > 0]


def extract_answer(question: str, found: list[Memory]) -> str:
    wanted = set(tokenize(question))
    dont_know = DONT_KNOW.format(topic=" ".join(sorted(wanted)) or "that")
    best, best_overlap = dont_know, 0
    for memory in found:
        for sentence in SENTENCE_END.split(memory.text):
            overlap = len(wanted & set(tokenize(f"{memory.speaker} {sentence}")))
            if overlap > best_overlap:  # strictly: ties keep the higher-ranked memory
                best, best_overlap = f"{memory.source()}: {sentence}", overlap
    return best if wanted and best_overlap >= MIN_OVERLAP * len(wanted) else dont_know


class MemoryAgent:
    def __init__(self, k: int = K) -> None:
        self.k = k
        self._users: dict[str, UserMemory] = {}
        self._shared: UserMemory | None = None  # the suite's shared documents' index
        self._polls: dict[str, int] = {}  # ready() calls since each user's last ingestion
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        return {
            "prompt": ANSWER_RULES,
            # Read from package metadata so fingerprinting never imports bm25s.
            "retriever": f"bm25s-{version('bm25s')} k={self.k}",
            "model": MODEL,
        }

    def setup_user(self, user: Mapping[str, Any]) -> dict[str, Any]:
        memories = read_memories(user)
        memory = UserMemory(memories)
        result = ingestion_result(user, memories)
        memory.save(STORE / user["id"], result["content_hash"])
        with self._lock:
            self._users[user["id"]] = memory
            self._polls[user["id"]] = 0
        return result

    def user_ready(self, user: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
        """Whether the index a recorded ingestion built is still saved: loaded if so."""
        memory = UserMemory.load(STORE / user["id"], result.get("content_hash"))
        if memory is None:
            return False
        with self._lock:
            self._users[user["id"]] = memory
        return True

    def setup_documents(self, documents: Mapping[str, Any]) -> dict[str, Any]:
        """The suite's shared documents, indexed once for every case."""
        per_chunk = _paragraphs_per_chunk(getattr(documents, "ingestion", None))
        paths = [
            Path(path)
            for name in sorted(name for name in documents if name != "id")
            for path in (
                documents[name] if isinstance(documents[name], list) else [documents[name]]
            )
        ]
        memories = [m for path in paths for m in document_memories(path, SHARED, per_chunk)]
        memory = UserMemory(memories)
        result = ingestion_result({"documents": paths}, memories)
        memory.save(STORE / SHARED_STORE, result["content_hash"])
        with self._lock:
            self._shared = memory
        return result

    def documents_ready(self, documents: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
        """Whether the index of the recorded shared documents is still saved: loaded if so."""
        memory = UserMemory.load(STORE / SHARED_STORE, result.get("content_hash"))
        if memory is None:
            return False
        with self._lock:
            self._shared = memory
        return True

    def ready(self, user: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
        """False on the first poll after a user's ingestion, true after it."""
        with self._lock:
            polls = self._polls.get(user["id"], 0)
            self._polls[user["id"]] = polls + 1
        return polls >= 1

    def run(self, case: Mapping[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        user = case.get("user")
        found: list[Memory] = []
        tool_calls = []
        answer = ""
        if user is not None:
            memory = self._users.get(user)
            if memory is None:
                raise RuntimeError(f"user {user!r} was never ingested (setup_user)")
            found = memory.search(case["input"], self.k)
            answer = extract_answer(case["input"], found)
            tool_calls.append(
                {
                    "name": "search_memory",
                    "args": {"user": user, "query": case["input"], "k": self.k},
                }
            )
        if (user is None or answer.startswith("I don't know")) and self._shared is not None:
            shared = self._shared.search(case["input"], self.k)
            tool_calls.append(
                {"name": "search_handbook", "args": {"query": case["input"], "k": self.k}}
            )
            in_handbook = extract_answer(case["input"], shared)
            if user is None or not in_handbook.startswith("I don't know"):
                found, answer = (found if user is None else []) + shared, in_handbook
        context = [m.line() for m in found]
        return {
            "answer": answer,
            "tool_calls": tool_calls,
            "retrieved": [m.id for m in found],
            "context": context,
            "usage": {
                "prompt_tokens": sum(len(c.split()) for c in context),
                "completion_tokens": len(answer.split()),
                "cost_usd": 0.0,
            },
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        }


system = MemoryAgent()
