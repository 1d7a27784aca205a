"""The importers' tests run the command in a fresh project folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder, the current directory: the project's root the command writes into."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def written_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
