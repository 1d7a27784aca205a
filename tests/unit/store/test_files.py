"""store/files.read_bounded: regular files only, never more than the cap read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_evalcases.store.files import RefusedFile, problem_of, read_bounded


def test_a_regular_file_is_read_whole_at_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"x" * 100_000)
    assert read_bounded(path, 100_000) == b"x" * 100_000


def test_a_file_over_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"x" * 2_000_001)
    with pytest.raises(RefusedFile, match=r"is 2\.0 MB, over the cap of 2 MB") as refused:
        read_bounded(path, 2_000_000)
    assert refused.value.too_big


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO (named pipe)"),
        (lambda p: p.symlink_to("/dev/zero"), "is a device"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.symlink_to("gone.json"), "is a dangling symlink to gone.json"),
        (lambda p: p.symlink_to(p.name), "is a symlink loop"),
    ],
    ids=["fifo", "device", "directory", "dangling", "loop"],
)
def test_what_is_not_a_regular_file_is_refused_naming_it(tmp_path: Path, make, why: str) -> None:
    path = tmp_path / "c.json"
    make(path)
    assert problem_of(path) == why
    with pytest.raises(RefusedFile) as refused:
        read_bounded(path, 1_000)
    assert refused.value.reason == why and not refused.value.too_big


def test_no_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "none.json", 1_000)
