"""Run metadata helpers that touch the outside world (kept out of the pure modules)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _git_output(args: list[str], cwd: str | Path, timeout: float) -> str | None:
    """What `git <args>` prints at cwd, or None (not a repo, no git, a timeout, an error)."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_commit(cwd: str | Path, timeout: float = 2.0) -> str | None:
    """HEAD commit of the repository at cwd, or None (not a repo, no git, timeout)."""
    output = _git_output(["rev-parse", "HEAD"], cwd, timeout)
    return output.strip() or None if output is not None else None


def git_dirty(cwd: str | Path, timeout: float = 2.0) -> bool | None:
    """Whether tracked files differ from HEAD (modified, staged, deleted), or None (not a repo,
    no git, timeout). Untracked files do not count: a report folder written into the working
    tree would make every second run "dirty"."""
    output = _git_output(["status", "--porcelain", "--untracked-files=no"], cwd, timeout)
    return None if output is None else bool(output.strip())


def git_state(cwd: str | Path) -> dict[str, str | bool | None]:
    """{"commit": HEAD or None, "dirty": uncommitted changes to tracked files, or None}."""
    commit = git_commit(cwd)
    return {"commit": commit, "dirty": git_dirty(cwd) if commit is not None else None}
