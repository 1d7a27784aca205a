"""End to end: re-recording a reviewer can trust (issue 9, points 1-5).

1. A live run writes only what changed: a recording equal but for timings and usage stays byte
   for byte (its HTTP recording too), and the `recording changes` section (recording-changes.md
   under --eval-report) says what changed in the others.
2. --live-dry-run runs the system and judges and writes nothing.
3. A judge failure keeps the paid-for trace with the verdict pending; replay asks for
   --live-judges; --live-judges / --live-stale complete it without running the system.
4. A live run that did not record every selected case exits TESTS_FAILED and says why; a judge
   error on a gating stage reads ERROR.
5. -x / --maxfail and --eval-budget stop starting cases; the others report as not run.

The project's system (`steered.py`) answers from behaviour.json, with a latency, token counts
and nested timings that change on every run, and logs every run to calls.log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from echo_server import EchoServer
from evalhelpers import (
    Project,
    assert_not_aborted,
    changes_section,
    error_block,
    output,
    run_pytest_env_in_process,
    summary_section,
)
from judge_server import Fault, JudgeServer, judge_server_fixture

STEERED_SYSTEM = '''\
"""Answers as behaviour.json says; timings and token counts differ on every run."""
import random
import time

from mysys import behaviour, log  # the shared test system's steering file and call log


def run(case):
    s = behaviour()
    log(f"run {case['id']}")
    time.sleep(s.get("sleep", {}).get(case["id"], 0))
    if case["id"] in s.get("raise", []):
        raise RuntimeError(f"system exploded on {case['id']}")
    tools = s.get("tools", {}).get(case["id"], ["search"])
    return {
        "answer": s.get("answers", {}).get(case["id"], case["input"]),
        "tool_calls": [{"name": name, "args": {"query": case["input"]},
                        "latency_ms": random.random()} for name in tools],
        "retrieved": s.get("retrieved", {}).get(case["id"], case["input"].split()[:1]),
        "context": [case["input"]],
        "usage": {"prompt_tokens": random.randint(1, 999), "completion_tokens": 3,
                  "cost_usd": s.get("cost", 0.0)},
        "latency_ms": random.random() * 1000,
    }
'''

# A system that asks the loopback EchoServer over urllib (recorded by vcrpy like any client).
HTTP_SYSTEM = """\
import json
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def run(case):
    steer = ROOT / "behaviour.json"
    times = json.loads(steer.read_text()).get("requests", 1) if steer.exists() else 1
    url = json.loads((ROOT / "server.json").read_text())["url"] + "/ask"
    answers = []
    for _ in range(times):
        request = urllib.request.Request(url, data=json.dumps({"question": case["input"]}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            answers.append(json.loads(reply.read())["answer"])
    return {"answer": answers[-1], "tool_calls": [{"name": "ask", "args": {}}] * len(answers),
            "retrieved": [], "context": answers}
"""

# Prompt kinds of the loopback judge server (judge_server.recognise), by stage.
FAITHFULNESS_KINDS = {
    "faithfulness_truths",
    "faithfulness_claims",
    "faithfulness_verdicts",
    "faithfulness_reason",
}
ACCURACY_KINDS = {"accuracy", "accuracy_unanswerable"}
OPENAI = "openai:gpt-4o-mini"


def case(case_id: str, text: str, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": case_id,
        "input": text,
        "expected_tools": ["search"],
        "expected_docs": [text.split()[0]],
        "reference": text,
    }
    doc.update(fields)
    return doc


def steered_suite(cases: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "s",
        "system": "steered:run",
        "stages": ["tools", "retrieval", "exact_match", "answer_accuracy"],
        "judge": "lexical",
        "cases": cases
        if cases is not None
        else [
            case("alpha", "alpha beta"),
            case("gamma", "gamma delta"),
            case("epsilon", "epsilon zeta"),
        ],
    }
    doc.update(fields)
    return doc


def numbered(n: int) -> list[dict[str, Any]]:
    return [case(f"c{i}", f"c{i} words") for i in range(n)]


@pytest.fixture
def steered(project: Project) -> Project:
    project.write_text("steered.py", STEERED_SYSTEM)
    return project


def runs(project: Project) -> list[str]:
    return sorted(line.split()[1] for line in project.calls() if line.startswith("run "))


def everything(project: Project) -> dict[str, tuple[bytes, int]]:
    """Every recording file, HTTP recordings included: content and mtime."""
    return project.files(http=True)


def section(result: pytest.RunResult) -> str:
    return "\n".join(changes_section(result))


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


XDIST = pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["in-process", "xdist"])


# ---- 1: write only what changed -----------------------------------------------------------------
@XDIST
def test_an_unchanged_re_recording_leaves_every_file_byte_for_byte(
    steered: Project, xdist: list[str]
) -> None:
    steered.write_suite(steered_suite())
    steered.run("--live").assert_outcomes(passed=3)
    before = everything(steered)
    assert len(before) == 6  # three cassettes, three HTTP recordings (no exchanges)
    steered.clear_calls()

    result = steered.run("--live", *xdist)

    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    assert runs(steered) == ["alpha", "epsilon", "gamma"]  # every system ran again, for real
    assert everything(steered) == before  # yet no byte and no mtime changed
    assert changes_section(result) == ["3 unchanged, 0 changed, 0 new"]
    assert recordings_line(result).startswith("recordings: 3 recorded, 0 replayed")


def test_recording_changes_say_what_changed_and_only_changed_cases_are_written(
    steered: Project,
) -> None:
    steered.write_suite(steered_suite())
    steered.run("--live").assert_outcomes(passed=3)
    before = everything(steered)
    old_gamma = steered.cassette("s", "gamma")
    steered.steer(
        answers={"gamma": "no idea at all"},
        tools={"alpha": ["search", "lookup"]},
        retrieved={"alpha": ["alpha", "other"]},
    )
    steered.edit_suite("cases/s.json", lambda doc: doc["cases"].append(case("delta", "delta x")))

    result = steered.run("--live", "--eval-report", "out")

    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the failures, not the recording
    after = everything(steered)
    assert after["cassettes/s/epsilon.json"] == before["cassettes/s/epsilon.json"]
    assert after["cassettes/s/epsilon.http.json"] == before["cassettes/s/epsilon.http.json"]
    for name in ("alpha", "gamma"):
        assert after[f"cassettes/s/{name}.json"][0] != before[f"cassettes/s/{name}.json"][0]
    assert "cassettes/s/delta.json" in after
    gamma = steered.cassette("s", "gamma")
    assert gamma["trace"]["answer"] == "no idea at all"
    assert gamma["recorded_at"] >= old_gamma["recorded_at"]

    assert changes_section(result) == [
        "s::alpha (changed)",
        "  tool calls: search -> search, lookup",
        '  retrieved: ["alpha"] -> ["alpha", "other"]',
        "  tools: pass -> FAIL (1.00 -> 1.00)",  # all expected tools called, one unexpected
        "s::gamma (changed)",
        "  answer: 'gamma delta' -> 'no idea at all'",
        "  exact_match: pass -> FAIL (1.00 -> 0.00)",
        "  answer_accuracy: pass -> FAIL (1.00 -> 0.00)",
        "s::delta (new)",
        "1 unchanged, 2 changed, 1 new",
    ]
    markdown = (steered.root / "out" / "recording-changes.md").read_text()
    assert markdown.startswith("## Recording changes\n\n**1 unchanged, 2 changed, 1 new**\n")
    assert (
        "| s::gamma | changed | answer: 'gamma delta' -&gt; 'no idea at all'<br>exact_match: "
        "pass -&gt; FAIL (1.00 -&gt; 0.00)<br>answer_accuracy: pass -&gt; FAIL "
        "(1.00 -&gt; 0.00) |" in markdown
    ), markdown
    assert "| s::delta | new |" in markdown
    assert "s::epsilon" not in markdown
    assert "recording-changes.md" in output(result)  # listed with the other report files


def test_the_http_recording_stays_when_its_exchanges_are_the_same(project: Project) -> None:
    with EchoServer() as server:
        project.write_text("asking.py", HTTP_SYSTEM)
        project.write_text("server.json", json.dumps({"url": server.url}))
        project.write_suite(
            {
                "name": "h",
                "system": "asking:run",
                "stages": ["exact_match"],
                "cases": [
                    {"id": "alpha", "input": "alpha beta", "reference": "you asked: alpha beta"}
                ],
            }
        )
        project.run("--live").assert_outcomes(passed=1)
        before = everything(project)

        same = project.run("--live")

        same.assert_outcomes(passed=1)
        assert len(server.requests) == 2  # the system asked again
        assert everything(project) == before
        assert changes_section(same) == ["1 unchanged, 0 changed, 0 new"]

        project.steer(requests=2)
        more = project.run("--live")

    more.assert_outcomes(passed=1)
    assert changes_section(more) == [
        "h::alpha (changed)",
        "  tool calls: ask -> ask, ask",
        "  also changed in the trace: context",
        "  HTTP exchanges: 1 -> 2",
        "0 unchanged, 1 changed, 0 new",
    ]
    doc = json.loads((project.root / "cassettes/h/alpha.http.json").read_text())
    assert len(doc["interactions"]) == 2
    project.run("--replay-http").assert_outcomes(passed=1)  # the new pair replays


# ---- 2: --live-dry-run ---------------------------------------------------------------------------
def test_a_dry_run_runs_and_judges_everything_and_writes_nothing(steered: Project) -> None:
    steered.write_suite(steered_suite())
    steered.run("--live").assert_outcomes(passed=3)
    steered.write_text("cassettes/gone/old.json", "{}")  # an orphan: a full --live deletes it
    steered.steer(answers={"gamma": "no idea at all"})
    steered.edit_suite("cases/s.json", lambda doc: doc["cases"].append(case("delta", "delta x")))
    before = everything(steered)
    steered.clear_calls()

    result = steered.run("--live-dry-run", "--eval-report", "out")

    result.assert_outcomes(passed=3, failed=1)
    assert runs(steered) == ["alpha", "delta", "epsilon", "gamma"]
    assert everything(steered) == before  # not a byte: no cassette, no HTTP file, no orphan gone
    lines = changes_section(result)
    assert "s::gamma (changed)" in lines and "s::delta (new)" in lines
    assert lines[-1] == "2 unchanged, 1 changed, 1 new (dry run: nothing was written)"
    assert "= recording changes (dry run) =" in output(result)
    assert recordings_line(result).startswith(
        "recordings: 0 recorded, 4 dry run (not written), 0 replayed"
    )
    assert "1 orphaned (--live-prune deletes them" in recordings_line(result)  # not deleted
    markdown = (steered.root / "out" / "recording-changes.md").read_text()
    assert "Dry run (`--live-dry-run`)" in markdown and "| s::gamma | changed |" in markdown

    replay = steered.run("-k", "not delta")  # the recordings are as they were
    replay.assert_outcomes(passed=3, deselected=1)


def test_a_dry_run_of_live_stale_says_what_it_would_record(steered: Project) -> None:
    steered.write_suite(steered_suite())
    steered.run("--live").assert_outcomes(passed=3)
    steered.edit_suite("cases/s.json", lambda doc: doc["cases"][1].update(input="gamma delta!"))
    before = everything(steered)
    steered.clear_calls()

    result = steered.run("--live-stale", "--live-dry-run")

    assert runs(steered) == ["gamma"]
    assert everything(steered) == before
    lines = changes_section(result)
    assert lines[:2] == ["s::gamma (changed)", "  key changed: case"]
    assert lines[-1] == (
        "0 unchanged, 1 changed, 0 new, 2 already current (dry run: nothing was written)"
    )


# ---- 3 and 4: pending verdicts, judge errors, exit codes ----------------------------------------
judge_server = judge_server_fixture()


def judged_project(project: Project, report_only: bool = False) -> Project:
    """Two cases judged by the OpenAI judge (the loopback server): faithfulness (gating, or
    report only) and answer_accuracy. Each case names its own country, for server rules."""
    project.write_text("steered.py", STEERED_SYSTEM)
    cases = [
        case("paris", "Paris is the capital of France"),
        case("rome", "Rome is the capital of Italy"),
    ]
    stages = ["tools", "answer_accuracy"] + ([] if report_only else ["faithfulness"])
    project.write_suite(
        steered_suite(
            cases, stages=stages, judge=OPENAI, report_only=["faithfulness"] if report_only else []
        )
    )
    return project


def run_judged(project: Project, server: JudgeServer, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        *args,
        env={
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": server.base_url,
            "EVALCASES_JUDGE_BACKOFF": "0.001",
        },
    )


def short_summary(result: pytest.RunResult) -> list[str]:
    return sorted(
        line.split(" - ")[0] for line in result.outlines if line.startswith(("ERROR ", "FAILED "))
    )


@pytest.mark.parametrize("complete_with", ["--live-judges", "--live-stale"])
def test_a_judge_failure_keeps_the_trace_and_the_pending_verdict_is_completed_later(
    project: Project, judge_server: JudgeServer, complete_with: str
) -> None:
    judged_project(project)
    judge_server.rules = [({"faithfulness_claims"}, "Italy", Fault("401"))]

    live = run_judged(project, judge_server, "--live")

    assert_not_aborted(live)
    live.assert_outcomes(passed=1, errors=1)
    assert live.ret == pytest.ExitCode.TESTS_FAILED
    assert short_summary(live) == ["ERROR cases/s.json::rome"]  # not evaluated: not a FAILED
    rome = project.cassette("s", "rome")
    assert rome["trace"]["answer"] == "Rome is the capital of Italy"  # the paid-for trace
    pending = rome["verdicts"]["faithfulness"]
    assert pending["pending"] is True and pending["score"] is None
    assert "HTTP 401" in pending["error"]
    accuracy = rome["verdicts"]["answer_accuracy"]
    assert accuracy["label"] == "CORRECT" and "pending" not in accuracy
    assert ("  not recorded: s::rome (judge error (faithfulness: ") in section(live)
    assert (
        "the new trace was saved with the verdict pending: complete it with --live-judges)"
        in section(live)
    )

    replay = run_judged(project, judge_server)
    replay.assert_outcomes(passed=1, errors=1)
    block = error_block(replay, "s::rome")
    assert block.strip().startswith(
        "judge verdict pending for faithfulness; complete it with --live-judges (the judge "
        "failed when s::rome was recorded: "
    ), block
    assert short_summary(replay) == ["ERROR cases/s.json::rome"]

    judge_server.rules = []
    judge_server.requests.clear()
    project.clear_calls()
    completed = run_judged(project, judge_server, complete_with)

    completed.assert_outcomes(passed=2)
    assert completed.ret == pytest.ExitCode.OK
    assert project.calls() == []  # the system did not run again
    assert set(judge_server.kinds()) <= FAITHFULNESS_KINDS  # only the pending verdict
    assert all(
        "Italy" in r.prompt for r in judge_server.requests if r.kind != "faithfulness_reason"
    )
    done = project.cassette("s", "rome")
    assert done["trace"] == rome["trace"]
    assert done["verdicts"]["answer_accuracy"] == accuracy  # kept as it was paid for
    assert done["verdicts"]["faithfulness"]["score"] == 1.0
    assert "pending" not in done["verdicts"]["faithfulness"]
    assert "s::rome (changed)" in changes_section(completed)
    assert "  verdicts: faithfulness judged (1.00)" in changes_section(completed)
    run_judged(project, judge_server).assert_outcomes(passed=2)


@XDIST
def test_a_report_only_judge_error_fails_the_live_run(
    project: Project, judge_server: JudgeServer, xdist: list[str]
) -> None:
    """The issue's story: every case passes, the report-only judge failed for one; the
    recording job must not go green (it exited 0 before)."""
    judged_project(project, report_only=True)
    judge_server.rules = [({"faithfulness_claims"}, "Italy", Fault("401"))]

    result = run_judged(project, judge_server, "--live", *xdist)

    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    lines = changes_section(result)
    assert lines[-2] == "0 unchanged, 0 changed, 2 new; 1 not recorded", lines
    assert lines[-1].startswith("  not recorded: s::rome (judge error (faithfulness: ")


@XDIST
def test_skipped_and_deselected_cases_do_not_fail_a_live_run(
    steered: Project, xdist: list[str]
) -> None:
    cases = [
        case("alpha", "alpha beta"),
        case("gamma", "gamma delta", skip="flaky upstream"),
        case("epsilon", "epsilon zeta"),
    ]
    steered.write_suite(steered_suite(cases))

    result = steered.run("--live", "-k", "not epsilon", *xdist)

    # (xdist's summary line does not count deselected cases)
    result.assert_outcomes(passed=1, skipped=1, deselected=0 if xdist else 1)
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert changes_section(result) == ["s::alpha (new)", "0 unchanged, 0 changed, 1 new"]


def test_a_live_run_whose_system_failed_lists_the_case_also_when_it_is_xfail(
    steered: Project,
) -> None:
    cases = [case("alpha", "alpha beta"), case("gamma", "gamma delta", xfail="known bad")]
    steered.write_suite(steered_suite(cases))
    steered.steer(**{"raise": ["gamma"]})

    result = steered.run("--live", "-n", "2")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "  not recorded: s::gamma (RuntimeError: system exploded on gamma" in section(result)


# ---- 5: -x / --maxfail and --eval-budget --------------------------------------------------------
def test_x_stops_starting_system_runs_and_reports_the_rest_as_not_run(steered: Project) -> None:
    steered.write_suite(steered_suite(numbered(6)))
    steered.steer(**{"raise": ["c1"]})

    result = steered.run("--live", "-x", "--eval-concurrency", "1", "-rs")

    assert runs(steered) == ["c0", "c1"]
    result.assert_outcomes(passed=1, errors=1, skipped=4)  # every case reports
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    reason = (
        "not run: -x reached (1 case failed or errored); its recording is as it was (run "
        "again to record it)"
    )
    assert f"SKIPPED [4] cases/s.json:1: {reason}" in output(result)  # -rs: at the case file
    lines = changes_section(result)
    assert "stopped starting cases: -x reached (1 case failed or errored)" in lines
    for name in ("c2", "c3", "c4", "c5"):
        assert f"  not recorded: s::{name} ({reason})" in lines
    assert "stopped starting cases: -x reached (1 case failed or errored); 4 not run" in output(
        result
    )  # the progress lines say it as it happens
    assert sorted(steered.files()) == ["cassettes/s/c0.json"]


def test_maxfail_counts_stage_failures(steered: Project) -> None:
    steered.write_suite(steered_suite(numbered(6)))
    steered.steer(answers={"c0": "wrong", "c2": "wrong"})  # exact_match fails for them

    result = steered.run("--live", "--maxfail", "2", "--eval-concurrency", "1")

    assert runs(steered) == ["c0", "c1", "c2"]
    result.assert_outcomes(passed=1, failed=2, skipped=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    recorded = sorted(p for p in steered.files() if p.startswith("cassettes/s/c"))
    assert recorded == [f"cassettes/s/c{i}.json" for i in range(3)]  # failures are recorded
    assert "stopped starting cases: --maxfail 2 reached (2 cases failed or errored)" in section(
        result
    )


def test_x_lets_the_cases_already_running_finish_and_records_them(steered: Project) -> None:
    steered.write_suite(steered_suite(numbered(6)))
    # c0 fails at once, while c1 and c2 (concurrency 3) are still running
    steered.steer(**{"raise": ["c0"], "sleep": {"c1": 0.5, "c2": 0.5}})

    result = steered.run("--live", "-x", "--eval-concurrency", "3")

    assert runs(steered) == ["c0", "c1", "c2"]
    result.assert_outcomes(passed=2, errors=1, skipped=3)
    assert sorted(steered.files()) == ["cassettes/s/c1.json", "cassettes/s/c2.json"]
    lines = changes_section(result)
    assert lines[:2] == ["s::c1 (new)", "s::c2 (new)"]
    assert [line.split(" (")[0] for line in lines if line.startswith("  not recorded")] == [
        "  not recorded: s::c0",
        "  not recorded: s::c3",
        "  not recorded: s::c4",
        "  not recorded: s::c5",
    ]


def test_eval_budget_stops_starting_cases_once_the_recorded_cost_reaches_it(
    steered: Project,
) -> None:
    steered.write_suite(steered_suite(numbered(6)))
    steered.steer(cost=0.25)

    result = steered.run("--live", "--eval-budget", "0.5", "--eval-concurrency", "1")

    assert runs(steered) == ["c0", "c1"]
    result.assert_outcomes(passed=2, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = changes_section(result)
    assert (
        "stopped starting cases: --eval-budget $0.50 reached (recorded cost $0.50); the "
        "run's recorded cost came to $0.50"
    ) in lines, lines
    assert lines[2] == "0 unchanged, 0 changed, 2 new; 4 not recorded"


def test_eval_budget_under_xdist_stops_the_run_between_cases(steered: Project) -> None:
    steered.write_suite(steered_suite(numbered(30)))
    steered.steer(cost=0.25)

    result = steered.run("--live", "--eval-budget", "0.5", "-n", "2")

    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    ran = runs(steered)
    assert 2 <= len(ran) < 30  # the cases already handed to a worker still ran
    text = section(result)
    assert "stopped starting cases: --eval-budget $0.50 reached" in text
    not_run = [line for line in changes_section(result) if "(not run: --eval-budget" in line]
    assert len(not_run) == 30 - len(ran), text  # every case is accounted for


def test_eval_budget_counts_the_judge_cost_and_stops_live_judges_too(
    project: Project, judge_server: JudgeServer
) -> None:
    """--live-judges runs no system: the budget holds back the cases waiting to be judged."""
    judged_project(project)
    project.edit_suite(
        "cases/s.json",
        lambda doc: doc["cases"].extend(
            [
                case("berlin", "Berlin is the capital of Germany"),
                case("madrid", "Madrid is the capital of Spain"),
            ]
        ),
    )
    project.edit_suite("cases/s.json", lambda doc: doc.update(judge="lexical"))
    project.run("--live").assert_outcomes(passed=4)  # recorded with the lexical judge (free)
    project.clear_calls()

    result = run_judged(
        project,
        judge_server,
        "--live-judges",
        "--eval-judge",
        OPENAI,
        "--eval-budget",
        "0.000001",
        "--eval-concurrency",
        "1",
    )

    assert project.calls() == []
    result.assert_outcomes(passed=1, skipped=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "stopped starting cases: --eval-budget $0.000001 reached (recorded cost $0." in section(
        result
    )
    judged = {
        name
        for name in ("paris", "rome", "berlin", "madrid")
        if project.cassette("s", name)["verdicts"]["answer_accuracy"]["judge"] == OPENAI
    }
    assert judged == {"paris"}


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield
