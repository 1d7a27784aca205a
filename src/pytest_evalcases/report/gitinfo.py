"""Run metadata helpers that touch the outside world (kept out of the pure modules)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_commit(cwd: str | Path, timeout: float = 2.0) -> str | None:
    """HEAD commit of the repository at cwd, or None (not a repo, no git, timeout)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=str(cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    if proc.returncode != 0 or not commit:
        return None
    return commit


def git_dirty(cwd: str | Path, timeout: float = 2.0) -> bool | None:
    """Whether tracked files differ from HEAD (modified, staged, deleted), or None (not a repo,
    no git, timeout). Untracked files do not count: a report folder written into the working
    tree would make every second run "dirty"."""
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=str(cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return bool(proc.stdout.strip())


def git_state(cwd: str | Path) -> dict[str, str | bool | None]:
    """{"commit": HEAD or None, "dirty": uncommitted changes to tracked files, or None}."""
    commit = git_commit(cwd)
    return {"commit": commit, "dirty": git_dirty(cwd) if commit is not None else None}
