"""The run state's scan of the case files (orphans, prune) survives hostile files: a file
nested 100,000 deep, a 5,000-digit number, a name that is not a string (issue 14)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pytest_evalcases.pytest_plugin.housekeeping import scan_suites

DEEP_JSON = '{"name": "deep", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}"


BIG_NUMBER_JSON = '{"name": "bignumber", "k": ' + "7" * 5_000 + ', "cases": []}'


def test_scan_suites_survives_hostile_files(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "deep.json").write_text(DEEP_JSON)
    (cases / "bignumber.json").write_text(BIG_NUMBER_JSON)
    (cases / "numbername.json").write_text('{"name": 5, "cases": []}')
    (cases / "ok.json").write_text(json.dumps({"name": "ok", "cases": [{"id": "a"}, 3]}))

    suites, unreadable = scan_suites([cases], tmp_path / "cassettes", {})

    assert suites == {cases / "ok.json": ("ok", ["a"])}
    assert sorted(p.name for p in unreadable) == ["bignumber.json", "deep.json", "numbername.json"]


def test_scan_suites_lists_files_that_are_not_regular_as_unreadable(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    os.mkfifo(cases / "fifo.json")  # read, it would block the scan
    (cases / "zero.json").symlink_to("/dev/zero")  # read, it would never end
    (cases / "ok.json").write_text(json.dumps({"name": "ok", "cases": [{"id": "a"}]}))

    suites, unreadable = scan_suites([cases], tmp_path / "cassettes", {})

    assert suites == {cases / "ok.json": ("ok", ["a"])}
    assert sorted(p.name for p in unreadable) == ["fifo.json", "zero.json"]
