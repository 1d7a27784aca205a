"""Content hashes and their labels: the short hashes keys are made of, and the readable label a
short value keeps beside its hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .files import sha256_of_file

HASH_CHARS = 16  # stored; messages show the first 6
SHOW_CHARS = 6
LABEL_CHARS = 80  # a label longer than this would not help a message: the hash is shown instead
VARIANT_CHARS = 8  # an ingestion variant's name (--eval-ingestion): its settings' hash, cut
# A fingerprint value longer than LABEL_CHARS keeps its text up to this many characters, so a
# stale message can show the words that changed (never an input file's or code's text).
TEXT_LABEL_CHARS = 8000


# json.dumps with options builds an encoder on every call (~2/3 of its cost on a small value);
# replay hashes every case's input.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    """Hash of a JSON-able value, independent of dict key order."""
    data = _CANONICAL_JSON.encode(value)
    return hashlib.sha256(data.encode()).hexdigest()[:HASH_CHARS]


def file_hash(path: Path) -> str:
    """Hash of a regular file's bytes, read in chunks (a data file may be any size); RefusedFile
    (an OSError) for a FIFO, a device or a directory, before anything is read."""
    return sha256_of_file(path)[:HASH_CHARS]


def value_label(value: Any) -> str | None:
    """A hashed value as a label: the JSON of a string, number or bool of at most LABEL_CHARS
    characters (quoted, so `"1"` and `1` read apart), else None."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if len(value) <= LABEL_CHARS else None
    if isinstance(value, bool | int | float):
        text = json.dumps(value)
        return text if len(text) <= LABEL_CHARS else None
    return None


def fingerprint_label(value: Any) -> str | None:
    """A `fingerprint()` entry as a label: short values as `value_label`; a longer string, or a
    dict or list (a tool's description and parameters), as its JSON up to TEXT_LABEL_CHARS, so
    a change can be shown as the words that changed (`is_long_label`); else None."""
    label = value_label(value)
    if label is not None or not isinstance(value, str | dict | list):
        return label
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= TEXT_LABEL_CHARS else None


def is_long_label(label: str | None) -> bool:
    """A label holding a value's whole JSON text, shown as a word diff rather than in full."""
    return label is not None and (len(label) > LABEL_CHARS or label[:1] in ("{", "["))


def name_label(name: str) -> str | None:
    """A spec, a path or a module name as its own label, when short enough."""
    return name if len(name) <= LABEL_CHARS else None
