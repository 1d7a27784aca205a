"""core/names: an id or a suite name is limited to 200 bytes of UTF-8 (it names a file)."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.names import unsafe_id_reason, unsafe_suite_name_reason


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
        ("alpha\xad", "invisible (default-ignorable) characters (U+00AD SOFT HYPHEN)"),
        ("a\ufe0fb", "invisible (default-ignorable) characters (U+FE0F VARIATION SELECTOR-16)"),
        (
            "a\U000e0041b",
            "invisible (default-ignorable) characters (U+E0041 TAG LATIN CAPITAL LETTER A)",
        ),
    ],
)
def test_invisible_and_control_characters_are_refused_by_kind(name: str, kind: str) -> None:
    assert unsafe_id_reason(name) == (
        f"{kind} are not allowed: the id would print like another, or break a line"
    )


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), the unassigned included.
DEFAULT_IGNORABLE = [
    0x00AD,
    0x034F,
    0x061C,
    0x115F,
    0x1160,
    0x17B4,
    0x17B5,
    *range(0x180B, 0x1810),
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2070),
    0x3164,
    *range(0xFE00, 0xFE10),
    0xFEFF,
    0xFFA0,
    *range(0xFFF0, 0xFFF9),
    *range(0x1BCA0, 0x1BCA4),
    *range(0x1D173, 0x1D17B),
    *range(0xE0000, 0xE1000),
]


def test_every_default_ignorable_character_is_refused() -> None:
    """Break: `alpha` and `alpha` + U+00AD (or U+034F, U+3164, U+180E, U+FE0F, a tag) were two
    cases printed identically."""
    accepted = [
        f"U+{code:04X}"
        for code in DEFAULT_IGNORABLE
        if unsafe_id_reason(f"alpha{chr(code)}") is None
    ]
    assert accepted == []


@pytest.mark.parametrize("name", ["café", "日本語", "a\u00a0b", "emoji-\U0001f600", "naïve\u0301"])
def test_other_non_ascii_names_stay_allowed(name: str) -> None:
    assert unsafe_id_reason(name) is None


def test_a_suite_may_not_be_named_as_the_live_runs_marker_file() -> None:
    reason = unsafe_suite_name_reason(".live-run-in-progress.json")
    assert reason is not None and "the plugin's own file" in reason
    assert unsafe_suite_name_reason("docs-assistant") is None
    assert unsafe_suite_name_reason("a/b") == unsafe_id_reason("a/b")  # the ids' rules too
