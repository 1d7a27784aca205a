"""End of run: the results document, its report files and the baseline gate, from the per-case
result dicts (pure but for writing the files it is asked to write)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .aggregate import aggregate
from .baseline import compare
from .markdown import append_step_summary, render_markdown
from .writers import ResultsUpdate, write_reports


@dataclass(slots=True)
class RunReport:
    doc: dict[str, Any]
    written: list[Path]
    gate_failed: bool


def judges_used(results: list[dict[str, Any]], configured: str | None) -> str | None:
    """The judge whose verdicts the run scored ("a, b" when suites use several); the configured
    one when no case had a verdict. Suites may name their own judge, so the option alone is not
    the answer."""
    used = {judge for r in results for judge in (r.get("recording") or {}).get("judges") or ()}
    return ", ".join(sorted(used)) if used else configured


def build_run_report(
    results: list[dict[str, Any]],
    run: dict[str, Any],
    baseline: dict[str, Any] | None,
    tolerance: float,
    report_dir: Path | None,
    extra: dict[str, str] | None = None,
    update_results: ResultsUpdate | None = None,
) -> RunReport:
    """`extra`: more files for the report folder (name -> text), e.g. recording-changes.md;
    `update_results`: what changes results.json's document (a conftest's hook)."""
    doc = aggregate(results, run)
    gate_failed = False
    if baseline is not None:
        doc["baseline"] = compare(doc, baseline, tolerance)
        gate_failed = bool(doc["baseline"]["failed"])
    written: list[Path] = []
    if report_dir is not None:
        written = write_reports(doc, report_dir, extra, update_results)
        append_step_summary(render_markdown(doc), os.environ)
    return RunReport(doc, written, gate_failed)
