"""The suite's shared documents as a recorded phase of their own (issue 32, part 1): Zep ingests
the user graphs and one shared document graph apart, keeps the variants of each, and evaluates a
pair. Here a suite's `"documents"` are ingested once for all its cases by
`setup_documents(documents)`, recorded under `<suite>/documents/ingestion.json` (and
`.http.json`) like a user's ingestion: reused when current, replayed offline by --replay-http,
ingested alone by --eval-ingest-only, kept per variant of their own settings; and every case's
key holds the files, the settings and the recorded ingestion it ran on, apart from its user's.

The system is Zep-like: its document graph and user graphs live in a "service" (files under
service/, kept between runs), each named by its settings, built by a loopback model that
extracts each chunk's facts over HTTP.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import Project, output
from fact_model import FactModel

from pytest_evalcases.cli import main
from pytest_evalcases.store.user_recordings import variant_of

SERVICE_SYSTEM = '''\
"""A memory service with a shared document graph and a graph per user."""
import hashlib
import json
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SERVICE = ROOT / "service"


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


def plan():
    return json.loads((ROOT / "plan.json").read_text())


def extract(text):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(
        (ROOT / "model_url.txt").read_text() + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["choices"][0]["message"]["content"]


def named(prefix, settings):
    text = json.dumps(settings, sort_keys=True)
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


class Service:
    def __init__(self):
        self.graphs = {}

    def setup(self, suite):
        log(f"setup {suite.name}")

    def setup_documents(self, documents):
        settings = documents.ingestion or {}
        log(f"setup_documents {json.dumps(settings, sort_keys=True)}")
        if plan().get("documents_fail"):
            raise RuntimeError("the document store is down")
        flaky = ROOT / "flaky.txt"  # ConnectionErrors left before the store answers
        if flaky.is_file() and int(flaky.read_text()) > 0:
            flaky.write_text(str(int(flaky.read_text()) - 1))
            raise ConnectionError("connection reset by the document store")
        lines = [
            line for path in documents.files for line in path.read_text().splitlines() if line
        ]
        size = settings.get("lines_per_chunk", 1)
        chunks = [" ".join(lines[i:i + size]) for i in range(0, len(lines), size)]
        facts = [extract(chunk) for chunk in chunks]
        graph = named("docs", settings)
        SERVICE.mkdir(exist_ok=True)
        (SERVICE / graph).write_text(json.dumps(facts))
        self.graphs["documents"] = graph
        return {"graph_id": graph, "chunks": len(chunks)}

    def documents_ready(self, documents, result):
        log("documents_ready")
        found = (SERVICE / result["graph_id"]).is_file() and not plan().get("service_reset")
        if found:
            self.graphs["documents"] = result["graph_id"]
        return found

    def setup_user(self, user):
        log(f"setup_user {user.id}")
        graph = named(user.id, user.ingestion or {})
        SERVICE.mkdir(exist_ok=True)
        (SERVICE / graph).write_text(user.chats.read_text())
        self.graphs[user.id] = graph
        return {"graph_id": graph}

    def user_ready(self, user, result):
        log(f"user_ready {user.id}")
        found = (SERVICE / result["graph_id"]).is_file() and not plan().get("service_reset")
        if found:
            self.graphs[user.id] = result["graph_id"]
        return found

    def run(self, case):
        log(f"run {case['id']}")
        facts = []
        if case.get("user"):
            facts += json.loads((SERVICE / self.graphs[case["user"]]).read_text())
        facts += json.loads((SERVICE / self.graphs["documents"]).read_text())
        words = case["input"].split()
        hit = [fact for fact in facts if any(word in fact for word in words)]
        return {"answer": hit[0] if hit else "I don't know.", "context": hit}


system = Service()
'''


def zep_suite(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "zep",
        "system": "zepsys:system",
        "judge": "lexical",
        "stages": ["answer_accuracy"],
        "documents": {"files": ["data/docs/policies.md", "data/docs/pricing.md"]},
        "users": [
            {"id": "u-ana", "chats": "data/ana/chats.json"},
            {"id": "u-bo", "chats": "data/bo/chats.json"},
        ],
        "cases": [
            {
                "id": "ana-plan",
                "input": "plan",
                "user": "u-ana",
                "reference": "Ana is on the team plan.",
            },
            {
                "id": "bo-refund",
                "input": "Refunds",
                "user": "u-bo",
                "reference": "Refunds are paid within 14 days.",
            },
            # a case of no user runs on the documents alone
            {"id": "price", "input": "costs", "reference": "The team plan costs 20 euros."},
        ],
    }
    doc.update(fields)
    return doc


def write_zep_project(project: Project, model: FactModel, **suite_fields: Any) -> Project:
    project.write_text("zepsys.py", SERVICE_SYSTEM)
    project.write_text("model_url.txt", model.url)
    plan(project)
    project.write_text(
        "data/docs/policies.md", "Refunds are paid within 14 days.\nSupport answers in a day.\n"
    )
    project.write_text("data/docs/pricing.md", "The team plan costs 20 euros.\n")
    project.write_text("data/ana/chats.json", json.dumps(["Ana is on the team plan."]))
    project.write_text("data/bo/chats.json", json.dumps(["Bo asked about prices."]))
    project.write_suite(zep_suite(**suite_fields))
    return project


def plan(project: Project, **fields: Any) -> None:
    project.write_text("plan.json", json.dumps(fields))


def documents_doc(project: Project, variant: str | None = None) -> dict[str, Any]:
    folder = project.root / "cassettes/zep/documents"
    if variant is not None:
        folder = folder / "variants" / variant
    return json.loads((folder / "ingestion.json").read_text())


def results(project: Project) -> dict[str, Any]:
    return json.loads((project.root / "r" / "results.json").read_text())


@pytest.fixture
def zep(project: Project, model: FactModel) -> Project:
    write_zep_project(project, model)
    project.run("--live").assert_outcomes(passed=3)
    return project


def test_live_ingests_the_documents_once_for_all_cases_and_records_them_apart(
    zep: Project, model: FactModel
) -> None:
    calls = zep.calls()
    assert calls.count("setup_documents {}") == 1
    # the documents before any user and any case
    assert calls.index("setup_documents {}") < calls.index("setup_user u-ana")
    assert calls.index("setup_documents {}") < min(
        i for i, call in enumerate(calls) if call.startswith("run ")
    )
    doc = documents_doc(zep)
    assert doc["user"] == "documents"
    assert doc["result"] == {"graph_id": "docs-44136f", "chunks": 3}
    assert doc["requests"] == 3 and model.requests == 3  # one extraction a chunk
    assert doc["usage"]["total_tokens"] == 30
    # its key: the documents' files, the system, its code; not a user's files or a case's
    assert {"documents.files", "system", "format"} <= set(doc["key"])
    assert not any(name.startswith(("user.", "ingestion.", "case")) for name in doc["key"])
    exchanges = json.loads((zep.root / "cassettes/zep/documents/ingestion.http.json").read_text())[
        "interactions"
    ]
    assert len(exchanges) == 3
    # a user's recording does not depend on the documents: they are ingested apart
    ana = json.loads((zep.root / "cassettes/zep/users/u-ana.json").read_text())
    assert not any(name.startswith("documents.") for name in ana["key"])
    # every case's key holds the documents' files and the ingestion it ran on
    for case in ("ana-plan", "bo-refund", "price"):
        key = zep.cassette("zep", case)["key"]
        assert key["documents.files"] == doc["key"]["documents.files"]
        assert "documents.ingested" in key
    assert "ingested.u-ana" in zep.cassette("zep", "ana-plan")["key"]
    assert not any(k.startswith("ingested.") for k in zep.cassette("zep", "price")["key"])


def test_replay_reads_the_documents_recording_and_reports_it_beside_the_users(
    zep: Project,
) -> None:
    zep.clear_calls()

    replay = zep.run("--eval-report", "r")

    replay.assert_outcomes(passed=3)
    assert zep.calls() == []  # no system, no ingestion
    rows = {row["user"]: row for row in results(zep)["ingestion"]["users"]}
    assert set(rows) == {"documents", "u-ana", "u-bo"}
    assert rows["documents"]["source"] == "replayed"
    assert rows["documents"]["requests"] == 3
    price = next(case for case in results(zep)["cases"] if case["id"] == "price")
    assert price["documents_ingestion"]["source"] == "replayed"
    assert "ingestion" not in price  # no user: no user's ingestion


def test_an_edited_document_stales_every_case_naming_the_file_and_live_stale_reingests_it(
    zep: Project, model: FactModel
) -> None:
    zep.write_text("data/docs/pricing.md", "The team plan costs 25 euros.\n")

    replay = zep.run()

    replay.assert_outcomes(errors=3)
    text = output(replay)
    assert "stale recording: documents.files changed (data/docs/pricing.md@" in text
    assert "data/docs/policies.md@" not in text.split("documents.files changed")[1].split("\n")[0]

    zep.clear_calls()
    sent = model.requests
    zep.run("--live-stale").assert_outcomes(passed=3)
    assert zep.cassette("zep", "price")["trace"]["answer"] == "The team plan costs 25 euros."
    calls = zep.calls()
    assert calls.count("setup_documents {}") == 1
    assert not any(call.startswith("setup_user") for call in calls)  # the users are current
    assert model.requests == sent + 3
    assert documents_doc(zep)["result"]["chunks"] == 3


def test_live_stale_reuses_current_documents_and_live_asks_documents_ready(
    zep: Project, model: FactModel
) -> None:
    sent = model.requests
    zep.clear_calls()
    zep.write_text("data/ana/chats.json", json.dumps(["Ana is on the solo plan."]))

    zep.run("--live-stale").assert_outcomes(passed=2, failed=1)

    calls = zep.calls()
    assert "setup_user u-ana" in calls  # Ana's data changed
    assert not any(call.startswith("setup_documents") for call in calls)  # documents current
    assert "documents_ready" in calls  # asked whether the document graph is still there
    assert model.requests == sent

    zep.clear_calls()
    plan(zep, service_reset=True)  # the service lost its graphs: documents_ready says so
    zep.run("--live").assert_outcomes(passed=2, failed=1)
    assert zep.calls().count("setup_documents {}") == 1
    assert model.requests == sent + 3


def test_replay_http_runs_setup_documents_offline_from_its_recording(
    zep: Project, model: FactModel
) -> None:
    sent = model.requests
    zep.clear_calls()

    offline = zep.run("--replay-http", "--eval-report", "r")

    offline.assert_outcomes(passed=3)
    assert model.requests == sent  # served from documents/ingestion.http.json
    assert zep.calls().count("setup_documents {}") == 1
    rows = {row["user"]: row for row in results(zep)["ingestion"]["users"]}
    assert rows["documents"]["source"] == "replayed_http"

    (zep.root / "cassettes/zep/documents/ingestion.http.json").unlink()
    (zep.root / "cassettes/zep/documents/ingestion.json").unlink()
    missing = zep.run("--replay-http")
    missing.assert_outcomes(errors=3)
    assert (
        "no ingestion recording of the documents (cassettes/zep/documents/ingestion.json): the "
        "suite's cases run on the ingestion it holds; record it with --eval-ingest-only --live"
        in output(missing)
    )


def test_a_failing_setup_documents_errors_every_case_and_keeps_their_recordings(
    zep: Project,
) -> None:
    before = zep.files()
    plan(zep, documents_fail=True, service_reset=True)

    live = zep.run("--live")

    live.assert_outcomes(errors=3)
    assert (
        "setup_documents(documents) of suite 'zep' raised RuntimeError: the document store is "
        "down; none of the suite's cases can be recorded until it succeeds" in output(live)
    )
    assert zep.files() == before


def test_eval_ingest_only_ingests_the_documents_first_then_the_users(
    project: Project, model: FactModel
) -> None:
    write_zep_project(project, model)

    first = project.run("--eval-ingest-only")

    text = output(first)
    assert "ingesting 2 users and the documents (--eval-ingest-only)" in text
    assert "  zep::documents: recorded in " in text and "(3 requests, 30 tokens)" in text
    assert text.index("zep::documents:") < text.index("zep::u-ana:")
    assert project.calls()[1] == "setup_documents {}"
    project.clear_calls()

    project.run("--live-stale").assert_outcomes(passed=3)  # on the ingestions recorded apart
    assert not any(call.startswith(("setup_documents", "setup_user")) for call in project.calls())

    again = project.run("--eval-ingest-only")
    assert "  zep::documents: reused: its recording is current" in output(again)


def test_document_variants_are_kept_side_by_side_and_switching_back_reuses_one(
    project: Project, model: FactModel
) -> None:
    one = {"lines_per_chunk": 1}
    two = {"lines_per_chunk": 2}
    write_zep_project(
        project, model, documents={"files": ["data/docs/policies.md"], "ingestion": one}
    )
    project.run("--live").assert_outcomes(passed=2, failed=1)  # no price document here
    first = documents_doc(project)
    assert first["ingestion"] == one and first["result"]["chunks"] == 2

    project.edit_suite(
        "cases/zep.json",
        lambda doc: doc["documents"].update(ingestion=two),
    )
    stale = project.run()
    assert "documents.ingestion.lines_per_chunk changed (1 -> 2)" in output(stale)
    project.run("--live-stale").assert_outcomes(passed=2, failed=1)
    assert documents_doc(project)["result"]["chunks"] == 1
    kept = documents_doc(project, variant_of(first["key"]))
    assert kept["result"] == first["result"]  # moved aside, whole

    project.edit_suite("cases/zep.json", lambda doc: doc["documents"].update(ingestion=one))
    project.clear_calls()
    sent = model.requests
    project.run("--live-stale").assert_outcomes(passed=2, failed=1)
    calls = project.calls()
    assert not any(call.startswith("setup_documents") for call in calls)  # the kept one
    assert "documents_ready" in calls and model.requests == sent
    # the users' recordings hold no document variant: they were not ingested again
    assert not any(call.startswith("setup_user") for call in calls)


def test_documents_files_must_exist_and_a_user_may_not_be_named_documents(
    project: Project, model: FactModel
) -> None:
    write_zep_project(project, model)
    (project.root / "data/docs/pricing.md").unlink()

    missing = project.run()

    text = output(missing)
    assert "documents, field 'files': input file 'data/docs/pricing.md' cannot be read" in text

    project.write_text("data/docs/pricing.md", "The team plan costs 20 euros.\n")
    project.edit_suite(
        "cases/zep.json",
        lambda doc: doc["users"].append({"id": "documents", "chats": "data/bo/chats.json"}),
    )
    clash = project.run()
    assert "user id 'documents' is the name of a phase of the suite's shared documents" in output(
        clash
    )


def test_a_kept_documents_recording_is_an_orphan_only_once_the_suite_drops_its_documents(
    zep: Project,
) -> None:
    assert main(["scan", "cassettes"]) == 0  # the documents' recordings hold no secret
    kept = output(zep.run("--live-prune"))
    assert "deleted 0 orphaned recordings" in kept
    assert (zep.root / "cassettes/zep/documents/ingestion.json").is_file()

    def drop(doc: dict[str, Any]) -> None:
        del doc["documents"]

    zep.edit_suite("cases/zep.json", drop)
    pruned = output(zep.run("--live-prune"))
    assert "cassettes/zep/documents/ingestion.json" in pruned
    assert not (zep.root / "cassettes/zep/documents/ingestion.json").exists()
    assert not (zep.root / "cassettes/zep/documents/ingestion.http.json").exists()


def test_eval_documents_pairs_the_cases_with_a_kept_documents_variant(
    project: Project, model: FactModel
) -> None:
    one = {"lines_per_chunk": 1}
    two = {"lines_per_chunk": 2}
    write_zep_project(
        project, model, documents={"files": ["data/docs/policies.md"], "ingestion": two}
    )
    project.run("--live").assert_outcomes(passed=2, failed=1)
    variant_two = variant_of(documents_doc(project)["key"])
    project.edit_suite("cases/zep.json", lambda doc: doc["documents"].update(ingestion=one))
    project.run("--live-stale").assert_outcomes(passed=2, failed=1)

    assert main(["ingestions", "zep", "--cassettes", "cassettes"]) == 0
    listed = main(["ingestions", "zep", "--cassettes", "cassettes", "--json"])
    assert listed == 0

    project.clear_calls()
    sent = model.requests
    paired = project.run("--live-stale", "--eval-documents", variant_two)
    paired.assert_outcomes(passed=2, failed=1)
    calls = project.calls()
    assert not any(call.startswith("setup_documents") for call in calls)  # the kept variant
    assert "documents_ready" in calls and model.requests == sent
    assert project.cassette("zep", "price")["key"]["documents.ingestion.lines_per_chunk"]
    project.run("--eval-documents", variant_two).assert_outcomes(passed=2, failed=1)
    project.run().assert_outcomes(errors=3)  # the suite's own variant: recorded on the other

    unknown = project.run("--eval-documents", "0123abcd")
    assert (
        "--eval-documents 0123abcd: no document ingestion recording of suite 'zep' holds variant "
        "0123abcd" in output(unknown)
    )


def test_ingestions_lists_the_documents_recordings_and_their_variants_apart(
    zep: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingestions", "zep", "--cassettes", "cassettes"]) == 0

    text = capsys.readouterr().out
    assert "zep: 3 ingestion recordings of 2 users and the documents, 1 variant (documents: 1)" in (
        text
    )
    variant = variant_of(documents_doc(zep)["key"])
    assert f"documents variant {variant}: (no ingestion settings)" in text
    assert f"documents  {variant}" in text and "documents/ingestion.json (last recorded)" in text


def test_a_transient_error_of_setup_documents_is_retried_and_counted(
    project: Project, model: FactModel
) -> None:
    write_zep_project(project, model, system_retries={"backoff": 0.01})
    project.write_text("flaky.txt", "2")

    live = project.run("--live")

    live.assert_outcomes(passed=3)
    assert project.calls().count("setup_documents {}") == 3  # two resets, then the ingestion
    assert "zep::documents (ingestion) 2" in output(live)
    # and in the recording changes, under the documents' recording
    changes = output(live).split("recording changes")[1]
    assert "zep::documents (ingestion new)\n  ingestion retried 2 times" in changes
    assert documents_doc(project)["requests"] == 3  # the failed attempts' exchanges dropped


# Zep chunks and contextualises the documents once (the expensive part: a model call a chunk),
# then builds the document graph from that chunk set, once per graph variant.
PREPARING_SYSTEM = SERVICE_SYSTEM.replace(
    "system = Service()",
    """
class Preparing(Service):
    def prepare_documents(self, documents):
        settings = documents.ingestion or {}
        log(f"prepare_documents {json.dumps(settings, sort_keys=True)}")
        lines = [
            line for path in documents.files for line in path.read_text().splitlines() if line
        ]
        size = settings.get("lines_per_chunk", 1)
        chunks = [" ".join(lines[i:i + size]) for i in range(0, len(lines), size)]
        chunk_set = named("chunks", settings)
        SERVICE.mkdir(exist_ok=True)
        (SERVICE / chunk_set).write_text(json.dumps([extract(chunk) for chunk in chunks]))
        return {"chunk_set": chunk_set, "chunks": len(chunks)}

    def documents_prepared(self, documents, result):
        log("documents_prepared")
        return (SERVICE / result["chunk_set"]).is_file() and not plan().get("service_reset")

    def setup_documents(self, documents):
        settings = documents.ingestion or {}
        log(f"setup_documents {json.dumps(settings, sort_keys=True)} on {documents.prepared}")
        chunks = json.loads((SERVICE / documents.prepared["chunk_set"]).read_text())
        graph = named("docs", {**settings, **documents.prepared})
        (SERVICE / graph).write_text(json.dumps(chunks))
        self.graphs["documents"] = graph
        return {"graph_id": graph, "ontology": settings.get("ontology")}


system = Preparing()
""",
)


def preparing_project(project: Project, model: FactModel) -> Project:
    write_zep_project(
        project,
        model,
        documents={
            "files": ["data/docs/policies.md", "data/docs/pricing.md"],
            "preparation": {"lines_per_chunk": 1},
            "ingestion": {"ontology": "plans, prices"},
        },
    )
    project.write_text("zepsys.py", PREPARING_SYSTEM)
    return project


def preparation_doc(project: Project) -> dict[str, Any]:
    return json.loads((project.root / "cassettes/zep/documents/preparation.json").read_text())


def test_the_documents_preparation_is_a_recorded_phase_their_ingestion_reads(
    project: Project, model: FactModel
) -> None:
    preparing_project(project, model)

    live = project.run("--live", "--eval-report", "r")

    live.assert_outcomes(passed=3)
    calls = project.calls()
    prepare = 'prepare_documents {"lines_per_chunk": 1}'
    assert calls.count(prepare) == 1
    prepared = preparation_doc(project)
    chunk_set = prepared["result"]["chunk_set"]
    assert prepared["result"] == {"chunk_set": chunk_set, "chunks": 3}
    # setup_documents reads the preparation's result (documents.prepared), after it
    setup = f'setup_documents {{"ontology": "plans, prices"}} on {prepared["result"]}'
    assert calls.index(prepare) < calls.index(setup)
    assert prepared["phase"] == "preparation" and prepared["requests"] == 3 == model.requests
    assert "documents.preparation.lines_per_chunk" in prepared["key"]
    assert not any(name.startswith("documents.ingestion.") for name in prepared["key"])
    ingested = documents_doc(project)
    assert ingested["requests"] == 0  # the graph is built from the chunk set, no model call
    assert "documents.prepared" in ingested["key"]  # which preparation it read
    key = project.cassette("zep", "price")["key"]
    assert {"documents.prepared", "documents.ingested"} <= set(key)
    rows = {row["user"]: row for row in results(project)["ingestion"]["users"]}
    assert (
        rows["preparation"]["requests"] == 3 and rows["preparation"]["documents"] == "preparation"
    )
    assert "ingestion: 2 users and the documents: 4 recorded" in output(live)


def test_a_new_graph_variant_reuses_the_chunk_set_and_a_new_chunking_redoes_both(
    project: Project, model: FactModel, capsys: pytest.CaptureFixture[str]
) -> None:
    preparing_project(project, model).run("--live").assert_outcomes(passed=3)
    sent = model.requests
    project.clear_calls()

    def ontology(doc: dict[str, Any]) -> None:
        doc["documents"]["ingestion"] = {"ontology": "plans, prices, refunds"}

    project.edit_suite("cases/zep.json", ontology)
    project.run("--live-stale").assert_outcomes(passed=3)

    calls = project.calls()
    assert not any(call.startswith("prepare_documents") for call in calls)  # reused
    assert "documents_prepared" in calls
    assert any(
        call.startswith('setup_documents {"ontology": "plans, prices, refunds"}') for call in calls
    )
    assert model.requests == sent  # the chunk set's model calls were not paid again

    def chunking(doc: dict[str, Any]) -> None:
        doc["documents"]["preparation"] = {"lines_per_chunk": 2}

    project.edit_suite("cases/zep.json", chunking)
    stale = project.run()
    assert "documents.preparation.lines_per_chunk changed (1 -> 2)" in output(stale)
    project.clear_calls()
    project.run("--live-stale").assert_outcomes(passed=3)
    calls = project.calls()
    assert 'prepare_documents {"lines_per_chunk": 2}' in calls
    assert any(call.startswith("setup_documents") for call in calls)  # on the new chunk set
    assert model.requests == sent + 2  # two chunks of two lines and one
    # the earlier chunk set is kept beside it, as a variant of the preparation
    kept = list((project.root / "cassettes/zep/documents/variants").glob("*/preparation.json"))
    assert len(kept) == 1
    capsys.readouterr()
    assert main(["ingestions", "zep", "--cassettes", "cassettes"]) == 0
    listed = capsys.readouterr().out
    assert f"preparation variant {kept[0].parent.name}: lines_per_chunk=1" in listed
    assert "preparation variant" in listed and "lines_per_chunk=2" in listed
    assert "documents variant" in listed and 'ontology="plans, prices, refunds"' in listed


def test_replay_http_and_ingest_only_run_the_preparation_first(
    project: Project, model: FactModel
) -> None:
    preparing_project(project, model)

    first = project.run("--eval-ingest-only")

    text = output(first)
    assert "ingesting 2 users and the documents (--eval-ingest-only)" in text
    assert text.index("zep::documents (preparation): recorded in") < text.index(
        "zep::documents: recorded in"
    )
    project.run("--live-stale").assert_outcomes(passed=3)
    sent = model.requests
    project.clear_calls()

    offline = project.run("--replay-http")

    offline.assert_outcomes(passed=3)
    assert model.requests == sent
    calls = project.calls()
    assert calls.index('prepare_documents {"lines_per_chunk": 1}') < next(
        i for i, call in enumerate(calls) if call.startswith("setup_documents")
    )
