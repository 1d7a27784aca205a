"""The rules that tell a credential from ordinary text: the well-known key shapes (`sk-...`,
`AIza...`, `ghp_...`, JWTs, private-key blocks, AWS key pairs, bearer tokens, Stripe and Hugging
Face keys, URL passwords, Basic credentials, Azure keys and SAS signatures, ...) with the checks
of a candidate's surroundings and randomness, and keys cut short for display (`sk-proj-Zq8x...`);
the field names that label a secret whatever its value (`secret_field_kind`); the lone pieces of
a key found when its frame or id is elsewhere in the document (`redact_lone_keys`).
`redact_key_shapes` applies the shapes to one string; `store/redaction.py` walks documents.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "KEY_SHAPES",
    "MIN_SHAPE_CHARS",
    "REDACTED_PREFIX",
    "SHAPE_NAMES",
    "KeyShape",
    "LONE_KEY_EVIDENCE",
    "is_labelled_secret",
    "redact_key_shapes",
    "redact_lone_keys",
    "secret_field_kind",
]

REDACTED_PREFIX = "[REDACTED:"  # what every replacement opens with: `[REDACTED:openai-key]`

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
    # Hints in lower case, looked for in the lower-cased text (one test for `Secret`, `SECRET`).
    any_case: bool = False
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


# Between a field's label and its value: a closing quote (JSON-escaped too), `:` or `=`, and an
# opening quote: `aws_secret_access_key = x`, `"SecretAccessKey": "x"`, `\\"key\\": \\"x\\"`.
_LABEL_SEPARATOR = r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
# What a label may stand before without being a value: placeholders written in docs and config.
_PLACEHOLDER = re.compile(r"[*xX.]+|[<{$%].*|(?i:none|null|true|false|redacted)")


def _is_labelled_value(token: str) -> bool:
    """A labelled secret's value, whatever its shape, unless it is a placeholder (`***`,
    `<password>`, `${DB_PASSWORD}`, `null`) or a marker already."""
    return not _PLACEHOLDER.fullmatch(token) and REDACTED_PREFIX not in token


def _is_labelled_text_value(token: str) -> bool:
    """A labelled value in running text: one that mixes two kinds of character (upper case,
    lower case, digits), so that `password: required` in prose stays."""
    return _is_labelled_value(token) and _character_classes(token) >= 2


def _is_basic_credentials(token: str) -> bool:
    """Whether a `Basic` token is base64 of `user:password` (printable, one colon at least)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


# Fields whose value is a secret whatever its shape, by the end of the name folded (lower case,
# without `_` and `-`): `aws_secret_access_key`, `DB_PASSWORD`, `x-api-key`, `client_secret`,
# `Ocp-Apim-Subscription-Key`; and by the whole folded name (`Authorization`, `access_token`).
_SECRET_FIELD_ENDINGS = (
    ("secretaccesskey", "aws-secret-key"),
    ("awssecretkey", "aws-secret-key"),
    ("password", "password"),
    ("passwd", "password"),
    ("clientsecret", "client-secret"),
    ("apikey", "api-key"),
    ("subscriptionkey", "azure-subscription-key"),
)
_SECRET_FIELD_NAMES = {
    "authorization": "authorization",
    "proxyauthorization": "authorization",
    "accesstoken": "access-token",
    "refreshtoken": "access-token",
    "idtoken": "access-token",
}


@functools.lru_cache(maxsize=4096)  # the same few dozen keys, in every document
def secret_field_kind(name: str) -> str | None:
    """The kind of secret a dict key labels (`password` for `DB_PASSWORD`), or None."""
    folded = name.lower().replace("_", "").replace("-", "")
    for ending, kind in _SECRET_FIELD_ENDINGS:
        if folded.endswith(ending):
            return kind
    return _SECRET_FIELD_NAMES.get(folded)


def is_labelled_secret(value: str) -> bool:
    """Whether the value of a labelled secret field is to be redacted: any non-empty value but a
    placeholder or one that holds a marker already."""
    stripped = value.strip()
    return bool(stripped) and _is_labelled_value(stripped)


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
        ("ecret",),
        # The label names it whatever its value's shape: 40 characters of base64 or not.
        re.compile(
            _AWS_SECRET_FIELD + _LABEL_SEPARATOR + r"([A-Za-z0-9/+=._~-]{8,})(?![A-Za-z0-9/+=])"
        ),
        _is_labelled_text_value,
        keeps_prefix=True,
        any_case=True,
        starts_token=False,  # the field name frames it (`x-aws-secret-access-key: ...`)
    ),
    KeyShape(
        "password",
        ("assw",),
        # `password=...` (a DSN, a query, an env file), `"password": "..."` inside a JSON text:
        # a value that mixes two kinds of character (`password: open Settings` is prose).
        re.compile(
            r"(?<![A-Za-z0-9])(?i:(?:[a-z0-9]+[_-])?passw(?:or)?d)"
            + _LABEL_SEPARATOR
            + r"([^\s\"'\\,;&<>]{4,})"
        ),
        _is_labelled_text_value,
        keeps_prefix=True,
        any_case=True,
        starts_token=False,
    ),
    KeyShape(
        "azure-subscription-key",
        ("ubscription",),
        # Azure API Management's header, whatever the value's shape (32 hex digits as a rule).
        re.compile(r"(?i:ocp-apim-subscription-key)" + _LABEL_SEPARATOR + r"([A-Za-z0-9_-]{8,})"),
        _is_labelled_text_value,
        keeps_prefix=True,
        any_case=True,
        starts_token=False,
    ),
    KeyShape(
        "aws-access-key-id",
        ("AKIA", "ASIA"),
        re.compile(r"(?:AKIA|ASIA)([A-Z0-9]{16})"),
        lambda token: True,
        fixed_length=True,
    ),
    KeyShape(
        "stripe-key",
        ("_live_", "_test_"),
        # Secret (`sk_`) and restricted (`rk_`) keys; a publishable `pk_` key is public.
        re.compile(r"[sr]k_(?:live|test)_([A-Za-z0-9]{16,})"),
        lambda token: _character_classes(token) >= 2 and any(c.isdigit() for c in token),
        gate="k_",
    ),
    KeyShape(
        "huggingface-token",
        ("hf_",),
        re.compile(r"hf_([A-Za-z0-9]{30,})"),
        lambda token: _character_classes(token) >= 2,
    ),
    KeyShape(
        "url-password",
        ("://",),
        # `scheme://user:password@host`: the password goes, the user and the host stay.
        re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:\"'<>\\]*:([^\s/?#@\"'<>\\]+)(?=@)"),
        _is_labelled_value,
        keeps_prefix=True,
        gate="@",
    ),
    KeyShape(
        "azure-sas-signature",
        ("sig=",),
        # The signature of a shared access signature URL (`...&sig=...`): the URL's credential.
        re.compile(r"(?<=[?&;])sig=([A-Za-z0-9%+/=_-]{16,})"),
        lambda token: True,
        keeps_prefix=True,
        starts_token=False,
    ),
    KeyShape(
        "basic-auth",
        ("asic ",),
        # `Basic <base64 of user:password>` (Authorization, Proxy-Authorization): taken only
        # when the base64 holds `user:password`, so `basic plan` and prose stay.
        re.compile(r"(?:Basic|basic)[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"),
        _is_basic_credentials,
        keeps_prefix=True,
    ),
    KeyShape(
        "bearer-token",
        ("earer",),
        re.compile(r"(?:Bearer|bearer|BEARER)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
        lambda token: _character_classes(token) >= 2 and any(c.isdigit() for c in token),
        keeps_prefix=True,
        any_case=True,
    ),
)
# Every kind a finding can name besides an environment variable (aws-secret-key is also taken
# beside an access key id, outside the shape table).
SHAPE_NAMES = tuple(shape.name for shape in KEY_SHAPES)
# What redact_key_shapes reads of each shape, unpacked once (attribute reads cost on short text).
_SEARCH_ORDER = tuple((shape.gate, shape.hints, shape.any_case, shape) for shape in KEY_SHAPES)
# The shortest shape candidate: `xoxb-` and 10 characters.
MIN_SHAPE_CHARS = 15


def redact_key_shapes(text: str, kinds: list[str]) -> str:
    """`text` with every key shape, AWS secret beside its key id and cut key replaced by its
    marker, each kind appended to `kinds` (the same object when it holds none)."""
    if len(text) < MIN_SHAPE_CHARS:
        return text
    folded = None  # the text in lower case, made for the first any-case shape
    for gate, hints, any_case, shape in _SEARCH_ORDER:
        if gate is not None and gate not in text:
            continue
        searched = text
        if any_case:
            if folded is None:
                folded = text.lower()
            searched = folded
        for hint in hints:
            if hint in searched:
                text = _redact_shape(text, shape, kinds)
                break
    if "AKIA" in text or "ASIA" in text or "aws-access-key-id]" in text:
        text = _redact_aws_secrets_beside_ids(text, kinds)
    if "..." in text or "\u2026" in text:
        text = _redact_cut_keys(text, kinds)
    return text


# The kinds whose lone pieces are searched for in a document that holds their frame or id
# elsewhere (a PEM body line, an AWS secret without its key id), by the marker that tells.
LONE_KEY_EVIDENCE = (("private-key]", "private-key"), ("aws-access-key-id]", "aws-secret-key"))
# A line of a PEM body on its own (a claim, a log line, a list item or a one-cell table row in
# Markdown): base64 from a line break (or a `\n` escape, or the text's start) to the next.
_PEM_BODY_LINE = re.compile(
    r"(?:\A|(?<=[\r\n])|(?<=\\[nr]))[ \t|>*-]*([A-Za-z0-9+/]{16,}={0,2})[ \t|]*"
    r"(?=\Z|[\r\n]|\\[nr])"
)


def redact_lone_keys(text: str, kinds: list[str], lone: frozenset[str]) -> str:
    """In a document that holds a private-key frame or an AWS key id somewhere (`lone` names
    which), the pieces that went astray from it: a line of base64 that mixes upper case, lower
    case and digits (a PEM body line); a 40-character AWS secret anywhere."""
    if "private-key" in lone:
        text = _redact_pem_pieces(text, _PEM_BODY_LINE, kinds)
    if "aws-secret-key" in lone and len(text) >= 40:
        text = _redact_aws_secrets_beside_ids(text, kinds, anywhere=True)
    return text


def _redact_pem_pieces(text: str, pattern: re.Pattern[str], kinds: list[str]) -> str:
    pieces = []
    position = 0
    for match in pattern.finditer(text):
        if _character_classes(match.group(1)) < 3:
            continue
        pieces.append(text[position : match.start(1)])
        pieces.append(f"{REDACTED_PREFIX}private-key]")
        kinds.append("private-key")
        position = match.end(1)
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


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
    r"(?:sk-|[sr]k_(?:live|test)_|hf_|AIza|gh[pousr]_|github_pat_|xox[abeprs]-|AKIA|ASIA|eyJ)"
    r"([A-Za-z0-9_.+/-]{6,}?)"
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


def _redact_aws_secrets_beside_ids(text: str, kinds: list[str], anywhere: bool = False) -> str:
    """A 40-character secret access key within AWS_SECRET_REACH characters of an access key
    id (or of its marker): an id alone tells whose account; with the secret it is the key.
    `anywhere`: the document holds an id elsewhere, so every such key is taken."""
    ids = [(found.start(), found.end()) for found in _AWS_KEY_ID.finditer(text)]
    if not ids and not anywhere:
        return text
    pieces = []
    position = 0
    for match in _AWS_LONE_SECRET.finditer(text):
        start, end = match.span()
        near = anywhere or any(
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
