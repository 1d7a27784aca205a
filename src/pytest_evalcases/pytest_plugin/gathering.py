"""The run's results, on the controller: report options and files read before anything runs
(the baseline, a locked manifest), the per-case results gathered from the reports as they
arrive (the same path with and without xdist; --eval-budget applied between items), and which
cases the summary lists. The end of the run (a live run's completeness, the report files and
baseline gate, the terminal summary) is `finish.py`.

Loaded with the plugin in every run: what it needs of the report floor is imported when a run
has results (each such import marked `# start-up:`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .session import EvalSession

if TYPE_CHECKING:
    from ..report.changes import RecordingChanges
    from ..report.terminal import RunSummary


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
    from ..manifest import ManifestError, load_manifest

    try:
        return load_manifest(Path(config.invocation_params.dir, path), path)
    except ManifestError as exc:
        raise pytest.UsageError(str(exc)) from None


def input_manifest_path(config: pytest.Config) -> tuple[Path, str] | None:
    """--eval-input-manifest (from the invocation folder), else ini eval_input_manifest (from
    the rootdir): the file, and its name as the user wrote it."""
    given = config.getoption("eval_input_manifest", None)
    if given:
        return Path(config.invocation_params.dir, given), str(given)
    ini = (config.getini("eval_input_manifest") or "").strip()
    return (Path(config.rootpath, ini), ini) if ini else None


def load_input_manifest(config: pytest.Config) -> Any:
    """Read the authored input manifest up front (every process: the split deselects and the
    suites hand its values to the system): a bad file stops the run before anything runs."""
    found = input_manifest_path(config)
    if found is None:
        return None
    # start-up: the authored manifest loads only when a run names one
    from ..manifest import ManifestError
    from ..manifest.authored import load_input_manifest as load

    try:
        return load(*found)
    except ManifestError as exc:
        raise pytest.UsageError(str(exc)) from None


def load_baseline(config: pytest.Config) -> dict[str, Any] | None:
    """Read --eval-baseline up front, so a bad file stops the run before any case runs."""
    path = config.getoption("eval_baseline")
    if not path:
        return None
    # start-up: the baseline gate loads only when --eval-baseline is given
    from ..report.baseline import BaselineError, load_results

    try:
        return load_results(Path(config.invocation_params.dir, path))
    except BaselineError as exc:
        raise pytest.UsageError(str(exc)) from None


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
            from ..report.changes import RecordingChanges

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
        """xdist: a worker that sent spans (--eval-otel) says how many, for the closing line;
        one whose network guard refused a thread of the system outside any case says what."""
        workeroutput = getattr(node, "workeroutput", {})
        delivery = workeroutput.get("evalcases_otel")
        if delivery:
            self.state.otel_deliveries.append(delivery)
        for refusal in workeroutput.get("evalcases_guard", ()):
            if refusal not in self.state.guard_refusals:
                self.state.guard_refusals.append(refusal)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Taken off the report (after the other plugins saw it): the terminal reporter keeps
        # every report to the end of the run, and with it ~2 KB of result per case.
        result = report.__dict__.pop("evalcase", None)
        if result is None:
            return
        if self.summary is None:
            # start-up: the summary loads with the first eval case's result
            from ..report.terminal import RunSummary

            self.summary = RunSummary(rows=self.rows)
            if self.results is None:  # a summary-lines hook reads the results document
                # start-up: the hooks' callers load with the first eval case's result
                from .hook_calls import SUMMARY_LINES, implemented

                self.results = [] if implemented(self.config, SUMMARY_LINES) else None
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
        from ..engine.limits import budget_text

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


def results_collector(config: pytest.Config) -> ResultCollector | None:
    """The controller's ResultCollector; None on an xdist worker."""
    return config.pluginmanager.get_plugin(RESULTS_PLUGIN)
