"""The run's results, on the controller: report options and files read before anything runs,
the per-case results gathered from the reports (the same path with and without xdist), the
live run's completeness, the report files and baseline gate at the end, the terminal summary.

Loaded with the plugin in every run: what it needs of the report floor is imported when a run
has results (each such import marked `# start-up:`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import __version__
from .session import EvalSession, utc_now

if TYPE_CHECKING:
    from .report.changes import RecordingChanges
    from .report.terminal import RunSummary


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
    # start-up: the manifest module loads only when --eval-manifest is given
    from .manifest import ManifestError, load_manifest

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
    # start-up: as above; reading every suite loads collection (pydantic)
    from .manifest import config_differences, refusal
    from .project import project_config

    differences = config_differences(locked["config"], project_config(state))
    if differences:
        raise pytest.UsageError(
            refusal(session.config.getoption("eval_manifest"), locked, differences)
        )


def load_baseline(config: pytest.Config) -> dict[str, Any] | None:
    """Read --eval-baseline up front, so a bad file stops the run before any case runs."""
    path = config.getoption("eval_baseline")
    if not path:
        return None
    # start-up: the baseline gate loads only when --eval-baseline is given
    from .report.baseline import BaselineError, load_results

    try:
        return load_results(Path(config.invocation_params.dir, path))
    except BaselineError as exc:
        raise pytest.UsageError(str(exc)) from None


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
    # start-up: the report floor loads at the end of a run that writes a report
    from .report.gitinfo import git_commit

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


RESULTS_PLUGIN = "evalcases-results"


class ErrorStatus:
    """A case that could not be evaluated (a judge error on a gating stage) reads ERROR, as it
    does in the per-stage summary: it is not a failure of the system under test. Registered only
    where a judge can fail while a case is scored (live modes, --replay-http): a plain replay
    raises its errors in setup, and pays nothing for this hook on each of its reports."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        if getattr(report, "evalcase_error", False) and report.when == "call" and report.failed:
            return "error", "E", "ERROR"
        return None


class ResultCollector:
    """Controller only: gathers the per-case results from the reports (the same path with and
    without xdist, and a crashed worker's other cases still arrive). The summary is built as they
    arrive; the result dicts are kept only for --eval-report and --eval-baseline. In live modes
    it also gathers the recording changes, and applies --eval-budget when cases record one at a
    time in their own items (xdist, --replay-http)."""

    def __init__(self, config: pytest.Config, state: EvalSession) -> None:
        self.config = config
        self.state = state
        self.verbose = config.option.verbose > 0
        self.rows = summary_rows(config)
        self.summary: RunSummary | None = None  # from the first eval case on
        keep = state.settings.report_dir is not None or state.baseline is not None
        self.results: list[dict[str, Any]] | None = [] if keep else None
        self.changes: RecordingChanges | None = None
        self.reported: set[str] = set()  # live modes: which selected cases reported
        self.selected: list[str] | None = None  # xdist: the cases the workers collected
        self.spent = 0.0
        self.budget_stop: str | None = None
        self.session: pytest.Session | None = None
        if state.settings.live:
            # start-up: recording changes load in live runs only
            from .report.changes import RecordingChanges

            self.changes = RecordingChanges(dry_run=state.settings.dry_run, verbose=self.verbose)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The xdist controller collects nothing: each worker's selection tells which cases this
        run selected (for the recording exit code, and the orphans of the suites it selected
        whole)."""
        if self.selected is None:  # every worker collects the same cases
            self.selected = list(ids)
        self.state.note_selected(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker that sent spans (--eval-otel) says how many, for the closing line."""
        delivery = getattr(node, "workeroutput", {}).get("evalcases_otel")
        if delivery:
            self.state.otel_deliveries.append(delivery)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Taken off the report (after the other plugins saw it): the terminal reporter keeps
        # every report to the end of the run, and with it ~2 KB of result per case.
        result = report.__dict__.pop("evalcase", None)
        if result is None:
            return
        if self.summary is None:
            # start-up: the summary loads with the first eval case's result
            from .report.terminal import RunSummary

            self.summary = RunSummary(rows=self.rows)
        self.summary.add(result)
        if self.results is not None:
            self.results.append(result)
        if self.changes is not None:
            self.changes.add(result)
            self.reported.add(report.nodeid)
            if self.state.settings.budget is not None and not self.state.records_in_one_batch:
                self._apply_budget(result)

    def _apply_budget(self, result: dict[str, Any]) -> None:
        """Cases record in their own items: stop the run between items once the budget is
        reached (under xdist, the items already handed to a worker still run)."""
        # start-up: a budget is read in live runs only
        from .engine.limits import budget_text

        self.spent += float((result.get("recording") or {}).get("spent_usd") or 0.0)
        budget = self.state.settings.budget
        if self.budget_stop is not None or budget is None or self.spent < budget:
            return
        self.budget_stop = (
            f"--eval-budget {budget_text(budget)} reached (recorded cost {budget_text(self.spent)})"
        )
        self.state.stopped = self.budget_stop
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and hasattr(dsession, "shouldstop"):
            dsession.shouldstop = dsession.shouldstop or self.budget_stop
        elif self.session is not None:
            self.session.shouldfail = self.budget_stop

    def unreported(self, session: pytest.Session) -> list[str]:
        """Selected eval items that never reported: the run stopped (or was stopped) first."""
        if self.selected is not None:
            state = self.state
            ids = [
                nodeid
                for nodeid in self.selected
                if state.is_case_file(state.settings.rootdir / nodeid.split("::", 1)[0])
            ]
        else:
            ids = [item.nodeid for item in session.items if getattr(item, "is_eval_item", False)]
        return [nodeid for nodeid in ids if nodeid not in self.reported]


def summary_rows(config: pytest.Config) -> str:
    """Which cases the per-case table lists: --eval-summary, else -v (all) or -q -q (none),
    else ini eval_summary, else those that did not pass."""
    chosen = config.getoption("eval_summary")
    if chosen:
        return str(chosen)
    verbosity = config.option.verbose
    if verbosity > 0:
        return "all"
    if verbosity < -1:
        return "none"
    ini = (config.getini("eval_summary") or "").strip()
    if ini and ini not in ("failed", "all", "none"):
        raise pytest.UsageError(f"ini option eval_summary: {ini!r} is not one of failed, all, none")
    return ini or "failed"


def _collector(config: pytest.Config) -> ResultCollector | None:
    """The controller's ResultCollector; None on an xdist worker."""
    return config.pluginmanager.get_plugin(RESULTS_PLUGIN)


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
    collector = _collector(session.config)
    if collector is None:
        return
    changes = collector.changes
    if changes is not None and not session.config.option.collectonly:
        _check_live_run_complete(session, collector, changes, state)
    if not collector.results:  # no eval case, or no report asked for
        return
    # start-up: the report floor loads at the end of a run that writes a report
    from .project import project_config
    from .report.run import build_run_report, judges_used

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
        # start-up: as above
        from .manifest import MANIFEST_JSON, dumps_manifest, manifest_document

        manifest = manifest_document(state.run_id, state.started, run_config)
        extra[MANIFEST_JSON] = dumps_manifest(manifest)
    if changes is not None:
        # start-up: as above
        from .report.changes import RECORDING_CHANGES_MD

        extra[RECORDING_CHANGES_MD] = changes.markdown()
    state.run_report = build_run_report(
        collector.results, run, state.baseline, tolerance, report_dir, extra
    )
    if state.run_report.gate_failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_summary(terminalreporter: Any, config: pytest.Config, state: EvalSession) -> None:
    collector = _collector(config)
    if collector is None or collector.summary is None:
        return
    # start-up: the orphan scan reads the cassette folders, after a run with eval cases
    from .housekeeping import orphan_report

    orphans, note = orphan_report(state)
    terminalreporter.write_sep("=", "per-stage summary")
    width = terminalreporter._tw.fullwidth  # the same on the xdist controller as in serial
    for line in collector.summary.lines(orphans=orphans, orphan_note=note, width=width):
        terminalreporter.write_line(line)
    calibration = collector.summary.calibration_lines(width)
    if calibration:
        terminalreporter.write_sep("=", "judge calibration")
        for line in calibration:
            terminalreporter.write_line(line)
    if state.removed_temp_files:
        count = state.removed_temp_files
        terminalreporter.write_line(
            f"removed {count} temp file{'s' * (count != 1)} left by interrupted recordings"
        )
    if collector.changes is not None:
        title = "recording changes" + (" (dry run)" if state.settings.dry_run else "")
        terminalreporter.write_sep("=", title)
        for line in collector.changes.lines():
            terminalreporter.write_line(line)
    report = state.run_report
    if report is not None and report.doc.get("baseline") is not None:
        # start-up: as above
        from .report.baseline import render_baseline_terminal

        terminalreporter.write_sep("=", "regressions vs baseline")
        for line in render_baseline_terminal(report.doc["baseline"]):
            terminalreporter.write_line(line)
    if report is not None and report.written:
        terminalreporter.write_line("eval reports: " + ", ".join(str(p) for p in report.written))
    if state.otel_deliveries:  # this process's, or each xdist worker's
        # start-up: telemetry loads in runs that sent spans only
        from .telemetry import delivery_line

        terminalreporter.write_line(str(delivery_line(state.otel_deliveries)))
    elif state.otel_requested and not state.settings.live:
        terminalreporter.write_line(
            "eval otel: a replay sends no spans (--eval-otel traces the "
            "system runs and judge requests of live runs)"
        )
