"""The shop's sqlite database, built from seed.sql: a file for the agent (the session fixture
makes one per test session), in memory for the stage that runs the recorded SQL again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SEED = Path(__file__).with_name("seed.sql")


def build(path: str | Path = ":memory:") -> sqlite3.Connection:
    connection = sqlite3.connect(str(path), check_same_thread=False)
    connection.executescript(SEED.read_text(encoding="utf-8"))
    connection.commit()
    return connection


def rows(connection: sqlite3.Connection, sql: str) -> list[list[object]]:
    """The rows a query returns, as lists (the shape a case's `expected_rows` is written in).
    Only a SELECT is run: the agent reads the shop's data, it never changes it."""
    if not sql.lstrip().lower().startswith("select"):
        raise ValueError(f"only SELECT statements are run, not: {sql}")
    return [list(row) for row in connection.execute(sql).fetchall()]
