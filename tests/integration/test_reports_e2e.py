"""End to end: `--eval-report` files, the GitHub step summary, the baseline gate, shard merging
and xdist, the dashboard and the cost line, through real pytest runs of a tiny project.

One project is recorded once per module (`template`); every run works on a copy of it:

- suite `rep` (cases/rep.json) mixes every outcome: passed, failed (retrieval; tools), xfailed,
  xpassed, skipped, missing (cassette deleted), stale (input edited) and error (a bad case);
  its system `repsys` records a cost per case and can call a tool named by the case;
- suite `gate` (cases/gate.json) passes entirely, so a baseline-gate run fails only through the
  gate; `token_f1` is report-only there, so its mean can fall without any case failing.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    make_case,
    output,
    record_template,
    suite_doc,
)

import pytest_evalcases
from pytest_evalcases.core.stats import bootstrap_ci

XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"

# mysys's echo system, plus a recorded cost per case ("price") and a tool name chosen by the case
# ("tool") or by behaviour.json ({"tools": {case id: name}}, for a re-recorded regression).
REPORT_SYSTEM_SOURCE = """\
from mysys import System, behaviour


class ReportSystem(System):
    def run(self, case):
        trace = super().run(case)
        trace["usage"]["cost_usd"] = case.get("price", 0.0)
        tool = case.get("tool") or behaviour().get("tools", {}).get(case["id"])
        if tool:
            trace["tool_calls"][0]["name"] = tool
        return trace


system = ReportSystem("report")
"""

PRICES = {"p1": 0.0125, "p2": 0.02, "fretr": 0.003, "xss": 0.001, "xf": 0.0005, "xp": 0.004}


def _no_reference(case: dict[str, Any]) -> dict[str, Any]:
    del case["reference"]
    return case


REP_CASES: list[Any] = [
    make_case("p1", "alpha beta", category="storage", group="u1", price=PRICES["p1"]),
    make_case("p2", "gamma delta", category="sync", group="u2", price=PRICES["p2"]),
    make_case(
        "fretr",
        "retr fail words",
        category="sync",
        group="u1",
        expected_docs=["zzz"],
        price=PRICES["fretr"],
    ),
    # echoes the payload as its answer, and calls a tool named after it (fails `tools`)
    make_case("xss", XSS + " hi", category="sync", tool=XSS, price=PRICES["xss"]),
    make_case(
        "xf",
        "xf text",
        category="chitchat",
        expected_tools=["lookup"],
        xfail="known gap",
        price=PRICES["xf"],
    ),
    # no reference: exact_match and token_f1 are skipped for it
    _no_reference(
        make_case("xp", "xp text", category="chitchat", xfail="flaky", price=PRICES["xp"])
    ),
    make_case("sk", "skip text", category="chitchat", skip="not today"),
    make_case("miss", "missing text", category="storage"),
    make_case("stale", "stale text", category="sync"),
    {"id": "bad", "input": 7},
]
REP_IDS = [case["id"] for case in REP_CASES]
OUTCOMES = {
    "p1": "passed",
    "p2": "passed",
    "fretr": "failed",
    "xss": "failed",
    "xf": "xfailed",
    "xp": "xpassed",
    "sk": "skipped",
    "miss": "missing",
    "stale": "stale",
    "bad": "error",
}
SCORED = ["p1", "p2", "fretr", "xss", "xf", "xp"]  # the cases whose trace was scored

GATE_CASES = [
    make_case("g1", "alpha beta"),
    make_case("g2", "gamma delta"),
    make_case("g3", "epsilon zeta"),
]

SHARD_1 = "p1 or fretr or xss or stale or bad"  # -k also matches markers: "xf" ~ "xfail"


@dataclass
class Run:
    project: Project
    result: pytest.RunResult
    out: Path | None = None

    @property
    def doc(self) -> dict[str, Any]:
        assert self.out is not None
        return json.loads((self.out / "results.json").read_text())

    @property
    def md(self) -> str:
        assert self.out is not None
        return (self.out / "report.md").read_text()

    @property
    def html(self) -> str:
        assert self.out is not None
        return (self.out / "dashboard.html").read_text()


def run(
    project: Project, *args: str, env: dict[str, str] | None = None, report: str | None = None
) -> Run:
    """A pytest run of `project` without the caller's GITHUB_STEP_SUMMARY (a CI job running
    these tests must not get our reports in its summary), plus `env`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GITHUB_STEP_SUMMARY", raising=False)
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        extra = ("--eval-report", report) if report else ()
        result = project.run(*args, *extra)
    return Run(project, result, project.root / report if report else None)


def clone(template: Project, root: Path) -> Project:
    project = Project(root)
    project.copy_from(template.root)
    return project


def section(result: pytest.RunResult, title: str) -> list[str]:
    """The lines of the terminal section `title` (without its title line)."""
    lines = result.outlines
    starts = [i for i, line in enumerate(lines) if re.fullmatch(rf"=+ {title} =+", line)]
    assert len(starts) == 1, f"expected one {title!r} section:\n" + "\n".join(lines)
    body = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("=") or line.startswith("eval reports: "):
            break
        body.append(line)
    return body


def without_run(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in doc.items() if key != "run"}


def wilson(successes: int, n: int, z: float = 1.96) -> list[float]:
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [centre - half, centre + half]


def head_commit(root: Path) -> str | None:
    """What `run.git_commit` should be: HEAD of the repository around `root`, or None."""
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def case_rows(html: str) -> list[str]:
    """The data-outcome of every per-case row of the dashboard table."""
    return re.findall(r'<tr class="case"[^>]*\bdata-outcome="([a-z]+)"', html)


# ---- the recorded project -------------------------------------------------------------------
@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("reports")
    (root / "repsys.py").write_text(REPORT_SYSTEM_SOURCE)
    project = record_template(
        root,
        suite_doc("rep", cases=REP_CASES, system="repsys:system", report_only=["token_f1"]),
        suite_doc(
            "gate",
            cases=GATE_CASES,
            system="repsys:system",
            stages=["tools", "retrieval"],
            report_only=["token_f1"],
        ),
    )
    project.edit_suite(
        "cases/rep.json",
        lambda doc: doc["cases"][REP_IDS.index("stale")].update(input="stale text, edited"),
    )
    project.cassette_path("rep", "miss").unlink()
    assert project.cassette_path("rep", "stale").exists()
    assert not project.cassette_path("rep", "sk").exists()  # skipped cases are not recorded
    return project


@pytest.fixture(scope="module")
def full(template: Project, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The unsharded replay of suite `rep` with --eval-report, GITHUB_STEP_SUMMARY set."""
    project = clone(template, tmp_path_factory.mktemp("full"))
    project.write_text("step_summary.md", "previous step\n")
    started = datetime.now(UTC).replace(microsecond=0)
    done = run(
        project,
        "cases/rep.json",
        env={"GITHUB_STEP_SUMMARY": str(project.root / "step_summary.md")},
        report="out",
    )
    done.project.write_text(
        "window.json", json.dumps([started.isoformat(), datetime.now(UTC).isoformat()])
    )
    return done


# ---- 1. the files and results.json ------------------------------------------------------------
def test_report_files_are_written(full: Run) -> None:
    assert_not_aborted(full.result)
    full.result.assert_outcomes(passed=2, failed=2, xfailed=1, xpassed=1, skipped=1, errors=3)
    assert sorted(p.name for p in full.out.iterdir()) == [
        "dashboard.html",
        "manifest.json",
        "report.md",
        "results.json",
    ]
    reports = [line for line in full.result.outlines if line.startswith("eval reports: ")]
    assert len(reports) == 1
    for name in ("results.json", "report.md", "dashboard.html", "manifest.json"):
        assert str(full.out / name) in reports[0]
    doc = full.doc
    assert doc["format"] == "pytest-evalcases/results"
    assert doc["version"] == 1
    assert doc["baseline"] is None


def test_summary_counts_every_outcome(full: Run) -> None:
    summary = full.doc["summary"]
    ci = summary.pop("pass_rate_ci95")
    assert summary == {
        "cases": 10,
        "passed": 2,
        "failed": 2,
        "stale": 1,
        "missing": 1,
        "errors": 1,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
        "judge_errors": 0,
        "decided": 6,
        "pass_rate": 0.5,
        "suites": ["rep"],
    }
    assert ci == pytest.approx(wilson(3, 6))


def test_stage_aggregates(full: Run) -> None:
    doc = full.doc
    stages = doc["stages"]
    assert doc["stage_order"] == ["tools", "retrieval", "exact_match", "token_f1"]
    expected = {  # passed, failed, skipped, scored, mean, gating
        "tools": (4, 2, 0, 6, 4 / 6, True),
        "retrieval": (5, 1, 0, 6, 5 / 6, True),
        "exact_match": (5, 0, 1, 5, 1.0, True),
        "token_f1": (5, 0, 1, 5, 1.0, False),
    }
    cases = {case["id"]: case for case in doc["cases"]}
    for name, (passed, failed, skipped, scored, mean, gating) in expected.items():
        stage = stages[name]
        got = (
            stage["passed"],
            stage["failed"],
            stage["skipped"],
            stage["scored"],
            stage["judge_errors"],
            stage["gating"],
        )
        assert got == (passed, failed, skipped, scored, 0, gating), name
        assert stage["mean"] == pytest.approx(mean), name
        scores = [
            cases[i]["stages"][name]["score"]
            for i in SCORED
            if cases[i]["stages"][name]["score"] is not None
        ]
        assert len(scores) == scored
        low, high = stage["ci95"]
        assert min(scores) <= low <= stage["mean"] <= high <= max(scores), name
        assert stage["ci95"] == list(bootstrap_ci(scores)), name  # seeded: reproducible
    assert stages["tools"]["ci95"] != [stages["tools"]["mean"]] * 2  # a real interval
    assert stages["tools"]["histogram"] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 4]
    assert stages["exact_match"]["ci95"] == [1.0, 1.0]


def test_retrieval_metric_means(full: Run) -> None:
    retrieval = full.doc["stages"]["retrieval"]
    # five cases retrieve their one expected doc first among 2-3 ids at k=3; fretr finds none
    assert retrieval["k"] == 3
    for metric in ("hit_at_k", "recall_at_k", "mrr", "ndcg_at_k", "map"):
        assert retrieval[metric] == pytest.approx(5 / 6), metric
    assert retrieval["precision_at_k"] == pytest.approx(5 / 18)
    for name in ("tools", "exact_match", "token_f1"):
        assert "recall_at_k" not in full.doc["stages"][name]
        assert "k" not in full.doc["stages"][name]


def test_categories_with_wilson_intervals(full: Run) -> None:
    categories = full.doc["categories"]
    assert list(categories) == ["chitchat", "storage", "sync"]
    expected = {  # cases, passed, failed, xfailed, xpassed, skipped, missing, stale, pass-like
        "chitchat": (3, 0, 0, 1, 1, 1, 0, 0, 1),  # xf, xp, sk
        "storage": (2, 1, 0, 0, 0, 0, 1, 0, 1),  # p1, miss
        "sync": (4, 1, 2, 0, 0, 0, 0, 1, 1),  # p2, fretr, xss, stale
    }
    for name, (
        cases,
        passed,
        failed,
        xfailed,
        xpassed,
        skipped,
        missing,
        stale,
        pass_like,
    ) in expected.items():
        cat = categories[name]
        assert (
            cat["cases"],
            cat["passed"],
            cat["failed"],
            cat["xfailed"],
            cat["xpassed"],
            cat["skipped"],
            cat["missing"],
            cat["stale"],
            cat["errors"],
        ) == (cases, passed, failed, xfailed, xpassed, skipped, missing, stale, 0), name
        decided = passed + failed + xfailed + xpassed
        assert cat["decided"] == decided, name
        assert cat["pass_rate"] == pytest.approx(pass_like / decided), name
        assert cat["pass_rate_ci95"] == pytest.approx(wilson(pass_like, decided)), name
    assert categories["storage"]["pass_rate_ci95"][1] == pytest.approx(1.0)  # 1/1 stays in [0, 1]
    assert categories["sync"]["stage_means"] == pytest.approx(
        {"tools": 2 / 3, "retrieval": 2 / 3, "exact_match": 1.0, "token_f1": 1.0}
    )
    assert categories["chitchat"]["stage_means"] == pytest.approx(
        {"tools": 0.5, "retrieval": 1.0, "exact_match": 1.0, "token_f1": 1.0}
    )


def test_groups(full: Run) -> None:
    groups = full.doc["groups"]
    assert list(groups) == ["u1", "u2"]  # cases without a group are in none
    u1, u2 = groups["u1"], groups["u2"]
    assert (u1["cases"], u1["passed"], u1["failed"], u1["decided"]) == (2, 1, 1, 2)
    assert u1["pass_rate"] == 0.5
    assert u1["pass_rate_ci95"] == pytest.approx(wilson(1, 2))
    assert u1["stage_means"]["retrieval"] == pytest.approx(0.5)
    assert (u2["cases"], u2["passed"], u2["decided"], u2["pass_rate"]) == (1, 1, 1, 1.0)


def test_cases(full: Run) -> None:
    cases = full.doc["cases"]
    assert [case["id"] for case in cases] == REP_IDS  # file order
    by_id = {case["id"]: case for case in cases}
    assert {cid: case["outcome"] for cid, case in by_id.items()} == OUTCOMES
    for cid, case in by_id.items():
        assert case["suite"] == "rep"
        assert case["nodeid"] == f"cases/rep.json::{cid}"
        assert case["file"] == "cases/rep.json"
        assert case["index"] == REP_IDS.index(cid)
    assert by_id["p1"]["category"] == "storage" and by_id["p1"]["group"] == "u1"
    assert by_id["bad"]["category"] is None and by_id["bad"]["group"] is None

    assert by_id["p1"]["first_failure"] is None
    assert by_id["fretr"]["first_failure"]["stage"] == "retrieval"
    assert "missing: zzz" in by_id["fretr"]["first_failure"]["reason"]
    assert by_id["xss"]["first_failure"] == {
        "stage": "tools",
        "reason": f"missing: search; unexpected: {XSS}",
        "details": [
            ["called", f"{XSS}(query='{XSS} hi')"],
            ["expected", "search"],
            ["answer", f"'{XSS} hi'"],
        ],
    }
    assert by_id["xf"]["first_failure"]["reason"] == "missing: lookup; unexpected: search"
    xf_details = by_id["xf"]["first_failure"]["details"]
    assert [label for label, _ in xf_details] == ["called", "expected", "answer"]

    for cid in SCORED:
        stages = by_id[cid]["stages"]
        assert set(stages) == {"tools", "retrieval", "exact_match", "token_f1"}, cid
        for name, stage in stages.items():
            assert {"score", "passed", "gating", "reason"} <= set(stage), (cid, name)
            assert stage["gating"] is (name != "token_f1"), (cid, name)
    assert by_id["fretr"]["stages"]["retrieval"] | {"metrics": None} == {
        "score": 0.0,
        "passed": False,
        "gating": True,
        "reason": "recall@3 0.00 < 1.00; missing: zzz",
        "judge_error": False,
        "label": None,
        "metrics": None,
        "threshold": 1.0,
    }
    assert by_id["xp"]["stages"]["exact_match"]["passed"] is None
    for cid in ("sk", "miss", "stale", "bad"):
        assert by_id[cid]["stages"] == {}, cid
    assert by_id["sk"]["first_failure"] is None
    # a case that could not be scored says why where a stage failure would
    assert by_id["miss"]["first_failure"] == {
        "stage": None,
        "reason": "no recording for rep::miss; record it with --live (cassettes/rep/miss.json)",
    }
    assert by_id["stale"]["first_failure"]["stage"] is None
    assert by_id["stale"]["first_failure"]["reason"].startswith("stale recording: ")
    assert by_id["bad"]["first_failure"]["stage"] is None
    assert "cases[9].input" in by_id["bad"]["first_failure"]["reason"]


def test_case_recording_and_detail(full: Run) -> None:
    by_id = {case["id"]: case for case in full.doc["cases"]}
    for cid in SCORED:
        recording = by_id[cid]["recording"]
        cassette = full.project.cassette("rep", cid)
        assert recording["status"] == "replayed", cid
        assert recording["recorded_at"] == cassette["recorded_at"], cid
        assert recording["usage"] == cassette["trace"]["usage"], cid
        assert recording["usage"]["cost_usd"] == PRICES[cid], cid
        assert recording["latency_ms"] == 1.0, cid
    assert by_id["miss"]["recording"]["status"] == "missing"
    assert by_id["stale"]["recording"]["status"] == "stale"

    assert by_id["p1"]["detail"] == {
        "input": "alpha beta",
        "answer": "alpha beta",
        "reference": "alpha beta",
        "tool_calls": [{"name": "search", "args": {"query": "alpha beta"}}],
        "retrieved": ["alpha", "beta"],
        "context": ["alpha beta"],
    }
    xss = by_id["xss"]["detail"]
    assert xss["answer"] == XSS + " hi"
    assert xss["tool_calls"][0]["name"] == XSS
    assert xss["retrieved"] == [XSS, "hi"]
    assert by_id["xp"]["detail"]["reference"] is None
    for cid in ("sk", "miss", "stale", "bad"):  # nothing was replayed for them
        assert "detail" not in by_id[cid], cid


def test_run_info(full: Run) -> None:
    run_info = full.doc["run"]
    assert run_info["plugin_version"] == pytest_evalcases.__version__
    assert run_info["mode"] == "replay"
    assert run_info["judge"] is None
    assert run_info["selection"] == {"args": ["cases/rep.json"], "keyword": None, "markexpr": None}
    assert run_info["git_commit"] == head_commit(full.project.root)  # None outside a repository
    window = [
        datetime.fromisoformat(t)
        for t in json.loads((full.project.root / "window.json").read_text())
    ]
    started, finished = parse_time(run_info["started"]), parse_time(run_info["finished"])
    assert window[0] <= started <= finished <= window[1]


# ---- 2. GITHUB_STEP_SUMMARY ------------------------------------------------------------------
def test_report_md_is_appended_to_the_step_summary(full: Run) -> None:
    summary = (full.project.root / "step_summary.md").read_text()
    assert summary == "previous step\n" + full.md
    assert "## pytest-evalcases: rep" in full.md
    assert "### Stages" in full.md and "### Categories" in full.md


def test_report_md_figures(full: Run) -> None:
    md = full.md
    assert (
        "**10 cases**: 2 passed · 2 failed · 1 stale · 1 missing · 1 errors · 1 skipped · "
        "1 xfailed · 1 xpassed"
    ) in md
    assert "| tools | yes | 4 | 2 | 0 | 0 | 0.667 |" in md
    assert "| token_f1 | report | 5 | 0 | 1 | 0 | 1.000 | [1.000, 1.000] |" in md
    assert (
        "retrieval @ k=3: hit 0.833 · recall 0.833 · precision 0.278 · MRR 0.833 · "
        "nDCG 0.833 · MAP 0.833"
    ) in md
    assert "| sync | 4 | 1 | 2 | 33.3% |" in md
    failing = md.split("### Failing cases (5)", 1)[1]
    for cid in ("fretr", "xss", "miss", "stale", "bad"):
        assert f"| rep::{cid} |" in failing, cid
    assert "rep::xf " not in failing  # expected failures are not "failing"
    assert "### Regressions vs baseline" not in md


# ---- 5. the dashboard ------------------------------------------------------------------------
def test_dashboard_has_a_row_per_case(full: Run) -> None:
    html = full.html
    rows = case_rows(html)
    assert len(rows) == full.doc["summary"]["cases"] == len(REP_IDS)
    assert sorted(rows) == sorted(OUTCOMES.values())
    assert html.count('<tr class="detail"') == len(REP_IDS)
    assert f"{len(REP_IDS)} of {len(REP_IDS)} cases" in html


def test_payload_is_escaped_in_dashboard_and_markdown(full: Run) -> None:
    html, md = full.html, full.md
    assert XSS not in html
    assert f"<pre>{XSS_ESCAPED} hi</pre>" in html  # the answer (and the input)
    assert f"<li>{XSS_ESCAPED}</li>" in html  # a retrieved id
    assert html.count("<script") == 1  # the page's own script only
    # report.md: the payload reaches it through the tools reason of `xss` and what happened
    # (the call made and the answer)
    assert XSS not in md
    md_xss = XSS_ESCAPED  # its parentheses stay: only a link's `](` is escaped
    assert f"| rep::xss | failed | tools | missing: search; unexpected: {md_xss} |" in md
    assert f"<br>expected: search<br>answer: '{md_xss} hi' |" in md
    step_summary = (full.project.root / "step_summary.md").read_text()
    assert XSS not in step_summary and md_xss in step_summary


TRACKING_IMAGE = "![x](http://127.0.0.1:18999/track.png)"
HIDDEN_LINK = "[text](http://127.0.0.1:18999/phish)"


def test_tool_names_in_report_md_cannot_form_images_or_links(
    template: Project, tmp_path: Path
) -> None:
    project = clone(template, tmp_path)
    project.steer(tools={"g1": TRACKING_IMAGE, "g2": HIDDEN_LINK})

    done = run(project, "--live", "cases/gate.json", report="out")

    assert_not_aborted(done.result)
    done.result.assert_outcomes(passed=1, failed=2)
    md = done.md
    assert TRACKING_IMAGE not in md and HIDDEN_LINK not in md
    assert (
        "| gate::g1 | failed | tools | missing: search; unexpected: "
        "![x]\\(http://127.0.0.1:18999/track.png) |"
    ) in md
    assert (
        "| gate::g2 | failed | tools | missing: search; unexpected: "
        "[text]\\(http://127.0.0.1:18999/phish) |"
    ) in md


# ---- 6. cost -------------------------------------------------------------------------------
def test_replay_cost_line(full: Run) -> None:
    replayed = [full.project.cassette("rep", cid)["trace"]["usage"] for cid in SCORED]
    recorded = math.fsum(usage["cost_usd"] for usage in replayed)
    assert recorded == pytest.approx(sum(PRICES.values()))
    cost = full.doc["cost"]
    assert cost["system"]["cases"] == len(SCORED)
    assert cost["system"]["cost_usd"] == pytest.approx(recorded)
    assert cost["system"]["prompt_tokens"] == sum(u["prompt_tokens"] for u in replayed)
    assert cost["system"]["completion_tokens"] == len(SCORED)
    assert cost["system"]["latency_ms_median"] == 1.0
    assert cost["recorded_cost_usd"] == pytest.approx(recorded)  # no judge here
    assert cost["replay_cost_usd"] == 0.0
    assert f"recorded cost ${recorded:.4f} (system ${recorded:.4f}, " in full.md
    assert "; this replay cost $0\n" in full.md


# ---- 4. shards and xdist ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def sharded(template: Project, tmp_path_factory: pytest.TempPathFactory) -> Run:
    project = clone(template, tmp_path_factory.mktemp("shards"))
    one = run(project, "cases/rep.json", "-k", SHARD_1, report="shard1")
    two = run(project, "cases/rep.json", "-k", f"not ({SHARD_1})", report="shard2")
    for shard in (one, two):
        assert_not_aborted(shard.result)
    ids = [[case["id"] for case in shard.doc["cases"]] for shard in (one, two)]
    assert ids[0] == ["p1", "fretr", "xss", "stale", "bad"]
    assert sorted(ids[0] + ids[1]) == sorted(REP_IDS)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evalcases", "merge", "shard1", "shard2", "-o", "merged"],
        cwd=project.root,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "merged 2 shard(s): 10 cases, 2 passed, 2 failed" in proc.stdout
    return Run(project, two.result, project.root / "merged")


def test_merged_shards_equal_an_unsharded_run(sharded: Run, full: Run) -> None:
    merged, whole = sharded.doc, full.doc
    for key in ("summary", "stage_order", "stages", "categories", "groups", "cases", "cost"):
        assert merged[key] == whole[key], key
    assert without_run(merged) == without_run(whole)
    assert merged["run"]["shards"] == 2
    assert merged["run"]["mode"] == "replay"
    assert merged["run"]["plugin_version"] == pytest_evalcases.__version__
    # the shards' selections differ, so their run dicts are kept
    keywords = [r["selection"]["keyword"] for r in merged["run"]["shard_runs"]]
    assert keywords == [SHARD_1, f"not ({SHARD_1})"]


def test_merged_markdown_and_dashboard(sharded: Run, full: Run) -> None:
    def body(md: str) -> list[str]:
        return [line for line in md.splitlines() if not line.startswith("Run: ")]

    assert body(sharded.md) == body(full.md)
    assert "2 shards" in sharded.md
    assert case_rows(sharded.html) == case_rows(full.html)


def test_xdist_results_equal_a_serial_run(template: Project, full: Run, tmp_path: Path) -> None:
    project = clone(template, tmp_path)
    target = tmp_path / "step_summary.md"
    done = run(
        project, "cases/rep.json", "-n", "2", env={"GITHUB_STEP_SUMMARY": str(target)}, report="out"
    )
    assert_not_aborted(done.result)
    done.result.assert_outcomes(passed=2, failed=2, xfailed=1, xpassed=1, skipped=1, errors=3)
    assert "2 workers" in output(done.result)
    assert without_run(done.doc) == without_run(full.doc)
    timeless = ("started", "finished", "run_id")  # each run has its own id
    assert {k: v for k, v in done.doc["run"].items() if k not in timeless} == {
        k: v for k, v in full.doc["run"].items() if k not in timeless
    }
    assert target.read_text() == done.md  # appended once, by the controller


# ---- 3. the baseline gate --------------------------------------------------------------------
def git_commit_all(root: Path) -> str | None:
    """Make `root` a repository with one commit; None where git is not installed."""
    if shutil.which("git") is None:
        return None

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root,
            check=True,
            capture_output=True,
            timeout=30,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "baseline")
    commit = head_commit(root)
    assert commit is not None
    return commit


@pytest.fixture(scope="module")
def baseline(template: Project, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Suite `gate`, all passing, with --eval-report, in a git repository."""
    project = clone(template, tmp_path_factory.mktemp("baseline"))
    commit = git_commit_all(project.root)
    done = run(project, "cases/gate.json", report="base")
    assert done.result.ret == 0, output(done.result)
    done.result.assert_outcomes(passed=3)
    assert done.doc["run"]["git_commit"] == commit
    if commit is not None:
        assert f"commit {commit[:12]}" in done.md
    assert done.doc["stages"]["token_f1"]["mean"] == 1.0
    return done


@pytest.fixture(scope="module")
def failing_baseline(template: Project, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Suite `gate` with g3 failing retrieval, with --eval-report."""
    project = clone(template, tmp_path_factory.mktemp("failing-baseline"))
    project.edit_suite("cases/gate.json", lambda doc: doc["cases"][2].update(expected_docs=["zzz"]))
    done = run(project, "cases/gate.json", report="base")
    done.result.assert_outcomes(passed=2, failed=1)
    return done


def base_file(done: Run) -> str:
    assert done.out is not None
    return str(done.out / "results.json")


def test_regression_of_an_xfail_marked_case_fails_the_run(
    template: Project, baseline: Run, tmp_path: Path
) -> None:
    """g1 now fails retrieval, and is marked xfail: no test fails, the gate does."""
    project = clone(template, tmp_path)
    project.edit_suite(
        "cases/gate.json",
        lambda doc: doc["cases"][0].update(expected_docs=["zzz"], xfail="known now"),
    )
    done = run(project, "cases/gate.json", "--eval-baseline", base_file(baseline), report="cur")
    assert_not_aborted(done.result)
    done.result.assert_outcomes(passed=2, xfailed=1)
    assert done.result.ret == pytest.ExitCode.TESTS_FAILED, output(done.result)
    lines = section(done.result, "regressions vs baseline")
    # the regression also lowers the retrieval mean: a stage drop too
    assert lines[0].startswith("baseline gate FAILED: 1 regression(s), 1 stage drop(s)"), lines
    assert "  gate::g1: passed -> xfailed at retrieval: recall@3 0.00 < 1.00; missing: zzz" in (
        lines
    )

    cmp = done.doc["baseline"]
    assert cmp["failed"] is True
    assert [
        (r["case"], r["baseline_outcome"], r["outcome"], r["stage"]) for r in cmp["regressions"]
    ] == [("gate::g1", "passed", "xfailed", "retrieval")]
    assert cmp["fixed"] == [] and cmp["new"] == [] and cmp["removed"] == []
    assert cmp["compared"] == 3
    assert cmp["stage_deltas"]["retrieval"]["delta"] == pytest.approx(-1 / 3)
    assert cmp["baseline_run"]["git_commit"] == baseline.doc["run"]["git_commit"]
    md = done.md
    assert md.index("### Regressions vs baseline") < md.index("### Stages")
    assert "Baseline gate **FAILED**: 1 regression(s)" in md
    assert (
        "| gate::g1 | passed | xfailed | retrieval | recall@3 0.00 &lt; 1.00; missing: zzz |" in md
    )
    html = done.html
    assert '<section id="baseline">' in html
    assert html.index('<section id="baseline">') < html.index('<section id="stages">')
    assert "gate FAILED</span>" in html
    regressed = re.findall(r'<tr class="case"[^>]*data-regressed="1"', html)
    assert len(regressed) == 1 and 'data-first-failure="retrieval"' in regressed[0]
    assert 'id="case-' in regressed[0] and "gate::g1" in html.split(regressed[0], 1)[1][:400]


def test_rerecorded_behaviour_change_is_a_regression(
    template: Project, baseline: Run, tmp_path: Path
) -> None:
    """The system now calls another tool for g2 (behaviour.json), re-recorded with --live."""
    project = clone(template, tmp_path)
    project.steer(tools={"g2": "lookup"})
    done = run(
        project, "cases/gate.json", "--live", "--eval-baseline", base_file(baseline), report="cur"
    )
    assert_not_aborted(done.result)
    done.result.assert_outcomes(passed=2, failed=1)
    assert done.result.ret == pytest.ExitCode.TESTS_FAILED
    assert project.cassette("gate", "g2")["trace"]["tool_calls"][0]["name"] == "lookup"
    lines = section(done.result, "regressions vs baseline")
    assert lines[0].startswith("baseline gate FAILED: 1 regression(s)"), lines
    assert "  gate::g2: passed -> failed at tools: missing: search; unexpected: lookup" in lines
    assert [r["case"] for r in done.doc["baseline"]["regressions"]] == ["gate::g2"]
    assert "| gate::g2 | passed | failed | tools |" in done.md


def test_stage_mean_drop_fails_the_run_within_tolerance_passes(
    template: Project, baseline: Run, tmp_path: Path
) -> None:
    """g1's reference gains a word: token_f1 (report-only) falls 1.0 -> 0.8 for g1, so its mean
    falls by 1/15 ~ 0.067 while every case still passes."""
    project = clone(template, tmp_path)
    project.edit_suite(
        "cases/gate.json", lambda doc: doc["cases"][0].update(reference="alpha beta gamma")
    )
    drop = 1 / 15

    strict = run(project, "cases/gate.json", "--eval-baseline", base_file(baseline), report="cur")
    assert_not_aborted(strict.result)
    strict.result.assert_outcomes(passed=3)
    assert strict.result.ret == pytest.ExitCode.TESTS_FAILED, output(strict.result)
    lines = section(strict.result, "regressions vs baseline")
    assert lines[0].startswith(
        "baseline gate FAILED: 0 regression(s), 1 stage drop(s) (tolerance 0.000)"
    ), lines
    assert "  token_f1: 1.000 -> 0.933 (-0.067)" in lines
    cmp = strict.doc["baseline"]
    assert cmp["regressions"] == []
    assert [d["stage"] for d in cmp["stage_drops"]] == ["token_f1"]
    assert cmp["stage_drops"][0]["delta"] == pytest.approx(-drop)
    assert "| token_f1 | 1.000 | 0.933 | -0.067 |" in strict.md

    below = run(
        project,
        "cases/gate.json",
        "--eval-baseline",
        base_file(baseline),
        "--eval-tolerance",
        "0.05",
    )
    assert below.result.ret == pytest.ExitCode.TESTS_FAILED, output(below.result)
    assert section(below.result, "regressions vs baseline")[0].startswith(
        "baseline gate FAILED: 0 regression(s), 1 stage drop(s) (tolerance 0.050)"
    )

    lenient = run(
        project,
        "cases/gate.json",
        "--eval-baseline",
        base_file(baseline),
        "--eval-tolerance",
        "0.1",
        report="cur2",
    )
    assert lenient.result.ret == pytest.ExitCode.OK, output(lenient.result)
    assert section(lenient.result, "regressions vs baseline")[0].startswith(
        "baseline gate passed: 0 regression(s), 0 stage drop(s) (tolerance 0.100)"
    )
    assert lenient.doc["baseline"]["failed"] is False
    assert lenient.doc["baseline"]["stage_deltas"]["token_f1"]["delta"] == pytest.approx(-drop)
    assert "Baseline gate passed" in lenient.md


def test_improvement_passes_and_is_listed_as_fixed(
    template: Project, failing_baseline: Run, tmp_path: Path
) -> None:
    project = clone(template, tmp_path)
    done = run(
        project, "cases/gate.json", "--eval-baseline", base_file(failing_baseline), report="cur"
    )
    assert done.result.ret == pytest.ExitCode.OK, output(done.result)
    done.result.assert_outcomes(passed=3)
    lines = section(done.result, "regressions vs baseline")
    assert lines[0].startswith("baseline gate passed: 0 regression(s), 0 stage drop(s)"), lines
    assert "1 fixed" in lines[0] and "1 still failing" not in lines[0]
    assert lines[lines.index("fixed:") + 1] == "  gate::g3 (passed)"
    cmp = done.doc["baseline"]
    assert cmp["failed"] is False
    assert [(r["case"], r["baseline_outcome"], r["outcome"]) for r in cmp["fixed"]] == [
        ("gate::g3", "failed", "passed")
    ]
    assert cmp["stage_deltas"]["retrieval"]["delta"] == pytest.approx(1 / 3)
    assert "Fixed: gate::g3" in done.md


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a results.json"),
        (None, "does not exist"),
    ],
    ids=["not-json", "not-results", "missing"],
)
def test_bad_baseline_is_a_usage_error_before_any_case_runs(
    template: Project, tmp_path: Path, content: str | None, problem: str
) -> None:
    project = clone(template, tmp_path)
    if content is not None:
        project.write_text("main/base.json", content)
    before = project.files()
    done = run(
        project, "cases/gate.json", "--live", "--eval-baseline", "main/base.json", report="cur"
    )
    assert done.result.ret == pytest.ExitCode.USAGE_ERROR, output(done.result)
    errors = "\n".join(done.result.errlines)
    assert "main/base.json" in errors and problem in errors, errors
    assert project.calls() == []  # the system never ran
    assert project.files() == before  # nothing re-recorded
    assert not (project.root / "cur").exists()


def test_gate_needs_no_report_dir(template: Project, baseline: Run, tmp_path: Path) -> None:
    """--eval-baseline alone still prints the section and fails the run on a regression."""
    project = clone(template, tmp_path)
    project.edit_suite(
        "cases/gate.json",
        lambda doc: doc["cases"][1].update(expected_tools=["lookup"], xfail="known"),
    )
    done = run(project, "cases/gate.json", "--eval-baseline", base_file(baseline))
    done.result.assert_outcomes(passed=2, xfailed=1)
    assert done.result.ret == pytest.ExitCode.TESTS_FAILED, output(done.result)
    assert "  gate::g2: passed -> xfailed at tools: missing: lookup; unexpected: search" in (
        section(done.result, "regressions vs baseline")
    )
    assert "eval reports: " not in output(done.result)
    assert not any(
        path.name == "results.json"
        for path in project.root.rglob("*")
        if ".basetemp" not in path.parts
    )


def test_stale_and_missing_cases_are_regressions_without_a_stage(
    template: Project, baseline: Run, tmp_path: Path
) -> None:
    project = clone(template, tmp_path)
    project.edit_suite("cases/gate.json", lambda doc: doc["cases"][2].update(input="epsilon eta"))
    project.cassette_path("gate", "g2").unlink()
    done = run(project, "cases/gate.json", "--eval-baseline", base_file(baseline), report="cur")
    assert_not_aborted(done.result)
    done.result.assert_outcomes(passed=1, errors=2)
    assert done.result.ret == pytest.ExitCode.TESTS_FAILED
    lines = section(done.result, "regressions vs baseline")
    assert lines[0].startswith("baseline gate FAILED: 2 regression(s), 0 stage drop(s)"), lines
    assert (
        "  gate::g2: passed -> missing: no recording for gate::g2; record it with --live "
        "(cassettes/gate/g2.json)"
    ) in lines
    assert any(
        line.startswith("  gate::g3: passed -> stale: stale recording: case changed (")
        for line in lines
    ), lines
    regressions = done.doc["baseline"]["regressions"]
    assert [(r["case"], r["outcome"], r["stage"]) for r in regressions] == [
        ("gate::g2", "missing", None),
        ("gate::g3", "stale", None),
    ]
    # only g1 was scored in both runs: its means are unchanged
    assert done.doc["baseline"]["stage_deltas"]["token_f1"]["cases"] == 1
    assert (
        "| gate::g2 | passed | missing | – | no recording for gate::g2; record it with "
        "--live (cassettes/gate/g2.json) |"
    ) in done.md


def test_new_and_removed_cases_do_not_fail_the_gate(
    template: Project, baseline: Run, tmp_path: Path
) -> None:
    """g1 leaves the suite, g4 joins it (recorded by --live-stale in the same run)."""
    project = clone(template, tmp_path)

    def edit(doc: dict[str, Any]) -> None:
        doc["cases"] = doc["cases"][1:] + [make_case("g4", "zeta alpha")]

    project.edit_suite("cases/gate.json", edit)
    done = run(
        project,
        "cases/gate.json",
        "--live-stale",
        "--eval-baseline",
        base_file(baseline),
        report="cur",
    )
    assert done.result.ret == pytest.ExitCode.OK, output(done.result)
    done.result.assert_outcomes(passed=3)
    assert project.calls() == ["setup gate", "run g4"]
    cmp = done.doc["baseline"]
    assert cmp["failed"] is False
    assert [r["case"] for r in cmp["new"]] == ["gate::g4"]
    assert [r["case"] for r in cmp["removed"]] == ["gate::g1"]
    assert cmp["compared"] == 2 and cmp["regressions"] == [] and cmp["fixed"] == []
    lines = section(done.result, "regressions vs baseline")
    assert lines[0].startswith("baseline gate passed: 0 regression(s), 0 stage drop(s)"), lines
    assert lines[lines.index("new:") + 1] == "  gate::g4 (passed)"
    assert lines[lines.index("removed:") + 1] == "  gate::g1 (passed)"


@pytest.mark.parametrize("tolerance", ["-0.1", "nan"])
def test_invalid_tolerance_is_a_usage_error_before_any_case_runs(
    template: Project, baseline: Run, tmp_path: Path, tolerance: str
) -> None:
    """A tolerance the gate cannot apply (negative, or NaN, which no drop exceeds) is a usage
    error up front, like a bad baseline file or --eval-concurrency 0 -- not a traceback after
    every case has run (and been paid for, under --live), nor a gate that never fails."""
    project = clone(template, tmp_path)
    done = run(
        project,
        "cases/gate.json",
        "--live",
        "--eval-baseline",
        base_file(baseline),
        f"--eval-tolerance={tolerance}",
        report="cur",
    )
    text = output(done.result)
    assert done.result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "--eval-tolerance" in "\n".join(done.result.errlines), text
    assert "Traceback" not in text
    assert project.calls() == []  # the system never ran


def test_the_report_names_the_judge_a_suite_chose(tmp_path: Path) -> None:
    """The demo suite names its judge ("judge": "lexical") and no option does: results.json
    says which judge scored the run, and each case which judges its verdicts came from."""
    repo = Path(__file__).resolve().parents[2]
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTEST_") and name != "GITHUB_STEP_SUMMARY"
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/",
            "-q",
            "-p",
            "no:cacheprovider",
            "--eval-report",
            str(tmp_path),
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["run"]["judge"] == "lexical"
    judges = [case["recording"].get("judges") for case in doc["cases"]]
    assert ["lexical"] in judges and set(map(tuple, judges)) <= {("lexical",), ()}, judges
