"""pytest hooks only: options, collection entry, live recording, reports, terminal summary.

This module loads in every pytest run where the plugin is installed, so it imports only what
every run needs; collection, validation, recording and reporting load when a run uses them.
"""

from __future__ import annotations

import functools
import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .core.errors import EvalCaseError
from .report.run import check_report_options, load_baseline, load_locked_manifest
from .session import SESSION_KEY, EvalSession, get_session

if TYPE_CHECKING:
    from .report.changes import RecordingChanges
    from .report.terminal import RunSummary

RESULTS_PLUGIN = "evalcases-results"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalcases", "LLM eval cases (pytest-evalcases)")
    group.addoption(
        "--live",
        action="store_true",
        dest="eval_live",
        help="run the real system and judges for every selected case and re-record (only "
        "the cassettes that changed are written)",
    )
    group.addoption(
        "--live-stale",
        action="store_true",
        dest="eval_live_stale",
        help="record only missing or stale recordings; replay the rest",
    )
    group.addoption(
        "--live-judges",
        action="store_true",
        dest="eval_live_judges",
        help="judge what the recorded traces lack (pending, missing or stale verdicts) "
        "without running the system again",
    )
    group.addoption(
        "--live-dry-run",
        action="store_true",
        dest="eval_live_dry_run",
        help="run the system and judges as --live would (or --live-stale, --live-judges with "
        "them), show the recording changes, and write no recording",
    )
    group.addoption(
        "--eval-budget",
        dest="eval_budget",
        type=float,
        default=None,
        metavar="USD",
        help="in live modes, start no further case once the recorded cost of the run (system + "
        "judge) reaches USD; the cases not started are reported as not run",
    )
    group.addoption(
        "--live-prune",
        action="store_true",
        dest="eval_live_prune",
        help="delete every orphaned recording (its case or suite is gone), list them, and run "
        "nothing else",
    )
    group.addoption(
        "--replay-http",
        action="store_true",
        dest="eval_replay_http",
        help="run the real system offline: vcrpy serves its HTTP from each case's recording",
    )
    group.addoption(
        "--eval-judge",
        dest="eval_judge",
        default=None,
        help="judge for judged stages: openai:<model>, gemini:<model>, "
        "ollama:<model>, litellm:<model> or lexical",
    )
    group.addoption(
        "--eval-concurrency",
        dest="eval_concurrency",
        type=int,
        default=None,
        help="system runs in flight, and judge requests in flight, when recording (default 8)",
    )
    group.addoption(
        "--eval-timeout",
        dest="eval_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="longest system run of one case when recording or replaying HTTP (default 300); "
        "past it the case is an error and keeps its old recording",
    )
    group.addoption(
        "--eval-judge-repeats",
        dest="eval_judge_repeats",
        type=int,
        default=None,
        metavar="N",
        help="record N verdicts per judged stage (the score is their mean; repeats that "
        "disagree make the verdict unstable, kept out of the baseline gate)",
    )
    group.addoption(
        "--eval-runs",
        dest="eval_runs",
        type=int,
        default=None,
        metavar="K",
        help="record K independent system runs per case (each judged); a case passes when all "
        "K pass (pass^k); replay needs no flag",
    )
    group.addoption(
        "--eval-rpm",
        dest="eval_rpm",
        type=float,
        default=None,
        metavar="N",
        help="judge requests per minute at most, per judge endpoint (env EVALCASES_RPM)",
    )
    group.addoption(
        "--eval-tpm",
        dest="eval_tpm",
        type=float,
        default=None,
        metavar="N",
        help="judge tokens per minute at most, per judge endpoint (env EVALCASES_TPM)",
    )
    group.addoption(
        "--eval-summary",
        dest="eval_summary",
        default=None,
        choices=("failed", "all", "none"),
        help="rows of the per-case summary table: cases that did not pass (default), all "
        "(as with -v) or none (as with -q -q); the per-stage tables are always shown",
    )
    group.addoption(
        "--eval-report",
        dest="eval_report",
        default=None,
        metavar="DIR",
        help="write results.json, report.md, dashboard.html and manifest.json to DIR",
    )
    group.addoption(
        "--eval-otel",
        action="store_true",
        dest="eval_otel",
        help="in live runs, send one OpenTelemetry span per case (children: the system run and "
        "each judge request) over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default "
        "http://localhost:4318); needs the otel extra",
    )
    group.addoption(
        "--eval-manifest",
        dest="eval_manifest",
        default=None,
        metavar="FILE",
        help="refuse to run, listing each difference, unless this run's configuration (suites, "
        "inputs, fingerprints, judges, versions) equals the locked manifest.json",
    )
    group.addoption(
        "--eval-baseline",
        dest="eval_baseline",
        default=None,
        metavar="FILE",
        help="compare with an earlier results.json; fail on regressions",
    )
    group.addoption(
        "--eval-tolerance",
        dest="eval_tolerance",
        type=float,
        default=0.0,
        help="largest drop of a stage's mean score the baseline gate accepts",
    )
    parser.addini(
        "eval_cases",
        type="args",
        default=["cases"],
        help="folders whose *.json files are eval suites",
    )
    parser.addini("eval_cassettes", default="cassettes", help="folder of the recordings")
    parser.addini("eval_system", default="", help="default system, 'module:attribute'")
    parser.addini("eval_judge", default="", help="default judge for judged stages")
    parser.addini("eval_concurrency", default="8", help="default --eval-concurrency")
    parser.addini("eval_timeout", default="300", help="default --eval-timeout, in seconds")
    parser.addini(
        "eval_replay", default="trace", help="'http' makes every replay a --replay-http replay"
    )
    parser.addini("eval_summary", default="", help="default --eval-summary (failed, all, none)")
    parser.addini("eval_judge_repeats", default="", help="default --eval-judge-repeats")
    parser.addini("eval_rpm", default="", help="default --eval-rpm")
    parser.addini("eval_tpm", default="", help="default --eval-tpm")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--live-prune is a command of its own: no collection, no session."""
    if config.getoption("eval_live_prune", False):
        from .session import prune_orphans

        return prune_orphans(config)
    return None


def pytest_configure(config: pytest.Config) -> None:
    state = EvalSession(config)
    if not state.is_worker:
        check_report_options(config)
        state.baseline = load_baseline(config)
        state.locked_manifest = load_locked_manifest(config)
        config.pluginmanager.register(ResultCollector(config, state), RESULTS_PLUGIN)
    if state.live or state.replay_http:  # (xdist workers too: they print with -n and -v)
        config.pluginmanager.register(ErrorStatus(), "evalcases-error-status")
    if state.otel_requested and state.live:
        _check_otel_installed()
    if state.live:
        _dont_rewrite_deepeval()
        if not state.is_worker and not state.dry_run:  # temp files of killed runs go first
            from .store.cassette import remove_dead_temp_files

            state.removed_temp_files = remove_dead_temp_files(state.cassette_root)
    config.stash[SESSION_KEY] = state


def _check_otel_installed() -> None:
    """--eval-otel needs the otel extra: say so before a paid live run starts."""
    import importlib.util

    try:
        found = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
        found = found and importlib.util.find_spec("opentelemetry.sdk") is not None
    except ImportError:  # a parent package is missing
        found = False
    if not found:
        raise pytest.UsageError(
            "--eval-otel needs opentelemetry-sdk and the OTLP/HTTP exporter: "
            'pip install "pytest-evalcases[otel]"'
        )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: workers tag their spans with this run's id."""
    state = get_session(node.config)
    if state.otel_requested and state.live:
        node.workerinput["evalcases_run_id"] = state.run_id


def _dont_rewrite_deepeval() -> None:
    """pytest marks every package with a pytest11 entry point for assertion rewriting, even when
    `-p no:deepeval` blocks the plugin. Rewriting deepeval on its lazy import costs ~5 s a live
    run (no bytecode cache when PYTHONDONTWRITEBYTECODE is set) and checks nothing of ours.
    Private pytest attributes, hence the guards: at worst deepeval is rewritten as before."""
    for hook in sys.meta_path:
        marked = getattr(hook, "_must_rewrite", None)
        if not isinstance(marked, set):
            continue
        marked.difference_update({name for name in marked if name.split(".")[0] == "deepeval"})
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    if get_session(parent.config).is_case_file(file_path):
        from .collect import CaseFile

        return CaseFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    state = get_session(session.config)
    if state.locked_manifest is not None:  # before any case runs (the controller's check)
        from .report.run import check_locked_manifest

        check_locked_manifest(session, state)
    if not _batch(session.config) or session.config.option.collectonly:
        return (yield)
    from .batch import Progress
    from .engine.limits import StopRule

    items = [item for item in session.items if getattr(item, "is_eval_case", False)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write if reporter else (lambda text: None)
    tty = bool(reporter and reporter.isatty)
    option = session.config.option
    rule = StopRule(option.maxfail or 0, state.budget)
    state.recorder.record_batch(items, Progress(len(items), write, tty), rule)
    state.stopped = rule.reason
    if rule.reason is not None and rule.budget is not None:
        from .engine.limits import budget_text

        # the cases already running finished and were paid for: say what the run cost in all
        state.stopped += f"; the run's recorded cost came to {budget_text(rule.spent)}"
    # The batch applied -x / --maxfail to the system runs: every case it ran reports (and is
    # recorded), the ones it did not start report as not run. pytest's own count would hide them.
    option.maxfail = 0
    try:
        return (yield)
    finally:
        option.maxfail = rule.maxfail


def _batch(config: pytest.Config) -> bool:
    """Whether this process records the selected cases in one batch (not an xdist controller,
    whose workers record each case in its own item)."""
    return get_session(config).records_in_batch and not config.pluginmanager.has_plugin("dsession")


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


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if getattr(item, "is_eval_item", False):
        case_result, outcome_of = _result_builders()
        exc = call.excinfo.value if call.excinfo else None
        if call.when == "setup" and isinstance(exc, EvalCaseError):
            report.longrepr = str(exc)  # the message says it all; pytest's traceback would not
        outcome = outcome_of(item, call.when, report, exc)
        if outcome is not None:
            if outcome == "error" and call.when == "call" and report.failed:
                report.evalcase_error = True  # a small flag: xdist carries it with the report
            state = get_session(item.config)
            # A plain JSON-able dict: xdist carries it to the controller with the report.
            report.evalcase = case_result(item, outcome, bool(state.report_dir), exc)
            if state.otel is not None:  # --eval-otel in a live run: the case span ends
                state.otel.case_reported(item.nodeid, report.evalcase)
            # The result holds all that is needed now: let the trace and scores go (10k cases).
            item.recording = item.scores = None
    return report


@functools.cache
def _result_builders() -> tuple[Any, Any]:
    """results.case_result and outcome_of, imported once, by the first eval item's report."""
    from .results import case_result, outcome_of

    return case_result, outcome_of


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.close_http()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Claim the suite names of the case files this run did not collect (two files declaring
    one name must be refused whatever the selection). Collected items live until the end of the
    run: move them out of the cyclic garbage collector's way (its full passes over a large
    collection cost ~1 s per 10,000 cases)."""
    state = get_session(session.config)
    state.claim_uncollected_suites()
    selected = [item.nodeid for item in session.items if getattr(item, "is_eval_item", False)]
    state.note_selected(selected)
    if selected:
        gc.freeze()


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
        keep = state.report_dir is not None or state.baseline is not None
        self.results: list[dict[str, Any]] | None = [] if keep else None
        self.changes: RecordingChanges | None = None
        self.reported: set[str] = set()  # live modes: which selected cases reported
        self.selected: list[str] | None = None  # xdist: the cases the workers collected
        self.spent = 0.0
        self.budget_stop: str | None = None
        self.session: pytest.Session | None = None
        if state.live:
            from .report.changes import RecordingChanges

            self.changes = RecordingChanges(dry_run=state.dry_run, verbose=self.verbose)

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
            from .report.terminal import RunSummary

            self.summary = RunSummary(rows=self.rows)
        self.summary.add(result)
        if self.results is not None:
            self.results.append(result)
        if self.changes is not None:
            self.changes.add(result)
            self.reported.add(report.nodeid)
            if self.state.budget is not None and not _batch(self.config):
                self._apply_budget(result)

    def _apply_budget(self, result: dict[str, Any]) -> None:
        """Cases record in their own items: stop the run between items once the budget is
        reached (under xdist, the items already handed to a worker still run)."""
        from .engine.limits import budget_text

        self.spent += float((result.get("recording") or {}).get("spent_usd") or 0.0)
        budget = self.state.budget
        if self.budget_stop is not None or budget is None or self.spent < budget:
            return
        self.budget_stop = (f"--eval-budget {budget_text(budget)} reached (recorded cost "
                            f"{budget_text(self.spent)})")
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
            ids = [nodeid for nodeid in self.selected
                   if state.is_case_file(state.rootdir / nodeid.split("::", 1)[0])]
        else:
            ids = [item.nodeid for item in session.items
                   if getattr(item, "is_eval_item", False)]
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
        raise pytest.UsageError(
            f"ini option eval_summary: {ini!r} is not one of failed, all, none"
        )
    return ini or "failed"


def _collector(config: pytest.Config) -> ResultCollector | None:
    """The controller's ResultCollector; None on an xdist worker."""
    return config.pluginmanager.get_plugin(RESULTS_PLUGIN)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Controller only: the live run's completeness (its exit code), then aggregate, write the
    report files, apply the baseline gate."""
    state = get_session(session.config)
    state.close_otel()  # workers too: each sends its own cases' spans
    collector = _collector(session.config)
    if collector is None:
        return
    changes = collector.changes
    if changes is not None and not session.config.option.collectonly:
        _check_live_run_complete(session, collector, changes, state)
    if not collector.results:  # no eval case, or no report asked for
        return
    from .report.run import build_run_report, judges_used, run_info

    judge = judges_used(collector.results, state.judge_override or state.default_judge)
    report_dir = (
        Path(session.config.invocation_params.dir, state.report_dir) if state.report_dir else None
    )
    run_config = state.project_config(session) if report_dir is not None else None
    run = run_info(session.config, state.mode, judge, state.started,
                   state.run_id if run_config else None, run_config)
    tolerance = session.config.getoption("eval_tolerance")
    extra: dict[str, str] = {}
    if run_config is not None:
        from .manifest import MANIFEST_JSON, dumps_manifest, manifest_document

        manifest = manifest_document(state.run_id, state.started, run_config)
        extra[MANIFEST_JSON] = dumps_manifest(manifest)
    if changes is not None:
        from .report.changes import RECORDING_CHANGES_MD

        extra[RECORDING_CHANGES_MD] = changes.markdown()
    state.run_report = build_run_report(
        collector.results, run, state.baseline, tolerance, report_dir, extra
    )
    if state.run_report.gate_failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _check_live_run_complete(
    session: pytest.Session, collector: ResultCollector, changes: RecordingChanges,
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


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    collector = _collector(config)
    if collector is None or collector.summary is None:
        return
    state = get_session(config)
    orphans, note = state.orphans()
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
        title = "recording changes" + (" (dry run)" if state.dry_run else "")
        terminalreporter.write_sep("=", title)
        for line in collector.changes.lines():
            terminalreporter.write_line(line)
    report = state.run_report
    if report is not None and report.doc.get("baseline") is not None:
        from .report.baseline import render_baseline_terminal

        terminalreporter.write_sep("=", "regressions vs baseline")
        for line in render_baseline_terminal(report.doc["baseline"]):
            terminalreporter.write_line(line)
    if report is not None and report.written:
        terminalreporter.write_line("eval reports: " + ", ".join(str(p) for p in report.written))
    if state.otel_deliveries:  # this process's, or each xdist worker's
        from .telemetry import delivery_line

        terminalreporter.write_line(str(delivery_line(state.otel_deliveries)))
    elif state.otel_requested and not state.live:
        terminalreporter.write_line("eval otel: a replay sends no spans (--eval-otel traces the "
                                    "system runs and judge requests of live runs)")
