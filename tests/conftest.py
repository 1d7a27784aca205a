"""Fixtures of the pytester end-to-end tests (pytester itself is enabled by the root conftest)."""

from __future__ import annotations

import pytest
from evalhelpers import TEST_COLUMNS, Project
from scripted_openai import scripted_openai  # noqa: F401 - a fixture of the adapter tests


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    """An empty eval project (ini, system module, input file) in pytester's directory; its runs
    are pytest subprocesses, so each run imports the system afresh."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("COLUMNS", TEST_COLUMNS)
    return Project(pytester.path, pytester.runpytest_subprocess).write_base()
