"""OpenTelemetry export of live runs (issue 13 §4), against a loopback OTLP/HTTP collector.

One span per live case, with child spans for the system run and each judge request, GenAI
semantic-convention attributes and the run's id; off by default; a replay sends nothing and
imports nothing from opentelemetry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from evalhelpers import Project, make_case, output, run_live_openai, suite_doc
from inprocess import run_pytest_in_process
from judge_server import JudgeServer
from otlp_collector import Collector

# A system that reports the span current while it runs (its own instrumentation would nest
# there) and its own model in the trace's usage.
OTEL_SYSTEM = """\
from mysys import log, trace_for


def system(case):
    from opentelemetry import trace  # when it runs: a replay must import none of it

    context = trace.get_current_span().get_span_context()
    log(f"span {case['id']} {context.trace_id:032x} {context.span_id:016x}")
    result = trace_for(case)
    result["usage"]["model"] = "echo-1-mini"
    return result
"""


@pytest.fixture
def collector() -> Iterator[Collector]:
    """A loopback OTLP/HTTP collector on a random port, for this test alone."""
    running = Collector().start()
    try:
        yield running
    finally:
        running.stop()


def cases() -> list[dict]:
    return [
        make_case("alpha", "alpha beta", category="storage"),
        make_case("gamma", "gamma delta", category="sync"),
        make_case("miss", "epsilon zeta", expected_docs=["nowhere"]),  # fails at retrieval
    ]


@pytest.fixture
def traced(project: Project) -> Project:
    project.write_text("otelsys.py", OTEL_SYSTEM)
    project.write_suite(
        suite_doc(
            cases=cases(),
            system="otelsys:system",
            judge="lexical",
            stages=["tools", "retrieval", "answer_accuracy"],
            code=["otelsys", "mysys"],
        )
    )
    return project


def run_env(project: Project, collector: Collector, *args: str) -> pytest.RunResult:
    """pytest in the project (in this process: inprocess.py), exporting to `collector` only."""
    return run_pytest_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        *args,
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "COLUMNS": "200"},
        unset=[name for name in os.environ if name.startswith("OTEL_")],
    )


def case_spans(collector: Collector) -> list[dict]:
    """The spans of the cases and their children: not the run's phases (test_otel_phases.py)."""
    return [s for s in collector.spans if "evalcases.process" not in s["attributes"]]


def by_name(collector: Collector) -> dict[str, dict]:
    spans = {span["name"]: span for span in case_spans(collector)}
    assert len(spans) == len(case_spans(collector)), [s["name"] for s in collector.spans]
    return spans


def children(collector: Collector, parent: dict) -> list[dict]:
    return sorted(
        (s for s in collector.spans if s["parent_span_id"] == parent["span_id"]),
        key=lambda s: s["name"],
    )


def test_a_live_run_sends_a_span_per_case_with_its_system_run_and_judge_requests(
    traced: Project,
    collector: Collector,
) -> None:
    result = run_env(traced, collector, "--live", "--eval-otel", "--eval-report", "out")

    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text  # `miss` fails at retrieval
    run_id = json.loads((traced.root / "out" / "results.json").read_text())["run"]["run_id"]
    assert f"eval otel: {len(collector.spans)} spans sent to {collector.endpoint}/v1/traces" in text
    roots = sorted(
        (s for s in case_spans(collector) if s["parent_span_id"] is None), key=lambda s: s["name"]
    )
    assert [s["name"] for s in roots] == [
        "eval suite::alpha",
        "eval suite::gamma",
        "eval suite::miss",
    ]
    assert len(case_spans(collector)) == 9  # each case: itself, its system run, one verdict
    logged = {
        line.split()[1]: line.split()[2:] for line in traced.calls() if line.startswith("span ")
    }
    for root in roots:
        case_id = root["name"].split("::")[1]
        assert root["attributes"]["evalcases.run_id"] == run_id
        assert root["attributes"]["evalcases.suite"] == "suite"
        assert root["attributes"]["evalcases.case.id"] == case_id
        assert root["resource"]["service.name"] == "pytest-evalcases"
        judge, system = children(collector, root)  # sorted by name
        assert system["name"] == "invoke_agent suite" and system["trace_id"] == root["trace_id"]
        assert judge["name"] == "evaluate answer_accuracy"
        for child in (system, judge):  # children lie within the case's span
            assert root["start"] <= child["start"] <= child["end"] <= root["end"]
            assert child["attributes"]["evalcases.run_id"] == run_id
        # the system ran with our span current: its own spans would nest under it
        assert logged[case_id] == [system["trace_id"], system["span_id"]]
        attrs = system["attributes"]
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["gen_ai.agent.name"] == "otelsys:system"
        assert attrs["gen_ai.request.model"] == "echo-1-mini"
        assert attrs["gen_ai.usage.input_tokens"] == 2
        assert attrs["gen_ai.usage.output_tokens"] == 1
        assert attrs["evalcases.latency_ms"] == 1.0
        verdict = judge["attributes"]
        assert verdict["gen_ai.evaluation.name"] == verdict["evalcases.stage"] == "answer_accuracy"
        assert verdict["gen_ai.evaluation.score.value"] == verdict["evalcases.score"] == 1.0
        assert verdict["gen_ai.evaluation.score.label"] == "CORRECT"
        assert verdict["gen_ai.provider.name"] == "lexical"
        assert "gen_ai.request.model" not in verdict  # the lexical judge calls no model
    spans = {root["name"]: root for root in roots}
    ok, missed = spans["eval suite::alpha"]["attributes"], spans["eval suite::miss"]["attributes"]
    assert ok["evalcases.outcome"] == "passed" and ok["evalcases.case.category"] == "storage"
    assert ok["evalcases.stage.retrieval.score"] == 1.0
    assert ok["evalcases.stage.answer_accuracy.passed"] is True
    assert missed["evalcases.outcome"] == "failed"
    assert missed["evalcases.first_failure.stage"] == "retrieval"
    assert missed["evalcases.stage.retrieval.passed"] is False


def test_xdist_workers_tag_their_spans_with_the_run_id(
    traced: Project,
    collector: Collector,
) -> None:
    result = run_env(traced, collector, "--live", "--eval-otel", "--eval-report", "out", "-n", "2")

    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    run_id = json.loads((traced.root / "out" / "results.json").read_text())["run"]["run_id"]
    roots = [s for s in case_spans(collector) if s["parent_span_id"] is None]
    assert sorted(s["name"] for s in roots) == [
        "eval suite::alpha",
        "eval suite::gamma",
        "eval suite::miss",
    ]
    assert {s["attributes"]["evalcases.run_id"] for s in collector.spans} == {run_id}
    assert len(case_spans(collector)) == 9
    # the workers' counts, summed on the controller
    sent = len(collector.spans)  # the cases' and each process's phases
    assert f"eval otel: {sent} spans sent to {collector.endpoint}/v1/traces" in output(result)


def test_a_replay_sends_nothing_and_imports_no_opentelemetry(
    traced: Project,
    collector: Collector,
) -> None:
    assert run_env(traced, collector, "--live").ret == pytest.ExitCode.TESTS_FAILED
    assert collector.spans == []  # off by default, even in a live run

    probe = (
        "import sys, pytest\n"
        "code = pytest.main(sys.argv[1:])\n"
        "print('OTEL', sorted({m for m in sys.modules if m.startswith('opentelemetry')}))\n"
        "raise SystemExit(int(code))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OTEL_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    proc = subprocess.run(
        [sys.executable, "-c", probe, "-p", "no:cacheprovider", "--eval-otel"],
        cwd=traced.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout + proc.stderr
    assert "1 failed, 2 passed" in proc.stdout
    assert "OTEL []" in proc.stdout, proc.stdout
    assert "eval otel: a replay sends no spans" in proc.stdout
    assert collector.spans == [] and collector.requests == 0


def test_a_model_judge_request_is_a_chat_span_with_its_tokens(
    traced: Project,
    collector: Collector,
) -> None:
    traced.edit_suite("cases/suite.json", lambda doc: doc.pop("judge"))
    server = JudgeServer().start()
    try:
        result = run_live_openai(
            traced,
            server.base_url,
            "--eval-otel",
            "-k",
            "alpha",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        )
    finally:
        server.stop()

    assert result.ret == 0, output(result)
    spans = by_name(collector)
    assert set(spans) == {"eval suite::alpha", "invoke_agent suite", "chat gpt-4o-mini"}
    chat = spans["chat gpt-4o-mini"]
    assert chat["parent_span_id"] == spans["eval suite::alpha"]["span_id"]
    attrs = chat["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
    assert attrs["evalcases.judge.calls"] >= 1
    assert attrs["gen_ai.evaluation.name"] == "answer_accuracy"
    assert attrs["gen_ai.evaluation.score.value"] == 1.0


def test_without_the_otel_extra_a_live_run_stops_before_it_starts(
    traced: Project,
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "blocked"
    (blocked / "opentelemetry").mkdir(parents=True)
    (blocked / "opentelemetry" / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OTEL_"))}
    # The blocking package first, then whatever made this checkout's plugin importable.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocked), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--live", "--eval-otel"],
        cwd=traced.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert 'pip install "pytest-evalcases[otel]"' in proc.stderr
    assert traced.calls() == []  # nothing ran
