"""Calling the plugin's own hooks (hookspecs.py): each asked once per process whether any
conftest or plugin implements it (a hook nobody implements costs one look-up per case), and a
hook that raises is reported naming the hook and where it is, without losing any other report.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..core.names import shown_file
from ..store.redaction import redact_for_output

CASE_RESULT = "pytest_evalcases_case_result"
UPDATE_RESULTS = "pytest_evalcases_update_results"
SUMMARY_LINES = "pytest_evalcases_summary_lines"

# Per run: which of the hooks have implementations (asked once), and the errors they raised.
_IMPLEMENTED = pytest.StashKey[dict[str, bool]]()
_ERRORS = pytest.StashKey[list[str]]()
_LINES = pytest.StashKey[list[str]]()  # the summary lines the hooks gave


def implemented(config: pytest.Config, name: str) -> bool:
    """Whether a conftest or plugin implements hook `name`: asked once per run, after
    collection loaded every conftest (the first case's report is after it)."""
    known = config.stash.setdefault(_IMPLEMENTED, {})
    found = known.get(name)
    if found is None:
        found = known[name] = bool(getattr(config.hook, name).get_hookimpls())
    return found


def hook_errors(config: pytest.Config) -> list[str]:
    """The hook errors of this run (the controller's), for the end of the summary."""
    return config.stash.get(_ERRORS, [])


def extend_case_result(item: pytest.Item, report: pytest.TestReport) -> None:
    """pytest_evalcases_case_result on the result the report carries; a hook that raises (or
    adds what is not JSON) errors the case with its message."""
    result = report.evalcase  # type: ignore[attr-defined]
    config = item.config
    written = dict(result)  # the plugin's fields, put back if the hook fails
    try:
        config.hook.pytest_evalcases_case_result(item=item, result=result)
        json.dumps(result)  # xdist carries it to the controller, results.json stores it
    except Exception as exc:
        message = f"{_failure(config, CASE_RESULT, exc)}; fix the hook"
        report.outcome = "failed"
        report.longrepr = message
        report.evalcase_error = True  # type: ignore[attr-defined]
        result.clear()
        result.update(written)
        try:
            json.dumps(result)
        except (TypeError, ValueError):  # the hook put it inside a field of ours: only names
            keep = ("nodeid", "suite", "id", "file", "index", "category", "group")
            result = {name: written.get(name) for name in keep}
            result.update(stages={}, recording={})
        result["outcome"] = "error"
        result["first_failure"] = {"stage": None, "reason": message}
    report.evalcase = redact_for_output(result)  # type: ignore[attr-defined]


def results_updater(config: pytest.Config) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """What turns the results document into results.json's (a copy, changed by
    pytest_evalcases_update_results), or None when no conftest or plugin implements it. A hook
    that raises leaves results.json as the plugin wrote it, and fails the run."""
    if not implemented(config, UPDATE_RESULTS):
        return None

    def update(doc: dict[str, Any]) -> dict[str, Any]:
        results = copy.deepcopy(doc)
        try:
            config.hook.pytest_evalcases_update_results(config=config, results=results)
            json.dumps(results)
        except Exception as exc:
            failure = _failure(config, UPDATE_RESULTS, exc)
            _note(config, f"{failure}: results.json holds the results without its changes")
            return doc
        return results

    return update


def gather_summary_lines(config: pytest.Config, doc: dict[str, Any]) -> None:
    """Ask conftests and plugins for their summary lines (at the end of the session, where a
    hook error can still fail the run); `added_summary_lines` gives them to the summary."""
    if not implemented(config, SUMMARY_LINES):
        return
    try:
        answers = config.hook.pytest_evalcases_summary_lines(config=config, results=doc)
        lines = [str(line) for lines in answers for line in (lines or ())]
    except Exception as exc:
        _note(config, f"{_failure(config, SUMMARY_LINES, exc)}: its lines are not shown")
        return
    config.stash[_LINES] = lines


def added_summary_lines(config: pytest.Config) -> list[str]:
    return config.stash.get(_LINES, [])


def _note(config: pytest.Config, message: str) -> None:
    config.stash.setdefault(_ERRORS, []).append(message)


def _failure(config: pytest.Config, name: str, exc: BaseException) -> str:
    """`hook pytest_evalcases_case_result (conftest.py:12) raised KeyError: 'x'`: the
    implementation the traceback went through, found among the hook's."""
    where = _implementation_of(config, name, exc)
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"hook {name}{f' ({where})' if where else ''} raised {said}"


def _implementation_of(config: pytest.Config, name: str, exc: BaseException) -> str | None:
    """Where the implementation that raised is: `tests/conftest.py:12`, or the plugin's name
    and file; None if the traceback went through none of them."""
    codes = {}
    for impl in getattr(config.hook, name).get_hookimpls():
        code = getattr(impl.function, "__code__", None)
        if code is not None:
            codes[code] = impl
    found = None
    traceback = exc.__traceback__
    while traceback is not None:
        found = codes.get(traceback.tb_frame.f_code, found)
        traceback = traceback.tb_next
    if found is None:
        return None
    code = found.function.__code__
    path = Path(code.co_filename)
    where = f"{shown_file(path, config.rootpath)}:{code.co_firstlineno}"
    if path.name == "conftest.py":
        return where
    return f"plugin {found.plugin_name!r}, {where}"
