"""GitHub-flavoured markdown tables whose cells are safe to show: what report.md, compare.md
and recording-changes.md build their tables with."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..core.names import clip

_CELL_CHARS = 200

# Entities rather than backslash escapes: GitHub renders a subset of raw HTML in
# markdown, so "<img ...>" from a model answer must not reach it as a tag, and a
# backslash in the text must not turn our "\|" into "\\|" (which ends the cell).
_CELL_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\\": "&#92;",
        "|": "\\|",
    }
)
# A link or an image needs `](` (inline) or a definition `[label]: url` at the start of a
# line, which no cell or one-line text can hold: escaping the `(` of `](` is all it takes for
# "![x](http://host/track.png)" not to become an image that loads when the PR comment is
# viewed, nor "[text](url)" a link that hides its target. Other brackets and parentheses,
# "(bootstrap)", "[0.769, 1.000]", stay as written.
_LINK_OPENING = "]("


def escape_cell(value: object, limit: int = _CELL_CHARS) -> str:
    """One table cell: single line, pipes escaped, HTML, links and images inert, at most
    `limit` chars (before escaping); nothing else escaped."""
    text = clip(str(value if value is not None else ""), limit, ellipsis="…")
    return text.translate(_CELL_ESCAPES).replace(_LINK_OPENING, "]\\(") or " "


class CellLines(tuple[str, ...]):
    """A cell of several lines: each escaped and cut as a cell is, joined by `<br>` (the one raw
    tag a cell holds; GitHub renders it as a line break)."""

    __slots__ = ()


def _cell(value: object) -> str:
    if isinstance(value, CellLines):
        return "<br>".join(escape_cell(line) for line in value) or " "
    return escape_cell(value)


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[object]], align: Sequence[str] | None = None
) -> list[str]:
    """A GitHub-flavoured markdown table: a header, its separator (`align`: "l" or "r" per
    column) and a line per row, every cell through `escape_cell` (a `CellLines` line by line)."""
    align = align or ["l"] * len(header)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = [
        "| " + " | ".join(escape_cell(h) for h in header) + " |",
        "| " + " | ".join(sep) + " |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def rows_left_out(total: int, cap: int) -> list[str]:
    """The note under a report.md table cut at `cap` rows: dashboard.html lists them all."""
    return ["", f"_…and {total - cap} more (see dashboard.html)_"] if total > cap else []


WRAP_WIDTH = 100
# A continuation line starts with a word (a stage name, a figure), never with what would open a
# block of its own there: `- `, `1. `, `#`, `>`, `===`, a fence or an indented code block.
_SAFE_LINE_START = re.compile(r"[A-Za-z0-9]+(?![A-Za-z0-9.)])")


def wrapped_item(prefix: str, text: str, width: int = WRAP_WIDTH) -> list[str]:
    """A list item holding `text` whole, escaped as a cell is but never cut: broken after its
    `, ` into lines of about `width` characters, each continuation indented two spaces (one
    paragraph of the item, as GitHub renders it)."""
    parts = escape_cell(text, limit=len(text) + 1).split(", ")
    lines = [prefix + parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 2 + len(part) > width and _SAFE_LINE_START.match(part):
            lines[-1] += ","
            lines.append("  " + part)
        else:
            lines[-1] += ", " + part
    return lines
