"""The hooks pytest-evalcases calls: implement them in a conftest.py or a plugin, by name, as any
pytest hook (`hooks.pytest_addhooks` adds these specs). docs/extending.md ("Hooks") shows each
with an example.

Where each runs: `pytest_evalcases_case_result` where the case runs (an xdist worker: what it
adds travels to the controller with the report); the other two on the controller (or the one
process) at the end of the run, so under xdist they must be in a conftest.py pytest loads at
start-up (the rootdir's, or one on the path given to pytest) or in a plugin. A hook that
raises errors what it was for, names the hook and the file it is in, and loses no other report.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_evalcases_case_result(item: pytest.Item, result: dict[str, Any]) -> None:
    """Add fields to (or change) one case's result before any report reads it: the per-stage
    summary, results.json, report.md, the dashboard, the baseline gate.

    :param item: the case's pytest item (`item.case`, `item.ctx.suite` on a case; a file or
        case that could not load has neither).
    :param result: the case's result dict, changed in place; what it holds must stay JSON
        (strings, numbers, booleans, None, lists, dicts): xdist carries it to the controller.
    """


@pytest.hookspec
def pytest_evalcases_update_results(config: pytest.Config, results: dict[str, Any]) -> None:
    """Change the results document before results.json is written (--eval-report), as
    pytest-benchmark's `pytest_benchmark_update_json`. Controller only; report.md, the
    dashboard, the baseline gate and the summary read the document as it was.

    :param results: the document (`run`, `totals`, `stages`, `cases`, ...), changed in place.
    """


@pytest.hookspec
def pytest_evalcases_summary_lines(config: pytest.Config, results: dict[str, Any]) -> list[str]:
    """Lines to add to the per-stage summary in the terminal, after its tables. Controller
    only.

    :param results: the run's results document (what results.json holds, before
        `pytest_evalcases_update_results`).
    :return: the lines (each implementation's, in pytest's hook order); None or [] adds none.
    """
