"""End to end: judged stages through the plugin, in pytest runs of a small RAG project.

The project's system (`ragsys.py`) answers what each case scripts (`say`, `ctx`) and logs every
`setup()` / `run()` to calls.log. A module-scoped template is recorded once with
`--live --eval-judge openai:gpt-4o-mini` against the loopback OpenAI-compatible server
(tests/judge_server.py, started in this process) with injected latency and
`--eval-concurrency 3`; each test copies it. Runs see no judge key or endpoint at all unless the
test passes them; they run in this process, and in a fresh interpreter (`run_probed`) where a
test checks which heavy modules a run imported.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    changes_section,
    error_block,
    output,
    run_pytest_env,
    run_pytest_env_in_process,
    summary_section,
)
from judge_server import Fault, JudgeServer, RecordedRequest, judge_server_fixture

from pytest_evalcases.store.cassette import integrity_of

MODEL = "gpt-4o-mini"
OPENAI = f"openai:{MODEL}"

RAG_SYSTEM = '''\
"""Test RAG system: answers what the case scripts (`say`, `ctx`); logs every call to calls.log."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


class System:
    def fingerprint(self):
        return {"model": "rag-1"}

    def setup(self, suite):
        log(f"setup {suite.name}")

    def run(self, case):
        log(f"run {case['id']}")
        context = list(case.get("ctx", []))
        return {
            "answer": case["say"],
            "tool_calls": [{"name": "search", "args": {"query": case["input"]}}],
            "tool_outputs": [{"tool": "search", "content": " ".join(context)}],
            "retrieved": [f"doc{i}" for i in range(len(context))],
            "context": context,
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.0},
            "latency_ms": 2.0,
        }


system = System()
'''

GATING = [
    "faithfulness",
    "contextual_recall",
    "context_completeness",
    "answer_accuracy",
    "answer_relevancy",
    "correctness",
]
REPORT_ONLY = ["contextual_precision", "contextual_relevancy"]
ALL_STAGES = GATING + REPORT_ONLY
CONTEXT_STAGES = {
    "faithfulness",
    "contextual_recall",
    "context_completeness",
    "contextual_precision",
    "contextual_relevancy",
}
REFERENCE_STAGES = {
    "contextual_recall",
    "contextual_precision",
    "correctness",
    "context_completeness",
    "answer_accuracy",
}
DEFAULT_CRITERIA = (
    "The answer conveys the same key facts as the reference and nothing contradicting it."
)

# Each capital case names its country only in its own text, so a server rule can target it.
CAPITALS = [
    ("paris", "France", "Paris"),
    ("tokyo", "Japan", "Tokyo"),
    ("rome", "Italy", "Rome"),
    ("berlin", "Germany", "Berlin"),
    ("madrid", "Spain", "Madrid"),
    ("lisbon", "Portugal", "Lisbon"),
]
CASE_IDS = [cid for cid, _, _ in CAPITALS] + ["noctx", "noref", "atlantis"]

# The verdicts each case gets (the others are skipped: no context, no reference, unanswerable).
APPLICABLE: dict[str, set[str]] = {
    **{cid: set(ALL_STAGES) for cid, _, _ in CAPITALS},
    "noctx": {"answer_accuracy", "answer_relevancy", "correctness"},
    "noref": {"faithfulness", "answer_relevancy", "contextual_relevancy"},
    "atlantis": {"faithfulness", "answer_accuracy", "answer_relevancy", "contextual_relevancy"},
}

# Prompt kinds (judge_server.recognise) per stage.
KINDS: dict[str, set[str]] = {
    "faithfulness": {
        "faithfulness_truths",
        "faithfulness_claims",
        "faithfulness_verdicts",
        "faithfulness_reason",
    },
    "contextual_recall": {"recall_verdicts", "recall_reason"},
    "contextual_precision": {"precision_verdicts", "precision_reason"},
    "contextual_relevancy": {"relevancy_verdicts", "relevancy_reason"},
    "answer_relevancy": {
        "answer_relevancy_statements",
        "answer_relevancy_verdicts",
        "answer_relevancy_reason",
    },
    "correctness": {"geval_steps", "geval_score"},
    "context_completeness": {"completeness"},
    "answer_accuracy": {"accuracy", "accuracy_unanswerable"},
}

PROGRESS = re.compile(
    r"recording: (\d+)/(\d+) cases, (\d+) judge calls, (\d+) retries, (\d+) tokens, "
    r"\$(\d+\.\d{4})$"
)


# ---- the project ------------------------------------------------------------------------------
def capital_case(case_id: str, country: str, city: str, **fields: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": case_id,
        "input": f"What is the capital of {country}?",
        "say": f"{city} is the capital of {country}.",
        "ctx": [f"{city} is the capital of {country}.", f"{country} has many old towns."],
        "reference": f"{city} is the capital of {country}.",
        "category": "geo",
    }
    case.update(fields)
    return case


def rag_cases() -> list[dict[str, Any]]:
    cases = [capital_case(*row) for row in CAPITALS]
    cases.append(capital_case("noctx", "Austria", "Vienna", ctx=[], category="bare"))
    noref = capital_case("noref", "Norway", "Oslo", category="bare")
    del noref["reference"]
    cases.append(noref)
    cases.append(
        {
            "id": "atlantis",
            "input": "What is the capital of Atlantis?",
            "say": "The capital of Atlantis is not available in the documents.",
            "ctx": ["Atlantis is a legend told by Plato."],
            "unanswerable": True,
            "category": "abstain",
        }
    )
    return cases


def rag_suite(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "rag",
        "system": "ragsys:system",
        "stages": list(GATING),
        "report_only": list(REPORT_ONLY),
        "cases": rag_cases(),
    }
    doc.update(fields)
    return doc


def rag_project(root: Path, ini_extra: str = "", **suite_fields: Any) -> Project:
    project = Project(root).write_base(
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
        "asyncio_default_fixture_loop_scope = function\n" + ini_extra
    )
    project.write_text("ragsys.py", RAG_SYSTEM)
    project.write_suite(rag_suite(**suite_fields))
    return project


def run(project: Project, *args: str, env: dict[str, str] | None = None) -> pytest.RunResult:
    """pytest in this process with no judge key / endpoint unless `env` gives them, on a
    terminal wide enough for the per-case table of every stage with its full name
    (`case_table`)."""
    return run_pytest_env_in_process(
        project.root, "-p", "no:cacheprovider", *args, env={"COLUMNS": "400", **(env or {})}
    )


def run_probed(
    project: Project, *args: str, env: dict[str, str] | None = None
) -> tuple[pytest.RunResult, list[str]]:
    """`run` in a fresh interpreter, which also says which heavy modules the run imported."""
    return run_pytest_env(
        project.root, "-p", "no:cacheprovider", *args, env={"COLUMNS": "400", **(env or {})}
    )


def openai_env(server: JudgeServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}


def cassette_bytes(project: Project) -> dict[str, bytes]:
    return {path: content for path, (content, _) in project.files().items()}


def runs_of(calls: list[str]) -> list[str]:
    return [line for line in calls if line.startswith("run ")]


def runs(project: Project) -> list[str]:
    return runs_of(project.calls())


def edit_case(project: Project, case_id: str, **fields: Any) -> None:
    def edit(doc: dict[str, Any]) -> None:
        next(c for c in doc["cases"] if c["id"] == case_id).update(fields)

    project.edit_suite("cases/rag.json", edit)


def check_last(project: Project, *stages: str, **suite_fields: Any) -> None:
    """Reorder the suite so `stages` are checked last at replay (stage lists are in no key): a
    stale error naming one of them shows that every verdict checked before it is current."""

    def edit(doc: dict[str, Any]) -> None:
        doc["stages"] = [s for s in ALL_STAGES if s not in stages] + list(stages)
        doc["report_only"] = []
        doc.update(suite_fields)

    project.edit_suite("cases/rag.json", edit)


# ---- reading the terminal summary -------------------------------------------------------------
def _table(lines: list[str]) -> dict[str, dict[str, str]]:
    """A space-aligned table (first line the header) as {first cell: {column: cell}}."""
    header = lines[0]
    columns = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    table = {}
    for line in lines[1:]:
        cells = {}
        for index, (start, name) in enumerate(columns):
            end = columns[index + 1][0] if index + 1 < len(columns) else None
            cells[name] = line[start:end].strip()
        table[cells[columns[0][1]]] = cells
    return table


def case_table(result: pytest.RunResult) -> dict[str, dict[str, str]]:
    section = summary_section(result)
    assert section[0].startswith("case "), section
    return _table(section[: section.index("")])


def totals_table(result: pytest.RunResult) -> dict[str, dict[str, str]]:
    section = summary_section(result)
    start = next(i for i, line in enumerate(section) if line.startswith("stage "))
    end = section.index("", start)
    return {name.rstrip("*"): row for name, row in _table(section[start:end]).items()}


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


def progress_lines(result: pytest.RunResult) -> list[re.Match[str]]:
    return [m for m in map(PROGRESS.search, output(result).splitlines()) if m]


# ---- servers ------------------------------------------------------------------------------------
def matching(server: JudgeServer, kinds: set[str], phrase: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.kind in kinds and phrase in r.prompt]


server = judge_server_fixture("server")


# ---- the recorded template ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded_template(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The RAG project recorded once with the OpenAI judge against the loopback server, with
    50 ms server latency and --eval-concurrency 3."""
    project = rag_project(tmp_path_factory.mktemp("judged-template"))
    judge_server = JudgeServer(latency=0.05).start()
    try:
        result, heavy = run_probed(
            project,
            "--live",
            "--eval-judge",
            OPENAI,
            "--eval-concurrency",
            "3",
            env=openai_env(judge_server),
        )
    finally:
        judge_server.stop()
    calls = project.calls()
    project.clear_calls()
    return SimpleNamespace(
        project=project, result=result, heavy=heavy, calls=calls, server=judge_server
    )


@pytest.fixture
def recorded(recorded_template: SimpleNamespace, tmp_path: Path) -> Project:
    """A copy of the recorded template, for a test to change."""
    project = Project(tmp_path)
    project.copy_from(recorded_template.project.root)
    return project


# ---- 1, 8, 9: recording with the OpenAI judge -------------------------------------------------
def test_live_openai_records_every_verdict_in_the_cassette(
    recorded_template: SimpleNamespace,
) -> None:
    result, project = recorded_template.result, recorded_template.project
    assert_not_aborted(result)
    result.assert_outcomes(passed=9)
    assert sorted(runs_of(recorded_template.calls)) == sorted(f"run {c}" for c in CASE_IDS)
    assert recordings_line(result).startswith("recordings: 9 recorded, 0 replayed")

    criteria_sha = hashlib.sha256(DEFAULT_CRITERIA.encode()).hexdigest()[:16]
    for case_id in CASE_IDS:
        doc = project.cassette("rag", case_id)
        verdicts = doc["verdicts"]
        assert set(verdicts) == APPLICABLE[case_id], case_id
        for stage, verdict in verdicts.items():
            where = f"{case_id}/{stage}"
            assert isinstance(verdict["score"], float) and 0 <= verdict["score"] <= 1, where
            assert isinstance(verdict["reason"], str) and verdict["reason"], where
            assert "label" in verdict, where
            assert verdict["judge"] == OPENAI, where
            usage = verdict["usage"]
            assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, where
            assert usage["cost_usd"] > 0, where  # gpt-4o-mini has a known price
            assert isinstance(verdict["latency_ms"], float) and verdict["latency_ms"] > 0, where
            assert verdict["calls"] >= 1, where
            assert "error" not in verdict, where
            expected_key = {"judge", "judge_version", "params"}
            if stage in REFERENCE_STAGES:
                expected_key.add("reference")
            if stage == "answer_accuracy":
                expected_key.add("unanswerable")
            assert set(verdict["key"]) == expected_key, where
            expected_params = (
                {"strict": False}
                if stage == "faithfulness"
                else {"criteria_sha": criteria_sha}
                if stage == "correctness"
                else {}
            )
            assert verdict["params"] == expected_params, where
        # every item is fine for the server: full marks, and the labels of categorical stages
        if "context_completeness" in verdicts:
            assert verdicts["context_completeness"]["label"] == "COMPLETE"
            assert verdicts["context_completeness"]["score"] == 1.0
        if "answer_accuracy" in verdicts:
            assert verdicts["answer_accuracy"]["label"] == "CORRECT"
        if "correctness" in verdicts:
            assert verdicts["correctness"]["score"] == pytest.approx(0.9)  # GEval 9/10
        for stage in set(verdicts) - {"correctness"}:
            assert verdicts[stage]["score"] == 1.0, (case_id, stage)
    atlantis = project.cassette("rag", "atlantis")["verdicts"]["answer_accuracy"]
    assert atlantis["reason"] == "canned: correct"  # judged by the unanswerable prompt


def test_live_openai_ran_the_real_deepeval_metrics(recorded_template: SimpleNamespace) -> None:
    judge_server = recorded_template.server
    kinds = set(judge_server.kinds())
    assert kinds == set().union(*KINDS.values()), kinds  # every deepeval and own prompt
    assert all(r.status == 200 for r in judge_server.requests)
    assert {r.body["model"] for r in judge_server.requests} == {MODEL}
    assert {"deepeval", "openai"} <= set(recorded_template.heavy)
    # the verdicts account for every request the server saw
    total = sum(
        verdict["calls"]
        for case_id in CASE_IDS
        for verdict in recorded_template.project.cassette("rag", case_id)["verdicts"].values()
    )
    assert total == len(judge_server.requests)
    assert not (recorded_template.project.root / ".deepeval").exists()  # no deepeval litter


def test_correctness_steps_are_drafted_once_per_criteria_in_a_live_run(
    recorded_template: SimpleNamespace,
) -> None:
    """docs/judges.md: GEval "drafts [evaluation steps] once per criteria and reuses them (one
    request less per correctness verdict)". The run has one criteria text and 7 correctness
    verdicts, judged up to 3 cases at a time: one steps request, and every verdict scored with
    the same steps."""
    kinds = recorded_template.server.kinds()
    assert kinds.count("geval_score") == 7
    assert kinds.count("geval_steps") == 1, (
        f"{kinds.count('geval_steps')} GEval steps requests for one criteria text; correctness "
        "calls per case: "
        + str(
            {
                c: recorded_template.project.cassette("rag", c)["verdicts"]["correctness"]["calls"]
                for c in CASE_IDS
                if "correctness" in APPLICABLE[c]
            }
        )
    )


def test_live_judge_requests_are_bounded_by_eval_concurrency(
    recorded_template: SimpleNamespace,
) -> None:
    judge_server = recorded_template.server
    assert len(judge_server.requests) > 50
    assert 1 < judge_server.max_in_flight <= 3, judge_server.max_in_flight


PACED_SYSTEM = """\
import asyncio, time
from pathlib import Path

LOG = Path(__file__).resolve().parent / "spans.log"


async def run(case):
    started = time.monotonic()
    await asyncio.sleep(0.05)
    with LOG.open("a") as log:
        log.write(f"{started} {time.monotonic()}\\n")
    return {"answer": case["say"], "context": case["ctx"]}
"""


def test_systems_run_on_while_the_judge_works(tmp_path: Path, server: JudgeServer) -> None:
    """--eval-concurrency bounds the system runs and the judge's requests separately: a case
    waiting for its verdicts holds no system slot, so the next systems run meanwhile."""
    server.latency = 0.5
    project = Project(tmp_path).write_base(
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
        "asyncio_default_fixture_loop_scope = function\n"
    )
    project.write_text("paced.py", PACED_SYSTEM)
    project.write_suite(
        {
            "name": "paced",
            "system": "paced:run",
            "stages": ["answer_accuracy"],
            "cases": [capital_case(*row) for row in CAPITALS[:4]],
        }
    )
    result = run(
        project, "--live", "--eval-judge", OPENAI, "--eval-concurrency", "1", env=openai_env(server)
    )
    result.assert_outcomes(passed=4)
    spans = sorted(
        tuple(map(float, line.split()))
        for line in (project.root / "spans.log").read_text().splitlines()
    )
    assert len(spans) == 4
    runs_in_turn = zip(spans, spans[1:], strict=False)
    assert all(end <= next_start for (_, end), (next_start, _) in runs_in_turn), spans
    assert server.max_in_flight == 1 and len(server.requests) == 4
    first_reply = min(request.received for request in server.requests) + server.latency
    # One at a time each, but not in turn: every system ran before the first verdict was back
    # (holding a slot per case, the second system run would have waited for it).
    assert spans[-1][0] < first_reply, (spans, first_reply)


def test_live_progress_line_counts_cases_calls_tokens_and_cost(
    recorded_template: SimpleNamespace,
) -> None:
    lines = progress_lines(recorded_template.result)
    assert lines, output(recorded_template.result)
    done, total, calls, retries, tokens, cost = lines[-1].groups()
    assert (done, total) == ("9", "9")
    assert int(calls) == len(recorded_template.server.requests)
    assert int(retries) == 0
    verdicts = [
        verdict
        for case_id in CASE_IDS
        for verdict in recorded_template.project.cassette("rag", case_id)["verdicts"].values()
    ]
    assert int(tokens) == sum(
        v["usage"]["prompt_tokens"] + v["usage"]["completion_tokens"] for v in verdicts
    )
    assert float(cost) == pytest.approx(sum(v["usage"]["cost_usd"] for v in verdicts), abs=1e-4)
    assert float(cost) > 0


# ---- 1: replay needs no key and imports no heavy module ---------------------------------------
@pytest.mark.parametrize(
    "judge_args", [[], ["--eval-judge", OPENAI]], ids=["no-judge-configured", "same-judge"]
)
def test_replay_needs_no_key_and_imports_no_deepeval(
    recorded: Project, judge_args: list[str]
) -> None:
    before = cassette_bytes(recorded)

    # no OPENAI_API_KEY, no OPENAI_BASE_URL; every case in the summary table (all pass)
    result, heavy = run_probed(recorded, *judge_args, "--eval-summary=all")

    result.assert_outcomes(passed=9)
    assert recordings_line(result).startswith("recordings: 0 recorded, 9 replayed, 0 stale")
    assert heavy == [], heavy
    assert recorded.calls() == []
    assert cassette_bytes(recorded) == before
    table = case_table(result)
    assert table["rag::paris"]["correctness"] == "0.90"
    assert table["rag::noctx"]["faithfulness"] == "-"


# ---- 3: staleness ------------------------------------------------------------------------------
def _assert_verdict_stale_only(block: str, stage: str, field: str) -> None:
    """The error is about verdict `stage`, names `field`, and leaves the trace alone."""
    assert f"stale recording (verdict {stage}): {field} changed" in block, block
    assert "stale recording:" not in block, block  # the trace's key is current
    for trace_field in ("case changed", "fingerprint.", "system changed", "format changed"):
        assert trace_field not in block, block
    assert "--live-judges" in block, block


@pytest.mark.parametrize("how", ["flag", "suite"])
def test_another_judge_stales_the_verdicts_not_the_trace(recorded: Project, how: str) -> None:
    args: list[str] = []
    if how == "flag":
        args = ["--eval-judge", "lexical"]
    else:
        recorded.edit_suite("cases/rag.json", lambda doc: doc.update(judge="lexical"))

    result, heavy = run_probed(recorded, *args)

    assert_not_aborted(result)
    result.assert_outcomes(errors=9)
    assert ", 9 stale," in recordings_line(result)
    for case_id in CASE_IDS:
        block = error_block(result, f"rag::{case_id}")
        first = "faithfulness" if "faithfulness" in APPLICABLE[case_id] else "answer_accuracy"
        _assert_verdict_stale_only(block, first, "judge")
    assert heavy == []
    assert recorded.calls() == []


def test_edited_reference_stales_only_the_verdicts_that_read_it(recorded: Project) -> None:
    edit_case(recorded, "paris", reference="Paris is the capital city of France.")
    # Verdicts that do not read the reference are checked first: all of them must be current.
    check_last(
        recorded,
        "contextual_recall",
        "contextual_precision",
        "correctness",
        "context_completeness",
        "answer_accuracy",
    )

    result = run(recorded)

    assert_not_aborted(result)
    result.assert_outcomes(passed=8, errors=1)  # the reordering alone stales nothing
    block = error_block(result, "rag::paris")
    _assert_verdict_stale_only(block, "contextual_recall", "reference")
    assert "judge changed" not in block and "params changed" not in block
    assert case_table(result)["rag::paris"]["outcome"] == "stale"


@pytest.mark.parametrize(
    ("stage", "option"),
    [
        ("faithfulness", {"strict": True}),
        ("correctness", {"correctness_criteria": "Same facts as the reference."}),
    ],
)
def test_a_stage_option_stales_only_that_stage(
    recorded: Project, stage: str, option: dict[str, Any]
) -> None:
    check_last(recorded, stage, **option)

    result = run(recorded, "--eval-summary=all")

    assert_not_aborted(result)
    affected = [c for c in CASE_IDS if stage in APPLICABLE[c]]
    result.assert_outcomes(passed=9 - len(affected), errors=len(affected))
    for case_id in affected:
        block = error_block(result, f"rag::{case_id}")
        _assert_verdict_stale_only(block, stage, "params")
        assert "reference changed" not in block and "judge changed" not in block
    for case_id in set(CASE_IDS) - set(affected):
        assert case_table(result)[f"rag::{case_id}"]["outcome"] == "passed", case_id


# ---- 5: --live-stale re-judges only the stale verdicts ----------------------------------------
def test_live_stale_with_every_recording_current_loads_no_judge(
    recorded: Project, server: JudgeServer
) -> None:
    """--live and --live-judges start importing deepeval before the first case (every case will
    be judged); --live-stale waits for a verdict that is due, so a current suite costs nothing."""
    before = cassette_bytes(recorded)
    result, heavy = run_probed(
        recorded, "--live-stale", "--eval-judge", OPENAI, env=openai_env(server)
    )
    result.assert_outcomes(passed=9)
    assert recordings_line(result).startswith("recordings: 0 recorded, 9 replayed")
    assert server.requests == [] and runs(recorded) == []
    assert "deepeval" not in heavy, heavy
    assert cassette_bytes(recorded) == before


def test_live_stale_rejudges_only_the_stale_verdicts(
    recorded: Project, server: JudgeServer
) -> None:
    before = cassette_bytes(recorded)
    old = recorded.cassette("rag", "paris")
    edit_case(recorded, "paris", reference="Paris is the capital city of France.")

    result = run(recorded, "--live-stale", "--eval-judge", OPENAI, env=openai_env(server))

    result.assert_outcomes(passed=9)
    assert runs(recorded) == []  # the trace was current: the system did not run
    assert recordings_line(result).startswith("recordings: 1 recorded, 8 replayed")
    # only paris's reference-reading stages went to the judge
    rejudged = set().union(*(KINDS[s] for s in REFERENCE_STAGES)) - {"accuracy_unanswerable"}
    assert set(server.kinds()) == rejudged, server.kinds()
    assert all("France" in r.prompt for r in server.requests if r.kind != "geval_steps")
    after = cassette_bytes(recorded)
    for case_id in CASE_IDS:
        path = f"cassettes/rag/{case_id}.json"
        assert (after[path] == before[path]) == (case_id != "paris"), case_id
    new = recorded.cassette("rag", "paris")
    assert new["trace"] == old["trace"] and new["key"] == old["key"]
    for stage in ALL_STAGES:
        if stage in REFERENCE_STAGES:
            assert (
                new["verdicts"][stage]["key"]["reference"]
                != old["verdicts"][stage]["key"]["reference"]
            ), stage
            assert new["verdicts"][stage]["judge"] == OPENAI
        else:
            assert new["verdicts"][stage] == old["verdicts"][stage], stage  # kept as recorded

    replay, heavy = run_probed(recorded)
    replay.assert_outcomes(passed=9)
    assert heavy == []


# ---- 4: --live-judges ----------------------------------------------------------------------------
def test_live_judges_rejudges_recorded_traces_without_the_system(
    recorded: Project, server: JudgeServer
) -> None:
    """--live-judges judges what a recorded trace lacks (here: paris's verdicts, edited by hand,
    are worth nothing) and keeps the verdicts that still hold: no model call is paid twice."""
    path = recorded.cassette_path("rag", "paris")
    doc = json.loads(path.read_text())
    for verdict in doc["verdicts"].values():  # a verdict the judge would never give
        verdict.update(score=0.123, reason="tampered")
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    old = {case_id: recorded.cassette("rag", case_id) for case_id in CASE_IDS}
    before = cassette_bytes(recorded)

    result = run(recorded, "--live-judges", "--eval-judge", OPENAI, env=openai_env(server))

    result.assert_outcomes(passed=9)
    assert runs(recorded) == []
    assert recordings_line(result).startswith("recordings: 1 recorded, 8 replayed")
    expected_kinds = set().union(*(KINDS[s] for s in APPLICABLE["paris"]))
    assert set(server.kinds()) == expected_kinds - {"accuracy_unanswerable"}
    assert not [r for r in server.requests if any(c in r.prompt for c in ("Japan", "Italy"))]
    after = cassette_bytes(recorded)
    for case_id in CASE_IDS:
        new = recorded.cassette("rag", case_id)
        assert new["trace"] == old[case_id]["trace"] and new["key"] == old[case_id]["key"]
        assert set(new["verdicts"]) == APPLICABLE[case_id]
        path = f"cassettes/rag/{case_id}.json"
        assert (after[path] == before[path]) == (case_id != "paris"), case_id
    paris = recorded.cassette("rag", "paris")["verdicts"]
    assert all(v["reason"] != "tampered" for v in paris.values())
    assert paris["faithfulness"]["score"] == 1.0 and paris["correctness"]["score"] == 0.9
    assert progress_lines(result)[-1].group(3) == str(len(server.requests))


def test_live_judges_with_another_judge_and_a_missing_cassette(recorded: Project) -> None:
    recorded.cassette_path("rag", "tokyo").unlink()
    old = {c: recorded.cassette("rag", c) for c in CASE_IDS if c != "tokyo"}

    result, heavy = run_probed(recorded, "--live-judges", "--eval-judge", "lexical")

    assert_not_aborted(result)
    result.assert_outcomes(passed=8, errors=1)
    assert "no recording for rag::tokyo to re-judge; record it with --live" in error_block(
        result, "rag::tokyo"
    )
    assert not recorded.cassette_path("rag", "tokyo").exists()
    assert runs(recorded) == []
    assert heavy == []  # the lexical judge needs neither deepeval nor openai
    for case_id, before in old.items():
        after = recorded.cassette("rag", case_id)
        assert after["trace"] == before["trace"] and after["key"] == before["key"]
        assert {v["judge"] for v in after["verdicts"].values()} == {"lexical"}, case_id

    lexical = run(recorded, "--eval-judge", "lexical", "-k", "not tokyo")
    lexical.assert_outcomes(passed=8, deselected=1)


# ---- 2: the lexical judge ------------------------------------------------------------------------
def test_lexical_live_needs_no_key_and_no_network(tmp_path: Path) -> None:
    project = rag_project(tmp_path, judge="lexical")

    result, heavy = run_probed(project, "--live", "--eval-summary=all")  # no key, no endpoint

    assert_not_aborted(result)
    result.assert_outcomes(passed=9)
    # Neither deepeval nor openai was imported (vcrpy, with the aiohttp it patches, records
    # the system's HTTP)
    assert set(heavy) <= {"vcr", "aiohttp"}
    assert sorted(runs(project)) == sorted(f"run {c}" for c in CASE_IDS)
    table = case_table(result)
    for case_id in CASE_IDS:
        verdicts = project.cassette("rag", case_id)["verdicts"]
        assert set(verdicts) == APPLICABLE[case_id], case_id
        for stage, verdict in verdicts.items():
            assert verdict["judge"] == "lexical" and verdict["usage"] is None, (case_id, stage)
            assert verdict["calls"] == 0 and "score" in verdict and "latency_ms" in verdict
        row = table[f"rag::{case_id}"]
        for stage in ALL_STAGES:
            assert (row[stage] == "-") == (stage not in APPLICABLE[case_id]), (case_id, stage)
    totals = totals_table(result)
    assert totals["faithfulness"]["skipped"] == "1"  # noctx: no context
    assert totals["correctness"]["skipped"] == "2"  # noref, atlantis: no reference
    assert totals["context_completeness"]["skipped"] == "3"

    replay, heavy = run_probed(project)
    replay.assert_outcomes(passed=9)
    assert heavy == []


# ---- 6: judge errors ---------------------------------------------------------------------------
def _make_pending(project: Project, case_id: str, stage: str) -> None:
    """Record the verdict of `stage` as pending (its judge failed), as the plugin writes it."""
    doc = project.cassette("rag", case_id)
    key = doc["verdicts"][stage]["key"]
    doc["verdicts"][stage] = {"key": key, "pending": True, "score": None, "error": "timed out"}
    integrity = doc["integrity"]
    doc["integrity"] = integrity_of(
        doc["trace"], doc["verdicts"], integrity.get("http"), doc.get("later_runs")
    )
    text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    project.cassette_path("rag", case_id).write_text(text)


def test_judge_errors_are_never_a_pass_and_leave_the_verdict_pending(
    recorded: Project,
) -> None:
    # tokyo's accuracy verdict: 500s until the judge gives up after 6 attempts (a 1 ms
    # backoff, so retries are instant); rome's faithfulness: 401, which fails at once.
    judge_server = JudgeServer(
        rules=[
            (KINDS["answer_accuracy"], "Japan", Fault("500")),
            ({"faithfulness_claims"}, "Italy", Fault("401")),
        ]
    ).start()
    # No verdict held for these two (their judge had failed before too), so a failure leaves
    # them pending; a verdict that held is kept instead (tests/hostile/test_verdicts_kept.py).
    for case_id, stage in (("tokyo", "answer_accuracy"), ("rome", "faithfulness")):
        _make_pending(recorded, case_id, stage)
    before = cassette_bytes(recorded)
    old = {case_id: recorded.cassette("rag", case_id) for case_id in ("tokyo", "rome")}
    try:
        result = run(
            recorded,
            "--live",
            "--eval-judge",
            OPENAI,
            env={**openai_env(judge_server), "EVALCASES_JUDGE_BACKOFF": "0.001"},
        )
    finally:
        judge_server.stop()

    assert_not_aborted(result)
    # Not evaluated: an error, in the summary and in pytest's terms (never absorbed by xfail)
    result.assert_outcomes(passed=7, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    table = case_table(result)
    assert table["rag::tokyo"]["answer_accuracy"] == "JUDGE-ERR"
    assert table["rag::tokyo"]["outcome"] == "error"
    assert table["rag::rome"]["faithfulness"] == "JUDGE-ERR"
    assert table["rag::rome"]["outcome"] == "error"
    assert table["rag::tokyo"]["faithfulness"] == "1.00"  # its other verdicts were fine
    totals = totals_table(result)
    assert totals["answer_accuracy"]["judge errors"] == "1"
    assert totals["faithfulness"]["judge errors"] == "1"
    assert totals["correctness"]["judge errors"] == "0"
    assert totals["answer_accuracy"]["passed"] == "7"  # the judge error is not a pass
    short = [line for line in result.outlines if line.startswith(("ERROR ", "FAILED "))]
    assert sorted(line.split(" - ")[0] for line in short) == [
        "ERROR cases/rag.json::rome",
        "ERROR cases/rag.json::tokyo",
    ], short

    assert len(matching(judge_server, KINDS["answer_accuracy"], "Japan")) == 6  # 6 attempts
    assert len(matching(judge_server, {"faithfulness_claims"}, "Italy")) == 1  # not retried
    assert progress_lines(result)[-1].group(4) == "5"  # retries

    tokyo = error_block(result, "rag::tokyo")
    assert "first failing stage: answer_accuracy (judge error:" in tokyo, tokyo
    assert "failed after 6 attempts" in tokyo and "JUDGE ERROR" in tokyo
    rome = error_block(result, "rag::rome")
    assert "first failing stage: faithfulness (judge error:" in rome, rome
    assert "judge authentication failed (HTTP 401): check OPENAI_API_KEY" in rome

    # The unchanged recordings are left byte for byte; the two with a failed verdict keep their
    # (paid for) trace and other verdicts, with that verdict pending.
    after = cassette_bytes(recorded)
    for case_id in CASE_IDS:
        path = f"cassettes/rag/{case_id}.json"
        assert (after[path] == before[path]) == (case_id not in ("tokyo", "rome")), case_id
    for case_id, stage in (("tokyo", "answer_accuracy"), ("rome", "faithfulness")):
        new = recorded.cassette("rag", case_id)
        # the same trace, the run's time (`measured`) aside: the file holds this run's
        assert {**new["trace"], "measured": None} == {**old[case_id]["trace"], "measured": None}
        pending = new["verdicts"][stage]
        assert pending["pending"] is True and pending["score"] is None and pending["error"]
        assert pending["key"] == old[case_id]["verdicts"][stage]["key"]
        others = set(new["verdicts"]) - {stage}
        assert all("pending" not in new["verdicts"][name] for name in others)
    assert not [p for p in (recorded.root / "cassettes").rglob("*") if ".tmp" in p.name]
    section = "\n".join(changes_section(result))
    assert recordings_line(result).startswith("recordings: 9 recorded")
    assert re.search(
        r"not recorded: rag::tokyo \(judge error \(answer_accuracy: .*"
        r"the new trace was saved with the verdict pending: complete it with "
        r"--live-judges\)",
        section,
    ), section
    assert re.search(
        r"not recorded: rag::rome \(judge error \(faithfulness: .*HTTP 401", section
    ), section
    assert "not recorded: rag::paris" not in section
    assert "7 unchanged, 2 changed, 0 new; 2 not recorded" in section, section

    replay = run(recorded)  # the pending verdicts are errors until they are judged
    replay.assert_outcomes(passed=7, errors=2)
    assert (
        "judge verdict pending for answer_accuracy; complete it with --live-judges"
        in error_block(replay, "rag::tokyo")
    )
    assert "judge verdict pending for faithfulness; complete it with --live-judges" in error_block(
        replay, "rag::rome"
    )


# ---- 7, 10: configuration errors fail before any case runs -------------------------------------
def test_missing_key_in_live_mode_fails_before_any_case(recorded: Project) -> None:
    recorded.cassette_path("rag", "tokyo").unlink()
    before = cassette_bytes(recorded)

    result, heavy = run_probed(recorded, "--live", "--eval-judge", OPENAI)  # no OPENAI_API_KEY

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    errors = "\n".join(result.errlines)
    assert f"judge '{OPENAI}' needs EVALCASES_JUDGE_API_KEY or OPENAI_API_KEY" in errors, errors
    assert recorded.calls() == []  # not even setup()
    assert cassette_bytes(recorded) == before  # nothing written, tokyo still missing
    assert "deepeval" not in heavy


ACCEPTED_FORMS = (
    "openai:<model>",
    "gemini:<model>",
    "ollama:<model>",
    "litellm:<model>",
    "lexical",
)


def test_unknown_judge_in_live_mode_lists_the_accepted_forms(tmp_path: Path) -> None:
    project = rag_project(tmp_path)

    result = run(project, "--live", "--eval-judge", "foo:bar")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    errors = "\n".join(result.errlines)
    assert "unknown judge 'foo:bar'" in errors, errors
    for form in ACCEPTED_FORMS:
        assert form in errors, form
    assert project.calls() == [] and project.files() == {}


def test_unknown_judge_in_replay_lists_the_forms_without_a_traceback(recorded: Project) -> None:
    result = run(recorded, "--eval-judge", "foo:bar", "cases/rag.json::paris")

    assert result.ret != pytest.ExitCode.OK
    text = output(result)
    assert "unknown judge 'foo:bar'" in text, text
    for form in ACCEPTED_FORMS:
        assert form in text, form
    # A configuration mistake reads like the plugin's other errors: the message, not pages of
    # pytest and plugin internals (errors.py: "the item shows the message alone").
    assert "_pytest/runner.py" not in text and "pytest_evalcases/" not in text, (
        f"{len(result.outlines)} lines of output:\n{text[:3000]}"
    )


def test_live_without_a_judge_names_the_three_ways_to_set_one(tmp_path: Path) -> None:
    project = rag_project(tmp_path)

    result, heavy = run_probed(project, "--live")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    errors = "\n".join(result.errlines)
    assert "suite 'rag' has judged stages but no judge" in errors, errors
    for way in ("--eval-judge", '"judge" in the suite', "eval_judge"):
        assert way in errors, way
    assert project.calls() == [] and project.files() == {}
    assert set(heavy) <= {"vcr", "aiohttp"}  # vcrpy records the HTTP

    project.write_text(
        "pytest.ini", (project.root / "pytest.ini").read_text() + "eval_judge = lexical\n"
    )
    fixed, heavy = run_probed(project, "--live", "-k", "paris or noctx")
    fixed.assert_outcomes(passed=2, deselected=7)
    assert project.cassette("rag", "paris")["verdicts"]["faithfulness"]["judge"] == "lexical"
    assert set(project.cassette("rag", "noctx")["verdicts"]) == APPLICABLE["noctx"]
    assert set(heavy) <= {"vcr", "aiohttp"}  # vcrpy records the HTTP
