"""Secrets out of every cassette and every output: find and redact credentials in any JSON-able
document (dict keys too, at any depth; bytes that decode as UTF-8).

Two sources of secrets:
- the values of environment variables named like credentials (`OPENAI_API_KEY`, `GH_TOKEN`, ...):
  replaced by `[REDACTED:<variable name>]`;
- well-known key shapes (`sk-...`, `AIza...`, `ghp_...`, ...): replaced by `[REDACTED:<shape>]`;
  the shapes and the checks that tell a key from prose are `store/key_shapes.py`;
- the value of a field named like a secret (`aws_secret_access_key`, `password`, ...), whatever
  its shape: `[REDACTED:<kind>]`.
A document is searched as a whole: when one of its strings holds a private-key frame or an AWS
key id, a PEM body line or an AWS secret standing alone in another string is a key too.

`redact` runs on every cassette a live run writes, so it is cheap on clean text: strings too
short to hold a secret are skipped, a shape's pattern only runs on a string that holds one of
its literal hints (`sk-`, `AIza`, ...), and a candidate is only taken after a check of its
surroundings and its randomness (prose, base64 data and hashes do not look like keys).
`redact_for_output` applies this process's environment secrets to what leaves the process (a
report, the terminal). `store/secret_scan.py` is the same search over files (the `scan` command).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from ..core.names import counted
from .key_shapes import (
    LONE_KEY_EVIDENCE,
    MIN_SHAPE_CHARS,
    REDACTED_PREFIX,
    is_labelled_secret,
    redact_key_shapes,
    redact_lone_keys,
    secret_field_kind,
)

__all__ = [
    "is_redacted",
    "redact",
    "redact_for_output",
    "redaction_summary",
    "secret_values_from_env",
]

SECRET_ENV_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET_CHARS = 8  # shorter values ("true", "1", "dev") would redact ordinary words
_MARKER = re.compile(r"\[REDACTED:[^\]\s]*\]")


def secret_values_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """{variable name: value} of the variables whose name ends in _KEY, _TOKEN, _SECRET or
    _PASSWORD (any case) and whose value has 8+ characters."""
    found = {}
    for name in environ:  # names first: reading every value costs 3x more
        if name.upper().endswith(SECRET_ENV_SUFFIXES):
            value = environ[name].strip()
            if len(value) >= MIN_SECRET_CHARS:
                found[name] = value
    return dict(sorted(found.items()))


def is_redacted(text: str) -> bool:
    """Whether `text` holds a redaction marker."""
    return REDACTED_PREFIX in text


def redact(doc: Any, secrets: Mapping[str, str]) -> tuple[Any, list[tuple[str, str]]]:
    """(doc with every secret replaced, findings): in every string of `doc` (dict keys too, at
    any depth) each value of `secrets` ({name: value}, e.g. from secret_values_from_env) becomes
    `[REDACTED:<name>]` and each key shape `[REDACTED:<shape>]`. Findings are (JSON path, name
    or shape) per replacement, e.g. ("$.trace.answer", "OPENAI_API_KEY"). Existing markers are
    kept and not reported, so redacting twice equals redacting once. `doc` is not modified;
    the result shares the parts that needed no change with it."""
    return _Redactor(secrets).redact(doc)


def redact_secrets(doc: Any) -> tuple[Any, int]:
    """`redact` with the secrets of this process's environment, as a live run writes a
    recording: (the redacted document, how many secrets were replaced)."""
    redacted, findings = redact(doc, secret_values_from_env(os.environ))
    return redacted, len(findings)


def redact_for_output(doc: Any) -> Any:
    """`doc` as it may leave the process (a report, the terminal, JUnit): this process's
    environment secrets and every key shape replaced, in exception messages and judge reasons
    as in traces. The same object when it holds none."""
    redacted, findings = _process_redactor().redact(doc)
    return redacted if findings else doc


_cached_redactor: tuple[dict[str, str], _Redactor] | None = None


def _process_redactor() -> _Redactor:
    """The redactor of this process's environment secrets, made again when they change."""
    global _cached_redactor
    secrets = secret_values_from_env(os.environ)
    if _cached_redactor is None or _cached_redactor[0] != secrets:
        _cached_redactor = (secrets, _Redactor(secrets))
    return _cached_redactor[1]


def redaction_summary(secret_count: int, recording_count: int) -> str:
    """The summary line, e.g. `redacted 2 secrets in 1 recording`."""
    return f"redacted {counted(secret_count, 'secret')} in {counted(recording_count, 'recording')}"


class _Pass:
    """One `redact` call's state: the findings, where the walk is, which lone pieces of a key
    the document's other strings give away (LONE_KEY_EVIDENCE) and which are searched for."""

    __slots__ = ("evidence", "findings", "lone", "path")

    def __init__(self) -> None:
        self.findings: list[tuple[str, str]] = []
        self.path: list[str | int] = []
        self.evidence: set[str] = set()
        self.lone: frozenset[str] = frozenset()


class _Redactor:
    """The search for one set of environment secrets, prepared once per `redact` call (shared
    between threads: the state of a call is its `_Pass`)."""

    __slots__ = ("_env_secrets", "_min_chars")

    def __init__(self, secrets: Mapping[str, str]) -> None:
        by_value: dict[str, str] = {}
        for name, value in sorted(secrets.items()):
            if value:
                by_value.setdefault(value, name)  # one value under two names: the first name
        # Longest first: a secret that contains another is replaced whole.
        self._env_secrets = sorted(by_value.items(), key=lambda item: -len(item[0]))
        shortest_secret = min((len(value) for value in by_value), default=MIN_SHAPE_CHARS)
        self._min_chars = min(shortest_secret, MIN_SHAPE_CHARS)

    def redact(self, doc: Any) -> tuple[Any, list[tuple[str, str]]]:
        run = _Pass()
        redacted = self._walk(doc, run)
        if run.evidence:
            # A private-key frame or an AWS key id somewhere: its lone pieces elsewhere in the
            # document (a PEM body line split off as a claim) are keys too. Rare: a second walk.
            run.lone = frozenset(run.evidence)
            redacted = self._walk(redacted, run)
        return redacted, run.findings

    def _walk(self, value: Any, run: _Pass) -> Any:
        if isinstance(value, str):
            return self._text(value, run)
        if isinstance(value, dict):
            changed = False
            result = {}
            path = run.path
            for key, item in value.items():
                new_key = key
                field_kind = None
                if isinstance(key, str):
                    new_key = self._text(key, run, dict_key=True)
                    if new_key in result:  # two redacted keys would collide: keep both
                        new_key = _unique_key(new_key, result)
                    field_kind = secret_field_kind(key)
                path.append(new_key)
                new_item = self._walk(item, run)
                if field_kind is not None and not _is_key_hash(key, new_item):
                    new_item = self._field(field_kind, new_item, run)
                path.pop()
                result[new_key] = new_item
                changed = changed or new_key is not key or new_item is not item
            return result if changed else value
        if isinstance(value, (list, tuple)):  # noqa: UP038 - a tuple is faster here
            items = []
            changed = False
            for index, item in enumerate(value):
                run.path.append(index)
                new_item = self._walk(item, run)
                run.path.pop()
                items.append(new_item)
                changed = changed or new_item is not item
            return type(value)(items) if changed else value
        if isinstance(value, (bytes, bytearray)):  # noqa: UP038
            try:
                text = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                return value
            new_text = self._text(text, run)
            return value if new_text is text else new_text.encode("utf-8")
        return value

    def _field(self, kind: str, value: Any, run: _Pass) -> Any:
        """The value of a field named like a secret (`aws_secret_access_key`, `password`,
        `Ocp-Apim-Subscription-Key`): a secret whatever its shape (an HTTP header's list of
        values too)."""
        if isinstance(value, str):
            return self._labelled_value(kind, value, run)
        if isinstance(value, list):
            values = []
            for index, item in enumerate(value):
                run.path.append(index)
                values.append(
                    self._labelled_value(kind, item, run) if isinstance(item, str) else item
                )
                run.path.pop()
            unchanged = all(new is old for new, old in zip(values, value, strict=True))
            return value if unchanged else values
        return value

    def _labelled_value(self, kind: str, value: str, run: _Pass) -> str:
        if is_labelled_secret(value):
            run.findings.append((_json_path(run.path), kind))
            return f"{REDACTED_PREFIX}{kind}]"
        return value

    def _text(self, text: str, run: _Pass, dict_key: bool = False) -> str:
        """`text` with its secrets replaced (the same object when it holds none)."""
        if len(text) < self._min_chars:
            return text
        kinds: list[str] = []
        if REDACTED_PREFIX in text:
            pieces = []
            position = 0
            for marker in _MARKER.finditer(text):
                pieces.append(self._redact_piece(text[position : marker.start()], kinds, run))
                pieces.append(marker.group())
                position = marker.end()
            pieces.append(self._redact_piece(text[position:], kinds, run))
            new_text = "".join(pieces) if kinds else text
        else:
            new_text = self._redact_piece(text, kinds, run)
        if kinds:
            where = _json_path(run.path, new_text if dict_key else None)
            run.findings.extend((where, kind) for kind in kinds)
        if not run.lone and REDACTED_PREFIX in new_text:
            for marker, kind in LONE_KEY_EVIDENCE:
                if marker in new_text:
                    run.evidence.add(kind)
        return new_text

    def _redact_piece(self, text: str, kinds: list[str], run: _Pass) -> str:
        if run.lone:  # the second walk: only what went astray from a key found before
            return redact_lone_keys(text, kinds, run.lone)
        for value, name in self._env_secrets:
            if value in text:
                kinds.extend([name] * text.count(value))
                text = text.replace(value, f"{REDACTED_PREFIX}{name}]")
        return redact_key_shapes(text, kinds)


_KEY_HASH = re.compile(r"[0-9a-f]{16}")


def _is_key_hash(name: str, value: Any) -> bool:
    """A cassette key's field (`fingerprint.aws_secret_access_key`: a dotted name) holds the
    hash of its value, not the value (its label beside it is redacted as a field)."""
    return "." in name and isinstance(value, str) and bool(_KEY_HASH.fullmatch(value))


def _unique_key(key: str, taken: Mapping[str, Any]) -> str:
    number = 2
    while f"{key} #{number}" in taken:
        number += 1
    return f"{key} #{number}"


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _json_path(path: list[str | int], last_key: str | None = None) -> str:
    """`$.trace.tool_calls[0].args`; names that are not identifiers as `["content-type"]`."""
    parts = ["$"]
    for step in [*path, last_key] if last_key is not None else path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _PLAIN_NAME.match(step):
            parts.append(f".{step}")
        else:
            parts.append(f"[{json.dumps(step, ensure_ascii=False)}]")
    return "".join(parts)
