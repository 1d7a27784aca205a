"""What the suite runs: the agent over one database connection, its run turned into a trace."""

from __future__ import annotations

import sqlite3

from pytest_evalcases.adapters import fingerprint_of, from_pydantic_ai

from .agent import agent


class OrderDesk:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def fingerprint(self):  # the model, the prompt and the tool's schema are in the key
        return fingerprint_of(agent)

    def run(self, case):
        result = agent.run_sync(case.input, deps=self.connection)
        return from_pydantic_ai(result)
