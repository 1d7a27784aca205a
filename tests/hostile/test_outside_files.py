"""Files created outside the project (issue 30, "What to build" 1): the locks (and notes) the
processes of a run share live in `$TMPDIR/pytest-evalcases-locks-<uid>/`. In a shared /tmp another
account can plant a symlink there; before, the folder and the lock files were opened following
links, so a run created files at the link's target. Now the folder is owner-only and checked
(a real folder, ours, no group/other write), the files are opened with O_NOFOLLOW, and a
planted link is refused with an error naming the path and the next step."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from evalhelpers import Project, output

from pytest_evalcases.store import pair
from pytest_evalcases.store.pair import LOCK_FOLDER_NAME

pytestmark = pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX only")


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own, as TMPDIR would give (gettempdir caches it)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _elsewhere(tmp_path: Path) -> Path:
    target = tmp_path / "elsewhere"
    target.mkdir()
    return target


def test_the_lock_folder_is_made_owner_only(temp_root: Path) -> None:
    with pair.exclusive("a recording"):
        pass

    info = os.lstat(temp_root / LOCK_FOLDER_NAME)
    assert stat.S_ISDIR(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o700
    lock = next((temp_root / LOCK_FOLDER_NAME).iterdir())
    assert stat.S_IMODE(os.lstat(lock).st_mode) & 0o077 == 0


def test_a_link_planted_on_the_lock_folder_is_refused(temp_root: Path, tmp_path: Path) -> None:
    """Break: the lock files were created in the link's target."""
    target = _elsewhere(tmp_path)
    (temp_root / LOCK_FOLDER_NAME).symlink_to(target)

    with pytest.raises(pair.UnsafeTempFile) as raised, pair.exclusive("a recording"):
        pass

    message = str(raised.value)
    assert str(temp_root / LOCK_FOLDER_NAME) in message
    assert "is a symlink" in message and "TMPDIR" in message and "remove it" in message
    assert list(target.iterdir()) == []


def test_a_link_planted_on_a_lock_file_is_refused(temp_root: Path, tmp_path: Path) -> None:
    """Break: the lock file was opened through the link (creating or appending to its
    target)."""
    folder = temp_root / LOCK_FOLDER_NAME
    with pair.exclusive("a recording"):
        pass
    (lock,) = folder.iterdir()
    lock.unlink()
    victim = tmp_path / "victim"
    lock.symlink_to(victim)

    with pytest.raises(pair.UnsafeTempFile, match="is a symlink") as raised:
        with pair.exclusive("a recording"):
            pass

    assert str(lock) in str(raised.value)
    assert not victim.exists()


def test_a_lock_folder_others_can_write_in_is_refused(temp_root: Path) -> None:
    folder = temp_root / LOCK_FOLDER_NAME
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)

    with pytest.raises(pair.UnsafeTempFile, match="can be written by others") as raised:
        with pair.exclusive("a recording"):
            pass

    assert str(folder) in str(raised.value)


def test_a_note_written_outside_never_follows_a_link(temp_root: Path, tmp_path: Path) -> None:
    """The xdist ingestion note is opened as the locks are (O_NOFOLLOW, truncating)."""
    victim = tmp_path / "victim"
    victim.write_text("kept")
    note = pair.checked_lock_folder() / "x.ingested"
    note.symlink_to(victim)

    with pytest.raises(pair.UnsafeTempFile, match="is a symlink"):
        pair.open_outside(note, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)

    assert victim.read_text() == "kept"


def test_a_live_run_with_a_planted_link_says_so_and_writes_nothing_there(
    project: Project, temp_root: Path, tmp_path: Path
) -> None:
    """The case's error names the planted path and the next step; the run goes on."""
    target = _elsewhere(tmp_path)
    (temp_root / LOCK_FOLDER_NAME).symlink_to(target)
    project.write_text(
        "plain.py",
        "def run(case):\n"
        '    return {"answer": case["input"], "tool_calls": [], "retrieved": [], "context": []}\n',
    )
    cases = [{"id": "c1", "input": "q", "reference": "q"}]
    project.write_suite(
        {"name": "s", "system": "plain:run", "stages": ["exact_match"], "cases": cases}
    )

    result = project.run("--live", "-p", "no:cacheprovider")

    text = output(result)
    assert result.ret != 0, text
    assert f"{temp_root / LOCK_FOLDER_NAME} is a symlink" in text, text
    assert "TMPDIR" in text
    assert list(target.iterdir()) == []
