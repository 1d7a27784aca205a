"""Fixtures of the engine's unit tests: the one-case suite of geo_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evalcases.core.schema import Case
from pytest_evalcases.domain.context import SuiteContext

from .geo_suite import geo_case, geo_context


@pytest.fixture
def ctx(tmp_path: Path) -> SuiteContext:
    return geo_context(tmp_path)


@pytest.fixture
def case() -> Case:
    return geo_case()
