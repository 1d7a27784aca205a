"""The terminal's tables, laid out to its width: the per-case table (full stage names where they
fit, else abbreviated headers with a legend, the columns wrapped into blocks) and the pass-rate
tables per category and per group. Rows of text cells in, lines out: what goes in the cells is
counted in `terminal`.
"""

from __future__ import annotations

import math
import re
import textwrap
from array import array
from collections.abc import Mapping, Sequence

from ..core.names import aligned, clip
from ..core.outcomes import ACCURACY_LABELS, COMPLETENESS_LABELS
from ..core.stats import wilson_interval

# A memory suite's label counts, compact enough for the terminal's category and group rows.
LABEL_COLUMNS = (("C/P/I", COMPLETENESS_LABELS), ("right/wrong", ACCURACY_LABELS))
LABEL_LEGENDS = {
    "C/P/I": "C/P/I: cases whose context was COMPLETE / PARTIAL / INSUFFICIENT",
    "right/wrong": "right/wrong: cases whose answer was CORRECT / WRONG",
}
MIN_FAILURE_CHARS = 24  # a narrower first-failure column moves to a block of its own
# Column headers of the totals and pass-rate tables, for a terminal too narrow for the full ones.
SHORT_HEADERS = {
    "passed": "pass",
    "failed": "fail",
    "skipped": "skip",
    "judge errors": "judge err",
    "unstable": "unst",
    "mean score": "mean",
    "pass rate": "rate",
}
# A part of a failure reason that is a score against its threshold (`recall@3 0.00 < 1.00`,
# `0.33 < 0.50 (2 of 3 items met)`): the stage's column shows the score already.
SCORE_PART = re.compile(r"^(?:[\w@.]+ )?-?\d+(?:\.\d+)? [<>]=? -?\d+(?:\.\d+)?(?: \(.*\))?$")

# Short stage headers for a table that does not fit with the full names (with a legend).
STAGE_ABBREVIATIONS = {
    "retrieval": "retr",
    "exact_match": "em",
    "token_f1": "f1",
    "faithfulness": "faith",
    "contextual_recall": "c_rec",
    "contextual_precision": "c_prec",
    "contextual_relevancy": "c_rel",
    "answer_relevancy": "a_rel",
    "correctness": "corr",
    "context_completeness": "compl",
    "answer_accuracy": "acc",
    "citations": "cite",
    "schema": "schema",  # as short as its cells: no need to cut it to "schem"
    "rubric": "rubric",
    "locomo_f1": "lc_f1",
    "hotpotqa_em": "hq_em",
    "hotpotqa_f1": "hq_f1",
    "hotpotqa_sp_f1": "hq_sp",
    "2wikimultihopqa_em": "2w_em",
    "2wikimultihopqa_f1": "2w_f1",
    "2wikimultihopqa_sp_f1": "2w_sp",
    "musique_em": "mq_em",
    "musique_f1": "mq_f1",
    "musique_sp_f1": "mq_sp",
}


def rate_table(
    title: str,
    tallies: Mapping[str, list[int]],
    names: list[str],
    labels: Mapping[str, Mapping[str, int]] | None = None,
    scores: Mapping[str, Mapping[str, array[float]]] | None = None,
    means: Sequence[str] = (),
    width: int | None = None,
    label_legends: bool = True,
) -> list[str]:
    """`title passed scored pass rate`; with `scores`, the 95% Wilson interval and the mean of
    each stage in `means`; with `labels`, a memory suite's context completeness counts
    (COMPLETE/PARTIAL/INSUFFICIENT as `C/P/I`) and answer accuracy counts (CORRECT/WRONG as
    `right/wrong`), explained under the table (unless `label_legends` is false). Wider than
    `width`: the stage names of the means abbreviated (with a legend), then the other headers
    shortened (SHORT_HEADERS)."""
    seen = {label for counts in (labels or {}).values() for label in counts}
    columns = [(header, known) for header, known in LABEL_COLUMNS if seen & set(known)]
    header = [title, "passed", "scored", "pass rate"]
    if scores is not None:
        header.append("95% CI")
    header += [name for name, _ in columns]
    full = [f"mean {name}" for name in means]
    short = [f"mean {h}" for h in stage_headers(means)]
    rows = [header + full]
    for name in names:
        passed, scored = tallies[name]
        rate = f"{passed / scored:.0%}" if scored else "-"
        row = [name, str(passed), str(scored), rate]
        if scores is not None:
            ci = wilson_interval(passed, scored)
            row.append(f"{ci[0]:.0%}-{ci[1]:.0%}" if ci else "-")
        counts = (labels or {}).get(name, {})
        row += ["/".join(str(counts.get(label, 0)) for label in known) for _, known in columns]
        own = (scores or {}).get(name, {})
        row += [f"{math.fsum(own[m]) / len(own[m]):.3f}" if own.get(m) else "-" for m in means]
        rows.append(row)
    lines = aligned(rows)
    shown = list(means)
    abbreviated = width is not None and full != short and max(map(len, lines)) > width
    if abbreviated:
        rows[0] = header + short
        lines = fitted(rows, width)
        while shown and max(map(len, lines)) > width:  # the last means go, named below
            shown.pop()
            rows = [row[: len(row) - 1] for row in rows]
            lines = fitted(rows, width)
    else:
        lines = fitted(rows, width)
    if abbreviated:  # the legend of the short headers, only when the table uses them
        pairs = zip(stage_headers(means), means, strict=True)
        lines += _legend([f"{a} = {n}" for a, n in pairs if a != n and n in shown], width or 0)
    if len(shown) < len(means):
        hidden = ", ".join(means[len(shown) :])
        lines += wrapped(f"(too narrow for the mean of {hidden}: report.md has it)", width)
    if label_legends:
        lines += [line for name, _ in columns for line in wrapped(LABEL_LEGENDS[name], width)]
    return lines


def fitted(rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """`aligned(rows)`; wider than `width`, with the short headers of SHORT_HEADERS."""
    lines = aligned(rows)
    if width is None or max(map(len, lines)) <= width:
        return lines
    return aligned([[SHORT_HEADERS.get(cell, cell) for cell in rows[0]], *rows[1:]])


def wrapped(text: str, width: int | None) -> list[str]:
    """A note under a table, wrapped to `width` between words (continuation lines indented)."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(
        text, max(width, 20), subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )


def fit_failure(cell: str, size: int) -> str:
    """A first-failure cell (`stage: reason; reason`) within `size` characters, keeping the
    names it holds: first the parts that compare a score with its threshold go (the stage's
    column shows the score), then the stage name is abbreviated, then the last parts go (`; ...`
    says so); only then is the text cut. `retrieval: recall@3 0.00 < 1.00; missing: encryption`
    in 28 characters is `retr: missing: encryption`."""
    if len(cell) <= size:
        return cell
    label, sep, reason = cell.partition(": ")
    if not sep:
        return clip(cell, size, one_line=False)
    parts = reason.split("; ")
    named = [part for part in parts if not SCORE_PART.match(part)] or parts
    short = " ".join(STAGE_ABBREVIATIONS.get(word, word) for word in label.split(" "))
    for shown in dict.fromkeys((label, short)):
        for count in range(len(named), 0, -1):
            more = "; ..." if count < len(named) else ""
            text = f"{shown}: {'; '.join(named[:count])}{more}"
            if len(text) <= size:
                return text
    return clip(f"{short}: {'; '.join(named)}", size, one_line=False)


def failure_lines(cell: str, size: int, more: int | None = None) -> list[str]:
    """A first-failure cell in a column `size` characters wide: on one line when it fits with
    its names whole (`fit_failure`: the scores go first, then the stage name is abbreviated);
    else its names (the scores left out) from that column on, and the rest wrapped to `more`
    characters a line: a narrow column still shows the whole reason (it was cut to the column's
    width)."""
    fitted = fit_failure(cell, size)
    if not fitted.endswith("...") or fitted == cell:
        return [fitted]
    label, sep, reason = cell.partition(": ")
    if sep:
        parts = reason.split("; ")
        named = [part for part in parts if not SCORE_PART.match(part)] or parts
        cell = f"{label}: {'; '.join(named)}"
    first = textwrap.wrap(cell, size, break_on_hyphens=False)[0]
    rest = cell[len(first) :].strip()
    return [first, *textwrap.wrap(rest, more or size, break_on_hyphens=False)]


def stage_headers(stages: Sequence[str]) -> list[str]:
    """Short, distinct headers for the stage columns (see STAGE_ABBREVIATIONS)."""
    headers: list[str] = []
    for name in stages:
        short = STAGE_ABBREVIATIONS.get(name, name[:5])
        candidate, n = short, 2
        while candidate in headers:
            candidate, n = f"{short}{n}", n + 1
        headers.append(candidate)
    return headers


def case_table(
    stages: Sequence[str], rows: Sequence[Sequence[str]], width: int | None
) -> list[str]:
    """The per-case table: `rows` are [case, category, outcome, *stage cells, first failure].

    Within `width`: the full stage names if the table fits on one line a case (the first
    failure in the room left, at least MIN_FAILURE_CHARS, over more lines when it must:
    `failure_lines`); else abbreviated stage headers
    with a legend, the columns wrapped into blocks that each repeat the case column when even
    those do not fit (the first failure last)."""
    full = ["case", "category", "outcome", *stages, "first failure"]
    if width is None:
        return aligned([full, *rows])
    blocks = _blocks(full, rows, width)
    if len(blocks) == 1 or not stages:
        return _render_blocks(full, rows, blocks, width)
    short = stage_headers(stages)
    headers = ["case", "category", "outcome", *short, "first failure"]
    lines = _render_blocks(headers, rows, _blocks(headers, rows, width), width)
    return lines + _legend(
        [f"{a} = {n}" for a, n in zip(short, stages, strict=True) if a != n], width
    )


def _legend(entries: list[str], width: int) -> list[str]:
    """`stages: retr = retrieval, ...`, wrapped to `width` between entries, never inside one."""
    lines: list[str] = []
    line = "stages:"
    for number, entry in enumerate(entries):
        piece = entry + ("," if number < len(entries) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip() not in ("", "stages:"):
            lines.append(line)
            line = " "
        line += " " + piece
    if entries:
        lines.append(line)
    return lines


def _label_width(rows: Sequence[Sequence[str]], width: int) -> int:
    """The case column: as wide as its longest label, but never more than half the width."""
    return min(max(len("case"), *(len(row[0]) for row in rows)), max(20, width // 2))


def _blocks(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[list[tuple[int, int]]]:
    """Columns packed greedily into blocks of at most `width` characters: (column, width)
    pairs, each block starting with the case column; the last column (the first failure) takes
    the room left (what does not fit goes on below), or starts a block of its own when that is
    under MIN_FAILURE_CHARS."""
    widths = [max(len(headers[i]), *(len(row[i]) for row in rows)) for i in range(len(headers))]
    widths[0] = _label_width(rows, width)
    last = len(headers) - 1
    blocks: list[list[tuple[int, int]]] = []
    block, used = [(0, widths[0])], widths[0]
    for column in range(1, last):
        if len(block) > 1 and used + 2 + widths[column] > width:
            blocks.append(block)
            block, used = [(0, widths[0])], widths[0]
        block.append((column, widths[column]))
        used += 2 + widths[column]
    room = width - used - 2
    if room < min(widths[last], MIN_FAILURE_CHARS) and len(block) > 1:
        blocks.append(block)
        block, used = [(0, widths[0])], widths[0]
        room = width - used - 2
    block.append((last, max(min(widths[last], room), len(headers[last]))))
    blocks.append(block)
    return blocks


def _render_blocks(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    blocks: list[list[tuple[int, int]]],
    width: int,
) -> list[str]:
    lines: list[str] = []
    last = len(headers) - 1  # the first failure: whole, over several lines if it must
    for number, block in enumerate(blocks):
        if number:
            lines.append("")
        for row in [headers, *rows]:
            cells = [clip(row[column], size, one_line=False) for column, size in block]
            more: list[str] = []
            indent = block[0][1] + 2  # what does not fit goes on below, past the case column
            if row is not headers and block[-1][0] == last:
                first, *more = failure_lines(row[last], block[-1][1], width - indent)
                cells[-1] = first
            lines.append(
                "  ".join(c.ljust(size) for c, (_, size) in zip(cells, block, strict=True)).rstrip()
            )
            lines += [" " * indent + line for line in more]
    return lines
