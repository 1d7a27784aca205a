"""The calibration replay's speed work (issue 31), end to end: cases that share one pass rule
still stale each on its own change, and pytest's locations, worked out once per case file, are
the ones pytest gives every item kind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, output, run_pytest_env_in_process

# ---- end to end: what the rules are shared by still stales each case -------------------------
INI = (
    "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
    "asyncio_default_fixture_loop_scope = function\n"
)

# Every item's location, and the one pytest's own rule gives it, written at collection's end.
LOCATIONS_CONFTEST = """\
import json

import pytest


def pytest_collection_finish(session):
    rows = [
        [item.nodeid, list(item.location), list(pytest.Item.location.func(item))]
        for item in session.items
    ]
    with open("locations.json", "w", encoding="utf-8") as handle:
        json.dump(rows, handle)
"""


def _calibration(**fields: Any) -> dict[str, Any]:
    cases = [
        {"id": "plain", "stage": "correctness", "answer": "red fox", "reference": "red fox"},
        {"id": "twin", "stage": "correctness", "answer": "blue jay", "reference": "blue jay"},
        {
            "id": "strict-criteria",
            "stage": "correctness",
            "correctness": {"correctness_criteria": "Every word matches."},
            "answer": "green owl",
            "reference": "green owl",
        },
        {
            "id": "wrong",
            "stage": "correctness",
            "answer": "GREYx WOLFx",
            "reference": "grey wolf",
            "expect": "fail",
            "defect": "names another animal",
        },
    ]
    for case in cases:
        case.setdefault("expect", "pass")
    doc: dict[str, Any] = {"name": "cal", "kind": "calibration", "judge": "lexical"}
    return {**doc, "cases": cases, **fields}


def _run(root: Path, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(root, "-p", "no:cacheprovider", *args)


def _edit(root: Path, change: Any) -> None:
    path = root / "cases" / "cal.json"
    doc = json.loads(path.read_text())
    change(doc["cases"])
    path.write_text(json.dumps(doc))


def test_cases_sharing_a_rule_still_stale_each_on_its_own_change(project: Project) -> None:
    root = project.root
    (root / "pytest.ini").write_text(INI)
    project.write_suite(_calibration())
    assert _run(root, "--live").ret == 0
    assert _run(root).ret == 0
    keys = {
        case: project.cassette("cal", case)["verdicts"]["correctness"]["key"]
        for case in ("plain", "twin", "strict-criteria")
    }
    assert keys["plain"]["params"] == keys["twin"]["params"] != keys["strict-criteria"]["params"]

    # The twin takes the criteria of the case beside it: its rule is that case's, its recording
    # stays its own.
    _edit(
        root,
        lambda cases: cases[1].update(correctness={"correctness_criteria": "Every word matches."}),
    )
    params = _run(root)
    text = output(params)
    assert params.ret == 1
    assert "recordings: 0 recorded, 3 replayed, 1 stale, 0 missing" in text, text
    # the recorded criteria, the default, has no label: its hash is shown
    assert (
        "ERROR cases/cal.json::twin - stale recording (verdict correctness): params changed ("
        in text
    ), text
    assert '-> "Every word matches."); re-record with --live' in text, text
    _edit(root, lambda cases: cases[1].pop("correctness"))

    # What the judge read: the reference of one case.
    _edit(root, lambda cases: cases[0].update(reference="red fox cub"))
    material = _run(root)
    assert "stale recording: material changed" in output(material), output(material)
    _edit(root, lambda cases: cases[0].update(reference="red fox"))

    # A label people changed: the same verdict now lands on the wrong side.
    _edit(root, lambda cases: cases[3].update(expect="pass", defect=None))
    label = _run(root)
    assert label.ret == 1
    assert (
        "FAILED cases/cal.json::wrong - correctness [0.00, 0.00, 0.00] false alarm: a repeat "
        "failed this clean control" in output(label)
    ), output(label)
    _edit(root, lambda cases: cases[3].update(expect="fail", defect="names another animal"))

    # Another judge.
    judge = _run(root, "--eval-judge", "openai:gpt-4o-mini")
    assert "judge changed (lexical -> openai:gpt-4o-mini)" in output(judge), output(judge)
    assert _run(root).ret == 0


def test_every_eval_items_location_is_the_one_pytest_gives_it(project: Project) -> None:
    root = project.root
    project.write_base()
    project.write_text("conftest.py", LOCATIONS_CONFTEST)
    project.write_suite(_calibration(), "cases/sub/cal.json")
    project.write_suite(
        {
            "name": "ev",
            "system": "mysys:run",
            "stages": ["tools"],
            "cases": [{"id": "c1", "input": "x"}],
        }
    )
    project.write_suite({"name": "bad", "system": "mysys:run", "cases": [{"input": "no id"}]})
    project.write_text("cases/broken.json", "{not json")
    _run(root, "--collect-only")
    rows = json.loads((root / "locations.json").read_text())
    assert len(rows) == 7  # 4 calibration items, an eval case, a case and a file that cannot run
    for nodeid, ours, pytests in rows:
        assert ours == pytests, nodeid
    assert any(ours[0] == os.path.join("cases", "sub", "cal.json") for _, ours, _ in rows)
