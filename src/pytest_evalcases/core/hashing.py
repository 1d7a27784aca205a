"""Content hashes and their labels: the short hashes keys are made of, and the readable label a
short value keeps beside its hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

HASH_CHARS = 16  # stored; messages show the first 6
SHOW_CHARS = 6
LABEL_CHARS = 80  # a label longer than this would not help a message: the hash is shown instead


def content_hash(value: Any) -> str:
    """Hash of a JSON-able value, independent of dict key order."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:HASH_CHARS]


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:HASH_CHARS]


def value_label(value: Any) -> str | None:
    """A hashed value as a label: the JSON of a string, number or bool of at most LABEL_CHARS
    characters (quoted, so `"1"` and `1` read apart), else None."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if len(value) <= LABEL_CHARS else None
    if isinstance(value, bool | int | float):
        text = json.dumps(value)
        return text if len(text) <= LABEL_CHARS else None
    return None


def name_label(name: str) -> str | None:
    """A spec, a path or a module name as its own label, when short enough."""
    return name if len(name) <= LABEL_CHARS else None
