"""The failure table and the terminal summary (pure functions)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import summary_reference as reference

from pytest_evalcases.core.outcomes import OUTCOMES
from pytest_evalcases.report.terminal import GROUP_ROWS, ROWS_NONE, RunSummary
from pytest_evalcases.report.terminal_tables import case_table, stage_headers


def render_summary(
    results: list[dict[str, Any]],
    *,
    verbose: bool,
    orphans: list[str],
    orphan_note: str = "",
    width: int | None = None,
    rows: str | None = None,
) -> list[str]:
    """The section for results already at hand, fed one by one as the plugin feeds them."""
    summary = RunSummary(verbose=verbose, rows=rows)
    for result in results:
        summary.add(result)
    return summary.lines(orphans=orphans, orphan_note=orphan_note, width=width)


def result(i: int, outcome: str, category: str = "cat", tools_passed: bool | None = True) -> dict:
    score = None if tools_passed is None else float(tools_passed)
    return {
        "suite": "s",
        "id": f"c{i}",
        "file": "cases/s.json",
        "index": i,
        "category": category,
        "outcome": outcome,
        "first_failure": {"stage": "tools", "reason": "missing: x"}
        if tools_passed is False
        else None,
        "stages": {"tools": {"score": score, "passed": tools_passed, "gating": True}},
        "recording": {} if outcome == "skipped" else {"status": "replayed"},
    }


def test_summary_rows_totals_categories_and_counts():
    results = [
        result(0, "passed"),
        result(1, "failed", tools_passed=False),
        result(2, "passed", "other"),
        result(3, "skipped", tools_passed=None),
    ]
    lines = render_summary(results, verbose=False, orphans=["cassettes/s/old.json"])
    text = "\n".join(lines)
    assert lines[0].split() == ["case", "category", "outcome", "tools", "first", "failure"]
    assert lines[1] == "s::c1  cat       failed   FAIL 0.00  tools: missing: x"
    assert lines[2] == "(3 passed or skipped cases not shown; -v shows every case)"
    assert any(line.split() == ["tools", "2", "1", "1", "0", "0.667"] for line in lines)
    assert any(line.split() == ["cat", "1", "2", "50%"] for line in lines)  # skipped left out
    assert "3 replayed, 0 stale, 0 missing, 1 orphaned" in text
    assert "  orphan: cassettes/s/old.json" in lines
    assert not any(line.startswith("group") for line in lines)  # no case has a group


def test_the_table_lists_the_cases_that_did_not_pass_unless_verbose():
    outcomes = ["passed", "failed", "xfailed", "xpassed", "stale", "missing", "error", "skipped"]
    results = [
        result(i, outcome, tools_passed=outcome in ("passed", "xpassed"))
        for i, outcome in enumerate(outcomes)
    ]
    quiet = render_summary(results, verbose=False, orphans=[])
    listed = [line.split()[2] for line in quiet if line.startswith("s::c")]
    assert listed == ["failed", "xfailed", "xpassed", "stale", "missing", "error"]
    assert "(2 passed or skipped cases not shown; -v shows every case)" in quiet
    verbose = render_summary(results, verbose=True, orphans=[])
    assert [line.split()[2] for line in verbose if line.startswith("s::c")] == outcomes
    assert not any("not shown" in line for line in verbose)
    none = render_summary(results, verbose=False, orphans=[], rows=ROWS_NONE)
    assert none[0].split()[:2] == ["stage", "passed"]  # straight to the per-stage totals
    assert not any(line.startswith("s::c") or "not shown" in line for line in none)
    assert any(line.split()[:2] == ["category", "passed"] for line in none)
    every_pass = render_summary(
        [result(0, "passed"), result(1, "passed")], verbose=False, orphans=[]
    )
    assert every_pass[0] == "(2 passed or skipped cases not shown; -v shows every case)"


def test_group_rows_join_when_a_case_has_a_group():
    results = [result(0, "passed"), result(1, "failed", tools_passed=False), result(2, "passed")]
    results[0]["group"], results[1]["group"] = "user-1", "user-1"
    lines = render_summary(results, verbose=False, orphans=[])
    start = lines.index("group   passed  scored  pass rate  95% CI  mean tools")
    # The case without a group has no row (it was a `-` row, read as a group named `-`).
    assert lines[start + 1 : start + 3] == ["user-1  1       2       50%        9%-91%  0.500", ""]


def test_only_the_groups_with_the_lowest_pass_rates_are_shown_unless_verbose():
    results = []
    for n in range(GROUP_ROWS + 5):  # group g<n> passes n of its 30 cases (n <= 24)
        for i in range(30):
            case = result(len(results), "passed" if i < n else "failed", tools_passed=i < n)
            case["group"] = f"g{n:02d}"
            results.append(case)
    lines = render_summary(results, verbose=False, orphans=[])
    groups = [line.split()[0] for line in lines if line.startswith("g") and line[1].isdigit()]
    assert groups == [f"g{n:02d}" for n in range(GROUP_ROWS)]
    assert "(5 more groups with higher pass rates; -v shows every group)" in lines
    verbose = render_summary(results, verbose=True, orphans=[])
    assert sum(line.startswith("g") and line[1].isdigit() for line in verbose) == GROUP_ROWS + 5


def test_category_rates_count_scored_cases_as_results_json_does():
    stale = result(1, "stale", "other", tools_passed=None)
    lines = render_summary(
        [result(0, "xpassed"), result(2, "xfailed"), stale], verbose=False, orphans=[]
    )
    assert any(line.split() == ["cat", "1", "2", "50%"] for line in lines)  # xfailed is scored
    assert any(line.split() == ["other", "0", "0", "-"] for line in lines)  # stale is not


# ---- the streaming summary prints what the batch summary printed ----------------------------
# Suites whose stages overlap and disagree on gating (retrieval gates in `a`, not in `c`), in files
# whose collection order is not their arrival order.
SUITES = [
    ("cases/b.json", "b", [("faithfulness", True), ("tools", True), ("exact_match", False)]),
    ("cases/a.json", "a", [("tools", True), ("retrieval", True), ("token_f1", False)]),
    ("cases/a/z.json", "c", [("retrieval", False), ("answer_accuracy", True)]),
]
UNSCORED = ("stale", "missing", "error", "skipped")


def random_result(rng: random.Random, file: str, suite: str, stages: list, index: int) -> dict:
    outcome = rng.choice(OUTCOMES)
    stage_dicts = {}
    if outcome not in UNSCORED or rng.random() < 0.2:
        for name, gating in stages:
            passed = rng.choice([True, True, False, None])
            judge_error = passed is False and rng.random() < 0.2
            # Quarters: a float sum of them is exact in any order, as the batch summary's was.
            score = None if passed is None or judge_error else rng.choice([0, 0.25, 0.5, 1.0])
            stage_dicts[name] = {
                "score": score,
                "passed": passed,
                "gating": gating,
                "judge_error": judge_error,
            }
    failure = None
    if outcome in ("failed", "xfailed"):
        failure = {"stage": stages[0][0], "reason": "missing: x " * rng.randint(1, 20)}
    elif outcome in ("stale", "missing", "error"):
        failure = {"stage": None, "reason": rng.choice(["", "key changed"])}
    status = rng.choice(["replayed", "recorded", "not_rerecorded", None])
    recording = {} if status is None else {"status": status}
    if status == "not_rerecorded" and rng.random() < 0.5:
        recording["note"] = f"TimeoutError: case {index}"
    return {
        "nodeid": f"{file}::c{index}",
        "suite": suite,
        "id": f"c{index:03d}",
        "file": file,
        "index": index,
        "category": rng.choice(["sync", "billing", None]),
        "group": rng.choice([None, None, *(f"user-{n}" for n in range(30))]),
        "outcome": outcome,
        "first_failure": failure,
        "stages": stage_dicts,
        "recording": recording,
    }


def random_results(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    results = []
    for n in range(count):
        file, suite, stages = SUITES[n % len(SUITES)]
        results.append(random_result(rng, file, suite, stages, n // len(SUITES)))
    rng.shuffle(results)  # arrival order, as under xdist
    return results


@pytest.mark.parametrize("count", [1, 7, 50, 51, 400])
@pytest.mark.parametrize("verbose", [False, True])
@pytest.mark.parametrize("width", [None, 60, 120])
def test_streaming_summary_prints_the_batch_summary_text(
    count: int, verbose: bool, width: int | None
) -> None:
    for seed in range(5):
        results = random_results(seed, count)
        orphans = ["cassettes/a/old.json"] if seed % 2 else []
        expected = reference.render_summary(
            reference.ordered_results(results),
            verbose=verbose,
            orphans=orphans,
            orphan_note=" (note)",
            width=width,
        )
        summary = RunSummary(verbose=verbose)
        for result in results:
            summary.add(result)
        assert summary.lines(orphans=orphans, orphan_note=" (note)", width=width) == expected, seed


def test_summary_text_does_not_depend_on_arrival_order() -> None:
    rng = random.Random(7)
    results = random_results(3, 200)
    for result in results:  # scores whose float sum depends on the order it is taken in
        for stage in result["stages"].values():
            if stage["score"] is not None:
                stage["score"] = rng.random()
    first = render_summary(results, verbose=True, orphans=[])
    for _ in range(3):
        rng.shuffle(results)
        assert render_summary(results, verbose=True, orphans=[]) == first


def test_mean_score_is_exact() -> None:
    results = [result(0, "passed"), result(1, "passed"), result(2, "passed")]
    for res, score in zip(results, [0.1, 0.2, 0.7], strict=True):
        res["stages"]["tools"]["score"] = score  # a plain float sum gives 0.9999999999999999
    lines = render_summary(results, verbose=False, orphans=[])
    assert any(line.split() == ["tools", "3", "0", "0", "0", "0.333"] for line in lines)


# ---- the per-case table fits the terminal -------------------------------------------------------
ALL_STAGES = [
    "tools",
    "retrieval",
    "exact_match",
    "token_f1",
    "faithfulness",
    "contextual_recall",
    "contextual_precision",
    "contextual_relevancy",
    "answer_relevancy",
    "correctness",
    "context_completeness",
    "answer_accuracy",
]


FAILURE = "retrieval: recall@3 0.00 < 1.00; missing: encryption, keys, passwords"


def table_rows(labels: list[str], stages: list[str]) -> list[list[str]]:
    cells = ["FAIL 0.00" if n % 3 else "1.00" for n in range(len(stages))]
    return [[label, "sync", "failed", *cells, FAILURE] for label in labels]


@pytest.mark.parametrize("width", [40, 60, 80, 100, 120, 200])
@pytest.mark.parametrize("stage_count", [1, 3, 12])
def test_every_line_of_the_case_table_fits_the_width(width: int, stage_count: int) -> None:
    stages = ALL_STAGES[:stage_count]
    rows = table_rows(
        ["docs-assistant::encryption-password", "s::x", "a-suite-with-a-long-name::" + "c" * 120],
        stages,
    )
    lines = case_table(stages, rows, width)
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    body = [line for line in lines if line.startswith(("docs-assistant::", "s::x"))]
    assert body, lines  # every block lists every case, the case column first


def test_full_stage_names_when_they_fit_on_one_line_a_case() -> None:
    stages = ["tools", "retrieval"]
    lines = case_table(stages, table_rows(["s::a"], stages), 120)
    assert lines[0].split()[:5] == ["case", "category", "outcome", "tools", "retrieval"]
    assert len(lines) == 2 and lines[1].endswith(FAILURE)  # no legend: nothing abbreviated
    # Too long for the room left: its names (the score left out) go on below, past the case
    # column, whole (they were cut to the room left: `retrieval: missing: encryption, k...`).
    narrow = case_table(stages, table_rows(["s::a"], stages), 80)
    assert narrow[1:] == [
        "s::a  sync      failed   1.00   FAIL 0.00  retrieval: missing: encryption, keys,",
        "      passwords",
    ]
    assert max(map(len, narrow)) <= 80


def test_abbreviated_headers_with_a_legend_then_wrapped_columns() -> None:
    rows = table_rows(["docs-assistant::issue-without-prefix"], ALL_STAGES)
    wide = case_table(ALL_STAGES, rows, 200)
    assert wide[0].split()[3:6] == ["tools", "retr", "em"]  # one line a case, short headers
    # header, row (its first failure's end on the line below), and the legend in two lines
    assert len(wide) == 3 + 2 and wide[2].strip() == "encryption, keys, passwords"
    assert wide[3].startswith("stages: retr = retrieval, em = exact_match, f1 = token_f1, ")
    assert wide[3].endswith(", a_rel = answer_relevancy,")  # broken between entries
    assert wide[4] == "  corr = correctness, compl = context_completeness, acc = answer_accuracy"
    narrow = case_table(ALL_STAGES, rows, 80)
    blocks = "\n".join(narrow).split("\n\n")
    assert len(blocks) > 1
    for block in blocks:  # each block repeats the case column
        assert block.startswith("case  ") and "docs-assistant::issue-without-prefix" in block
    assert blocks[0].splitlines()[0].split()[1:3] == ["category", "outcome"]
    assert "first failure" in blocks[-1].splitlines()[0]
    assert "first failure" not in blocks[0]
    headers = [cell for block in blocks for cell in block.splitlines()[0].split()]
    assert [h for h in headers if h in stage_headers(ALL_STAGES)] == stage_headers(ALL_STAGES)


def test_stage_headers_are_short_and_distinct() -> None:
    assert stage_headers(ALL_STAGES) == [
        "tools",
        "retr",
        "em",
        "f1",
        "faith",
        "c_rec",
        "c_prec",
        "c_rel",
        "a_rel",
        "corr",
        "compl",
        "acc",
    ]
    assert stage_headers(["new_stage_a", "new_stage_b"]) == ["new_s", "new_s2"]
