"""`import FORMAT --download` (issue 32 part 8): the official file fetched into a cache, checked
against a sha256 (pinned, given with --sha256, or recorded on first use), and reused. Every test
points the download at a loopback server; an autouse fixture sends anything that forgets to a
closed loopback port, so nothing here reaches the network."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.importers import FORMATS
from pytest_evalcases.importers.downloads import (
    BASE_URL_ENV,
    CACHE_ENV,
    LOCK_FILE,
    SOURCES,
    DownloadError,
    default_cache_dir,
    downloadable,
    fetch,
)

SAMPLES = Path(__file__).parents[2] / "data" / "benchmarks"
LOCOMO = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "locomo10.json"


class FileServer:
    """Serves `files` (name -> bytes, or an int: that HTTP status) on 127.0.0.1 and counts the
    requests; `hang` makes every request wait (unanswered) until close()."""

    def __init__(self, files: dict[str, bytes | int]) -> None:
        self.files = files
        self.requests: list[str] = []
        self.hang = False
        self.released = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                server.requests.append(self.path)
                if server.hang:
                    server.released.wait(10)
                    return
                body = server.files.get(self.path.lstrip("/"), 404)
                if isinstance(body, int):
                    self.send_error(body)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture(autouse=True)
def _no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A download that names no mirror goes to a closed loopback port, into a temporary cache."""
    monkeypatch.setenv(BASE_URL_ENV, _closed_port_url())
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))


@pytest.fixture
def server() -> Iterator[FileServer]:
    served = FileServer({})
    yield served
    served.close()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _lock(cache: Path) -> dict[str, Any]:
    return json.loads((cache / LOCK_FILE).read_text())


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.rglob("*") if ".part." in p.name or ".tmp." in p.name)


HOTPOT = (SAMPLES / "hotpotqa.json").read_bytes()


def test_first_download_records_its_hash_and_a_later_run_reuses_the_cache(
    server: FileServer, cache: Path
) -> None:
    server.files["hotpot_dev_distractor_v1.json"] = HOTPOT
    first = fetch("hotpotqa", cache, server.url)
    assert first.downloaded and first.pinned_by == ""  # nothing pinned it: first use
    assert first.path == cache / "hotpotqa" / "hotpot_dev_distractor_v1.json"
    assert first.path.read_bytes() == HOTPOT
    assert first.url == f"{server.url}/hotpot_dev_distractor_v1.json"
    assert _lock(cache)["hotpotqa"]["sha256"] == _sha(HOTPOT) == first.sha256

    again = fetch("hotpotqa", cache, server.url)
    assert not again.downloaded and again.pinned_by == "the lock file"
    pinned = fetch("hotpotqa", cache, server.url, sha256=_sha(HOTPOT))
    assert not pinned.downloaded and pinned.pinned_by == "--sha256"
    assert server.requests == ["/hotpot_dev_distractor_v1.json"]  # one request in all
    assert _leftovers(cache) == []


def test_a_changed_file_under_a_recorded_hash_is_an_error_and_is_not_cached(
    server: FileServer, cache: Path
) -> None:
    server.files["hotpot_dev_distractor_v1.json"] = HOTPOT
    fetch("hotpotqa", cache, server.url)
    (cache / "hotpotqa" / "hotpot_dev_distractor_v1.json").unlink()
    changed = HOTPOT.replace(b"[", b"[ ", 1)
    server.files["hotpot_dev_distractor_v1.json"] = changed

    with pytest.raises(DownloadError) as caught:
        fetch("hotpotqa", cache, server.url)
    message = str(caught.value)
    assert f"expected {_sha(HOTPOT)}, got {_sha(changed)}" in message
    assert f"{server.url}/hotpot_dev_distractor_v1.json" in message
    assert f"--sha256 {_sha(changed)}" in message and str(cache / LOCK_FILE) in message
    assert not (cache / "hotpotqa" / "hotpot_dev_distractor_v1.json").exists()
    assert _leftovers(cache) == []

    # accepting it explicitly replaces the lock's entry
    accepted = fetch("hotpotqa", cache, server.url, sha256=_sha(changed).upper())
    assert accepted.downloaded and accepted.pinned_by == "--sha256"
    assert _lock(cache)["hotpotqa"]["sha256"] == _sha(changed)


def test_a_cached_file_that_no_longer_matches_is_fetched_again(
    server: FileServer, cache: Path
) -> None:
    server.files["hotpot_dev_distractor_v1.json"] = HOTPOT
    fetch("hotpotqa", cache, server.url)
    cached = cache / "hotpotqa" / "hotpot_dev_distractor_v1.json"
    cached.write_bytes(b"[]")  # edited in the cache
    again = fetch("hotpotqa", cache, server.url)
    assert again.downloaded and cached.read_bytes() == HOTPOT
    assert len(server.requests) == 2


def test_the_pinned_table_holds_locomos_verified_hash_and_a_mismatch_names_both(
    server: FileServer, cache: Path
) -> None:
    pinned = SOURCES["locomo"].sha256
    assert pinned == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    # only hashes we computed are pinned: the others are trusted on first use
    assert [s.format for s in SOURCES.values() if s.sha256] == ["locomo"]
    fake = (SAMPLES / "locomo.json").read_bytes()
    server.files["locomo10.json"] = fake
    with pytest.raises(
        DownloadError,
        match=f"pinned sha256 \\(from the table of verified hashes\\): expected {pinned}, got",
    ):
        fetch("locomo", cache, server.url)
    assert not (cache / "locomo" / "locomo10.json").exists()
    assert not (cache / LOCK_FILE).exists()  # a pinned file never goes to the lock


def test_the_base_url_comes_from_the_environment(
    server: FileServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files["TruthfulQA.csv"] = b"Type,Category,Question\n"
    monkeypatch.setenv(BASE_URL_ENV, server.url + "/")
    fetched = fetch("truthfulqa", cache)
    assert fetched.url == f"{server.url}/TruthfulQA.csv" and server.requests == ["/TruthfulQA.csv"]
    # without any mirror the official URL is used (here: not reached, the env names the mirror)
    assert SOURCES["truthfulqa"].url.endswith("/sylinrl/TruthfulQA/main/TruthfulQA.csv")


def test_the_cache_folder_defaults_to_xdg_then_home() -> None:
    assert default_cache_dir({CACHE_ENV: "/c"}) == Path("/c")
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/pytest-evalcases/benchmarks")
    assert default_cache_dir({}) == Path.home() / ".cache" / "pytest-evalcases" / "benchmarks"


def test_an_archive_yields_the_member_the_importer_reads(server: FileServer, cache: Path) -> None:
    dev = (SAMPLES / "2wikimultihopqa.json").read_bytes()
    archive = _zip(
        {"__MACOSX/data/dev.json": b"junk", "data/train.json": b"[]", "data/dev.json": dev}
    )
    server.files["data.zip"] = archive
    fetched = fetch("2wikimultihopqa", cache, server.url)
    assert fetched.path == cache / "2wikimultihopqa" / "dev.json"
    assert fetched.path.read_bytes() == dev
    assert fetched.sha256 == _sha(archive) and fetched.member == "data/dev.json"
    fetched.path.unlink()  # extracted again from the cached archive, without a request
    assert fetch("2wikimultihopqa", cache, server.url).path.read_bytes() == dev
    assert len(server.requests) == 1


def test_a_member_found_elsewhere_in_the_archive_or_missing(
    server: FileServer, cache: Path
) -> None:
    server.files["musique_v1.0.zip"] = _zip({"musique_ans_v1.0_dev.jsonl": b"{}\n"})
    assert fetch("musique", cache, server.url).path.name == "musique_ans_v1.0_dev.jsonl"

    server.files["data.zip"] = _zip({"data/train.json": b"[]"})
    with pytest.raises(DownloadError, match=r"data\.zip holds no dev\.json \(it holds: data/train"):
        fetch("2wikimultihopqa", cache, server.url)
    assert not (cache / "2wikimultihopqa" / "data.zip").exists()
    assert not (cache / LOCK_FILE).exists() or "2wikimultihopqa" not in _lock(cache)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"PK but not a zip", "is not a zip archive this reads"),
        (b"\n<!DOCTYPE html><html>sign in</html>", "sent an HTML page, not musique_v1.0.zip"),
        (404, "answered HTTP 404"),
    ],
)
def test_a_bad_answer_is_an_error_naming_the_url_and_the_next_step(
    server: FileServer, cache: Path, body: bytes | int, expected: str
) -> None:
    server.files["musique_v1.0.zip"] = body
    with pytest.raises(DownloadError) as caught:
        fetch("musique", cache, server.url)
    message = str(caught.value)
    assert expected in message and f"{server.url}/musique_v1.0.zip" in message
    assert "import musique FILE" in message and "1tGdADlNjWFaHLeZZGShh2IRcpO6Lv24h" in message
    assert list((cache / "musique").iterdir()) == []
    assert not (cache / LOCK_FILE).exists()


def test_a_refused_connection_a_silent_server_and_the_size_cap(
    server: FileServer, cache: Path
) -> None:
    closed = _closed_port_url()
    with pytest.raises(DownloadError, match="the connection was refused; nothing was downloaded"):
        fetch("hotpotqa", cache, closed)

    server.files["hotpot_dev_distractor_v1.json"] = HOTPOT
    with pytest.raises(DownloadError, match=r"over the download cap of 0 MB"):
        fetch("hotpotqa", cache, server.url, cap=len(HOTPOT) - 1)

    server.hang = True
    with pytest.raises(DownloadError, match=r"(no answer within|no data for) 0\.2 s"):
        fetch("hotpotqa", cache, server.url, timeout=0.2)
    assert list((cache / "hotpotqa").iterdir()) == []


def test_bad_sha256_and_base_url_options_are_refused(cache: Path) -> None:
    with pytest.raises(DownloadError, match="64 hexadecimal digits"):
        fetch("hotpotqa", cache, sha256="abc")
    with pytest.raises(DownloadError, match="give an http:// or https:// URL"):
        fetch("hotpotqa", cache, "file:///etc")


def test_a_lock_file_that_is_not_one_is_an_error_naming_it(cache: Path) -> None:
    cache.mkdir()
    (cache / LOCK_FILE).write_text('{"hotpotqa": "abc"}')
    with pytest.raises(DownloadError) as caught:
        fetch("hotpotqa", cache)
    assert str(cache / LOCK_FILE) in str(caught.value) and "delete it" in str(caught.value)


def test_truthfulqa_is_offered_only_where_its_importer_is_registered() -> None:
    assert "truthfulqa" in SOURCES
    assert downloadable({"hotpotqa": 1, "locomo": 2}) == ["locomo", "hotpotqa"]
    offered = downloadable(FORMATS)
    assert ("truthfulqa" in offered) == ("truthfulqa" in FORMATS)
    assert {"locomo", "hotpotqa", "musique", "2wikimultihopqa"} <= set(offered)


def test_the_command_downloads_imports_and_records_the_source(
    server: FileServer, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    server.files["hotpot_dev_distractor_v1.json"] = HOTPOT
    args = ["import", "hotpotqa", "--download", "--download-base-url", server.url]
    args += ["--download-cache", str(cache), "-o", "cases/hotpot.json"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"downloaded {server.url}/hotpot_dev_distractor_v1.json" in out
    assert f"trusted on first use and recorded in {cache / LOCK_FILE}" in out
    suite = json.loads((tmp_path / "cases" / "hotpot.json").read_text())
    assert suite["source"]["download"] == {
        "url": f"{server.url}/hotpot_dev_distractor_v1.json",
        "file": "hotpot_dev_distractor_v1.json",
        "sha256": _sha(HOTPOT),
        "pinned_by": "first use",
    }
    assert suite["source"]["file"] == "hotpot_dev_distractor_v1.json"

    assert main([*args, "--force"]) == 0
    out = capsys.readouterr().out
    assert "(nothing downloaded)" in out and "matches the lock file" in out
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hotpotqa", "x.json", "--download"], "leave out FILE (x.json)"),
        (["deepeval", "--download"], "deepeval has no official file to fetch"),
        (["hotpotqa"], "give the benchmark FILE, or --download"),
        (["hotpotqa", "x.json", "--sha256", "0" * 64], "--sha256 applies with --download only"),
    ],
)
def test_the_command_refuses_download_options_that_do_not_fit(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["import", *args, "-o", "cases/x.json"]) == 2
    err = capsys.readouterr().err
    assert message in err and "nothing was written" in err
    assert not (tmp_path / "cases").exists()


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"the shared benchmark data is absent ({LOCOMO})")
def test_the_real_locomo_release_passes_the_pinned_hash(
    server: FileServer, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    server.files["locomo10.json"] = LOCOMO.read_bytes()
    monkeypatch.setenv(BASE_URL_ENV, server.url)
    assert (
        main(
            [
                "import",
                "locomo",
                "--download",
                "--download-cache",
                str(cache),
                "-o",
                "cases/locomo.json",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"sha256 {SOURCES['locomo'].sha256} matches the table of verified hashes" in out
    suite = json.loads((tmp_path / "cases" / "locomo.json").read_text())
    assert suite["source"]["records"] == 1986 and suite["source"]["download"]["pinned_by"] == (
        "the table of verified hashes"
    )
    assert suite["source"]["sha256"] == SOURCES["locomo"].sha256
