"""`import FORMAT --download`: a benchmark's official file fetched into a cache folder, checked
against a sha256, and reused on later runs.

Where a hash comes from, in order: `--sha256 HEX` (explicit), the table below (only hashes we
computed ourselves from the published file), the cache's lock file (trust on first use: the
first download of a file nothing pins records its hash there, and every later download must
match it). A mismatch is an error naming both hashes and the URL; the bad file is deleted, never
cached. The file is streamed to a temporary name in the cache folder (under a size cap, with a
timeout) and renamed only once it checks; an archive's member the importer reads is extracted
the same way. Standard library only (urllib): tests point `--download-base-url` at a loopback
server, and nothing here reaches the network unless a user asks for a download.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..core.files import MB, RefusedFile, read_bounded, sha256_of_file
from .base import BenchmarkFormatError

BASE_URL_ENV = "EVALCASES_DOWNLOAD_BASE_URL"
CACHE_ENV = "EVALCASES_DOWNLOAD_CACHE"
LOCK_FILE = "downloads.lock.json"
# A download (or an archive's member) past it is refused: the biggest file imported whole is
# HotpotQA's 566 MB training set; MuSiQue's and 2WikiMultihopQA's zips are smaller.
DOWNLOAD_CAP = 1000 * MB
TIMEOUT = 60.0  # seconds without a byte (connecting, or between two reads) before giving up
VERIFIED = "the table of verified hashes"  # SOURCES' own pins
_CHUNK = 1 << 20
_LOCK_CAP = 1 * MB


@dataclass(frozen=True, slots=True)
class Source:
    """A benchmark's official file: where it is published and where that is stated."""

    format: str
    url: str  # the official download URL
    name: str  # the file's name: in the cache, and under a mirror's base URL (BASE/name)
    stated_at: str  # where the official location is published
    sha256: str | None = None  # a hash we verified on the published file; None: first use
    member: str | None = None  # an archive's file the importer reads
    page: str | None = None  # where a person downloads it by hand, when not `url`


SOURCES: dict[str, Source] = {
    source.format: source
    for source in (
        Source(
            "locomo",
            "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json",
            "locomo10.json",
            "github.com/snap-research/locomo (data/locomo10.json)",
            # computed on the release's data/locomo10.json as published (2,805,274 bytes)
            sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
        ),
        Source(
            "hotpotqa",
            "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
            "hotpot_dev_distractor_v1.json",
            "hotpotqa.github.io (the dev set, distractor setting)",
        ),
        Source(
            "musique",
            # the Google Drive file of download_data.sh, asked for without the confirmation
            # page Drive shows a browser for a large file
            "https://drive.usercontent.google.com/download"
            "?id=1tGdADlNjWFaHLeZZGShh2IRcpO6Lv24h&export=download&confirm=t",
            "musique_v1.0.zip",
            "github.com/StonyBrookNLP/musique's download_data.sh (a Google Drive file)",
            member="data/musique_ans_v1.0_dev.jsonl",
            page="https://drive.google.com/file/d/1tGdADlNjWFaHLeZZGShh2IRcpO6Lv24h/view",
        ),
        Source(
            "2wikimultihopqa",
            "https://www.dropbox.com/s/npidmtadreo6df2/data.zip?dl=1",
            "data.zip",
            "github.com/Alab-NII/2wikimultihop's README (Dataset Contents)",
            member="data/dev.json",
            page="https://www.dropbox.com/s/npidmtadreo6df2/data.zip",
        ),
        Source(
            "truthfulqa",
            "https://raw.githubusercontent.com/sylinrl/TruthfulQA/main/TruthfulQA.csv",
            "TruthfulQA.csv",
            "github.com/sylinrl/TruthfulQA",
        ),
    )
}


class DownloadError(BenchmarkFormatError):
    """A download failed or did not check: the message names the URL and the next step, and
    nothing was cached or written."""


@dataclass(slots=True)
class Fetched:
    """A checked file in the cache, ready to import."""

    path: Path  # the file the importer reads (an archive's member, or the download itself)
    download: Path  # the downloaded file in the cache
    url: str
    sha256: str  # of the downloaded file
    size: int
    pinned_by: str  # VERIFIED, "--sha256", "the lock file", or "" (first use)
    downloaded: bool  # False: the cached file was reused, nothing was fetched
    lock: Path
    member: str | None = None

    def source_note(self) -> dict[str, Any]:
        """What the suite's `source` records of the download."""
        note: dict[str, Any] = {
            "url": self.url,
            "file": self.download.name,
            "sha256": self.sha256,
            "pinned_by": self.pinned_by or "first use",
        }
        if self.member:
            note["member"] = self.member
        return note


def downloadable(formats: Any) -> list[str]:
    """The formats `--download` serves among those the importers register (a source whose
    importer is absent from this build is left out)."""
    return [name for name in SOURCES if name in formats]


def default_cache_dir(environ: Any = os.environ) -> Path:
    """$EVALCASES_DOWNLOAD_CACHE, else $XDG_CACHE_HOME/pytest-evalcases/benchmarks, else
    ~/.cache/pytest-evalcases/benchmarks."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "pytest-evalcases" / "benchmarks"


def fetch(
    fmt: str,
    cache_dir: Path | None = None,
    base_url: str | None = None,
    sha256: str | None = None,
    timeout: float = TIMEOUT,
    cap: int = DOWNLOAD_CAP,
) -> Fetched:
    """The format's official file, from the cache when it holds the pinned one, else downloaded
    (from `base_url`/name when a mirror is given, or $EVALCASES_DOWNLOAD_BASE_URL) and checked.
    DownloadError for a failed or mismatching download; nothing bad is kept."""
    source = SOURCES.get(fmt)
    if source is None:
        raise DownloadError(
            f"--download: no official file is known for {fmt!r} (known: {', '.join(SOURCES)}); "
            f"give the file: import {fmt} FILE"
        )
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    folder = cache / source.format
    lock = cache / LOCK_FILE
    expected, pinned_by = _expected(source, sha256, lock)
    url = _url(source, base_url if base_url is not None else os.environ.get(BASE_URL_ENV))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(
            f"{folder}: cannot create the download cache ({exc.strerror}); pass "
            f"--download-cache DIR (or set {CACHE_ENV}) to a folder you can write"
        ) from None
    cached = folder / source.name
    member_path = folder / Path(source.member).name if source.member else None
    if cached.is_file():
        actual = sha256_of_file(cached)
        if expected is None or actual == expected:  # else: not the pinned file, fetch it again
            if member_path is not None and not member_path.is_file():
                _extract_to(cached, source, member_path, url, cap)
            if pinned_by != VERIFIED:  # first use, or --sha256 accepting it
                _record(lock, source, url, actual)
            return Fetched(
                member_path or cached,
                cached,
                url,
                actual,
                cached.stat().st_size,
                pinned_by,
                False,
                lock,
                source.member,
            )
    part = _part(cached)
    try:
        actual, size = _download(url, part, source, timeout, cap)
        if expected is not None and actual != expected:
            raise DownloadError(_mismatch(source, url, expected, actual, pinned_by, lock))
        # the member first: a cached archive then always has its own member beside it
        if member_path is not None:
            _extract_to(part, source, member_path, url, cap)
        os.replace(part, cached)
    finally:
        part.unlink(missing_ok=True)
    if pinned_by != VERIFIED:
        _record(lock, source, url, actual)
    return Fetched(
        member_path or cached, cached, url, actual, size, pinned_by, True, lock, source.member
    )


def _expected(source: Source, sha256: str | None, lock: Path) -> tuple[str | None, str]:
    if sha256 is not None:
        value = sha256.strip().lower()
        if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
            raise DownloadError(
                f"--sha256 {sha256}: a sha256 is 64 hexadecimal digits (as sha256sum prints)"
            )
        return value, "--sha256"
    if source.sha256 is not None:
        return source.sha256, VERIFIED
    entry = _read_lock(lock).get(source.format)
    if entry:
        return entry["sha256"], "the lock file"
    return None, ""


def _url(source: Source, base_url: str | None) -> str:
    if not base_url:
        return source.url
    scheme = base_url.split(":", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise DownloadError(
            f"--download-base-url {base_url}: give an http:// or https:// URL (a mirror "
            f"serving {source.name} under it)"
        )
    return f"{base_url.rstrip('/')}/{source.name}"


def _next_step(source: Source) -> str:
    unpack = f", take {source.member} out of it," if source.member else ""
    return (
        f"check the connection and the URL, or pass --download-base-url URL (or set "
        f"{BASE_URL_ENV}) to a mirror serving {source.name}; or download it yourself from "
        f"{source.page or source.url} (as {source.stated_at} publishes it){unpack} and run: "
        f"import {source.format} FILE"
    )


def _download(url: str, part: Path, source: Source, timeout: float, cap: int) -> tuple[str, int]:
    """Streams `url` into `part`: (sha256, size). DownloadError for an HTTP error, a refused
    connection, a timeout, a body past `cap` or an HTML page in place of the file."""
    request = urllib.request.Request(url, headers={"User-Agent": "pytest-evalcases"})
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > cap:
                raise DownloadError(
                    f"{url}: the file is {int(declared) / MB:.1f} MB, over the download cap of "
                    f"{cap // MB} MB; nothing was downloaded; download a split of it yourself "
                    f"and run: import {source.format} FILE"
                )
            with part.open("wb") as out:
                while chunk := response.read(_CHUNK):
                    if size == 0 and _looks_like_html(chunk):
                        raise DownloadError(
                            f"{url}: the server sent an HTML page, not {source.name} (a sign-in, "
                            f"quota or confirmation page); nothing was cached; "
                            + _next_step(source)
                        )
                    size += len(chunk)
                    if size > cap:
                        raise DownloadError(
                            f"{url}: the download passed the cap of {cap // MB} MB and was "
                            f"stopped; nothing was cached; download a split of it yourself "
                            f"and run: import {source.format} FILE"
                        )
                    digest.update(chunk)
                    out.write(chunk)
            if declared and declared.isdigit() and size != int(declared):
                raise DownloadError(
                    f"{url}: the download broke off after {size} of {declared} bytes; "
                    f"nothing was cached; try again, or {_next_step(source)}"
                )
    except urllib.error.HTTPError as exc:
        raise DownloadError(
            f"{url}: the server answered HTTP {exc.code} {exc.reason}; nothing was downloaded; "
            + _next_step(source)
        ) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            said = "the connection was refused"
        elif isinstance(reason, TimeoutError):
            said = f"no answer within {timeout:g} s"
        else:
            said = f"cannot connect ({getattr(reason, 'strerror', None) or reason})"
        raise DownloadError(
            f"{url}: {said}; nothing was downloaded; {_next_step(source)}"
        ) from None
    except TimeoutError:
        raise DownloadError(
            f"{url}: no data for {timeout:g} s after {size} bytes; nothing was cached; "
            + _next_step(source)
        ) from None
    except (http.client.HTTPException, ConnectionError) as exc:
        raise DownloadError(
            f"{url}: the download broke off after {size} bytes ({type(exc).__name__}); "
            f"nothing was cached; try again, or {_next_step(source)}"
        ) from None
    except OSError as exc:
        if exc.filename is not None:  # writing the cache, not the network
            raise DownloadError(
                f"{part.parent}: cannot write the download ({exc.strerror}); pass "
                f"--download-cache DIR (or set {CACHE_ENV}) to a folder with room"
            ) from None
        raise DownloadError(f"{url}: the download failed ({exc}); {_next_step(source)}") from None
    return digest.hexdigest(), size


def _looks_like_html(chunk: bytes) -> bool:
    head = chunk[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _mismatch(
    source: Source, url: str, expected: str, actual: str, pinned_by: str, lock: Path
) -> str:
    if pinned_by == "the lock file":
        accept = (
            f"if the publisher changed the file on purpose, pass --sha256 {actual} to accept it "
            f"(it then replaces the entry in {lock})"
        )
    else:
        accept = (
            f"if the publisher changed the file on purpose, check its release notes and pass "
            f"--sha256 {actual} to accept it"
        )
    return (
        f"{url}: the downloaded {source.name} does not match its pinned sha256 (from "
        f"{pinned_by}): expected {expected}, got {actual}; the file was deleted, not cached. "
        f"{accept[0].upper()}{accept[1:]}; "
        f"else try again later or use another mirror (--download-base-url)"
    )


def _part(path: Path) -> Path:
    """Where `path` is written before it is renamed into place (this process's own name)."""
    return path.with_name(f".{path.name}.part.{os.getpid()}")


def _extract_to(archive: Path, source: Source, target: Path, url: str, cap: int) -> None:
    """The archive's member the importer reads, written to `target` (under `cap`, through a
    temporary file: `target` is whole or absent)."""
    assert source.member is not None
    part = _part(target)
    try:
        with zipfile.ZipFile(archive) as zipped:
            info = _member(zipped, source, url)
            if info.file_size > cap:
                raise DownloadError(
                    f"{url}: {info.filename} in {source.name} is {info.file_size / MB:.1f} MB, "
                    f"over the cap of {cap // MB} MB; nothing was cached"
                )
            with zipped.open(info) as member, part.open("wb") as out:
                _copy_capped(member, out, cap, f"{url}: {info.filename}")
        os.replace(part, target)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise DownloadError(
            f"{url}: the download is not a zip archive this reads ({exc}; expected "
            f"{source.name} holding {source.member}); nothing was cached; {_next_step(source)}"
        ) from None
    except OSError as exc:
        raise DownloadError(
            f"{target.parent}: cannot write {target.name} ({exc.strerror or exc}); pass "
            f"--download-cache DIR (or set {CACHE_ENV}) to a folder with room"
        ) from None
    finally:
        part.unlink(missing_ok=True)


def _member(zipped: zipfile.ZipFile, source: Source, url: str) -> zipfile.ZipInfo:
    """The member named `source.member`, else the one file of that name anywhere in the archive
    (macOS's `__MACOSX/` copies left out)."""
    assert source.member is not None
    infos = [i for i in zipped.infolist() if not i.is_dir() and "__MACOSX/" not in i.filename]
    exact = [i for i in infos if i.filename == source.member]
    if exact:
        return exact[0]
    wanted = Path(source.member).name
    named = [i for i in infos if Path(i.filename).name == wanted]
    if len(named) == 1:
        return named[0]
    listed = ", ".join(i.filename for i in infos[:8]) + (" ..." if len(infos) > 8 else "")
    found = f"{len(named)} files named {wanted}" if named else f"no {wanted}"
    raise DownloadError(
        f"{url}: {source.name} holds {found} (it holds: {listed or 'nothing'}); nothing was "
        f"cached; {_next_step(source)}"
    )


def _copy_capped(source: IO[bytes], out: IO[bytes], cap: int, where: str) -> None:
    copied = 0
    while chunk := source.read(_CHUNK):
        copied += len(chunk)
        if copied > cap:
            raise DownloadError(f"{where}: passed the cap of {cap // MB} MB; nothing was cached")
        out.write(chunk)


def _read_lock(lock: Path) -> dict[str, Any]:
    if not lock.exists():
        return {}
    try:
        doc = json.loads(read_bounded(lock, _LOCK_CAP))
    except (json.JSONDecodeError, UnicodeDecodeError, RefusedFile):
        doc = None
    except OSError as exc:
        raise DownloadError(
            f"{lock}: cannot read the download lock file ({exc.strerror})"
        ) from None
    if not isinstance(doc, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("sha256"), str) for entry in doc.values()
    ):
        raise DownloadError(
            f"{lock}: not a download lock file (a JSON object: format -> {{sha256, url, file}}); "
            "delete it to trust the next downloads on first use, or pass --sha256 HEX"
        )
    return doc


def _record(lock: Path, source: Source, url: str, sha256: str) -> None:
    """The file's hash in the lock file (written whole, then renamed)."""
    doc = _read_lock(lock)
    if doc.get(source.format, {}).get("sha256") == sha256:
        return
    doc[source.format] = {
        "file": source.name,
        "sha256": sha256,
        "url": url,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    tmp = lock.with_name(f"{lock.name}.tmp.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, lock)
    finally:
        tmp.unlink(missing_ok=True)


__all__ = [
    "BASE_URL_ENV",
    "CACHE_ENV",
    "SOURCES",
    "DownloadError",
    "Fetched",
    "Source",
    "default_cache_dir",
    "downloadable",
    "fetch",
]
