"""A shop's order desk on pydantic-ai: one `run_sql` tool over a sqlite database, a scripted
`FunctionModel` that writes the SQL. The suite in `cases/orders.json` builds the system from
the pytest fixture `sql_agent` (conftest.py), which opens the database once per session."""
