"""A user's ingestion recording (`users/<id>.json`): built, written, read back and refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_evalcases.core.errors import CassetteError
from pytest_evalcases.store.folders import (
    find_orphans,
    left_alone,
    remove_dead_temp_files,
    user_recording_stem,
)
from pytest_evalcases.store.pair import RecordingPair
from pytest_evalcases.store.user_recordings import (
    UserRecording,
    build_user_recording,
    load_user_recording,
    user_http_path,
    user_recording_path,
)

FIGURES = {"duration_s": 1.5, "ready_wait_s": None, "requests": 2, "usage": None, "cost_usd": None}


def save_user_recording(path: Path, doc: UserRecording) -> None:
    root = path.parent.parent.parent
    RecordingPair.of_user(root, path.parent.parent.name, path.stem).write(doc, root)


def recording() -> UserRecording:
    return build_user_recording(
        "memory",
        "u-ana",
        {"user.u-ana": "abc"},
        {"key": {"user.u-ana": "a.json@abc"}},
        {"memory_id": "m-1"},
        FIGURES,
        "h1",
    )


def test_a_recording_is_written_under_users_and_read_back(tmp_path: Path) -> None:
    path = user_recording_path(tmp_path / "cassettes", "memory", "u-ana")
    save_user_recording(path, recording())

    doc = load_user_recording(path, tmp_path)

    assert path.relative_to(tmp_path).as_posix() == "cassettes/memory/users/u-ana.json"
    assert user_http_path(tmp_path, "memory", "u-ana").name == "u-ana.http.json"
    assert doc is not None
    assert doc.result == {"memory_id": "m-1"} and doc.figures["requests"] == 2
    assert doc.http == "h1" and doc.to_doc()["integrity"] == {"http": "h1"}
    assert load_user_recording(tmp_path / "none.json", tmp_path) is None


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda doc: doc.update(format="2"), 'no integer "format"'),
        (lambda doc: doc.update(format=99), "newer pytest-evalcases (format 99)"),
        (lambda doc: doc.update(key={"user.u-ana": 1}), 'no "key" of named hashes'),
        (lambda doc: doc.update(integrity={}), 'no "integrity" naming its HTTP recording'),
        (lambda doc: doc.update(labels=[]), '"labels" is not an object'),
    ],
)
def test_a_malformed_recording_is_refused_naming_the_file_and_the_next_step(
    tmp_path: Path, edit, said: str
) -> None:
    doc = recording().to_doc()
    edit(doc)
    path = tmp_path / "users" / "u-ana.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))

    with pytest.raises(CassetteError) as error:
        load_user_recording(path, tmp_path)

    message = str(error.value)
    assert message.startswith("ingestion recording users/u-ana.json ") and said in message
    next_step = "upgrade pytest-evalcases" if "newer" in said else "with --eval-ingest-only --live"
    assert message.endswith(next_step)


def test_nothing_is_written_through_a_symlinked_users_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "users").symlink_to(elsewhere)

    with pytest.raises(CassetteError, match="users/ is a symlink"):
        save_user_recording(user_recording_path(tmp_path, "memory", "u-ana"), recording())

    assert list(elsewhere.iterdir()) == []


def test_the_recordings_of_a_user_no_longer_declared_are_orphans(tmp_path: Path) -> None:
    users = tmp_path / "memory" / "users"
    users.mkdir(parents=True)
    for name in ("u-ana.json", "u-ana.http.json", "u-old.json", "u-old.http.json"):
        (users / name).write_text("{}")
    (tmp_path / "memory" / "users.json").write_text("{}")  # a case named "users": its own
    (tmp_path / "gone" / "users").mkdir(parents=True)
    (tmp_path / "gone" / "users" / "u-x.json").write_text("{}")

    known = {"memory": ["users", user_recording_stem("u-ana")]}
    orphans = [p.relative_to(tmp_path).as_posix() for p in find_orphans(tmp_path, known)]

    assert orphans == [
        "gone/users/u-x.json",
        "memory/users/u-old.http.json",
        "memory/users/u-old.json",
    ]


def test_a_symlinked_users_folder_is_left_alone(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "u-old.json").write_text("{}")
    (tmp_path / "cassettes" / "memory").mkdir(parents=True)
    (tmp_path / "cassettes" / "memory" / "users").symlink_to(elsewhere)

    assert find_orphans(tmp_path / "cassettes", {"memory": []}) == []
    assert [p.name for p, _ in left_alone(tmp_path / "cassettes")] == ["users"]


def test_the_users_folder_is_no_orphan_and_its_dead_temp_files_are_swept(tmp_path: Path) -> None:
    users = tmp_path / "memory" / "users"
    users.mkdir(parents=True)
    (users / "u-ana.json").write_text("{}")
    dead = users / "u-ana.json.tmp.999999999"  # no process has this pid
    dead.write_text("{")
    live = users / f"u-bo.json.tmp.{os.getpid()}"  # this process is still writing it
    live.write_text("{")

    assert find_orphans(tmp_path, {"memory": [user_recording_stem("u-ana")]}) == []
    assert remove_dead_temp_files(tmp_path) == 1
    assert not dead.exists() and live.exists() and (users / "u-ana.json").exists()


def test_the_identity_of_an_ingestion_is_its_result_and_its_exchanges(tmp_path: Path) -> None:
    """What a case's key names (`ingested.<user>`): read back, the same; another result (a
    fresh memory id) or other exchanges, another ingestion; timings and figures, the same."""
    path = user_recording_path(tmp_path, "memory", "u-ana")
    written = recording()
    save_user_recording(path, written)
    read = load_user_recording(path, tmp_path)

    assert read is not None and read.identity == written.identity
    later = build_user_recording(
        "memory", "u-ana", read.key, {}, {"memory_id": "m-1"}, {"duration_s": 9.0}, "h1"
    )
    assert later.identity == written.identity
    fresh = build_user_recording("memory", "u-ana", read.key, {}, {"memory_id": "m-2"}, {}, "h1")
    other = build_user_recording("memory", "u-ana", read.key, {}, {"memory_id": "m-1"}, {}, "h2")
    assert len({written.identity, fresh.identity, other.identity}) == 3
