"""Ingestion as a recorded phase (issue 23, parts 1 and 2), end to end, with a memory agent whose
`setup_user` calls a loopback model over HTTP to extract each chat's facts:

- `--live` records each user's ingestion (`users/<id>.json`: key, result, duration, requests,
  tokens, cost; `users/<id>.http.json`: its exchanges), and `--replay-http` replays it offline;
- `--live-stale` reuses a current ingestion, `--live` ingests again unless `user_ready` says the
  state is still there;
- `--eval-ingest-only` ingests alone, user by user, and resumes where it stopped;
- a changed `ingestion` setting stales exactly the users' cases, named.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import Project, output
from fact_model import FactModel

from .test_users import users_suite, write_memory_project

# Each chat line is sent to the model, which answers with its facts; the memory holds them in
# a file per user (as a memory service keeps them: a later run may reuse them).
EXTRACTING_SYSTEM = """\
import json
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


def extract(text):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(
        (ROOT / "model_url.txt").read_text() + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["choices"][0]["message"]["content"]


class Memory:
    def setup(self, suite):
        log(f"setup {suite.name}")

    def setup_user(self, user):
        log(f"setup_user {user.id}")
        plan = json.loads((ROOT / "plan.json").read_text())
        if user.id in plan.get("interrupt", []):
            raise KeyboardInterrupt
        time.sleep(plan.get("slow", 0))  # an ingestion that takes a while
        facts = [extract(line) for line in json.loads(Path(user.chats).read_text())]
        (ROOT / "memory").mkdir(exist_ok=True)
        (ROOT / "memory" / f"{user.id}.json").write_text(json.dumps(facts))
        return {"memory_id": "mem-" + user.id, "facts": len(facts)}

    def run(self, case):
        log(f"run {case['id']}")
        stored = ROOT / "memory" / f"{case.get('user')}.json"
        facts = json.loads(stored.read_text()) if case.get("user") else []
        hit = [fact for fact in facts if any(w in fact for w in case["input"].split())]
        return {"answer": hit[0] if hit else "I don't know.", "context": hit}
"""
WITH_USER_READY = """

class Remembering(Memory):
    def user_ready(self, user, result):
        plan = json.loads((ROOT / "plan.json").read_text())
        log(f"user_ready {user.id} {json.dumps(result, sort_keys=True)}")
        return user.id in plan.get("still_there", [])


system = Remembering()
"""


def extracting_project(
    project: Project, model: FactModel, user_ready: bool = False, **suite_fields: Any
) -> Project:
    write_memory_project(project)
    project.write_text(
        "memsys.py",
        EXTRACTING_SYSTEM + (WITH_USER_READY if user_ready else "\n\nsystem = Memory()\n"),
    )
    project.write_text("model_url.txt", model.url)
    plan(project)
    suite_fields.setdefault("ingestion", {"ontology": "people, pets and places"})
    project.write_suite(users_suite(**suite_fields))
    return project


def plan(project: Project, **fields: Any) -> None:
    project.write_text("plan.json", json.dumps(fields))


def user_doc(project: Project, user: str) -> dict[str, Any]:
    return json.loads((project.root / "cassettes/memory/users" / f"{user}.json").read_text())


def user_http(project: Project, user: str) -> list[dict[str, Any]]:
    path = project.root / "cassettes/memory/users" / f"{user}.http.json"
    return json.loads(path.read_text())["interactions"]


def results(project: Project) -> dict[str, Any]:
    return json.loads((project.root / "r" / "results.json").read_text())


def ingestion_of(project: Project) -> dict[str, dict[str, Any]]:
    """Each case's `ingestion` entry in results.json, by case id."""
    return {case["id"]: case.get("ingestion") for case in results(project)["cases"]}


def test_live_records_each_users_ingestion_with_its_http_key_result_and_figures(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model)

    live = project.run("--live", "--eval-report", "r")

    live.assert_outcomes(passed=4)
    assert model.requests == 3  # Ana's two chat lines, Bo's one
    ana = user_doc(project, "u-ana")
    assert ana["result"] == {"memory_id": "mem-u-ana", "facts": 2}
    assert ana["requests"] == 2
    assert ana["usage"] == {"prompt_tokens": 14, "completion_tokens": 6, "total_tokens": 20}
    # gpt-4o-mini: $0.15 per million prompt tokens, $0.60 per million completion tokens
    assert ana["cost_usd"] == pytest.approx((14 * 0.15 + 6 * 0.60) / 1e6)
    assert ana["duration_s"] >= 0 and ana["ready_wait_s"] is None
    assert {"user.u-ana", "ingestion.ontology", "system", "format"} <= set(ana["key"])
    assert not any(name.startswith(("case", "data/", "judge")) for name in ana["key"])
    assert "user.u-bo" not in ana["key"]
    exchanges = user_http(project, "u-ana")
    assert [e["request"]["body"]["json"]["messages"][0]["content"] for e in exchanges] == [
        "The cat name is Miso.",
        "Ana lives in the city of Porto.",
    ]
    assert user_doc(project, "u-bo")["requests"] == 1
    figures = ingestion_of(project)
    assert figures["ana-cat"]["source"] == "recorded"
    assert figures["ana-cat"]["usage"]["total_tokens"] == 20
    assert figures["bo-car"]["user"] == "u-bo" and figures["bo-car"]["requests"] == 1
    # The figures per user and in total: results.json, report.md, the dashboard, the terminal.
    total = results(project)["ingestion"]["total"]
    assert (total["users"], total["requests"], total["total_tokens"]) == (2, 3, 30)
    assert total["cost_usd"] == pytest.approx((21 * 0.15 + 9 * 0.60) / 1e6)
    assert total["sources"] == {"recorded": 2}
    report = (project.root / "r" / "report.md").read_text()
    assert "### Ingestion" in report and "| memory | u-ana | recorded |" in report
    assert 'id="ingestion"' in (project.root / "r" / "dashboard.html").read_text()
    assert "ingestion: 2 users: 2 recorded (" in output(live)


def test_replay_http_replays_the_ingestion_offline_and_plain_replay_reads_its_figures(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    sent = model.requests
    project.clear_calls()

    offline = project.run("--replay-http", "--eval-report", "r")

    offline.assert_outcomes(passed=4)
    assert model.requests == sent  # no network: the recording served setup_user's requests
    assert project.calls().count("setup_user u-ana") == 1
    assert ingestion_of(project)["ana-city"]["source"] == "replayed_http"

    project.clear_calls()
    replay = project.run("--eval-report", "r")
    replay.assert_outcomes(passed=4)
    assert not any(call.startswith("setup_user") for call in project.calls())
    figures = ingestion_of(project)
    assert figures["ana-cat"]["source"] == "replayed"
    assert figures["ana-cat"]["usage"]["total_tokens"] == 20


def test_replay_http_without_an_ingestion_recording_names_it_and_the_next_step(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    for name in ("u-ana.json", "u-ana.http.json"):
        (project.root / "cassettes/memory/users" / name).unlink()

    offline = project.run("--replay-http")

    offline.assert_outcomes(passed=2, errors=2)
    text = output(offline)
    assert "no ingestion recording of user 'u-ana' (cassettes/memory/users/u-ana.json)" in text
    assert "record it with --eval-ingest-only" in text


def test_replay_http_refuses_an_ingestion_that_asks_for_what_is_not_recorded(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    # Today's code sends another request than the recorded one (the chats are unchanged).
    project.write_text(
        "memsys.py",
        (project.root / "memsys.py").read_text().replace('"role": "user"', '"role": "system"'),
    )

    offline = project.run("--replay-http")

    offline.assert_outcomes(errors=4)
    assert "stale ingestion recording of user 'u-ana': the system sent a request that is not " in (
        output(offline)
    )


def test_live_stale_reuses_a_current_ingestion_and_says_so(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    project.edit_suite("cases/memory.json", lambda doc: doc["cases"][0].update(input="cat"))
    sent = model.requests
    project.clear_calls()

    stale = project.run("--live-stale", "--eval-report", "r")

    stale.assert_outcomes(passed=4)
    assert project.calls() == ["setup memory", "run ana-cat"]  # Ana's memory not rebuilt...
    assert model.requests == sent
    assert ingestion_of(project)["ana-cat"]["source"] == "reused"
    assert "ingestion: 2 users: 1 reused, 1 replayed" in output(stale)  # Bo: none of his ran


def test_live_ingests_again_unless_user_ready_says_the_state_is_still_there(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model, user_ready=True).run("--live").assert_outcomes(passed=4)
    ana_first, bo_first = user_doc(project, "u-ana"), user_doc(project, "u-bo")
    sent = model.requests
    project.clear_calls()
    plan(project, still_there=["u-ana"])

    again = project.run("--live")

    again.assert_outcomes(passed=4)
    calls = project.calls()
    assert 'user_ready u-ana {"facts": 2, "memory_id": "mem-u-ana"}' in calls
    assert "setup_user u-ana" not in calls  # reused: its state is still there
    assert "setup_user u-bo" in calls  # user_ready said no: ingested again
    assert model.requests == sent + 1  # Bo's one chat line, sent again
    assert user_doc(project, "u-ana") == ana_first  # reused: nothing written
    # Bo re-ingested with the same result and the same exchanges but for the model's fresh
    # ids: his recording stays as it was.
    assert user_doc(project, "u-bo") == bo_first


def test_a_reingestion_keeps_the_recording_when_only_fresh_ids_changed(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    before = project.files("cassettes/memory/users", http=True)

    project.run("--live").assert_outcomes(passed=4)

    assert model.requests == 6  # both users ingested again (no user_ready)...
    assert project.files("cassettes/memory/users", http=True) == before  # ...nothing written


def test_a_changed_ingestion_setting_stales_exactly_its_users_cases_named(
    project: Project, model: FactModel
) -> None:
    suite = users_suite(ingestion={"ontology": "people, pets and places"})
    suite["cases"].append(
        {"id": "no-user", "input": "hello", "reference": "Nothing.", "unanswerable": True}
    )
    extracting_project(project, model)
    project.write_suite(suite)
    project.run("--live").assert_outcomes(passed=5)

    ontology_before = user_doc(project, "u-ana")["key"]["ingestion.ontology"]
    project.edit_suite(
        "cases/memory.json",
        lambda doc: doc["ingestion"].update(ontology="people, pets, places and dates"),
    )
    replay = project.run()

    replay.assert_outcomes(passed=1, errors=4)
    assert (
        'stale recording: ingestion.u-ana changed: ingestion.ontology "people, pets and places" '
        '-> "people, pets, places and dates"' in output(replay)
    )
    project.clear_calls()
    project.run("--live-stale").assert_outcomes(passed=5)
    assert project.calls().count("setup_user u-ana") == 1  # its ingestion was stale too
    assert user_doc(project, "u-ana")["key"]["ingestion.ontology"] != ontology_before


def test_ingest_only_ingests_user_by_user_runs_no_case_and_resumes(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model)
    plan(project, interrupt=["u-bo"])

    stopped = project.run("--eval-ingest-only")

    assert stopped.ret == 2  # interrupted in Bo's ingestion, after Ana's was recorded
    assert (project.root / "cassettes/memory/users/u-ana.json").is_file()
    assert not (project.root / "cassettes/memory/users/u-bo.json").exists()
    assert not any(call.startswith("run ") for call in project.calls())
    plan(project)
    project.clear_calls()

    resumed = project.run("--eval-ingest-only")

    assert resumed.ret == 0
    resumed.assert_outcomes(skipped=4)
    assert project.calls() == ["setup memory", "setup_user u-bo"]
    text = output(resumed)
    assert "memory::u-ana: reused: its recording is current" in text
    assert "memory::u-bo: recorded in " in text and "(1 request, 10 tokens)" in text
    assert not list((project.root / "cassettes/memory").glob("*.json"))  # no case recorded
    assert "pass rate" not in text  # no table of zeros: no case was scored

    project.clear_calls()
    project.run("--eval-ingest-only", "--live", "-k", "bo").assert_outcomes(skipped=2)
    assert project.calls() == ["setup memory", "setup_user u-bo"]  # only the selected user
    project.run("--live-stale").assert_outcomes(passed=4)
    # the cases run on the ingestion recorded apart: nobody is ingested again
    assert not any(call.startswith("setup_user") for call in project.calls()[2:])


def test_ingest_only_refuses_flags_it_cannot_honour(project: Project, model: FactModel) -> None:
    extracting_project(project, model)
    for flags, said in (
        (("--live-judges",), "--live-judges runs no system"),
        (("--replay-http",), "--replay-http serves recorded answers"),
    ):
        result = project.run("--eval-ingest-only", *flags)
        assert result.ret == 4, flags
        assert said in output(result)


def test_a_user_id_that_cannot_name_a_file_errors_its_cases_only(
    project: Project, model: FactModel
) -> None:
    suite = users_suite()
    suite["users"][1]["id"] = "u/bo"
    for case in suite["cases"]:
        if case["user"] == "u-bo":
            case["user"] = "u/bo"
    extracting_project(project, model)
    project.write_suite(suite)

    live = project.run("--live")

    live.assert_outcomes(passed=2, errors=2)
    assert "user id 'u/bo' cannot name its ingestion recording: path separators" in output(live)


def test_a_run_that_fails_after_an_unchecked_reuse_says_why(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)
    # The system's memory is gone (as an in-process one is), and it has no user_ready.
    for stored in (project.root / "memory").iterdir():
        stored.unlink()
    project.edit_suite("cases/memory.json", lambda doc: doc["cases"][0].update(input="cat"))

    stale = project.run("--live-stale")

    stale.assert_outcomes(errors=1, passed=3)
    assert (
        "user 'u-ana''s ingestion was reused from its recording, so setup_user did not run in "
        "this process" in output(stale)
    )


def test_the_recording_of_a_user_no_longer_declared_is_an_orphan_a_full_live_run_deletes(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model).run("--live").assert_outcomes(passed=4)

    def rename_bo(doc: dict[str, Any]) -> None:
        doc["users"][1]["id"] = "u-bob"
        for case in doc["cases"]:
            if case["user"] == "u-bo":
                case["user"] = "u-bob"

    project.edit_suite("cases/memory.json", rename_bo)
    replay = project.run("--live-stale", "-k", "ana")  # not every case: nothing deleted

    assert "  orphan: cassettes/memory/users/u-bo.json" in output(replay)
    assert "  orphan: cassettes/memory/users/u-bo.http.json" in output(replay)
    assert (project.root / "cassettes/memory/users/u-bo.json").exists()

    live = project.run("--live")

    live.assert_outcomes(passed=4)
    assert "  orphan: cassettes/memory/users/u-bo.json (deleted)" in output(live)
    assert not (project.root / "cassettes/memory/users/u-bo.json").exists()
    assert (project.root / "cassettes/memory/users/u-bob.json").exists()
    assert (project.root / "cassettes/memory/users/u-ana.json").exists()
