"""core/names: an id or a suite name is limited to 200 bytes of UTF-8 (it names a file)."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.names import unsafe_id_reason


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("a" * 200, False),
        ("a" * 201, True),
        ("é" * 100, False),
        ("é" * 101, True),  # 2 bytes each
        ("\U0001f600" * 50, False),
        ("\U0001f600" * 51, True),  # 4 bytes each
    ],
)
def test_names_are_limited_to_200_utf8_bytes(name: str, refused: bool) -> None:
    reason = unsafe_id_reason(name)
    assert (reason is not None) == refused
    if refused:
        assert reason == f"it is {len(name.encode())} bytes long in UTF-8, over the limit of 200"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a\u0085b", "control characters (U+0085)"),
        ("a\u202eb", "bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("a\u061cb", "bidirectional controls (U+061C ARABIC LETTER MARK)"),
        ("a\u2029b", "line and paragraph separators (U+2029 PARAGRAPH SEPARATOR)"),
        ("a\u2060b", "zero-width characters (U+2060 WORD JOINER)"),
    ],
)
def test_invisible_and_control_characters_are_refused_by_kind(name: str, kind: str) -> None:
    assert unsafe_id_reason(name) == (
        f"{kind} are not allowed: the id would print like another, or break a line"
    )


@pytest.mark.parametrize("name", ["café", "日本語", "a\u00a0b", "emoji-\U0001f600", "naïve\u0301"])
def test_other_non_ascii_names_stay_allowed(name: str) -> None:
    assert unsafe_id_reason(name) is None
