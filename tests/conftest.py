"""Fixtures of the pytester end-to-end tests (pytester itself is enabled by the root conftest)."""

from __future__ import annotations

import gc
import importlib.metadata
import os
import signal
import sys
from collections.abc import Iterator

import bytecode
import pytest
from evalhelpers import TEST_COLUMNS, Project
from fact_model import model  # noqa: F401 - the loopback model of the ingestion tests
from inprocess import (
    IN_PROCESS_WITHOUT,
    XDIST_VARIABLES,
    forgetting_only_modules_under,
    remembered_distributions,
)
from scripted_openai import scripted_openai  # noqa: F401 - a fixture of the adapter tests


# The fresh interpreters the tests start share one bytecode cache (see bytecode.py).
def pytest_configure(config: pytest.Config) -> None:
    bytecode.create_shared_cache(config)
    # A suite started in the background of a shell without job control ignores SIGINT, and the
    # interpreters it starts would inherit that: the Ctrl-C tests (tests/hostile/
    # test_bounded_hooks.py, test_ctrl_c_blocked_loop.py, ...) need them to hear it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    # Collecting the suite makes ~360,000 objects that live as long as the run (test modules,
    # the libraries they import, the items); the cyclic GC walked them again on every full pass
    # while they were made (24 passes, 2.2 s of a 7.7 s collection). So: no GC pass during
    # collection, then what is alive is frozen out of its way, as the plugin does for its own
    # runs (pytest_plugin/heap.py). The cyclic garbage of collection is frozen with it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def pytest_sessionfinish(session: pytest.Session) -> None:
    bytecode.check_shared_cache(session)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    bytecode.report_stale(config, terminalreporter)


def pytest_unconfigure(config: pytest.Config) -> None:
    bytecode.remove_shared_cache(config)


@pytest.fixture(scope="session", autouse=True)
def _shared_bytecode_cache() -> Iterator[None]:
    yield from bytecode.shared_cache_environment()


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Project:
    """An empty eval project (ini, system module, input file) in pytester's directory.

    Its runs are pytest sessions in this process (`pytester.runpytest_inprocess`), each importing
    the project's modules afresh. A test marked `subprocess` runs them in a fresh interpreter
    instead: where a run must be a process of its own (a signal, a pid, what it imports). A test
    whose other runs need no process of their own starts that one with `run_in_subprocess`."""
    for name, value in bytecode.bytecode_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("COLUMNS", TEST_COLUMNS)
    if request.node.get_closest_marker("subprocess"):
        runner = pytester.runpytest_subprocess
        return Project(pytester.path, runner, runner).write_base()
    # As a subprocess started for the project would be: no worker of this run's xdist, and the
    # project's folder importable (`python -m pytest` puts the working directory first).
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE=1
    monkeypatch.setattr(importlib.metadata, "distributions", remembered_distributions)
    pytester.syspathinsert()
    snapshot = forgetting_only_modules_under(pytester.path)
    # pytester's private hooks (pytest 8-9): fail here, loudly, if they change.
    monkeypatch.setattr(pytester, "_Pytester__take_sys_modules_snapshot", snapshot)
    monkeypatch.setattr(pytester, "_sys_modules_snapshot", snapshot())

    def run_in_process(*args: str | os.PathLike[str]) -> pytest.RunResult:
        return pytester.runpytest_inprocess(*IN_PROCESS_WITHOUT, *args)

    return Project(pytester.path, run_in_process, pytester.runpytest_subprocess).write_base()
