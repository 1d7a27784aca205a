"""report/gitinfo against a real `git`: no commit outside a repository, the full hash inside one."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pytest_evalcases.report import git_commit


def test_git_commit(tmp_path: Path) -> None:
    assert git_commit(tmp_path / "no-such-dir") is None
    assert git_commit(tmp_path) is None  # not a repository
    try:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=10)
        subprocess.run(
            [
                "git",
                "-C",
                str(tmp_path),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        pytest.skip("git is not available")
    commit = git_commit(tmp_path)
    assert commit is not None and re.fullmatch(r"[0-9a-f]{40}", commit)
