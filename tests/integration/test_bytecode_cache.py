"""The bytecode cache the tests' fresh interpreters share (tests/bytecode.py) never runs a module
the tests edited as it was before the edit."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import bytecode
import pytest


def run_module(folder: Path, prefix: Path) -> str:
    """`python -c "import mod"` in `folder`, writing bytecode to the cache at `prefix`."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return subprocess.check_output(
        [sys.executable, "-c", "import mod"], cwd=folder, env=env, text=True, timeout=60
    ).strip()


def edit_unseen(module: Path, text: str) -> None:
    """Rewrite `module` as bytecode validation cannot see: same size, same mtime."""
    stamp = module.stat().st_mtime_ns
    assert len(text) == len(module.read_text())
    module.write_text(text)
    os.utime(module, ns=(stamp, stamp))


def cached(prefix: Path, folder: Path) -> list[Path]:
    """The bytecode the cache at `prefix` holds of the modules in `folder`."""
    return sorted(prefix.joinpath(folder.relative_to(folder.anchor)).rglob("*.pyc"))


@pytest.mark.parametrize("blocked", [True, False], ids=["temporary-folders-blocked", "control"])
def test_a_module_edited_in_a_temporary_folder_runs_as_edited(
    tmp_path: Path, blocked: bool
) -> None:
    """The cache holds a file where the temporary folders' tree would go: a module a test writes
    there is compiled afresh at every run. The control, without it, shows the edit a cache
    would hide (so the first case proves something)."""
    prefix = tmp_path / "pycache"
    prefix.mkdir()
    if blocked:
        bytecode.block_temporary_folders(prefix, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    module = project / "mod.py"
    module.write_text("print('one')\n")

    first = run_module(project, prefix)
    edit_unseen(module, "print('two')\n")
    second = run_module(project, prefix)

    assert first == "one"
    if blocked:
        assert second == "two"
        assert not prefix.joinpath(project.relative_to(project.anchor)).exists()
    else:
        assert second == "one"  # stale: what the blocked cache prevents
        assert [pyc.name.split(".")[0] for pyc in cached(prefix, project)] == ["mod"]


def test_the_runs_cache_blocks_the_temporary_folders() -> None:
    """The run's own cache (set for the interpreters the tests start) blocks the folder the
    tests' projects are made in."""
    folder = os.environ.get("PYTHONPYCACHEPREFIX")
    if folder is None:
        pytest.skip(f"the run shares no bytecode cache ({bytecode.SHARED_CACHE_VARIABLE}=0)")
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    temporary = Path(tempfile.gettempdir()).resolve()
    assert (Path(folder) / temporary.relative_to(temporary.anchor)).is_file()


def test_a_source_changed_after_it_was_cached_is_named(tmp_path: Path) -> None:
    """The end-of-run check: a source modified after its bytecode was written is listed, one
    cached before its last change is not."""
    prefix = tmp_path / "pycache"
    sources = tmp_path / "src"
    sources.mkdir()
    tag = sys.implementation.cache_tag
    for name in ("kept", "edited"):
        source = sources / f"{name}.py"
        source.write_text("x = 1\n")
        pyc = prefix / sources.relative_to(sources.anchor) / f"{name}.{tag}-pytest-9.0.pyc"
        pyc.parent.mkdir(parents=True, exist_ok=True)
        pyc.write_bytes(b"")
        os.utime(source, ns=(1_000_000_000, 1_000_000_000))
        os.utime(pyc, ns=(2_000_000_000, 2_000_000_000))
    os.utime(sources / "edited.py", ns=(3_000_000_000, 3_000_000_000))

    assert list(bytecode.changed_after_caching(prefix)) == [str(sources / "edited.py")]
