"""The run's phases in the OpenTelemetry export (issue 32 part 9, Episteme's lifecycle events):
each exporting process sends an `eval run` span whose children are the phases it ran
(collection, ingestion with a span per user, the live batch, judging, reporting), each with a
started and a completed event, tagged with the run id, the corpus (suite), and the language and
prompt version of the authored input manifest. Against the loopback OTLP collector."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from evalhelpers import Project, make_case, output, suite_doc
from otlp_collector import Collector

from .test_otel import run_env as otel_run

# A memory system: setup_user remembers the user's file in the process; run answers from it.
MEMORY_SYSTEM = """\
from pathlib import Path

from mysys import behaviour, log, trace_for

MEMORY = {}


class Memory:
    def fingerprint(self):
        return {"model": "echo-1"}

    def setup_user(self, user):
        if user.id in behaviour().get("setup_raises", []):
            raise RuntimeError(f"the graph build of {user.id} failed")
        MEMORY[user.id] = Path(user.history).read_text()
        log(f"ingest {user.id} {user.run_config['language']}")
        return {"memory_id": f"mem-{user.id}"}

    def user_ready(self, user, result):
        return user.id in MEMORY

    def run(self, case):
        log(f"run {case['id']} {case.run_config['language']}")
        return trace_for(case)


system = Memory()
"""

AUTHORED = {"name": "memory-q4", "language": "de", "prompt_versions": {"answer_prompt": "v2"}}
PHASES = ["collection", "ingestion", "live_batch", "judging", "reporting"]


@pytest.fixture
def collector() -> Iterator[Collector]:
    running = Collector().start()
    yield running
    running.stop()


@pytest.fixture
def memory(project: Project) -> Project:
    project.write_text("memsys.py", MEMORY_SYSTEM)
    project.write_text("data/ana.txt", "alpha beta\n")
    project.write_text("data/bo.txt", "gamma delta\n")
    project.write_text("evalcases.manifest.json", json.dumps(AUTHORED))
    cases = [
        make_case("ana-1", "alpha beta", user="u-ana", category="single_hop"),
        make_case("bo-1", "gamma delta", user="u-bo", category="single_hop"),
    ]
    project.write_suite(
        suite_doc(
            "memory",
            cases=cases,
            system="memsys:system",
            judge="lexical",
            stages=["tools", "answer_accuracy"],
            users=[
                {"id": "u-ana", "history": "data/ana.txt"},
                {"id": "u-bo", "history": "data/bo.txt"},
            ],
        )
    )
    return project


def run_env(project: Project, collector: Collector, *args: str) -> pytest.RunResult:
    manifest = ("--eval-input-manifest", "evalcases.manifest.json", "--eval-report", "out")
    return otel_run(project, collector, "--live", "--eval-otel", *manifest, *args)


def run_spans(collector: Collector) -> list[dict]:
    return [s for s in collector.spans if s["name"] == "eval run"]


def children(collector: Collector, parent: dict) -> list[dict]:
    return sorted(
        (s for s in collector.spans if s["parent_span_id"] == parent["span_id"]),
        key=lambda s: (s["start"], s["name"]),
    )


def test_a_live_run_sends_its_phases_with_events_and_the_manifests_tags(
    memory: Project, collector: Collector
) -> None:
    result = run_env(memory, collector)

    assert result.ret == 0, output(result)
    # the authored manifest's values reached setup_user and run, and key the ingestion
    assert sorted(memory.calls()) == [
        "ingest u-ana de",
        "ingest u-bo de",
        "run ana-1 de",
        "run bo-1 de",
    ]
    ingestion = json.loads((memory.root / "cassettes/memory/users/u-ana.json").read_text())
    assert "run_config.language" in ingestion["key"]
    run_id = json.loads((memory.root / "out/results.json").read_text())["run"]["run_id"]
    (run,) = run_spans(collector)
    assert run["parent_span_id"] is None
    tags = {
        "evalcases.run_id": run_id,
        "evalcases.corpus": "memory",
        "evalcases.language": "de",
        "evalcases.prompt_version": "v2",
        "evalcases.prompt_version.answer_prompt": "v2",
        "evalcases.manifest.name": "memory-q4",
        "evalcases.process": "main",
    }
    assert tags.items() <= run["attributes"].items()
    phases = {span["attributes"]["evalcases.phase"]: span for span in children(collector, run)}
    assert sorted(phases) == sorted(PHASES)
    assert phases["collection"]["end"] <= phases["live_batch"]["start"]
    assert phases["live_batch"]["end"] <= phases["reporting"]["start"]
    components = {
        "collection": "collector",
        "ingestion": "ingestor",
        "live_batch": "system",
        "judging": "judge",
        "reporting": "reporter",
    }
    for name, span in phases.items():
        assert span["name"] == f"phase {name}"
        assert span["events"] == ["phase.started", "phase.completed"]
        assert span["attributes"]["evalcases.component"] == components[name]
        assert tags.items() <= span["attributes"].items(), name
        assert span["status"] == 0  # nothing failed
        assert run["start"] <= span["start"] <= span["end"] <= run["end"]
    users = children(collector, phases["ingestion"])
    assert sorted(span["name"] for span in users) == [
        "ingestor memory/u-ana",
        "ingestor memory/u-bo",
    ]
    for span in users:
        assert span["events"] == ["component.started", "component.completed"]
        assert span["attributes"]["evalcases.user"] in ("u-ana", "u-bo")
        assert span["attributes"]["evalcases.ingestion.source"] == "recorded"
        assert span["attributes"]["evalcases.corpus"] == "memory"
        assert phases["ingestion"]["start"] <= span["start"] <= span["end"]
    # the case spans carry the manifest's tags too
    cases = [s for s in collector.spans if s["name"].startswith("eval memory::")]
    assert len(cases) == 2
    assert all(s["attributes"]["evalcases.language"] == "de" for s in cases)
    assert f"eval otel: {len(collector.spans)} spans sent" in output(result)


def test_a_failed_ingestion_marks_its_component_and_its_phase(
    memory: Project, collector: Collector
) -> None:
    memory.steer(setup_raises=["u-bo"])

    result = run_env(memory, collector, "-k", "bo")

    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    (run,) = run_spans(collector)
    phases = {span["attributes"]["evalcases.phase"]: span for span in children(collector, run)}
    assert "judging" not in phases  # no case reached its judge
    (user,) = children(collector, phases["ingestion"])
    assert user["name"] == "ingestor memory/u-bo"
    assert user["status"] == 2 and phases["ingestion"]["status"] == 2
    assert phases["reporting"]["status"] == 0


def test_each_xdist_process_sends_the_phases_it_ran(memory: Project, collector: Collector) -> None:
    result = run_env(memory, collector, "-n", "2")

    assert result.ret == 0, output(result)
    run_id = json.loads((memory.root / "out/results.json").read_text())["run"]["run_id"]
    runs = {span["attributes"]["evalcases.process"]: span for span in run_spans(collector)}
    assert "controller" in runs and set(runs) <= {"controller", "gw0", "gw1"}
    assert {span["attributes"]["evalcases.run_id"] for span in runs.values()} == {run_id}
    seen = {
        process: sorted(s["attributes"]["evalcases.phase"] for s in children(collector, span))
        for process, span in runs.items()
    }
    assert "reporting" in seen.pop("controller")  # the controller reports
    for phases in seen.values():  # a worker collects, ingests its users, runs and judges
        assert {"collection", "ingestion", "live_batch", "judging"} <= set(phases)
        assert "reporting" not in phases


def test_an_ingest_only_run_sends_its_ingestion_phase(
    memory: Project, collector: Collector
) -> None:
    result = run_env(memory, collector, "--eval-ingest-only")

    assert result.ret == 0, output(result)
    (run,) = run_spans(collector)
    phases = {span["attributes"]["evalcases.phase"]: span for span in children(collector, run)}
    assert sorted(phases) == ["collection", "ingestion", "reporting"]  # no case ran
    users = children(collector, phases["ingestion"])
    assert sorted(span["attributes"]["evalcases.user"] for span in users) == ["u-ana", "u-bo"]
