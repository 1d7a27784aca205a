"""store/pair.py (issue 28): a recording and its `.http.json` read and written as one unit, for
cases and users alike: a torn pair is one problem; a write checks the cap and a newer format
before anything is written, and a write error leaves both files as they were."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.core.errors import NewerCassette, RecordingWriteError, TornPair
from pytest_evalcases.store import pair as pair_module
from pytest_evalcases.store.cassette import build_cassette, load_cassette
from pytest_evalcases.store.files import MB
from pytest_evalcases.store.http import http_document, interactions_hash
from pytest_evalcases.store.pair import LOCK_FOLDER_NAME, RecordingPair, biggest_field
from pytest_evalcases.store.user_recordings import build_user_recording, load_user_recording

EXCHANGE = {
    "request": {"method": "GET", "uri": "http://h/a", "headers": {}, "body": None},
    "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": None},
}


def case_pair(root: Path) -> RecordingPair:
    return RecordingPair.of_case(root / "cassettes", "s", "alpha")


def recorded(root: Path, answer: str = "old") -> RecordingPair:
    """A case pair on disk: a cassette naming its one-exchange HTTP file."""
    pair = case_pair(root)
    exchange = json.loads(json.dumps(EXCHANGE))
    exchange["request"]["uri"] = f"http://h/{answer}"
    pair.write(
        build_cassette("s", "alpha", {"case": "k"}, {"answer": answer}, {}),
        root,
        http_document("s", "alpha", [exchange]),
    )
    return pair


def contents(pair: RecordingPair) -> dict[str, bytes | None]:
    """Every file of the pair's folder (temp files included), by name."""
    folder = pair.json_path.parent
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_a_written_pair_reads_back_as_one(tmp_path: Path) -> None:
    pair = recorded(tmp_path)

    cassette = load_cassette(pair.json_path, tmp_path)

    assert cassette is not None and cassette.trace == {"answer": "old"}
    assert pair.checked_http(cassette.http, tmp_path)[0]["request"]["uri"] == "http://h/old"
    assert cassette.http == interactions_hash(pair.read_http(tmp_path) or [])
    assert sorted(contents(pair)) == ["alpha.http.json", "alpha.json"]


@pytest.mark.parametrize(
    ("tear", "said"),
    [
        (lambda pair: pair.http_path.unlink(), "alpha.http.json, the HTTP recording"),
        (
            lambda pair: pair.http_path.write_text(
                json.dumps(http_document("s", "alpha", [EXCHANGE, EXCHANGE]))
            ),
            "alpha.http.json is not the HTTP recording cassettes/s/alpha.json names",
        ),
        (lambda pair: pair.http_path.write_text("{"), "alpha.http.json cannot be read"),
    ],
    ids=["missing", "another", "unreadable"],
)
def test_a_torn_pair_is_one_problem_naming_the_file_and_the_next_step(
    tmp_path: Path, tear: Any, said: str
) -> None:
    pair = recorded(tmp_path)
    cassette = load_cassette(pair.json_path, tmp_path)
    assert cassette is not None
    tear(pair)

    with pytest.raises(TornPair) as error:
        pair.checked_http(cassette.http, tmp_path)

    message = str(error.value)
    assert message.startswith("mismatched recording: cassettes/s/alpha.http.json")
    assert said in message
    assert message.endswith("; re-record it with --live (or --live-stale)")
    assert pair.torn(cassette.http, tmp_path) is not None


def test_a_user_pair_is_torn_the_same_way_and_says_its_own_next_step(tmp_path: Path) -> None:
    pair = RecordingPair.of_user(tmp_path / "cassettes", "s", "u-ana")
    doc = build_user_recording("s", "u-ana", {"user.u-ana": "a"}, {}, {"id": 1}, {}, "none")
    pair.write(doc, tmp_path, http_document("s", "u-ana", [EXCHANGE]))
    read = load_user_recording(pair.json_path, tmp_path)
    assert read is not None and pair.torn(read.http, tmp_path) is None
    pair.http_path.unlink()

    problem = pair.torn(read.http, tmp_path)

    assert isinstance(problem, TornPair)
    assert "cassettes/s/users/u-ana.http.json, the HTTP recording" in str(problem)
    assert str(problem).endswith("record the ingestion again with --eval-ingest-only --live")


def test_no_http_file_reads_as_no_exchanges(tmp_path: Path) -> None:
    """An ingestion that made no request writes no HTTP file: its recording names none."""
    pair = RecordingPair.of_user(tmp_path / "cassettes", "s", "u-bo")
    doc = build_user_recording("s", "u-bo", {}, {}, None, {}, interactions_hash([]))
    pair.write(doc, tmp_path, None, drop_http=True)

    assert pair.checked_http(doc.http, tmp_path) == []
    assert not pair.http_path.exists()


def test_a_recording_over_the_cap_is_never_written_and_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pair_module, "CASSETTE_CAP", 50 * MB // 1000)  # the same rule, in KB
    pair = recorded(tmp_path)
    before = contents(pair)
    huge = build_cassette(
        "s", "alpha", {}, {"answer": "a", "context": ["x" * (51 * MB // 1000)]}, {}
    )

    with pytest.raises(RecordingWriteError) as error:
        pair.write(huge, tmp_path, http_document("s", "alpha", [EXCHANGE]))

    message = str(error.value)
    assert "cassettes/s/alpha.json: it would be 0.1 MB, over the cap of 0 MB" in message
    assert "most of it trace.context" in message and "the recording there was is kept" in message
    assert contents(pair) == before


def test_the_biggest_field_is_named_down_to_where_the_size_is() -> None:
    doc = {"trace": {"answer": "a", "context": ["x" * 1000]}, "verdicts": {}}
    assert biggest_field(doc) == "trace.context"
    http = {"interactions": [{"response": {"body": {"string": "y" * 1000}}}]}
    assert biggest_field(http) == "interactions[0].response.body.string"


def test_a_newer_format_on_disk_is_never_overwritten_for_cases_and_users(tmp_path: Path) -> None:
    for pair, doc in (
        (case_pair(tmp_path), build_cassette("s", "alpha", {}, {"answer": "new"}, {})),
        (
            RecordingPair.of_user(tmp_path / "cassettes", "s", "u-ana"),
            build_user_recording("s", "u-ana", {}, {}, None, {}, "h"),
        ),
    ):
        pair.json_path.parent.mkdir(parents=True, exist_ok=True)
        pair.json_path.write_text(json.dumps({"format": 99, "anything": "newer"}))
        pair.http_path.write_text("newer http")
        before = contents(pair)

        with pytest.raises(NewerCassette, match="format 99.*it is kept, not overwritten"):
            pair.write(doc, tmp_path, http_document("s", "x", [EXCHANGE]))

        assert contents(pair) == before


@pytest.mark.parametrize(
    "newer",
    [
        # as a newer plugin would write it (sorted keys, indent 2): the cheap probe reads it
        json.dumps({"case": "alpha", "format": 99, "trace": {}}, sort_keys=True, indent=2) + "\n",
        # a "format" inside a member before the top-level one is not the recording's
        json.dumps({"a": {"format": 1}, "format": 99}, sort_keys=True, indent=2) + "\n",
        json.dumps({"case": "a", "format": 1, "x": {"format": 99}}).replace('1, "x"', '99, "x"'),
    ],
)
def test_a_newer_format_is_refused_whatever_the_layout(tmp_path: Path, newer: str) -> None:
    pair = case_pair(tmp_path)
    pair.json_path.parent.mkdir(parents=True)
    pair.json_path.write_text(newer)
    with pytest.raises(NewerCassette, match="format 99"):
        pair.write(build_cassette("s", "alpha", {}, {"answer": "new"}, {}), tmp_path)
    assert pair.json_path.read_text() == newer


def test_a_current_format_in_our_layout_is_written_over(tmp_path: Path) -> None:
    pair = recorded(tmp_path)
    assert pair_module._CANONICAL_FORMAT.match(pair.json_path.read_bytes()) is not None
    pair.write(build_cassette("s", "alpha", {"case": "k"}, {"answer": "new"}, {}), tmp_path)
    assert json.loads(pair.json_path.read_text())["trace"] == {"answer": "new"}


def test_a_folder_where_the_json_goes_leaves_both_files_as_they_were(tmp_path: Path) -> None:
    pair = recorded(tmp_path)
    http_before = pair.http_path.read_bytes()
    pair.json_path.unlink()
    pair.json_path.mkdir()

    with pytest.raises(RecordingWriteError) as error:
        pair.write(
            build_cassette("s", "alpha", {}, {"answer": "new"}, {}),
            tmp_path,
            http_document("s", "alpha", [EXCHANGE, EXCHANGE]),
        )

    message = str(error.value)
    assert message.startswith("pytest-evalcases could not write cassette cassettes/s/alpha.json")
    assert "a folder is where cassettes/s/alpha.json goes: move it away" in message
    assert pair.http_path.read_bytes() == http_before
    assert sorted(p.name for p in pair.json_path.parent.iterdir()) == [
        "alpha.http.json",
        "alpha.json",
    ]


@pytest.mark.parametrize("failing", ["http temp", "json temp", "json replace"])
def test_a_write_error_at_any_step_leaves_both_files_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    pair = recorded(tmp_path)
    before = contents(pair)
    real_write, real_replace = pair_module._write_synced, pair_module._replace

    def write(path: Path, data: bytes) -> None:
        if failing == f"{'http' if '.http.' in path.name else 'json'} temp":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    def replace(source: Path, target: Path) -> None:
        if failing == "json replace" and not target.name.endswith(".http.json"):
            raise OSError(errno.EACCES, "Permission denied")
        real_replace(source, target)

    monkeypatch.setattr(pair_module, "_write_synced", write)
    monkeypatch.setattr(pair_module, "_replace", replace)

    with pytest.raises(RecordingWriteError) as error:
        pair.write(
            build_cassette("s", "alpha", {}, {"answer": "new"}, {}),
            tmp_path,
            http_document("s", "alpha", [EXCHANGE, EXCHANGE]),
        )

    assert "pytest-evalcases could not write cassette cassettes/s/alpha" in str(error.value)
    next_step = "make cassettes/s writable" if failing == "json replace" else "free some disk"
    assert next_step in str(error.value)
    assert contents(pair) == before  # no temp file left either


def test_nothing_is_written_through_a_symlinked_suite_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "s").symlink_to(elsewhere)

    with pytest.raises(RecordingWriteError, match="its cassette folder cassettes/s is a symlink"):
        case_pair(tmp_path).write(build_cassette("s", "alpha", {}, {}, {}), tmp_path)

    assert list(elsewhere.iterdir()) == []


def test_one_writer_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write holds the pair's lock: a second writer waits (here: sees it taken)."""
    import fcntl

    pair = recorded(tmp_path)
    monkeypatch.setattr(pair_module.tempfile, "gettempdir", lambda: str(tmp_path))
    seen: list[bool] = []
    real_replace = pair_module._replace

    def replace(source: Path, target: Path) -> None:
        lock = next((tmp_path / LOCK_FOLDER_NAME).glob("*.lock"))
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append(False)
            except BlockingIOError:
                seen.append(True)
        real_replace(source, target)

    monkeypatch.setattr(pair_module, "_replace", replace)
    pair.write(build_cassette("s", "alpha", {}, {"answer": "b"}, {}), tmp_path)

    assert seen == [True]
    assert os.path.exists(pair.json_path)
