"""Names that become file names and node ids (case ids, suite names), and the small text helpers
every message uses: `clip` to shorten, `aligned` to lay out columns, `shown_value` and `listed`
to show what a trace held."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Case ids and suite names name files (`<id>.json`, written first as `<id>.json.tmp.<pid>`):
# 200 bytes leaves room for the suffixes under the usual 255-byte limit of a file name.
MAX_NAME_BYTES = 200


def case_ids(raw_cases: list[Any]) -> list[str]:
    """The ids a case file names (valid or not): what orphan detection compares cassettes with."""
    return [c["id"] for c in raw_cases if isinstance(c, dict) and isinstance(c.get("id"), str)]


# Characters an id may not hold beyond ASCII's controls: C1 controls (U+0085 included), bidi
# controls (U+202E turns `evil` into what prints as another id), line and paragraph separators,
# zero-width characters, the rest of Unicode's default-ignorable code points (the soft hyphen,
# fillers, variation selectors, invisible operators, tags) and the interlinear annotation
# controls (U+FFF9-U+FFFB, drawn as nothing): each makes an id print like another (`alpha` and
# `alpha` + U+00AD), or break a line of output.
_DEFAULT_IGNORABLE = (
    "\xad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2061-\u2065\u206a-\u206f\u3164"
    "\ufe00-\ufe0f\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE = re.compile(
    "[\x80-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff" + _DEFAULT_IGNORABLE + "]"
)


# The file a live run keeps in the cassette folder, beside the suites' folders
# (store/run_marker.py): no suite may be named so.
LIVE_RUN_MARKER = ".live-run-in-progress.json"


def unsafe_suite_name_reason(name: str) -> str | None:
    """Why a suite name cannot name its cassette folder (beside the other suites' folders and
    the plugin's own file there), or None."""
    if name == LIVE_RUN_MARKER:
        return "it is the name of the plugin's own file there (a live run's marker)"
    return unsafe_id_reason(name)


def unsafe_id_reason(case_id: str) -> str | None:
    """Why an id cannot name a cassette file (and a node id), or None."""
    if len(case_id) > MAX_NAME_BYTES or not case_id.isascii():  # isascii() is O(1): cheap
        try:
            size = len(case_id.encode())
        except UnicodeEncodeError:
            return "lone surrogates (invalid Unicode) are not allowed"
        if size > MAX_NAME_BYTES:
            return f"it is {size} bytes long in UTF-8, over the limit of {MAX_NAME_BYTES}"
        invisible = _INVISIBLE.search(case_id)
        if invisible:
            return _invisible_reason(invisible.group())
    if case_id in {".", ".."} or "/" in case_id or "\\" in case_id:
        return "path separators and '.'/'..' are not allowed"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in case_id):
        return "control characters are not allowed"
    if "::" in case_id:
        return "'::' is not allowed (it separates node id parts)"
    if case_id != case_id.strip():
        return "leading or trailing white space is not allowed"
    if case_id.endswith(".http"):
        return "'.http' at the end is not allowed (<id>.http.json is the case's HTTP recording)"
    return None


def _invisible_reason(char: str) -> str:
    import unicodedata  # only for a refused id: not on every run's path

    code = ord(char)
    if code <= 0x9F:
        kind = "control characters"
    elif char in "\u2028\u2029":
        kind = "line and paragraph separators"
    elif char in "\u061c\u200e\u200f" or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        kind = "bidirectional controls"
    elif char in "\u200b\u200c\u200d\u2060\ufeff":
        kind = "zero-width characters"
    else:
        kind = "invisible (default-ignorable) characters"
    name = unicodedata.name(char, "")
    shown = f"U+{code:04X}{' ' + name if name else ''}"
    return f"{kind} ({shown}) are not allowed: the id would print like another, or break a line"


def shown_name(name: str) -> str:
    """A name as a message shows it: a 5,000-character id by its start and its length."""
    return repr(name) if len(name) <= 60 else f"{name[:40]!r}… ({len(name)} characters)"


def clip(text: str, limit: int = 200, *, one_line: bool = True, ellipsis: str = "...") -> str:
    """`text` cut to `limit` characters with `ellipsis` at the cut (counted in the limit);
    `one_line` first folds every run of white space (new lines included) into one space."""
    if one_line:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - len(ellipsis)] + ellipsis


def shown_value(value: object, limit: int | None) -> str:
    """A value of a case or trace as a failure shows it: its repr (a string quoted, its line
    breaks and control characters escaped, so it stays one line that cannot restyle a terminal),
    a string cut to `limit` characters before quoting, anything else after (None: whole)."""
    if isinstance(value, str):
        return repr(value if limit is None else clip(value, limit, ellipsis="…"))
    text = repr(value)
    return text if limit is None else clip(text, limit, ellipsis="…")


def listed(items: Sequence[str], most: int | None) -> str:
    """Items joined by ", ": the first `most` and how many more there are (None: all)."""
    if most is None or len(items) <= most:
        return ", ".join(items)
    return ", ".join(items[:most]) + f", … ({len(items) - most} more)"


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines of left-aligned columns two spaces apart (a terminal table)."""
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def shown_file(path: Path, rootdir: Path) -> str:
    """A case file as messages name it: relative to the rootdir, as its node id starts."""
    return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else str(path)


def counted(number: int, noun: str) -> str:
    """`1 secret`, `3 secrets`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
