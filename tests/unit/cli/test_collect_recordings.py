"""`python -m pytest_evalcases collect-recordings`: the recordings CI shards wrote, copied into
one checkout; a file two shards wrote is an error naming both, and then nothing is copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_evalcases import cli


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def collect(*args: str | Path) -> int:
    return cli.main(["collect-recordings", *map(str, args)])


@pytest.fixture
def shards(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Three shards' artifacts: two wrote cassettes (one an HTTP recording too), one nothing."""
    one, two, empty = tmp_path / "shard-1", tmp_path / "shard-2", tmp_path / "shard-3"
    write(one / "cassettes/qa/a.json", "a from shard 1")
    write(one / "cassettes/qa/a.http.json", "a's http")
    write(two / "cassettes/qa/b.json", "b from shard 2")
    write(two / "cassettes/other/c.json", "c from shard 2")
    empty.mkdir()
    return one, two, empty


def test_copies_every_shard_file_to_its_path(
    shards: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = tmp_path / "checkout"
    write(checkout / "cassettes/qa/b.json", "b as committed")
    write(checkout / "cassettes/qa/kept.json", "untouched")

    assert collect(*shards, "--into", checkout) == 0

    files = {
        p.relative_to(checkout).as_posix(): p.read_text()
        for p in sorted(checkout.rglob("*"))
        if p.is_file()
    }
    assert files == {
        "cassettes/other/c.json": "c from shard 2",
        "cassettes/qa/a.http.json": "a's http",
        "cassettes/qa/a.json": "a from shard 1",
        "cassettes/qa/b.json": "b from shard 2",
        "cassettes/qa/kept.json": "untouched",
    }
    one, two, empty = shards
    assert capsys.readouterr().out == (
        f"collected 4 file(s) from 3 shard(s) into {checkout} ({one}: 2, {two}: 2, {empty}: 0)\n"
    )


def test_a_file_two_shards_wrote_is_an_error_naming_both(
    shards: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, empty = shards
    write(two / "cassettes/qa/a.json", "a from shard 2 as well")  # e.g. a shared user recording
    write(empty / "cassettes/qa/a.json", "and shard 3")
    write(empty / "cassettes/other/c.json", "c from shard 3")
    checkout = tmp_path / "checkout"
    checkout.mkdir()

    assert collect(one, two, empty, "--into", checkout) == 2

    assert list(checkout.iterdir()) == []  # nothing copied, not even the files that were fine
    err = capsys.readouterr().err
    assert err == (
        "error: 2 file(s) written by more than one shard; nothing was copied:\n"
        f"  cassettes/other/c.json: written by {two} and {empty}\n"
        f"  cassettes/qa/a.json: written by {one} and {two} and {empty}\n"
        "re-record the suites they belong to in one job (pytest --live-stale "
        "cases/<suite>.json), or keep the cases that share a recording in one shard\n"
    )


def test_a_missing_shard_folder_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "recorded-shard-*"
    assert collect(missing, "--into", tmp_path) == 2
    assert capsys.readouterr().err == (
        f"error: {missing}: not a folder; each SHARD is the folder of the files one shard wrote\n"
    )


def test_a_symbolic_link_in_a_shard_is_refused(
    shards: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = shards[0]
    secret = write(tmp_path / "outside.txt", "not a recording")
    os.symlink(secret, one / "cassettes/qa/link.json")
    checkout = tmp_path / "checkout"

    assert collect(one, "--into", checkout) == 2

    assert not checkout.exists()
    assert capsys.readouterr().err == (
        f"error: {one / 'cassettes/qa/link.json'}: not a regular file; a shard's recordings are "
        "plain files: remove it from the shard's artifact\n"
    )


def test_a_link_where_a_file_goes_is_refused_before_any_copy(
    shards: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, _ = shards
    checkout = tmp_path / "checkout"
    outside = write(tmp_path / "elsewhere.json", "must stay")
    (checkout / "cassettes/qa").mkdir(parents=True)
    os.symlink(outside, checkout / "cassettes/qa/b.json")

    assert collect(one, two, "--into", checkout) == 2

    assert outside.read_text() == "must stay"
    assert not (checkout / "cassettes/qa/a.json").exists()
    err = capsys.readouterr().err
    assert err.startswith(f"error: {checkout / 'cassettes/qa/b.json'}: is a symbolic link where ")
    assert f"a shard wrote a file ({two / 'cassettes/qa/b.json'}); nothing was copied" in err
