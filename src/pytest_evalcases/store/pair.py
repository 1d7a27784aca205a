"""A recording pair: a JSON document and the `.http.json` of its HTTP exchanges beside it, read
and written as one unit, for a case's cassette and a user's ingestion recording alike.

- Read: the JSON names the hash of its HTTP file; a pair whose HTTP file is missing, unreadable
  or not the one named (a run killed between the two writes, an edit by hand) is one problem,
  `TornPair`, worded one way, naming the file and the next step.
- Write: what would be written is checked first (plain JSON, under the size cap: a recording
  over it is never written, the one there stays), then both temp files are written and synced,
  then the HTTP file replaces its old self and the JSON replaces its own: a write error before
  that leaves both files as they were; one after the HTTP file's replace puts the old HTTP
  file back. One process writes a pair at a time (a lock named after it, in the temporary
  folder); nothing is written through a symlinked suite or `users/` folder, and a JSON written
  by a newer pytest-evalcases is never overwritten. A write error is ours, said as such
  (`RecordingWriteError`), never the system's.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pydantic_core

from ..core.errors import CassetteError, NewerCassette, RecordingWriteError, TornPair
from ..core.hashing import content_hash
from .files import CASSETTE_CAP, MB, read_bounded, shown_path
from .folders import (
    DOCUMENTS_FOLDER,
    USERS_FOLDER,
    VARIANTS_FOLDER,
    writable_folder_problem,
)
from .http import interactions_hash, load_http
from .keys import CASSETTE_FORMAT

# The top-level "format" of a recording as this plugin writes it (sorted keys, indent 2): the
# opening brace, the one-line members before it, then its own line. Any other layout is parsed.
_CANONICAL_FORMAT = re.compile(rb'\{\n(?:  "[^"\n]*": [^\n{\[]*,\n)*  "format": ([0-9]+),\n')

# Where the next step of a torn or unwritable pair points, by what the pair records.
CASE_RERECORD = "re-record it with --live (or --live-stale)"
USER_RERECORD = "record the ingestion again with --eval-ingest-only --live"


class Writable(Protocol):
    """A recording a pair writes: its document, and the HTTP hash it names set once the HTTP
    file's text is known."""

    def to_doc(self) -> dict[str, Any]: ...

    def with_http(self, http: str | None) -> None: ...


@dataclass(frozen=True, slots=True)
class RecordingPair:
    """Where a recording and its HTTP exchanges live. `what` names it in messages ("cassette",
    "ingestion recording"); `rerecord` is the next step when it is torn; `guarded` the folders
    never written through when they are symlinks."""

    json_path: Path
    http_path: Path
    what: str
    rerecord: str
    guarded: tuple[Path, ...]

    @classmethod
    def of_case(cls, root: Path, suite: str, case_id: str) -> RecordingPair:
        folder = root / suite
        return cls(
            folder / f"{case_id}.json",
            folder / f"{case_id}.http.json",
            "cassette",
            CASE_RERECORD,
            (folder,),
        )

    @classmethod
    def of_user(
        cls,
        root: Path,
        suite: str,
        user_id: str,
        kept_variant: str | None = None,
        shared: str | None = None,
    ) -> RecordingPair:
        """A user's ingestion recording: `users/<id>.json`, the last variant recorded; with
        `kept_variant`, that variant's kept recording, `users/variants/<variant>/<id>.json`.
        `shared`: a phase of the suite's shared documents, by its recording's name:
        `documents/<shared>.json` (and `documents/variants/<variant>/<shared>.json`)."""
        if shared is not None:
            user_id = shared
        users = root / suite / (DOCUMENTS_FOLDER if shared is not None else USERS_FOLDER)
        folder = users if kept_variant is None else users / VARIANTS_FOLDER / kept_variant
        return cls(
            folder / f"{user_id}.json",
            folder / f"{user_id}.http.json",
            "ingestion recording",
            USER_RERECORD,
            (users, users.parent)
            if kept_variant is None
            else (folder, folder.parent, users, users.parent),
        )

    # -- reading ---------------------------------------------------------------------------

    def read_http(self, rootdir: Path) -> list[dict[str, Any]] | None:
        """The HTTP exchanges on disk; None when there is no file. CassetteError when it is
        refused or is not an HTTP recording."""
        return load_http(self.http_path, shown_path(self.http_path, rootdir))

    def torn(self, named: str | None, rootdir: Path) -> TornPair | None:
        """Why the HTTP file on disk is not the one the JSON names (`named`, its hash), or None.
        No file reads as no exchanges (an ingestion that made no request writes none)."""
        return self.paired_http(named, rootdir)[1]

    def checked_http(self, named: str | None, rootdir: Path) -> list[dict[str, Any]]:
        """The HTTP exchanges the JSON names; TornPair when the file on disk is not them."""
        exchanges, problem = self.paired_http(named, rootdir)
        if problem is not None:
            raise problem
        return exchanges

    def paired_http(
        self, named: str | None, rootdir: Path
    ) -> tuple[list[dict[str, Any]], TornPair | None]:
        """(the HTTP exchanges on disk, why they are not the ones the JSON names or None): the
        one check that the two files make a pair."""
        shown = shown_path(self.http_path, rootdir)
        try:
            exchanges = load_http(self.http_path, shown)
        except CassetteError as exc:
            return [], self.torn_pair(f"{shown} cannot be read ({str(exc).split('; ')[0]})")
        if interactions_hash(exchanges or []) == named:
            return exchanges or [], None
        json_shown = shown_path(self.json_path, rootdir)
        if exchanges is None:
            problem = f"{shown}, the HTTP recording {json_shown} names, is missing"
        else:
            problem = f"{shown} is not the HTTP recording {json_shown} names"
        return exchanges or [], self.torn_pair(problem)

    def torn_pair(self, problem: str, next_step: str | None = None) -> TornPair:
        """The one wording of a torn pair: what is wrong, why it may be, the next step."""
        return TornPair(problem, next_step or self.rerecord)

    # -- writing ---------------------------------------------------------------------------

    def write(
        self,
        recording: Writable,
        rootdir: Path,
        http_doc: Mapping[str, Any] | None = None,
        drop_http: bool = False,
    ) -> str | None:
        """Write the pair (see the module's docstring): `http_doc` the new HTTP file (None:
        keep the one there is; with `drop_http`, remove it). Returns the hash of the HTTP
        exchanges as a reader will load them, which the recording names when it is written.
        RecordingWriteError (nothing written) or NewerCassette (the JSON there is newer)."""
        self._check_folders(self.http_path if http_doc is not None else self.json_path)
        http_bytes, http_hash = None, None
        if http_doc is not None:
            http_bytes = self._encoded(http_doc, self.http_path, rootdir)
            http_hash = interactions_hash(json.loads(http_bytes)["interactions"])
            recording.with_http(http_hash)
        json_bytes = self._encoded(recording.to_doc(), self.json_path, rootdir)
        with exclusive(f"{self.json_path.resolve()}#write"):
            self._refuse_newer(rootdir)
            self._commit(json_bytes, http_bytes, drop_http, rootdir)
        return http_hash

    def _check_folders(self, first: Path) -> None:
        """RecordingWriteError naming `first` (the file written first) when a guarded folder
        is a symlink, before anything is written."""
        for folder in self.guarded:
            problem = writable_folder_problem(folder / first.name)
            if problem:
                if self.what == "cassette":  # the folder as the ini names it
                    where = f"its cassette folder {folder.parent.name}/{folder.name}"
                else:
                    where = f"{folder.name}/"
                raise RecordingWriteError(f"cannot record {first.name}: {where} {problem}")

    def _encoded(self, doc: Mapping[str, Any], path: Path, rootdir: Path) -> bytes:
        """The file's bytes; RecordingWriteError when it cannot be plain JSON or is over the
        size cap (naming the field that makes it so big)."""
        try:
            text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
            data = text.encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            # UnicodeEncodeError (a lone surrogate) is a ValueError
            raise RecordingWriteError(
                f"cannot write {self.what} {shown_path(path, rootdir)}: what it would hold is not "
                f"plain JSON ({type(exc).__name__}: {str(exc)[:200]}); the recording there was "
                "is kept"
            ) from None
        if len(data) > CASSETTE_CAP:
            where = biggest_field(doc)
            raise RecordingWriteError(
                f"cannot write {self.what} {shown_path(path, rootdir)}: it would be "
                f"{len(data) / MB:.1f} MB, over the cap of {CASSETTE_CAP // MB} MB "
                f"(pytest-evalcases never writes one this big), most of it {where}; the "
                f"recording there was is kept: make {where} smaller (a summary, fewer or "
                "shorter chunks), then record again"
            )
        return data

    def _refuse_newer(self, rootdir: Path) -> None:
        """NewerCassette when the JSON there was written by a newer pytest-evalcases: never
        overwritten, for users as for cases."""
        try:
            raw = read_bounded(self.json_path, CASSETTE_CAP)
            probed = _CANONICAL_FORMAT.match(raw)
            if probed is not None and int(probed[1]) <= CASSETTE_FORMAT:
                return  # as we write it, and not newer: no need to parse the whole file
            found = pydantic_core.from_json(raw)
        except (OSError, ValueError):  # none, or not readable: written over
            return
        fmt = found.get("format") if isinstance(found, dict) else None
        if type(fmt) is int and fmt > CASSETTE_FORMAT:
            raise NewerCassette(
                f"{self.what} {shown_path(self.json_path, rootdir)} was recorded by a newer "
                f"pytest-evalcases (format {fmt}; this version writes format {CASSETTE_FORMAT}): "
                "it is kept, not overwritten; upgrade pytest-evalcases"
            )

    def _commit(
        self, json_bytes: bytes, http_bytes: bytes | None, drop_http: bool, rootdir: Path
    ) -> None:
        pid = os.getpid()
        json_tmp = self.json_path.with_name(f"{self.json_path.name}.tmp.{pid}")
        http_tmp = self.http_path.with_name(f"{self.http_path.name}.tmp.{pid}")
        backup = self.http_path.with_name(f"{self.http_path.name}.old.tmp.{pid}")
        touches_http = http_bytes is not None or (drop_http and os.path.lexists(self.http_path))
        try:
            folder = self.json_path.parent
            self._guard(lambda: folder.mkdir(parents=True, exist_ok=True), folder, rootdir)
            for path in (self.json_path, self.http_path) if touches_http else (self.json_path,):
                if os.path.isdir(path) and not os.path.islink(path):
                    raise self._write_error(
                        path, IsADirectoryError(errno.EISDIR, "Is a directory"), rootdir
                    )
            if http_bytes is not None:
                self._guard(lambda: _write_synced(http_tmp, http_bytes), self.http_path, rootdir)
            self._guard(lambda: _write_synced(json_tmp, json_bytes), self.json_path, rootdir)
            had_http = touches_http and os.path.lexists(self.http_path)
            backed_up = had_http and _linked(self.http_path, backup)  # put back if need be
            try:
                if http_bytes is not None:
                    self._guard(lambda: _replace(http_tmp, self.http_path), self.http_path, rootdir)
                elif had_http:
                    self._guard(lambda: os.unlink(self.http_path), self.http_path, rootdir)
                self._guard(lambda: _replace(json_tmp, self.json_path), self.json_path, rootdir)
            except RecordingWriteError:  # the JSON could not follow: the old HTTP file back
                with suppress(OSError):
                    if backed_up:
                        os.replace(backup, self.http_path)
                    elif not had_http and http_bytes is not None:
                        os.unlink(self.http_path)
                raise
        finally:
            for tmp in (json_tmp, http_tmp, backup):
                if os.path.lexists(tmp):
                    os.unlink(tmp)

    def _guard(self, step: Callable[[], object], path: Path, rootdir: Path) -> None:
        """Run one step of the write; its OSError as our write error naming `path`."""
        try:
            step()
        except OSError as exc:
            raise self._write_error(path, exc, rootdir) from None

    def _write_error(self, path: Path, exc: OSError, rootdir: Path) -> RecordingWriteError:
        """Our own write error: the path, why, and the next step; both files are as they were."""
        shown = shown_path(path, rootdir)
        folder = shown_path(path.parent, rootdir)
        if isinstance(exc, IsADirectoryError) or os.path.isdir(path):
            step = f"a folder is where {shown} goes: move it away, then record again"
        elif exc.errno == errno.ENOSPC:
            step = "free some disk space, then record again"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            step = f"make {folder} writable, then record again"
        else:
            step = f"make {folder} a writable folder, then record again"
        return RecordingWriteError(
            f"pytest-evalcases could not write {self.what} {shown}: "
            f"{exc.strerror or exc}; the recording there was is kept as it was; {step}"
        )


def _linked(path: Path, link: Path) -> bool:
    """A second name for the file at `path` (its old content, kept until the write is done)."""
    try:
        os.link(path, link, follow_symlinks=False)
    except OSError:  # no hard links here: a failed write may leave the pair torn (repaired)
        return False
    return True


def _replace(source: Path, target: Path) -> None:
    """One file takes another's place, atomically (the step a kill may fall between)."""
    os.replace(source, target)


def _write_synced(path: Path, data: bytes) -> None:
    """A temp file, written and synced before it takes a recording's place."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def biggest_field(doc: Any, where: str = "") -> str:
    """Where most of a document's size is, as a JSON path (`trace.context`): its biggest
    member, then that member's biggest while one holds over half of its parent (into a list's
    item only when it is an object or a list itself: `interactions[3].response.body`)."""
    for _ in range(5):
        if isinstance(doc, dict) and doc:
            members = [(f".{name}", value) for name, value in doc.items()]
        elif isinstance(doc, list) and doc:
            members = [(f"[{index}]", value) for index, value in enumerate(doc)]
        else:
            break
        sizes = [
            (len(json.dumps(value, ensure_ascii=False)), name, value) for name, value in members
        ]
        size, name, value = max(sizes, key=lambda entry: entry[0])
        if where and size * 2 < sum(entry[0] for entry in sizes):
            break
        if isinstance(doc, list) and not isinstance(value, dict | list):
            break
        where, doc = f"{where}{name}", value
    return where.lstrip(".") or "the whole recording"


# One folder per account: on a machine several accounts share, each has its own (owner-only),
# and a folder of that name that another account made is refused, never shared.
LOCK_FOLDER_NAME = "pytest-evalcases-locks" + (f"-{os.getuid()}" if hasattr(os, "getuid") else "")


def lock_folder() -> Path:
    """Where the locks (and notes) processes share about a recording live: the temporary
    folder, never beside the recordings."""
    return Path(tempfile.gettempdir()) / LOCK_FOLDER_NAME


class UnsafeTempFile(RecordingWriteError):
    """A file or folder we make in the shared temporary folder is a symlink, or is not ours
    alone: another account could make us write where it chooses, so it is never followed."""


def _unsafe(path: Path, what: str) -> UnsafeTempFile:
    return UnsafeTempFile(
        f"{path} {what}: in the shared temporary folder the plugin never follows a link nor "
        "uses a folder another account owns or can write in (one could have planted it); "
        "remove it, or set TMPDIR to a folder of your own"
    )


def checked_lock_folder() -> Path:
    """`lock_folder()`, made owner-only (0o700) if missing, and checked to be a real folder
    (not a symlink) owned by us that no one else can write in; UnsafeTempFile otherwise."""
    folder = lock_folder()
    with suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise _unsafe(folder, "is a symlink")
    if not stat.S_ISDIR(info.st_mode):
        raise _unsafe(folder, "is not a folder")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise _unsafe(folder, f"belongs to another account (uid {info.st_uid})")
    if info.st_mode & 0o022:
        raise _unsafe(folder, f"can be written by others (mode {stat.S_IMODE(info.st_mode):o})")
    return folder


def open_outside(path: Path, flags: int) -> int:
    """`os.open` of a file we keep outside the project, never through a symlink (O_NOFOLLOW);
    a file it makes is owner-only. UnsafeTempFile when `path` is a link."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (path.is_symlink() and exc.errno != errno.ENOENT):
            raise _unsafe(path, "is a symlink") from None
        raise


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """An exclusive lock across processes, named after `name` (a recording's path), in the
    temporary folder, never beside the recordings. Two opens of one lock exclude each other
    even in one process: never taken twice by one caller. Where there is no `fcntl`
    (Windows), or the lock file cannot be made, none. A planted symlink on the folder or the
    lock file is refused (UnsafeTempFile), never followed."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX here
        yield
        return
    try:
        lock_path = checked_lock_folder() / f"{content_hash(name)}.lock"
        handle = os.fdopen(open_outside(lock_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a")
    except UnsafeTempFile:
        raise
    except OSError:  # another account's lock file, a read-only temp folder: no lock
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        yield
