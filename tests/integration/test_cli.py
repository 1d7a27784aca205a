"""`python -m pytest_evalcases` in a fresh interpreter: --help lists the commands; no command
is a usage error, and `merge --help` names its options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_evalcases.__main__ import main


def test_cli_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and "merge" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "merge", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and "--baseline FILE" in proc.stdout
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
