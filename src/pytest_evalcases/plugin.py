"""pytest hooks only: options, collection entry, live recording, reports, terminal summary.

This module loads in every pytest run where the plugin is installed, so it imports only what
every run needs; collection, validation, recording and reporting load when a run uses them.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .errors import EvalCaseError
from .runreport import check_report_options, load_baseline
from .session import SESSION_KEY, EvalSession, get_session

if TYPE_CHECKING:
    from .summary import RunSummary

RESULTS_PLUGIN = "evalcases-results"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalcases", "LLM eval cases (pytest-evalcases)")
    group.addoption(
        "--live",
        action="store_true",
        dest="eval_live",
        help="run the real system and judges for every selected case and re-record",
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
        help="re-judge the recorded traces without running the system again",
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
        help="write results.json, report.md and dashboard.html to DIR",
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
        config.pluginmanager.register(ResultCollector(config, state), RESULTS_PLUGIN)
    if state.live:
        _dont_rewrite_deepeval()
        if not state.is_worker:  # before anything is written: temp files of killed runs go
            from .cassette import remove_dead_temp_files

            state.removed_temp_files = remove_dead_temp_files(state.cassette_root)
    config.stash[SESSION_KEY] = state


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
    if state.records_in_batch and not session.config.option.collectonly:
        from .live import Progress

        items = [item for item in session.items if getattr(item, "is_eval_case", False)]
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        write = reporter.write if reporter else (lambda text: None)
        tty = bool(reporter and reporter.isatty)
        state.recorder.record_batch(items, Progress(len(items), write, tty))
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if getattr(item, "is_eval_item", False):
        from .results import case_result, outcome_of

        exc = call.excinfo.value if call.excinfo else None
        if call.when == "setup" and isinstance(exc, EvalCaseError):
            report.longrepr = str(exc)  # the message says it all; pytest's traceback would not
        outcome = outcome_of(item, call.when, report, exc)
        if outcome is not None:
            state = get_session(item.config)
            # A plain JSON-able dict: xdist carries it to the controller with the report.
            report.evalcase = case_result(item, outcome, bool(state.report_dir), exc)
            # The result holds all that is needed now: let the trace and scores go (10k cases).
            item.recording = item.scores = None
    return report


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
    arrive; the result dicts are kept only for --eval-report and --eval-baseline."""

    def __init__(self, config: pytest.Config, state: EvalSession) -> None:
        self.state = state
        self.rows = summary_rows(config)
        self.summary: RunSummary | None = None  # from the first eval case on
        keep = state.report_dir is not None or state.baseline is not None
        self.results: list[dict[str, Any]] | None = [] if keep else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The xdist controller collects nothing: each worker's selection tells which cases this
        run selected (for the orphans of the suites it selected whole)."""
        self.state.note_selected(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Taken off the report (after the other plugins saw it): the terminal reporter keeps
        # every report to the end of the run, and with it ~2 KB of result per case.
        result = report.__dict__.pop("evalcase", None)
        if result is None:
            return
        if self.summary is None:
            from .summary import RunSummary

            self.summary = RunSummary(rows=self.rows)
        self.summary.add(result)
        if self.results is not None:
            self.results.append(result)


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
    """Controller only: aggregate, write the report files, apply the baseline gate."""
    collector = _collector(session.config)
    if collector is None or not collector.results:  # no eval case, or no report asked for
        return
    from .runreport import build_run_report, judges_used, run_info

    state = get_session(session.config)
    judge = judges_used(collector.results, state.judge_override or state.default_judge)
    run = run_info(session.config, state.mode, judge, state.started)
    report_dir = (
        Path(session.config.invocation_params.dir, state.report_dir) if state.report_dir else None
    )
    tolerance = session.config.getoption("eval_tolerance")
    state.run_report = build_run_report(
        collector.results, run, state.baseline, tolerance, report_dir
    )
    if state.run_report.gate_failed and session.exitstatus == pytest.ExitCode.OK:
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
    if state.removed_temp_files:
        count = state.removed_temp_files
        terminalreporter.write_line(
            f"removed {count} temp file{'s' * (count != 1)} left by interrupted recordings"
        )
    report = state.run_report
    if report is not None and report.doc.get("baseline") is not None:
        from .baseline import render_baseline_terminal

        terminalreporter.write_sep("=", "regressions vs baseline")
        for line in render_baseline_terminal(report.doc["baseline"]):
            terminalreporter.write_line(line)
    if report is not None and report.written:
        terminalreporter.write_line("eval reports: " + ", ".join(str(p) for p in report.written))
