"""core/files.sha256_of_file: a regular file's hash, read a chunk at a time; anything else
refused before a byte is read. (read_bounded: tests/unit/store/test_files.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_evalcases.core.files import RefusedFile, sha256_of_file
from pytest_evalcases.core.hashing import HASH_CHARS, file_hash

# Worked out with coreutils: `printf abc | sha256sum` (the FIPS 180-2 example) and
# `python3 -c "import sys; sys.stdout.buffer.write(b'x' * (2**21 + 7))" | sha256sum`.
ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
TWO_CHUNKS_SHA256 = "c4a55658f242df944c879aa370c9e958506e2d4bda4994aae90592330b96f917"


def test_the_hash_of_a_small_file_is_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    assert sha256_of_file(path) == ABC_SHA256
    assert file_hash(path) == ABC_SHA256[:HASH_CHARS]


def test_a_file_of_several_chunks_hashes_as_its_whole_bytes(tmp_path: Path) -> None:
    """2 MiB + 7 bytes: two full 1 MiB chunks and a short one."""
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * (2**21 + 7))
    assert sha256_of_file(path) == TWO_CHUNKS_SHA256


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO (named pipe)"),
        (lambda p: p.symlink_to("/dev/zero"), "is a device"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.symlink_to("gone.txt"), "is a dangling symlink to gone.txt"),
    ],
    ids=["fifo", "device", "directory", "dangling"],
)
def test_what_is_not_a_regular_file_is_refused_before_hashing(
    tmp_path: Path, make, why: str
) -> None:
    path = tmp_path / "data.txt"
    make(path)
    with pytest.raises(RefusedFile) as refused:
        sha256_of_file(path)
    assert refused.value.reason == why


def test_no_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        sha256_of_file(tmp_path / "none.txt")
