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
