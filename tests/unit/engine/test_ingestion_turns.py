"""engine/ingestion.py's turns across processes (an xdist worker per process): one lock per
recording, exclusive, and none (not an error) where no lock file can be made."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import pytest

from pytest_evalcases.store.pair import LOCK_FOLDER_NAME, exclusive


def test_two_holders_of_one_recordings_turn_never_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # flock locks belong to an open file: two opens in one process exclude each other as two
    # processes do.
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    recording = tmp_path / "cassettes" / "s" / "users" / "u-ana.json"
    inside: list[str] = []
    overlaps: list[bool] = []

    def take_turn(name: str) -> None:
        with exclusive(str(recording)):
            overlaps.append(bool(inside))
            inside.append(name)
            time.sleep(0.05)
            inside.remove(name)

    threads = [threading.Thread(target=take_turn, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert overlaps == [False] * 4
    assert len(list((tmp_path / LOCK_FOLDER_NAME).glob("*.lock"))) == 1


def test_no_lock_file_means_no_turns_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(not_a_folder))

    with exclusive(str(tmp_path / "u-ana.json")):
        entered = True

    assert entered
