"""Secrets out of every cassette: find and redact credentials in any JSON-able document.

Two sources of secrets:
- the values of environment variables named like credentials (`OPENAI_API_KEY`, `GH_TOKEN`, ...):
  replaced by `[REDACTED:<variable name>]`;
- well-known key shapes (`sk-...`, `AIza...`, `ghp_...`, ...): replaced by `[REDACTED:<shape>]`.

`redact` runs on every cassette a live run writes, so it is cheap on clean text: strings too
short to hold a secret are skipped, a shape's pattern only runs on a string that holds one of
its literal hints (`sk-`, `AIza`, ...), and a candidate is only taken after a check of its
surroundings and its randomness (prose, base64 data and hashes do not look like keys).
`scan_files` is the same search over files, for the `scan` command.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.names import counted

__all__ = [
    "KEY_SHAPES",
    "SHAPE_NAMES",
    "KeyShape",
    "is_redacted",
    "redact",
    "redact_for_output",
    "redaction_summary",
    "secret_values_from_env",
]

SECRET_ENV_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET_CHARS = 8  # shorter values ("true", "1", "dev") would redact ordinary words
REDACTED_PREFIX = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:[^\]\s]*\]")

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_JSON_ESCAPE_LETTERS = frozenset("nrtbf")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _character_classes(token: str) -> int:
    return (
        any(c.isupper() for c in token)
        + any(c.islower() for c in token)
        + any(c.isdigit() for c in token)
    )


def _looks_random(run: str) -> bool:
    """Generated keys mix upper case, lower case and digits, with a long unbroken run; slugs
    and identifiers such as `sk-learn-tutorial-2024-notes` do not."""
    if _character_classes(run) < 3:
        return False
    return any(len(part) >= 16 for part in _ALNUM_RUN.findall(run))


@dataclass(frozen=True, slots=True)
class KeyShape:
    """A well-known credential shape. `hints` are literal strings one of which every match
    contains: a string holding none is not searched (a substring test is ~30x cheaper than a
    regex search); `gate`, when set, is a cheaper test done first that every match passes too.
    `looks_like_key` sees the token (for a bearer token, the part after the scheme). A
    fixed-length shape must not be followed by a token character, else it is a slice of
    something longer (base64 data, a longer identifier). Inside base64 data a candidate is
    also preceded by a letter or digit; `/` and `+` count as boundaries, so that a key in a URL
    path is found (a base64 slice framed by `/` or `+` on both sides is ~1 in 10^5 per MB)."""

    name: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    looks_like_key: Callable[[str], bool]
    fixed_length: bool = False
    gate: str | None = None
    # What the match opens with and the marker keeps readable (`Bearer `, `secret_key=`):
    # everything before the pattern's last group.
    keeps_prefix: bool = False
    # A shape with its own unmistakable frame (`-----BEGIN ... PRIVATE KEY-----`) is taken
    # wherever it stands, even glued to a word.
    starts_token: bool = True


# The value of a field named like an AWS secret access key (`aws_secret_access_key`,
# `SecretAccessKey`, `AWS_SECRET_ACCESS_KEY=`, `aws-secret-access-key:` ...).
_AWS_SECRET_FIELD = r"(?i:(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key)"
# An AWS secret access key: 40 characters of base64 (no `=`), a whole token.
_AWS_SECRET = r"(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
# How far (in characters) a secret key may stand from the access key id it is taken beside.
AWS_SECRET_REACH = 300
_AWS_KEY_ID = re.compile(
    r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])|\[REDACTED:aws-access-key-id\]"
)
_AWS_LONE_SECRET = re.compile(_AWS_SECRET)


def _is_aws_secret_field(name: str) -> bool:
    """A dict key such as `aws_secret_access_key` or `SecretAccessKey`."""
    folded = name.lower().replace("_", "").replace("-", "")
    return folded.endswith(("secretaccesskey", "awssecretkey"))


# Most specific first: shapes are replaced in this order, so `sk-ant-` is named before `sk-`
# is looked for, and a key after `Bearer` is named by its shape, not as a bearer token.
KEY_SHAPES: tuple[KeyShape, ...] = (
    KeyShape(
        "private-key",
        ("PRIVATE KEY",),
        # To its END line; a block cut short: to the end of its base64 (`\n` escapes too).
        re.compile(
            r"-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z0-9 ]* PRIVATE "
            r"KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.-]*)",
            re.DOTALL,
        ),
        lambda token: True,
        starts_token=False,
    ),
    KeyShape(
        "jwt",
        ("eyJ",),
        # Header and payload are base64url JSON objects (`{"` -> `eyJ`); the signature may be
        # empty (`alg: none`).
        re.compile(r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.(?!\.)[A-Za-z0-9_-]*"),
        lambda token: True,
    ),
    KeyShape(
        "anthropic-key",
        ("sk-ant-",),
        re.compile(r"sk-ant-([A-Za-z0-9_-]{32,})"),
        _looks_random,
        gate="sk-",
    ),
    KeyShape("openai-key", ("sk-",), re.compile(r"sk-(?!ant-)([A-Za-z0-9_-]{20,})"), _looks_random),
    KeyShape(
        "google-api-key",
        ("AIza",),
        re.compile(r"AIza([A-Za-z0-9_-]{35})"),
        lambda token: True,
        fixed_length=True,
    ),
    KeyShape(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"(?:gh[pousr]_([A-Za-z0-9]{36,})|github_pat_([A-Za-z0-9_]{50,}))"),
        lambda token: _character_classes(token) >= 2,
        gate="_",
    ),
    KeyShape(
        "slack-token",
        ("xox",),
        re.compile(r"xox[abeprs]-([A-Za-z0-9-]{10,})"),
        lambda token: any(c.isdigit() for c in token),
    ),
    KeyShape(
        "aws-secret-key",
        ("ecret", "ECRET"),
        re.compile(
            _AWS_SECRET_FIELD
            + r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        lambda token: _character_classes(token) >= 2,
        keeps_prefix=True,
        starts_token=False,  # the field name frames it (`x-aws-secret-access-key: ...`)
    ),
    KeyShape(
        "aws-access-key-id",
        ("AKIA", "ASIA"),
        re.compile(r"(?:AKIA|ASIA)([A-Z0-9]{16})"),
        lambda token: True,
        fixed_length=True,
    ),
    KeyShape(
        "bearer-token",
        ("earer", "EARER"),
        re.compile(r"(?:Bearer|bearer|BEARER)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
        lambda token: _character_classes(token) >= 2 and any(c.isdigit() for c in token),
        keeps_prefix=True,
    ),
)
# Every kind a finding can name besides an environment variable (aws-secret-key is also taken
# beside an access key id, outside the shape table).
SHAPE_NAMES = tuple(shape.name for shape in KEY_SHAPES)
# The shortest shape candidate: `xoxb-` and 10 characters.
_MIN_SHAPE_CHARS = 15


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


class _Redactor:
    """The search for one set of environment secrets, prepared once per `redact` call."""

    __slots__ = ("_env_secrets", "_min_chars")

    def __init__(self, secrets: Mapping[str, str]) -> None:
        by_value: dict[str, str] = {}
        for name, value in sorted(secrets.items()):
            if value:
                by_value.setdefault(value, name)  # one value under two names: the first name
        # Longest first: a secret that contains another is replaced whole.
        self._env_secrets = sorted(by_value.items(), key=lambda item: -len(item[0]))
        shortest_secret = min((len(value) for value in by_value), default=_MIN_SHAPE_CHARS)
        self._min_chars = min(shortest_secret, _MIN_SHAPE_CHARS)

    def redact(self, doc: Any) -> tuple[Any, list[tuple[str, str]]]:
        findings: list[tuple[str, str]] = []
        path: list[str | int] = []
        return self._walk(doc, path, findings), findings

    def _walk(self, value: Any, path: list[str | int], findings: list[tuple[str, str]]) -> Any:
        if isinstance(value, str):
            return self._text(value, path, findings)
        if isinstance(value, dict):
            changed = False
            result = {}
            for key, item in value.items():
                new_key = key
                if isinstance(key, str):
                    new_key = self._text(key, path, findings, dict_key=True)
                    if new_key in result:  # two redacted keys would collide: keep both
                        new_key = _unique_key(new_key, result)
                path.append(new_key)
                if isinstance(key, str) and ("ecret" in key or "ECRET" in key):
                    new_item = self._field(key, item, path, findings)
                else:
                    new_item = self._walk(item, path, findings)
                path.pop()
                result[new_key] = new_item
                changed = changed or new_key is not key or new_item is not item
            return result if changed else value
        if isinstance(value, (list, tuple)):  # noqa: UP038 - a tuple is faster here
            items = []
            changed = False
            for index, item in enumerate(value):
                path.append(index)
                new_item = self._walk(item, path, findings)
                path.pop()
                items.append(new_item)
                changed = changed or new_item is not item
            return type(value)(items) if changed else value
        if isinstance(value, (bytes, bytearray)):  # noqa: UP038
            try:
                text = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                return value
            new_text = self._text(text, path, findings)
            return value if new_text is text else new_text.encode("utf-8")
        return value

    def _field(
        self, key: str, value: Any, path: list[str | int], findings: list[tuple[str, str]]
    ) -> Any:
        """The value of a field named like a secret access key: a whole 40-character key is
        one, whatever stands beside it (`{"SecretAccessKey": "..."}`; an HTTP header's list
        of values too)."""
        new_value = self._walk(value, path, findings)
        if not _is_aws_secret_field(key):
            return new_value
        if isinstance(new_value, str):
            return self._aws_secret_value(new_value, path, findings)
        if isinstance(new_value, list):
            values = []
            for index, item in enumerate(new_value):
                path.append(index)
                values.append(
                    self._aws_secret_value(item, path, findings) if isinstance(item, str) else item
                )
                path.pop()
            unchanged = all(new is old for new, old in zip(values, new_value, strict=True))
            return new_value if unchanged else values
        return new_value

    def _aws_secret_value(
        self, value: str, path: list[str | int], findings: list[tuple[str, str]]
    ) -> str:
        if _AWS_LONE_SECRET.fullmatch(value.strip()) and _character_classes(value) >= 2:
            findings.append((_json_path(path), "aws-secret-key"))
            return f"{REDACTED_PREFIX}aws-secret-key]"
        return value

    def _text(
        self,
        text: str,
        path: list[str | int],
        findings: list[tuple[str, str]],
        dict_key: bool = False,
    ) -> str:
        """`text` with its secrets replaced (the same object when it holds none)."""
        if len(text) < self._min_chars:
            return text
        if REDACTED_PREFIX in text:
            kinds: list[str] = []
            pieces = []
            position = 0
            for marker in _MARKER.finditer(text):
                pieces.append(self._redact_piece(text[position : marker.start()], kinds))
                pieces.append(marker.group())
                position = marker.end()
            pieces.append(self._redact_piece(text[position:], kinds))
            new_text = "".join(pieces) if kinds else text
        else:
            kinds = []
            new_text = self._redact_piece(text, kinds)
        if kinds:
            where = _json_path(path, new_text if dict_key else None)
            findings.extend((where, kind) for kind in kinds)
        return new_text

    def _redact_piece(self, text: str, kinds: list[str]) -> str:
        for value, name in self._env_secrets:
            if value in text:
                kinds.extend([name] * text.count(value))
                text = text.replace(value, f"{REDACTED_PREFIX}{name}]")
        if len(text) < _MIN_SHAPE_CHARS:
            return text
        for shape in KEY_SHAPES:
            if shape.gate is not None and shape.gate not in text:
                continue
            for hint in shape.hints:
                if hint in text:
                    text = _redact_shape(text, shape, kinds)
                    break
        if "AKIA" in text or "ASIA" in text or "aws-access-key-id]" in text:
            text = _redact_aws_secrets_beside_ids(text, kinds)
        if "..." in text or "\u2026" in text:
            text = _redact_cut_keys(text, kinds)
        return text


def _redact_shape(text: str, shape: KeyShape, kinds: list[str]) -> str:
    pieces = []
    position = 0
    for match in shape.pattern.finditer(text):
        if not _is_key(text, match, shape):
            continue
        token_start = match.start(match.lastindex or 0)
        # Keep the scheme or field name readable: `Bearer [REDACTED:bearer-token]`.
        keep_until = token_start if shape.keeps_prefix else match.start()
        pieces.append(text[position:keep_until])
        pieces.append(f"{REDACTED_PREFIX}{shape.name}]")
        kinds.append(shape.name)
        position = match.end()
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


# What is left of a key cut short for display (`sk-proj-Zq8xK3...`): a known prefix, part of a
# token, and the ellipsis a clip put there. Text clipped before it was redacted (a note made
# from an exception message) keeps no part of a key.
_CUT_KEY = re.compile(
    r"(?:sk-|AIza|gh[pousr]_|github_pat_|xox[abeprs]-|AKIA|ASIA|eyJ)([A-Za-z0-9_.+/-]{6,}?)"
    r"(?=\.\.\.|\u2026)"
)


def _redact_cut_keys(text: str, kinds: list[str]) -> str:
    pieces = []
    position = 0
    for match in _CUT_KEY.finditer(text):
        # A bare prefix (`sk-ant-api...`) or a slug (`sk-learn-docs...`) holds nothing secret.
        cut = match.group(1)
        if not _starts_token(text, match.start()) or _character_classes(cut) < 3:
            continue
        pieces.append(text[position : match.start()])
        pieces.append(f"{REDACTED_PREFIX}cut-key]")
        kinds.append("cut-key")
        position = match.end()
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _redact_aws_secrets_beside_ids(text: str, kinds: list[str]) -> str:
    """A 40-character secret access key within AWS_SECRET_REACH characters of an access key
    id (or of its marker): an id alone tells whose account; with the secret it is the key."""
    ids = [(found.start(), found.end()) for found in _AWS_KEY_ID.finditer(text)]
    if not ids:
        return text
    pieces = []
    position = 0
    for match in _AWS_LONE_SECRET.finditer(text):
        start, end = match.span()
        near = any(
            start - AWS_SECRET_REACH <= id_end and id_start <= end + AWS_SECRET_REACH
            for id_start, id_end in ids
        )
        if not near or _character_classes(match.group()) < 3:  # a git sha is not a secret
            continue
        pieces.append(text[position:start])
        pieces.append(f"{REDACTED_PREFIX}aws-secret-key]")
        kinds.append("aws-secret-key")
        position = end
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _is_key(text: str, match: re.Match[str], shape: KeyShape) -> bool:
    if shape.starts_token and not _starts_token(text, match.start()):
        return False
    end = match.end()
    if shape.fixed_length and end < len(text) and text[end] in _TOKEN_CHARS:
        return False
    return shape.looks_like_key(match.group(match.lastindex or 0))


def _starts_token(text: str, start: int) -> bool:
    """Whether a candidate at `start` begins a token rather than continuing a word: `risk-free`
    holds no `sk-` key. After a JSON escape (`\\n` in a recorded body string) a token begins."""
    if start == 0 or text[start - 1] not in _TOKEN_CHARS:
        return True
    return start >= 2 and text[start - 2] == "\\" and text[start - 1] in _JSON_ESCAPE_LETTERS


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


# The scan command ---------------------------------------------------------------------------
