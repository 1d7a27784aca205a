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
