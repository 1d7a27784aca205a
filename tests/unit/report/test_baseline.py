"""Baseline gate: regressions, fixed, new, removed, paired stage deltas, tolerance, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.core.stats import bootstrap_ci
from pytest_evalcases.report import aggregate
from pytest_evalcases.report.baseline import (
    BaselineError,
    compare,
    load_results,
    render_baseline_terminal,
)


def stages(tools: float | None, retrieval: float | None) -> dict:
    def one(score: float | None) -> dict:
        return {
            "score": score,
            "passed": None if score is None else score >= 1.0,
            "gating": True,
            "reason": "",
            "label": None,
            "metrics": {},
        }

    out = {}
    if tools is not None or retrieval is not None:
        out = {"tools": one(tools), "retrieval": one(retrieval)}
    return out


def case(
    cid: str,
    index: int,
    outcome: str,
    tools: float | None = None,
    retrieval: float | None = None,
    ff: dict | None = None,
) -> dict:
    return {
        "nodeid": f"cases/s.json::{cid}",
        "suite": "s",
        "id": cid,
        "file": "cases/s.json",
        "index": index,
        "category": None,
        "group": None,
        "outcome": outcome,
        "first_failure": ff,
        "stages": stages(tools, retrieval),
        "recording": {},
    }


def baseline_doc() -> dict:
    return aggregate(
        [
            case("a", 0, "passed", 1, 1.0),
            case("b", 1, "failed", 1, 0.5, ff={"stage": "retrieval", "reason": "recall 0.5"}),
            case("c", 2, "passed", 1, 1.0),
            case("d", 3, "passed", 1, 1.0),  # removed in the current run
            case("e", 4, "skipped"),  # skipped: ignored by the gate
            case("f", 5, "xfailed", 0, None),  # xfailed counts as failed
            case("g", 6, "passed", 1, 1.0),
        ],
        {"mode": "replay", "git_commit": "abc"},
    )


def current_doc(c_retrieval: float = 1.0) -> dict:
    return aggregate(
        [
            case(
                "a",
                0,
                "failed",
                1,
                0.5,
                ff={"stage": "retrieval", "reason": "recall@3 0.50 < 1.00; missing: config"},
            ),
            case("b", 1, "passed", 1, 1.0),
            case("c", 2, "passed", 1, c_retrieval),
            case("e", 4, "passed", 1, 1.0),
            case("f", 5, "xpassed", 1, 1.0),  # xpassed counts as passed: fixed
            case("g", 6, "stale"),  # passed -> stale: a regression
            case("n", 7, "passed", 1, 0.0),  # new; its low score must not move deltas
        ],
        {"mode": "replay"},
    )


def ids(entries: list[dict]) -> list[str]:
    return [e["id"] for e in entries]


def test_regressions_fixed_new_removed() -> None:
    cmp = compare(current_doc(), baseline_doc())
    assert ids(cmp["regressions"]) == ["a", "g"]
    a, g = cmp["regressions"]
    assert (a["baseline_outcome"], a["outcome"], a["stage"]) == ("passed", "failed", "retrieval")
    assert a["reason"] == "recall@3 0.50 < 1.00; missing: config"
    assert a["case"] == "s::a" and a["nodeid"] == "cases/s.json::a"
    assert (g["outcome"], g["stage"]) == ("stale", None)
    assert g["reason"].startswith("recording is stale")
    assert ids(cmp["fixed"]) == ["b", "f"]
    assert ids(cmp["new"]) == ["n"] and ids(cmp["removed"]) == ["d"]
    assert cmp["compared"] == 5  # a, b, c, f, g (e was skipped in the baseline)
    assert cmp["still_failing"] == 0
    assert cmp["failed"] is True
    assert cmp["baseline_run"] == {"mode": "replay", "git_commit": "abc"}


def test_paired_stage_deltas() -> None:
    cmp = compare(current_doc(), baseline_doc())
    tools = cmp["stage_deltas"]["tools"]
    # paired cases scored in both runs: a, b, c, f (e unscored before, g unscored now)
    assert tools["cases"] == 4
    assert tools["baseline_mean"] == 0.75 and tools["current_mean"] == 1.0
    assert tools["delta"] == 0.25
    assert tools["ci95"] == [1.0, 1.0]
    assert tools["baseline_ci95"] == list(bootstrap_ci([1.0, 1.0, 1.0, 0.0]))
    retrieval = cmp["stage_deltas"]["retrieval"]
    # a, b, c (f's retrieval was skipped in the baseline)
    assert retrieval["cases"] == 3
    assert retrieval["baseline_mean"] == pytest.approx(2.5 / 3)
    assert retrieval["current_mean"] == pytest.approx(2.5 / 3)
    assert retrieval["delta"] == pytest.approx(0.0)
    assert cmp["stage_drops"] == []  # the new case n (score 0) is not paired
    assert cmp["stage_order"] == ["tools", "retrieval"]


def test_stage_drop_and_tolerance() -> None:
    base, cur = baseline_doc(), current_doc(c_retrieval=0.9)
    # retrieval paired means: baseline (1 + .5 + 1) / 3, current (.5 + 1 + .9) / 3
    cmp = compare(cur, base)
    assert cmp["stage_deltas"]["retrieval"]["delta"] == pytest.approx(-0.1 / 3)
    assert [d["stage"] for d in cmp["stage_drops"]] == ["retrieval"]
    assert cmp["stage_drops"][0]["current_mean"] == pytest.approx(2.4 / 3)
    assert compare(cur, base, tolerance=0.05)["stage_drops"] == []
    assert [d["stage"] for d in compare(cur, base, tolerance=0.03)["stage_drops"]] == ["retrieval"]
    with pytest.raises(ValueError):
        compare(cur, base, tolerance=-0.1)


def test_gate_passes_without_regressions_or_drops() -> None:
    base = aggregate([case("a", 0, "passed", 1, 1.0), case("b", 1, "failed", 0, None)], {})
    cur = aggregate([case("a", 0, "passed", 1, 1.0), case("b", 1, "error")], {})
    cmp = compare(cur, base)
    assert cmp["regressions"] == [] and cmp["stage_drops"] == []
    assert cmp["still_failing"] == 1 and cmp["failed"] is False
    assert compare(base, base)["failed"] is False


def test_same_case_ids_in_two_suites_are_distinct() -> None:
    one = case("a", 0, "passed", 1, 1.0)
    other = {
        **case("a", 0, "failed", 0, None),
        "suite": "t",
        "nodeid": "cases/t.json::a",
        "file": "cases/t.json",
    }
    base = aggregate([one, {**other, "outcome": "passed"}], {})
    cmp = compare(aggregate([one, other], {}), base)
    assert [r["case"] for r in cmp["regressions"]] == ["t::a"]


def test_terminal_lines() -> None:
    lines = render_baseline_terminal(compare(current_doc(c_retrieval=0.9), baseline_doc()))
    assert lines[0] == (
        "baseline gate FAILED: 2 regression(s), 1 stage drop(s) (tolerance "
        "0.000); 2 fixed, 1 new, 1 removed, 0 still failing"
    )
    assert "  s::a: passed -> failed at retrieval: recall@3 0.50 < 1.00; missing: config" in lines
    assert any(line.startswith("  s::g: passed -> stale: recording is stale") for line in lines)
    assert "stage drops:" in lines and "  retrieval: 0.833 -> 0.800 (-0.033)" in lines
    assert "fixed:" in lines and "  s::b (passed)" in lines
    assert "new:" in lines and "removed:" in lines
    assert any(line.split()[:4] == ["tools", "0.750", "1.000", "+0.250"] for line in lines)
    passing = render_baseline_terminal(compare(baseline_doc(), baseline_doc()))
    assert passing[0].startswith("baseline gate passed: 0 regression(s), 0 stage drop(s)")


def test_load_results_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    doc = baseline_doc()
    path.write_text(json.dumps(doc, sort_keys=True, indent=2), encoding="utf-8")
    assert load_results(path) == json.loads(json.dumps(doc))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not valid JSON (Expecting property name"),
        ("[1, 2]", "is not a results.json (top level is list"),
        ('{"summary": {}}', "missing keys: format, stages, cases"),
        (
            '{"format": "other", "summary": {}, "stages": {}, "cases": []}',
            "has format 'other', expected 'pytest-evalcases/results'",
        ),
        (
            '{"format": "pytest-evalcases/results", "summary": {}, "stages": {}, "cases": [1]}',
            "cases must be a list of result objects",
        ),
    ],
)
def test_load_results_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "base.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as exc:
        load_results(path)
    assert str(path) in str(exc.value) and message in str(exc.value)
    assert "results.json written by pytest-evalcases" in str(exc.value)


def test_load_results_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="does not exist"):
        load_results(tmp_path / "nope.json")


def test_compare_validates_documents() -> None:
    with pytest.raises(BaselineError, match="baseline is not a results.json"):
        compare(current_doc(), {"cases": []})


def test_a_regressed_conversation_names_the_turn_it_fails_at() -> None:
    before = aggregate([case("a", 0, "passed", 1, 1.0)], {"mode": "replay"})
    now = aggregate(
        [
            case(
                "a",
                0,
                "failed",
                0,
                1.0,
                ff={"stage": "tools", "turn": 2, "reason": "turn 2: missing: x"},
            )
        ],
        {"mode": "replay"},
    )
    cmp = compare(now, before)
    assert cmp["regressions"][0]["stage"] == "turn 2 tools"
    assert "s::a: passed -> failed at turn 2 tools" in "\n".join(render_baseline_terminal(cmp))
