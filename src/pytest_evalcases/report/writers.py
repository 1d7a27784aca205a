"""Write the three report files for a results document."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..store.redaction import redact_for_output
from .dashboard import render_dashboard
from .markdown import render_markdown

RESULTS_JSON = "results.json"
REPORT_MD = "report.md"
DASHBOARD_HTML = "dashboard.html"


def dumps_results(doc: Mapping[str, Any]) -> str:
    """results.json text: sorted keys and indent 2, so two runs diff cleanly."""
    # default=str: a trace may carry values json cannot encode (datetimes, paths).
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n"


# What turns the results document into results.json's (a conftest's
# pytest_evalcases_update_results): it returns the document to write, leaving `doc` as it was.
ResultsUpdate = Callable[[dict[str, Any]], Mapping[str, Any]]


def write_reports(
    doc: Mapping[str, Any],
    out_dir: str | Path,
    extra: Mapping[str, str] | None = None,
    update_results: ResultsUpdate | None = None,
) -> list[Path]:
    """Write results.json, report.md and dashboard.html into out_dir (created if needed), and
    the `extra` files (name -> text) a run adds, such as a live run's recording-changes.md.
    `update_results` changes what results.json holds, not what the other files show."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # The per-case results and the run's configuration come redacted; what a conftest's hook
    # added and the extra files (manifest.json, recording-changes.md) are redacted here.
    results = doc if update_results is None else redact_for_output(update_results(dict(doc)))
    files = {
        RESULTS_JSON: dumps_results(results),
        REPORT_MD: render_markdown(doc),
        DASHBOARD_HTML: render_dashboard(doc),
        **{name: redact_for_output(text) for name, text in (extra or {}).items()},
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
