"""Reporting layer: per-case result dicts in; results.json, report.md, dashboard.html out.

Pure functions over plain dicts; no pytest imports.

The names below load on first use (PEP 562), for start-up cost: every run imports this package
(the plugin reads `report.run` at start-up), and `aggregate` pulls numpy and `dashboard` jinja2
(~0.2 s), which a run without --eval-report never needs.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aggregate import RESULTS_FORMAT, RESULTS_VERSION, aggregate
    from .dashboard import render_dashboard
    from .gitinfo import git_commit
    from .markdown import append_step_summary, render_markdown
    from .merge import MergeError, merge_results
    from .writers import write_reports

__all__ = [
    "RESULTS_FORMAT",
    "RESULTS_VERSION",
    "MergeError",
    "aggregate",
    "append_step_summary",
    "git_commit",
    "merge_results",
    "render_dashboard",
    "render_markdown",
    "write_reports",
]

# public name -> the submodule that defines it
_WHERE = {
    "RESULTS_FORMAT": "aggregate",
    "RESULTS_VERSION": "aggregate",
    "aggregate": "aggregate",
    "render_dashboard": "dashboard",
    "git_commit": "gitinfo",
    "append_step_summary": "markdown",
    "render_markdown": "markdown",
    "MergeError": "merge",
    "merge_results": "merge",
    "write_reports": "writers",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


class _Package(types.ModuleType):
    """`report.aggregate` stays the function, as it was when this package imported it eagerly:
    importing the submodule of the same name sets the module on its package, over it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "aggregate" and isinstance(value, types.ModuleType):
            value = value.aggregate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
