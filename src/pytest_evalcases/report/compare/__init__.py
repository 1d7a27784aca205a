"""Side-by-side comparison of two runs (`python -m pytest_evalcases compare A/ B/`): pure
functions from two results.json documents to a comparison dict, compare.md and compare.html."""

from __future__ import annotations

from .build import COMPARE_FORMAT, compare_runs
from .markdown import render_compare_markdown
from .page import render_compare_html

COMPARE_MD = "compare.md"
COMPARE_HTML = "compare.html"

__all__ = [
    "COMPARE_FORMAT",
    "COMPARE_HTML",
    "COMPARE_MD",
    "compare_runs",
    "render_compare_html",
    "render_compare_markdown",
]
