"""`python -m pytest_evalcases init` end to end, for each framework: in the fresh scaffold,
`pytest --live --eval-judge lexical` records the three cases and `pytest` replays them, both
green, with no key, no network and no warning; `scan` finds no secret; a bug in the scaffold's
tools module stales the recordings by name. pytest runs with the scaffold as its working
directory, as a user would run it: the replay in a fresh interpreter (what it imports and warns
of is a user's first run), the live and the stale runs in this process (inprocess.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from evalhelpers import output
from inprocess import run_pytest_in_process

from pytest_evalcases.cli import main
from pytest_evalcases.cli.init_templates import FRAMEWORKS


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def pytest_in_process(folder: Path, *args: str) -> pytest.RunResult:
    """`pytest_in`, in this process."""
    keys = [name for name in os.environ if name.endswith("_API_KEY")]
    return run_pytest_in_process(folder, "-p", "no:cacheprovider", *args, unset=keys)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_fresh_scaffold_records_then_replays_green_offline(
    framework: str, tmp_path: Path
) -> None:
    folder = tmp_path / "proj"
    assert main(["init", "--framework", framework, str(folder)]) == 0

    live = pytest_in_process(folder, "--live", "--eval-judge", "lexical")
    assert live.ret == 0, output(live)
    assert "3 recorded" in output(live) and "3 passed" in output(live)
    assert len(list((folder / "cassettes/assistant").glob("*.json"))) >= 3

    replay = pytest_in(folder)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "0 recorded, 3 replayed, 0 stale" in replay.stdout
    assert "3 passed in" in replay.stdout and "warning" not in replay.stdout.lower()
    assert not (folder / ".deepeval").exists()
    assert main(["scan", str(folder / "cassettes")]) == 0

    if framework == "plain":  # the fingerprint covers the whole scaffolded package
        tools = folder / "my_agent/tools.py"
        tools.write_text(tools.read_text().replace("ranked[:2]", "ranked[1:2]"))
        stale = pytest_in_process(folder, "-q")
        assert stale.ret == 1, output(stale)
        assert "code.my_agent.tools changed" in output(stale)
