"""pytest sessions run in the test's own process, as a subprocess in the project's folder would
run them, without an interpreter's start-up (most of an end-to-end test's time).

A run imports the project's own modules afresh and forgets them when it ends; the libraries it
imports stay loaded: imported a second time in one process, a library no longer matches the
objects its first import left behind (a deepeval model class, requests' cookie jar under
vcrpy's patch). Where a test needs a process of its own (a signal, a pid, what an interpreter
imports), it starts a subprocess instead.

pytester's machinery is used as pytester uses it (pytest 8-9): the sys.modules and sys.path
snapshots and the sys-level output capture.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _pytest.capture import MultiCapture, SysCapture
from _pytest.pytester import SysModulesSnapshot, SysPathsSnapshot

# The variables an outer xdist worker sets: a run started for a project is no worker of it.
XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

# Plugins an in-process run goes without. pytest-rerunfailures (installed beside xdist, used by
# no test here) starts a socket server thread in every session where xdist is loaded, which
# never ends: one thread left in this process per run (648 in a serial suite run), ~2 ms a run.
IN_PROCESS_WITHOUT = ("-p", "no:rerunfailures")


class _RememberedDistribution(importlib.metadata.Distribution):
    """An installed distribution whose metadata files are read and parsed once per process.

    Every pytest session reads every installed distribution's entry points (its plugins) and
    the file lists of those with a pytest plugin (to mark them for assertion rewriting):
    thousands of paths from deepeval's and langsmith's RECORD, a third of a small in-process
    session's time. A session in this process reads them from here instead."""

    def __init__(self, dist: importlib.metadata.Distribution) -> None:
        self._dist = dist

    @functools.cache  # noqa: B019 - one instance per distribution folder, kept for the process
    def read_text(self, filename: str) -> str | None:
        return self._dist.read_text(filename)

    def locate_file(self, path: Any) -> Any:
        return self._dist.locate_file(path)

    @functools.cached_property
    def files(self) -> list[importlib.metadata.PackagePath] | None:  # type: ignore[override]
        return super().files

    @functools.cached_property
    def entry_points(self) -> importlib.metadata.EntryPoints:  # type: ignore[override]
        return super().entry_points

    @functools.cached_property
    def metadata(self) -> Any:  # type: ignore[override]
        return super().metadata


_REMEMBERED: dict[tuple[str, int], _RememberedDistribution] = {}
_distributions = importlib.metadata.distributions


def remembered_distributions(**kwargs: Any) -> Iterator[importlib.metadata.Distribution]:
    """`importlib.metadata.distributions`, each found distribution folder's files read once
    (again if the folder changed: its mtime)."""
    for dist in _distributions(**kwargs):
        folder = getattr(dist, "_path", None)
        try:
            key = (str(folder), os.stat(folder).st_mtime_ns) if folder is not None else None
        except OSError:
            key = None
        if key is None:
            yield dist
            continue
        if key not in _REMEMBERED:
            _REMEMBERED[key] = _RememberedDistribution(dist)
        yield _REMEMBERED[key]


def forgetting_only_modules_under(root: Path) -> Callable[[], SysModulesSnapshot]:
    """A sys.modules snapshot whose restore forgets only the modules imported from `root`."""
    prefix = str(root) + os.sep

    def keep(name: str) -> bool:
        path = getattr(sys.modules.get(name), "__file__", None)
        return not (isinstance(path, str) and path.startswith(prefix))

    return lambda: SysModulesSnapshot(preserve=keep)


def top_level_names(root: Path) -> set[str]:
    """The modules and packages a run in `root` imports from its own folder first."""
    return {
        path.stem if path.suffix == ".py" else path.name
        for path in root.iterdir()
        if path.suffix == ".py" or (path / "__init__.py").is_file()
    }


def run_pytest_in_process(
    root: Path, *args: str, env: Mapping[str, str] | None = None, unset: Iterable[str] = ()
) -> pytest.RunResult:
    """`python -m pytest --basetemp=<root>/.basetemp ARGS` in `root`, in this process: the
    variables in `unset` and the outer run's xdist variables removed, then `env` set.

    A module of the project's own names that this process imported from elsewhere (a test
    importing an example's package from the repository, while the run is in a copy) is set
    aside for the run, so the run imports the project's own."""
    names = top_level_names(root)
    aside = {
        name: module for name, module in sys.modules.items() if name.partition(".")[0] in names
    }
    for name in aside:
        del sys.modules[name]
    try:
        return _run(root, args, env, unset)
    finally:
        sys.modules.update(aside)


def _run(
    root: Path, args: tuple[str, ...], env: Mapping[str, str] | None, unset: Iterable[str]
) -> pytest.RunResult:
    with pytest.MonkeyPatch.context() as patch:
        for name in (*XDIST_VARIABLES, "PYTEST_ADDOPTS", *unset):
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        patch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE=1
        patch.setattr(importlib.metadata, "distributions", remembered_distributions)
        patch.chdir(root)
        modules = forgetting_only_modules_under(root)()
        paths = SysPathsSnapshot()
        sys.path.insert(0, str(root))  # `python -m pytest` puts the working directory first
        capture = MultiCapture(in_=None, out=SysCapture(1), err=SysCapture(2))
        started = time.perf_counter()
        capture.start_capturing()
        try:
            # What the run warns of outside its own capture stays with it, as in a subprocess.
            with warnings.catch_warnings(record=True):
                code = pytest.main(
                    [f"--basetemp={root / '.basetemp'}", *IN_PROCESS_WITHOUT, *args], plugins=[]
                )
        finally:
            out, err = capture.readouterr()
            capture.stop_capturing()
            paths.restore()
            modules.restore()
    print(out)
    print(err, file=sys.stderr)
    return pytest.RunResult(code, out.splitlines(), err.splitlines(), time.perf_counter() - started)
