"""The agent: pydantic-ai with one tool, `run_sql`, over the connection it is given."""

from __future__ import annotations

import sqlite3

from pydantic_ai import Agent, RunContext

from . import database
from .model import model

SYSTEM_PROMPT = (
    "You are the order desk of a small shop. Answer questions about orders, customers and "
    "products by writing one SQLite SELECT for run_sql (tables: customers, products, orders, "
    "order_lines), then answer in one courteous sentence from the rows it returns."
)


def run_sql(ctx: RunContext[sqlite3.Connection], sql: str) -> list[list[object]]:
    """Run one SQLite SELECT on the shop's database and return its rows."""
    return database.rows(ctx.deps, sql)


agent = Agent(model(), deps_type=sqlite3.Connection, system_prompt=SYSTEM_PROMPT, tools=[run_sql])
