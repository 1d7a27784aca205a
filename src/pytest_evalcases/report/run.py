"""End of run, on the controller: the results document, report files and the baseline gate."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .. import __version__


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_report_options(config: pytest.Config) -> None:
    """Bad report options stop the run before any case runs (not after a paid live run)."""
    tolerance = config.getoption("eval_tolerance")
    if not math.isfinite(tolerance) or tolerance < 0:
        raise pytest.UsageError(f"--eval-tolerance must be a number >= 0, got {tolerance!r}")
    folder = config.getoption("eval_report")
    if folder and Path(config.invocation_params.dir, folder).exists():
        if not Path(config.invocation_params.dir, folder).is_dir():
            raise pytest.UsageError(f"--eval-report {folder}: exists and is not a folder")


def load_locked_manifest(config: pytest.Config) -> dict[str, Any] | None:
    """Read --eval-manifest up front: a bad file stops the run before anything runs."""
    path = config.getoption("eval_manifest")
    if not path:
        return None
    from ..manifest import ManifestError, load_manifest

    try:
        return load_manifest(Path(config.invocation_params.dir, path), path)
    except ManifestError as exc:
        raise pytest.UsageError(str(exc)) from None


def check_locked_manifest(session: pytest.Session, state: Any) -> None:
    """--eval-manifest: refuse to run (a usage error listing each difference) when this run's
    configuration differs from the locked one. Before any case runs, live ones included."""
    locked = state.locked_manifest
    if locked is None:
        return
    from ..manifest import config_differences, refusal

    differences = config_differences(locked["config"], state.project_config(session))
    if differences:
        raise pytest.UsageError(
            refusal(session.config.getoption("eval_manifest"), locked, differences)
        )


def load_baseline(config: pytest.Config) -> dict[str, Any] | None:
    """Read --eval-baseline up front, so a bad file stops the run before any case runs."""
    path = config.getoption("eval_baseline")
    if not path:
        return None
    from .baseline import BaselineError, load_results

    try:
        return load_results(Path(config.invocation_params.dir, path))
    except BaselineError as exc:
        raise pytest.UsageError(str(exc)) from None


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


def run_info(
    config: pytest.Config,
    mode: str,
    judge: str | None,
    started: str,
    run_id: str | None = None,
    run_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The results document's `run`; `run_config` is the run manifest's `config` (its git state
    gives `git_commit`, read once)."""
    from . import git_commit

    option = config.option
    commit = (run_config or {}).get("git", {}).get("commit") if run_config else None
    info: dict[str, Any] = {"run_id": run_id} if run_id else {}
    info.update(
        plugin_version=__version__,
        mode=mode,
        judge=judge,
        selection={
            "args": list(config.args),
            "keyword": option.keyword or None,
            "markexpr": option.markexpr or None,
        },
        started=started,
        finished=utc_now(),
        git_commit=commit if run_config else git_commit(config.rootpath),
    )
    if run_config:
        info["config"] = run_config
    return info


def build_run_report(
    results: list[dict[str, Any]],
    run: dict[str, Any],
    baseline: dict[str, Any] | None,
    tolerance: float,
    report_dir: Path | None,
    extra: dict[str, str] | None = None,
) -> RunReport:
    """`extra`: more files for the report folder (name -> text), e.g. recording-changes.md."""
    from . import aggregate, append_step_summary, render_markdown, write_reports

    doc = aggregate(results, run)
    gate_failed = False
    if baseline is not None:
        from .baseline import compare

        doc["baseline"] = compare(doc, baseline, tolerance)
        gate_failed = bool(doc["baseline"]["failed"])
    written: list[Path] = []
    if report_dir is not None:
        written = write_reports(doc, report_dir, extra)
        append_step_summary(render_markdown(doc), os.environ)
    return RunReport(doc, written, gate_failed)
