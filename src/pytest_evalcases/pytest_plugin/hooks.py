"""pytest hooks only: each hook hands its work to the module that owns it.

This module loads in every pytest run where the plugin is installed, so it imports only what
every run needs; collection, recording and reporting load when a run uses them (each such import
is marked `# start-up:`).
"""

from __future__ import annotations

import functools
import gc
import time
from typing import Any

import pytest

from ..core.errors import EvalCaseError
from ..core.safe_text import terminal_safe
from ..store.run_marker import end_live_run, previous_live_run, start_live_run
from .gathering import (
    RESULTS_PLUGIN,
    ErrorStatus,
    ResultCollector,
    check_report_options,
    load_baseline,
    load_input_manifest,
    load_locked_manifest,
    results_collector,
)
from .heap import stop_freezing
from .left_behind import LeftBehind
from .options import add_options
from .session import SESSION_KEY, EvalSession, get_session
from .settings import (
    check_otel_installed,
    check_vcrpy_installed,
    dont_rewrite_deepeval,
    noisy_plugins_line,
    read_settings,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hooks the plugin calls, for conftests and plugins to implement (hookspecs.py)."""
    # start-up: the hook specs (a module of signatures) are read once, here
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--live-prune is a command of its own: no collection, no session."""
    if config.getoption("eval_live_prune", False):
        # start-up: --live-prune alone reads the case folders
        from .housekeeping import prune_orphans

        return prune_orphans(config)
    return None


def pytest_configure(config: pytest.Config) -> None:
    settings = read_settings(config)
    state = EvalSession(config, settings)
    if settings.is_worker and settings.live:
        # start-up: a worker of a live run shares its users' ingestion with the other workers
        from ..engine.shared_ingestion import work_for_xdist_run

        work_for_xdist_run(getattr(config, "workerinput", {}).get("testrunuid"))
    config.pluginmanager.register(LeftBehind(settings.is_worker), "evalcases-left-behind")
    state.input_manifest = load_input_manifest(config)  # every process: its split deselects
    if not settings.is_worker:
        check_report_options(config)
        state.baseline = load_baseline(config)
        state.locked_manifest = load_locked_manifest(config)
        config.pluginmanager.register(ResultCollector(config, state), RESULTS_PLUGIN)
    if settings.live or settings.replay_http:  # (xdist workers too: they print with -n and -v)
        config.pluginmanager.register(ErrorStatus(), "evalcases-error-status")
    if settings.otel and settings.live:
        check_otel_installed()
    check_vcrpy_installed(settings)
    if config.option.markers:  # `pytest --markers` collects nothing: list the case files' own
        # start-up: only --markers reads the case files here
        from .housekeeping import case_markers

        for name in sorted(case_markers(settings.case_dirs, settings.cassette_root)):
            config.addinivalue_line("markers", f"{name}: eval case category or mark")
    if not settings.is_worker:  # a live run that never ended (os._exit, a kill) is reported
        state.previous_live_run = previous_live_run(settings.cassette_root)
    if settings.live:
        dont_rewrite_deepeval()
        # Temp files of killed runs go first (never in a cassette folder outside the rootdir).
        if (
            not settings.is_worker
            and not settings.dry_run
            and settings.cassette_root.is_relative_to(settings.rootdir.resolve())
        ):
            # start-up: cassette files are touched by live runs only, here
            from ..store.folders import remove_dead_temp_files

            state.removed_temp_files = remove_dead_temp_files(settings.cassette_root)
            state.live_marker = start_live_run(settings.cassette_root)
    config.stash[SESSION_KEY] = state


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: workers tag their spans with this run's id."""
    state = get_session(node.config)
    if state.otel_requested and state.settings.live:
        node.workerinput["evalcases_run_id"] = state.run_id


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    if get_session(parent.config).is_case_file(file_path):
        # start-up: collection (and pydantic) loads with the first case file
        from .collect import CaseFile

        return CaseFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """A case folder's `*.json` entries that pytest skips (not regular files) are collected as
    case files too, each one error item naming why: none is silently not run."""
    report = yield
    if isinstance(collector, pytest.Directory) and report.passed:
        settings = get_session(collector.config).settings
        path = collector.path
        if any(path.is_relative_to(d) for d in settings.case_dirs) and not path.is_relative_to(
            settings.cassette_root
        ):
            # start-up: collection loads with the first case folder
            from .collect import unreadable_case_files

            report.result.extend(unreadable_case_files(collector))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """--eval-otel in a live run: the collection phase's start and end, for its span."""
    state = get_session(session.config)
    if not (state.otel_requested and state.settings.live):
        return (yield)
    started = time.time_ns()
    try:
        return (yield)
    finally:
        state.collection_ns = (started, time.time_ns())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Claim the suite names of the case files this run did not collect (two files declaring
    one name must be refused whatever the selection). Collected items live until the end of the
    run: move them out of the cyclic garbage collector's way (its full passes over a large
    collection cost ~1 s per 10,000 cases; see heap.py)."""
    state = get_session(session.config)
    if not state.seen_case_files:  # no eval case in this run: read nothing
        return
    # start-up: only a run with eval cases scans the case folders
    from .housekeeping import claim_uncollected_suites

    claim_uncollected_suites(state)
    selected = [item.nodeid for item in session.items if getattr(item, "is_eval_item", False)]
    state.note_selected(selected)
    if selected:
        gc.freeze()
    else:  # no eval case runs: the collector as pytest alone would have it
        stop_freezing()


def pytest_report_header(config: pytest.Config) -> str | None:
    """The authored input manifest this run obeys, and what it fixes."""
    manifest = get_session(config).input_manifest
    if manifest is None:
        return None
    # start-up: only a run with an authored manifest formats its values here
    from ..report.formatting import input_manifest_parts
    from ..store.redaction import redact_for_output

    parts = " · ".join(input_manifest_parts(manifest.values()))
    line = f"evalcases: input manifest {manifest.file} (hash {manifest.hash[:12]})"
    return terminal_safe(redact_for_output(line + (f": {parts}" if parts else "")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The authored input manifest's split: the cases outside it do not run (deselected, as
    -k deselects)."""
    manifest = get_session(config).input_manifest
    if manifest is None or not manifest.split:
        return
    kept, dropped = [], []
    for item in items:
        case, ctx = getattr(item, "case", None), getattr(item, "ctx", None)
        if case is None or ctx is None or manifest.admits(ctx.suite.name, case.id, case.category):
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    state = get_session(session.config)
    if state.input_manifest is not None and not state.settings.is_worker:
        # start-up: the authored manifest's check reads every suite; only a manifest asks
        from .finish import check_input_manifest

        check_input_manifest(session, state)
    if state.locked_manifest is not None:  # before any case runs (the controller's check)
        # start-up: the manifest check reads every suite; only --eval-manifest asks
        from .finish import check_locked_manifest

        check_locked_manifest(session, state)
    if session.config.option.collectonly or not state.seen_case_files:
        return (yield)
    if state.interrupted is not None:  # user code raised KeyboardInterrupt while suites loaded
        # start-up: only a run interrupted while it collected reports its cases this way
        from .sources.running import InterruptedSource

        state.source = InterruptedSource(state.interrupted)
        return (yield)
    if state.settings.ingest_only:
        # start-up: only --eval-ingest-only ingests the selected users and runs no case
        from .sources.ingest_only import ingest_selected

        state.otel_export  # noqa: B018 - --eval-otel: made now, so the ingestion phase is sent
        state.source = ingest_selected(session, state)
        return (yield)
    if state.settings.live or state.settings.replay_http:
        # start-up: the live engine (asyncio, vcrpy's router) loads only in runs of the system
        from .sources.running import record_selected, system_source

        state.source = system_source(state)
    else:
        # start-up: the replay engine loads with the first case, not with the plugin
        from .sources.replay import ReplaySource

        state.source = ReplaySource(state.judge_binding)
        return (yield)
    if not state.records_in_one_batch:
        return (yield)
    restore_maxfail = record_selected(session, state)
    try:
        return (yield)
    finally:
        restore_maxfail()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if getattr(item, "is_eval_item", False):
        case_result, outcome_of, hook_implemented, extend_case_result = _result_builders()
        exc = call.excinfo.value if call.excinfo else None
        if call.when == "setup" and isinstance(exc, EvalCaseError):
            # The message says it all (secrets redacted, controls shown); a traceback would not.
            report.longrepr = item.repr_failure(call.excinfo)
        outcome = outcome_of(item, call.when, report, exc)
        if outcome is not None:
            if outcome == "error" and call.when == "call" and report.failed:
                report.evalcase_error = True  # a small flag: xdist carries it with the report
            state = get_session(item.config)
            # A plain JSON-able dict: xdist carries it to the controller with the report.
            report.evalcase = case_result(item, outcome, bool(state.settings.report_dir), exc)
            if hook_implemented(item.config, "pytest_evalcases_case_result"):
                extend_case_result(item, report)  # a conftest's fields, here: in the worker
            if state.otel is not None:  # --eval-otel in a live run: the case span ends
                state.otel.case_reported(item.nodeid, report.evalcase)
            # The result holds all that is needed now: let the trace and scores go (10k cases).
            item.recording = item.scores = None
    return report


@functools.cache
def _result_builders() -> tuple[Any, Any, Any, Any]:
    """case_result.case_result and outcome_of, and the pytest_evalcases_case_result hook's
    callers, imported once, by the first eval item's report."""
    # start-up: result dicts load with the first eval item's report
    from .case_result import case_result, outcome_of
    from .hook_calls import extend_case_result, implemented

    return case_result, outcome_of, implemented, extend_case_result


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Controller only: the live run's completeness (its exit code), then aggregate, write the
    report files, apply the baseline gate."""
    state = get_session(session.config)
    state.keep_guard_refusals()  # workers too: each hands the controller its own
    try:
        collector = results_collector(session.config)
        if collector is None or (collector.changes is None and not collector.results):
            return  # an xdist worker, or no eval case to report on
        # start-up: the end of a run loads the report floor, only in runs with eval cases
        from .finish import finish_run

        finish_run(session, state)
    finally:
        state.close_otel()  # workers too: each sends its own spans (after the reporting phase)
        if state.guard_refusals and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the network was asked for
        if state.interrupted is not None:  # ended cleanly, with its summary, as at a Ctrl-C
            session.exitstatus = pytest.ExitCode.INTERRUPTED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = get_session(config)
    collector = results_collector(config)
    if collector is not None and collector.summary is not None:
        # start-up: the summary's end loads the report floor, only in runs with eval cases
        from .finish import write_summary

        write_summary(terminalreporter, config, state)
    if state.interrupted is not None and not state.settings.is_worker:
        terminalreporter.write_line(f"run interrupted: {state.interrupted}")
    if state.previous_live_run is not None:
        terminalreporter.write_line(state.previous_live_run)
    if state.guard_refusals and not state.settings.is_worker:
        terminalreporter.write_sep("=", "network guard: refused outside any case")
        for refusal in state.guard_refusals:  # a host the system named: printed inert
            terminalreporter.write_line(terminal_safe(refusal))
    noisy = noisy_plugins_line(config, state.settings)
    if noisy is not None and not state.settings.is_worker:
        terminalreporter.write_line(noisy)


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_freezing()
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.close_http()
        if state.live_marker is not None:  # the run reached its end: no report next time
            end_live_run(state.live_marker)
