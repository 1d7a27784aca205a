"""Text from a trace, a label or a judge made safe to print: no control or escape character
reaches the terminal, so a model cannot clear the screen, move the cursor or forge a summary
line (`\\x1b[2J\\x1b[H\\x1b[32m=== 1 passed ===`).

C0 controls and DEL become their Unicode control pictures (`\\x1b` -> `␛`, `\\r` -> `␍`); C1
controls, bidi overrides and isolates, line and paragraph separators become `\\xNN` / `\\uNNNN`
(they have no picture). A newline is kept where the layout uses it.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

_CONTROL_PICTURES = 0x2400  # U+2400 SYMBOL FOR NULL: C0 control n is pictured at U+2400 + n
_DELETE_PICTURE = "\u2421"  # ␡

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_UNSAFE_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)


def _shown(character: str) -> str:
    code = ord(character)
    if code < 0x20:
        return chr(_CONTROL_PICTURES + code)
    if code == 0x7F:
        return _DELETE_PICTURE
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def terminal_safe(text: str, keep_newlines: bool = True) -> str:
    """`text` with every control and escape character replaced by a visible stand-in (the same
    object when it holds none: the common case costs one regex search)."""
    pattern = _UNSAFE_BUT_NEWLINE if keep_newlines else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda found: _shown(found.group()), text)
