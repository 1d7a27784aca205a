"""`python -m pytest_evalcases scan` for pre-commit/CI: exit 0 when clean, 1 with each finding
named by file, JSON path and kind (never the value), 2 on a usage error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_secrets import ANTHROPIC, GITHUB, GOOGLE

from pytest_evalcases.store.redaction import secret_values_from_env


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def scan_command(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # The environment of the scan counts, so the test's own credentials are kept out of it.
    clean_env = {
        name: value
        for name, value in os.environ.items()
        if name not in secret_values_from_env(os.environ)
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "scan", *args],
        cwd=cwd,
        env={**clean_env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_scan_command_clean_exits_0(tmp_path: Path) -> None:
    write(tmp_path / "cassettes" / "s" / "a.json", {"trace": {"answer": "risk-free"}})
    write(tmp_path / "cassettes" / "s" / "b.json", {"trace": {"answer": "fine"}})

    proc = scan_command(tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "clean: 2 files scanned\n"


def test_scan_command_lists_findings_and_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "cassettes" / "s" / "a.json", {"trace": {"answer": f"key {ANTHROPIC}"}})
    write(
        tmp_path / "cassettes" / "s" / "b.json",
        {"trace": {"tool_calls": [{"args": {"q": "my-local-db-password"}}]}},
    )
    write(tmp_path / "cassettes" / "s" / "c.json", {"trace": {"answer": "fine"}})

    proc = scan_command(tmp_path, env={"DB_PASSWORD": "my-local-db-password"})

    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{Path('cassettes/s/a.json')}: $.trace.answer: anthropic-key",
        f"{Path('cassettes/s/b.json')}: $.trace.tool_calls[0].args.q: DB_PASSWORD",
        "found 2 secrets in 2 files (3 scanned): re-record with --live (recording redacts "
        "secrets), or fix the files by hand",
    ]
    assert "my-local-db-password" not in proc.stdout + proc.stderr


def test_scan_command_reports_an_unreadable_file_and_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "recs" / "a.json", "not json")

    proc = scan_command(tmp_path, "recs")

    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{Path('recs/a.json')}: not JSON (Expecting value at line 1)",
        "found 1 file not checked (1 scanned): re-record with --live (recording redacts "
        "secrets), or fix the files by hand",
    ]


def test_scan_command_takes_files_and_folders(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.json", {"k": GOOGLE})
    write(tmp_path / "b.json", {"k": "fine"})

    proc = scan_command(tmp_path, "a", "b.json")

    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"{Path('a/x.json')}: $.k: google-api-key"


def test_scan_command_default_folder_from_the_ini(tmp_path: Path) -> None:
    write(tmp_path / "pytest.ini", "[pytest]\neval_cassettes = recordings\n")
    write(tmp_path / "recordings" / "s" / "a.json", {"k": GITHUB})
    write(tmp_path / "cassettes" / "s" / "a.json", {"k": "not looked at"})

    proc = scan_command(tmp_path)

    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"{Path('recordings/s/a.json')}: $.k: github-token"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing"], "error: missing: no such file or folder\n"),
        (
            [],
            "error: cassettes: no such folder (the default cassettes folder); pass the files or "
            "folders to scan\n",
        ),
    ],
)
def test_scan_command_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = scan_command(tmp_path, *args)

    assert proc.returncode == 2
    assert proc.stderr == message
    assert proc.stdout == ""


def test_scan_command_bad_option_exits_2(tmp_path: Path) -> None:
    proc = scan_command(tmp_path, "--no-such-option")

    assert proc.returncode == 2
    assert "unrecognized arguments" in proc.stderr
