"""terminal_safe: what may reach the terminal from a trace, a label or a judge."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.safe_text import terminal_safe


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[2J\x1b[H\x1b[32m=== 1 passed ===", "␛[2J␛[H␛[32m=== 1 passed ==="),
        ("over\rwrite", "over␍write"),
        ("bell\x07 nul\x00 tab\t", "bell␇ nul␀ tab␉"),
        ("del\x7f", "del␡"),
        ("c1 \x85 \x9b31m", "c1 \\x85 \\x9b31m"),
        ("bidi \u202egnp.exe\u202c", "bidi \\u202egnp.exe\\u202c"),
        ("isolate \u2066x\u2069 sep\u2028", "isolate \\u2066x\\u2069 sep\\u2028"),
    ],
)
def test_controls_are_made_visible(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown


def test_newlines_kept_where_the_layout_uses_them_and_shown_elsewhere() -> None:
    assert terminal_safe("one\ntwo") == "one\ntwo"
    assert terminal_safe("one\ntwo", keep_newlines=False) == "one␊two"


@pytest.mark.parametrize("text", ["plain text", "naïve café — ✓ 漢字 ␛", "", "[REDACTED:jwt]"])
def test_printable_text_is_the_same_object(text: str) -> None:
    assert terminal_safe(text) is text
