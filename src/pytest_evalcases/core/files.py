"""Reading files a run did not write without trusting them: regular files only (a FIFO would
block the run, `/dev/zero` never ends), checked on the open file before anything is read; read
whole under a cap, or hashed in chunks (memory bounded, any size).

Here, not in `store/`, because the code fingerprints (`domain/code.py`) read the project's
source through it too; `store/files.py` holds the caps of the files the store reads."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

MB = 1_000_000

_FIRST_READ = 1 << 16  # a cassette is a few KB: one read, and no file object, for most
_HASH_CHUNK = 1 << 20  # what a hash holds of a file at a time, whatever its size
# A FIFO opens at once instead of waiting for a writer (it is then refused by its kind).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


class RefusedFile(OSError):
    """A file refused before it was read: `reason` says why, in words that follow its name
    ("is a FIFO", "is 60.0 MB, over the cap of 50 MB")."""

    def __init__(self, reason: str, too_big: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.too_big = too_big


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular file is ("is a FIFO"), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def too_big(size: int, cap: int) -> str:
    return f"is {size / MB:.1f} MB, over the cap of {cap // MB} MB"


def _open_regular(path: Path | str) -> tuple[int, int]:
    """(an open fd, the file's size) of a regular file; RefusedFile for anything else (checked
    with one fstat on the open fd), FileNotFoundError when there is no file. The caller closes
    the fd."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling symlink is a file someone meant to be there
            raise RefusedFile(problem_of(path) or "cannot be opened") from None
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RefusedFile("is a symlink loop") from None
        raise
    try:
        status = os.fstat(fd)
        kind = kind_of(status.st_mode)
        if kind:
            raise RefusedFile(kind)
    except BaseException:
        os.close(fd)
        raise
    return fd, status.st_size


def read_bounded(path: Path | str, cap: int) -> bytes:
    """A regular file's bytes through the os calls alone (half the cost of `open().read()`),
    refused (RefusedFile) when it is not a regular file or holds more than `cap` bytes: one
    fstat on the open file, and never more than cap + 1 bytes read. FileNotFoundError when
    there is no file."""
    fd, size = _open_regular(path)
    try:
        if size > cap:
            raise RefusedFile(too_big(size, cap), too_big=True)
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data
        chunks, total = [data], len(data)
        while total <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:  # it grew after the fstat
            raise RefusedFile(too_big(total, cap), too_big=True)
        return b"".join(chunks)
    finally:
        os.close(fd)


def sha256_of_file(path: Path | str) -> str:
    """The SHA-256 (hex) of a regular file's bytes, read a chunk at a time: any size, in
    bounded memory (a data file may be gigabytes). RefusedFile when it is not a regular file,
    FileNotFoundError when there is none."""
    fd, _ = _open_regular(path)
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def problem_of(path: Path | str) -> str | None:
    """Why the file at `path` cannot be read as a file, without opening it: "is a dangling
    symlink to …", "is a symlink loop", "is a FIFO (named pipe)", …; None for a regular file
    (or a symlink to one)."""
    try:
        return kind_of(os.stat(path).st_mode)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"is a dangling symlink to {os.readlink(path)}"
        return "does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        return f"cannot be read ({exc.strerror})"
