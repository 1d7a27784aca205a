"""The end of a run, on the controller (or the one process): a live run's completeness (its exit
code), the results document, report files and baseline gate, and the terminal summary; also
the --eval-manifest check before any case runs. Loaded only by runs with eval cases."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import __version__
from ..core.safe_text import terminal_safe
from ..manifest import MANIFEST_JSON, config_differences, dumps_manifest, manifest_document, refusal
from ..manifest.authored import input_differences, input_refusal
from ..report.baseline import render_baseline_terminal
from ..report.changes import RECORDING_CHANGES_MD
from ..report.gitinfo import git_commit
from ..report.run_report import build_run_report, judges_used
from ..store.redaction import redact_for_output
from ..telemetry import delivery_line
from ..telemetry.phases import timed
from .gathering import ResultCollector, results_collector
from .hook_calls import added_summary_lines, gather_summary_lines, hook_errors, results_updater
from .housekeeping import orphan_report
from .project import project_config
from .session import EvalSession, utc_now

if TYPE_CHECKING:
    from ..report.changes import RecordingChanges


def check_locked_manifest(session: pytest.Session, state: Any) -> None:
    """--eval-manifest: refuse to run (a usage error listing each difference) when this run's
    configuration differs from the locked one. Before any case runs, live ones included."""
    locked = state.locked_manifest
    if locked is None:
        return
    differences = config_differences(locked["config"], project_config(state))
    if differences:
        # A locked manifest written before its values were redacted may show a key.
        raise pytest.UsageError(
            redact_for_output(
                refusal(session.config.getoption("eval_manifest"), locked, differences)
            )
        )


def check_input_manifest(session: pytest.Session, state: Any) -> None:
    """The authored input manifest: refuse to run (a usage error naming each field, both values
    and the next step) when what this run would run differs. Before any case runs."""
    manifest = state.input_manifest
    project = project_config(state)
    differences = input_differences(manifest, project, state.project_case_names)
    if differences:
        raise pytest.UsageError(redact_for_output(input_refusal(manifest.file, differences)))


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
    if config.getoption("eval_report_cases", "failing") == "all":  # report.md lists every case
        info["report_cases"] = "all"
    return info


def _check_live_run_complete(
    session: pytest.Session,
    collector: ResultCollector,
    changes: RecordingChanges,
    state: EvalSession,
) -> None:
    """A live run that did not record every selected case fails: a green recording job must not
    commit a red gate. Skipped and deselected cases were not asked for, so they do not count."""
    unreported = collector.unreported(session)
    if unreported:
        stopped = state.stopped or session.shouldfail or session.shouldstop
        if not stopped and session.config.option.maxfail:
            stopped = f"the run stopped after --maxfail {session.config.option.maxfail}"
        changes.add_unreported(unreported, str(stopped or "the run ended before it"))
    changes.stopped = state.stopped
    if not changes.incomplete:
        return
    ours = collector.budget_stop is not None  # xdist ends a stopped run as interrupted
    if session.exitstatus == pytest.ExitCode.OK or (
        ours and session.exitstatus == pytest.ExitCode.INTERRUPTED
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def finish_run(session: pytest.Session, state: EvalSession) -> None:
    """Controller only: the live run's completeness (its exit code), then aggregate, write the
    report files, apply the baseline gate."""
    collector = results_collector(session.config)
    if collector is None:
        return
    changes = collector.changes
    if changes is not None and not session.config.option.collectonly:
        _check_live_run_complete(session, collector, changes, state)
    if not collector.results:  # no eval case, or no report asked for
        return
    if state.otel_export is not None:  # --eval-otel in a live run: the reporting phase's span
        suites = sorted({str(result.get("suite")) for result in collector.results})
        with timed("reporting", corpus=", ".join(suites)):
            _report(session, state, collector)
    else:
        _report(session, state, collector)


def _report(session: pytest.Session, state: EvalSession, collector: ResultCollector) -> None:
    """Aggregate, write the report files, apply the baseline gate."""
    changes = collector.changes
    judge = judges_used(
        collector.results, state.settings.judge_override or state.settings.default_judge
    )
    report_dir = (
        Path(session.config.invocation_params.dir, state.settings.report_dir)
        if state.settings.report_dir
        else None
    )
    run_config = project_config(state) if report_dir is not None else None
    run = run_info(
        session.config,
        state.settings.mode,
        judge,
        state.started,
        state.run_id if run_config else None,
        run_config,
    )
    tolerance = session.config.getoption("eval_tolerance")
    extra: dict[str, str] = {}
    if run_config is not None:
        manifest = manifest_document(state.run_id, state.started, run_config)
        extra[MANIFEST_JSON] = dumps_manifest(manifest)
    if changes is not None:
        extra[RECORDING_CHANGES_MD] = changes.markdown()
    state.run_report = build_run_report(
        collector.results,
        run,
        state.baseline,
        tolerance,
        report_dir,
        extra,
        results_updater(session.config),
    )
    gather_summary_lines(session.config, state.run_report.doc)
    failed = state.run_report.gate_failed or hook_errors(session.config)
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_summary(terminalreporter: Any, config: pytest.Config, state: EvalSession) -> None:
    collector = results_collector(config)
    if collector is None or collector.summary is None:
        return
    orphans, note, left = orphan_report(state)
    # Every line holds text from traces, labels, judges or file names: none may drive the
    # terminal (one regex search a line; the lines are per run, not per passing case).
    write_line = lambda line: terminalreporter.write_line(terminal_safe(str(line)))  # noqa: E731
    terminalreporter.write_sep("=", "per-stage summary")
    width = terminalreporter._tw.fullwidth  # the same on the xdist controller as in serial
    for line in collector.summary.lines(orphans=orphans, orphan_note=note, width=width):
        write_line(line)
    for line in added_summary_lines(config):  # conftests' and plugins' (a hook's)
        write_line(line)
    calibration = collector.summary.calibration_lines(width)
    if calibration:
        terminalreporter.write_sep("=", "judge calibration")
        for line in calibration:
            write_line(line)
    if left:
        write_line(left)
    if state.removed_temp_files:
        count = state.removed_temp_files
        write_line(f"removed {count} temp file{'s' * (count != 1)} left by interrupted recordings")
    # --eval-ingest-only records no case: its changes section has something to say only when
    # users were left out (Ctrl-C, --eval-budget).
    quiet = (
        state.settings.ingest_only
        and collector.changes is not None
        and not (collector.changes.incomplete)
    )
    if collector.changes is not None and not quiet:
        title = "recording changes" + (" (dry run)" if state.settings.dry_run else "")
        terminalreporter.write_sep("=", title)
        for line in collector.changes.lines():
            write_line(line)
    report = state.run_report
    if report is not None and report.doc.get("baseline") is not None:
        terminalreporter.write_sep("=", "regressions vs baseline")
        for line in render_baseline_terminal(report.doc["baseline"]):
            write_line(line)
    if report is not None and report.written:
        write_line("eval reports: " + ", ".join(str(p) for p in report.written))
    for error in hook_errors(config):  # the run failed for it (finish_run)
        write_line(f"hook error: {error}")
    if state.otel_deliveries:  # this process's, or each xdist worker's
        write_line(str(delivery_line(state.otel_deliveries)))
    elif state.otel_requested and not state.settings.live:
        write_line(
            "eval otel: a replay sends no spans (--eval-otel traces the "
            "system runs and judge requests of live runs)"
        )
