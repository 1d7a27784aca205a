"""One bytecode cache shared by the fresh interpreters a test run starts.

The environment sets PYTHONDONTWRITEBYTECODE=1, so every interpreter a test starts (a pytest
subprocess, an xdist worker, `python -m pytest_evalcases`, the guarded interpreter) compiled the
plugin again, and pytest rewrote its modules' asserts again (it has a pytest11 entry point): about
half of such a run's start-up. Those interpreters now share one cache for the run
(PYTHONPYCACHEPREFIX, a temporary folder, removed at the end) and write to it.

A cached module goes stale only when its source changes after it was cached within the same
second at the same size (bytecode is checked by mtime and size). So:
- nothing under the temporary folders is ever cached (where the tests write and edit their
  projects' modules): the cache holds a file where that tree would go, so no folder can be made
  there; a write is given up silently, a read finds nothing and compiles the source;
- the run fails if a source it cached changed after it was cached (a test editing a module
  outside the temporary folders, or a source edited while the suite ran), naming the files.

The test process itself (and the run's own xdist workers) start as before: the cache is set in
their environment only for the interpreters they start. EVALCASES_TESTS_PYCACHE=0 turns it off
(every interpreter compiles as before).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The run's cache folder, inherited by the run's xdist workers; "0" turns the cache off.
SHARED_CACHE_VARIABLE = "EVALCASES_TESTS_PYCACHE"
_OWNED = pytest.StashKey[Path]()
_STALE = pytest.StashKey[list[str]]()


def bytecode_env() -> dict[str, str]:
    """The bytecode variables of an interpreter a test starts with an environment of its own:
    none where the run shares its cache (os.environ holds it), else no bytecode written."""
    if "PYTHONPYCACHEPREFIX" in os.environ:
        return {}
    return {"PYTHONDONTWRITEBYTECODE": "1"}


def create_shared_cache(config: pytest.Config) -> None:
    """At the start of the run (not in its xdist workers): the cache folder, owned by this
    process, with the temporary folders blocked."""
    if os.environ.get(SHARED_CACHE_VARIABLE):
        return  # an xdist worker of the run, or turned off
    folder = Path(tempfile.mkdtemp(prefix="evalcases-tests-pycache-"))
    roots = {Path(tempfile.gettempdir()).resolve()}
    basetemp = config.getoption("basetemp", None)
    if basetemp:
        roots.add(Path(basetemp).resolve())
    for root in roots:
        block_temporary_folders(folder, root)
    os.environ[SHARED_CACHE_VARIABLE] = str(folder)
    config.stash[_OWNED] = folder


def block_temporary_folders(folder: Path, root: Path) -> None:
    """A file where the cache of the sources under `root` would go: no folder is made there."""
    blocker = folder / root.relative_to(root.anchor)
    blocker.parent.mkdir(parents=True, exist_ok=True)
    if not blocker.exists():
        blocker.write_text("no bytecode of the temporary folders is cached (tests/bytecode.py)\n")


def shared_cache_environment() -> Iterator[None]:
    """For the tests of this process: the interpreters they start use and write the cache."""
    folder = os.environ.get(SHARED_CACHE_VARIABLE, "0")
    if folder == "0":
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPYCACHEPREFIX", folder)
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


def check_shared_cache(session: pytest.Session) -> None:
    """At the end of the run (its owner): fail it if a source changed after it was cached."""
    folder = session.config.stash.get(_OWNED, None)
    if folder is None:
        return
    stale = sorted(changed_after_caching(folder))
    session.config.stash[_STALE] = stale
    if stale and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def report_stale(config: pytest.Config, terminal: pytest.TerminalReporter) -> None:
    stale = config.stash.get(_STALE, [])
    if stale:
        terminal.section("bytecode cache", red=True)
        terminal.line(
            f"{len(stale)} source(s) changed after the run cached their bytecode (a test edited "
            "a module outside the temporary folders, or a file was edited during the run): a "
            "fresh interpreter may have run the old code. Run again; set "
            f"{SHARED_CACHE_VARIABLE}=0 to run without the cache."
        )
        for path in stale[:20]:
            terminal.line(f"  {path}")


def remove_shared_cache(config: pytest.Config) -> None:
    folder = config.stash.get(_OWNED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(SHARED_CACHE_VARIABLE, None)


def changed_after_caching(folder: Path) -> Iterator[str]:
    """The sources modified after their bytecode was written to the cache."""
    tag = f".{sys.implementation.cache_tag}"
    for pyc in folder.rglob("*.pyc"):
        stem = pyc.name.partition(tag)[
            0
        ]  # `name.cpython-311.pyc`, `name.cpython-311-pytest-9.0.pyc`
        source = Path("/", *pyc.parent.relative_to(folder).parts, stem + ".py")
        try:
            if source.stat().st_mtime_ns > pyc.stat().st_mtime_ns:
                yield str(source)
        except OSError:
            continue  # a source removed since (a package the run installed in a temporary venv)
