"""The suite's own stages (`"stage_modules": ["checks"]` in cases/orders.json): pure over the
case and the recorded trace, run on every replay like the built-in stages."""

from __future__ import annotations

from functools import cache

from shop_agent import database

import pytest_evalcases as ev


@cache
def _shop():
    """The shop's data in memory, built once per process: the recorded SQL runs against it."""
    return database.build()


def _recorded_sql(trace) -> str | None:
    calls = [call for call in trace.tool_calls if call.name == "run_sql"]
    return calls[-1].args["sql"] if calls else None


@ev.stage("sql_returns_rows", threshold=1.0, reads=["expected_rows"])
def sql_returns_rows(case, trace):
    """The SQL the agent wrote returns the rows the case expects."""
    expected = case.fields.get("expected_rows")
    if expected is None:
        return ev.Score(None, reason="no expected rows")
    sql = _recorded_sql(trace)
    if sql is None:
        return ev.Score(0.0, reason="the agent ran no SQL")
    rows = database.rows(_shop(), sql)
    return ev.Score(
        rows == expected,
        reason=f"{len(rows)} rows, as expected" if rows == expected else "other rows than expected",
        shows={"rows": rows, "expected_rows": expected, "sql": sql},
    )


@ev.stage("quotes_order_id", threshold=1.0, reads=["order_id"])
def quotes_order_id(case, trace):
    """A reply about an order names it, so the customer knows which one is meant."""
    order = case.fields.get("order_id")
    if order is None:
        return ev.Score(None, reason="no order in question")
    quoted = str(order) in trace.answer
    return ev.Score(quoted, reason=f"order {order} {'quoted' if quoted else 'not quoted'}")
