"""Reporting layer: per-case result dicts in; results.json, report.md, dashboard.html out.

Pure functions over plain dicts; no pytest imports.
"""

from __future__ import annotations

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
