"""Retriever extractors: a tool's output -> ranked `(doc_id, text)` pairs for `retrieved` and
`context`. `default_extractor` reads the shapes retrieval tools usually return."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Extractor = Callable[[Any], Iterable[tuple[str, str]]]

_ID_KEYS = ("id", "doc_id", "file_id")
_TEXT_KEYS = ("text", "content", "page_content")
_LIST_KEYS = ("results", "documents", "hits", "docs")  # {"results": [...]} wrappers


def default_extractor(output: Any) -> list[tuple[str, str]]:
    """Documents in a tool output: a JSON string or a list of objects with `id` (or `doc_id`,
    `file_id`) and `text`/`content`/`page_content`, such a list under `results`, `documents`,
    `hits` or `docs`, or LangChain `Document`s (id from `.id` or `metadata["id"]`). Entries
    without an id are skipped; an output that holds no documents (an error object) gives []."""
    if isinstance(output, str | bytes):
        try:
            output = json.loads(output)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return []
    if isinstance(output, tuple) and len(output) == 2:  # LangChain (content, artifact)
        output = output[1]
    if isinstance(output, Mapping):
        output = next((output[key] for key in _LIST_KEYS if key in output), None)
    if not isinstance(output, list | tuple):
        return []
    found = []
    for entry in output:
        document = _document(entry)
        if document is not None:
            found.append(document)
    return found


def _document(entry: Any) -> tuple[str, str] | None:
    if hasattr(entry, "page_content"):  # a LangChain Document (duck-typed: no import)
        metadata = getattr(entry, "metadata", None) or {}
        doc_id = getattr(entry, "id", None) or metadata.get("id")
        return None if doc_id is None else (str(doc_id), str(entry.page_content))
    if hasattr(entry, "model_dump"):
        entry = entry.model_dump(mode="json")
    if not isinstance(entry, Mapping):
        return None
    doc_id = next((entry[key] for key in _ID_KEYS if entry.get(key) is not None), None)
    if doc_id is None:
        return None
    text = next((entry[key] for key in _TEXT_KEYS if entry.get(key) is not None), "")
    return str(doc_id), text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
