"""Ingestion variants side by side (issue 32, part 1): a user's recording is kept per ingestion
variant (a hash of the suite's `"ingestion"` settings), so switching a setting back reuses the
earlier recording instead of ingesting again (--live-stale) and replays it (a replay with the
settings switched back finds it current); `python -m pytest_evalcases ingestions` lists each
user's recordings with their settings and dates; `--eval-ingestion VARIANT` runs the users'
cases on a recorded variant's settings; the orphan scan never calls a kept variant an orphan.

The system here is Zep-like: its ingestion builds a user's graph in a "service" (files under
service/, kept between runs), one per settings, and `user_ready` says whether it is there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, output

from pytest_evalcases.cli import main
from pytest_evalcases.core.hashing import content_hash
from pytest_evalcases.store.folders import find_orphans, left_alone
from pytest_evalcases.store.user_recordings import (
    UnknownVariant,
    load_user_recording,
    variant_settings,
)

from .test_users import users_suite, write_memory_project

SERVICE_SYSTEM = '''\
"""A memory service: setup_user builds the user's graph with the suite's ingestion settings
under service/ (it outlives the process); user_ready says whether it is still there."""
import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SERVICE = ROOT / "service"


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


class Service:
    def __init__(self):
        self.graphs = {}

    def setup(self, suite):
        log(f"setup {suite.name}")

    def setup_user(self, user):
        settings = json.dumps(user.ingestion, sort_keys=True)
        log(f"setup_user {user.id} {settings}")
        graph = f"{user.id}-{hashlib.sha256(settings.encode()).hexdigest()[:6]}"
        SERVICE.mkdir(exist_ok=True)
        (SERVICE / graph).write_text(Path(user.chats).read_text())
        self.graphs[user.id] = graph
        return {"graph_id": graph}

    def user_ready(self, user, result):
        log(f"user_ready {user.id}")
        found = (SERVICE / result["graph_id"]).is_file()
        if found:
            self.graphs[user.id] = result["graph_id"]
        return found

    def run(self, case):
        facts = json.loads((SERVICE / self.graphs[case["user"]]).read_text())
        hit = [fact for fact in facts if any(w in fact for w in case["input"].split())]
        return {"answer": hit[0] if hit else "I don't know.", "context": hit,
                "retrieved": [case["user"]] if hit else []}


system = Service()
'''

ONTOLOGY_A = {"ontology": "people, pets, places"}
ONTOLOGY_B = {"ontology": "people, pets, places and dates"}


def service_project(project: Project, ingestion: dict[str, Any]) -> Project:
    write_memory_project(project)
    project.write_text("memsys.py", SERVICE_SYSTEM)
    project.write_suite(users_suite(ingestion=ingestion))
    return project


def set_ingestion(project: Project, ingestion: dict[str, Any]) -> None:
    project.edit_suite("cases/memory.json", lambda doc: doc.update(ingestion=ingestion))


def users_folder(project: Project) -> Path:
    return project.root / "cassettes/memory/users"


def variant_in(project: Project, relpath: str) -> str:
    found = load_user_recording(users_folder(project) / relpath, project.root)
    assert found is not None, relpath
    return found.variant


def ingested(project: Project) -> list[str]:
    """The setup_user calls, sorted (users are ingested concurrently)."""
    return sorted(call for call in project.calls() if call.startswith("setup_user"))


def two_variants(project: Project) -> tuple[str, str]:
    """Record variant A, then B (the suite left at B); return their names."""
    service_project(project, ONTOLOGY_A).run("--live").assert_outcomes(passed=4)
    variant_a = variant_in(project, "u-ana.json")
    set_ingestion(project, ONTOLOGY_B)
    project.run("--live-stale").assert_outcomes(passed=4)
    variant_b = variant_in(project, "u-ana.json")
    assert variant_a != variant_b
    return variant_a, variant_b


def test_switching_a_setting_back_reuses_the_kept_recording_in_every_mode(
    project: Project,
) -> None:
    variant_a, variant_b = two_variants(project)
    # B took users/<id>.json; A moved, whole, to its variant's folder, with its settings
    kept = json.loads((users_folder(project) / f"variants/{variant_a}/u-ana.json").read_text())
    assert kept["ingestion"] == ONTOLOGY_A
    assert json.loads((users_folder(project) / "u-ana.json").read_text())["ingestion"] == (
        ONTOLOGY_B
    )
    assert ingested(project) == sorted(
        f"setup_user {user} {json.dumps(settings)}"
        for user in ("u-ana", "u-bo")
        for settings in (ONTOLOGY_A, ONTOLOGY_B)
    )

    set_ingestion(project, ONTOLOGY_A)
    project.clear_calls()
    stale = project.run("--live-stale")

    stale.assert_outcomes(passed=4)  # the cases ran again (they were recorded on B)...
    assert ingested(project) == []  # ...on A's kept ingestion: nobody was ingested again
    assert "user_ready u-ana" in project.calls()
    replay = project.run("--eval-report", "r")
    replay.assert_outcomes(passed=4)  # a replay with the settings switched back is current
    results = json.loads((project.root / "r/results.json").read_text())
    ran_on = {
        (case["ingestion"]["source"], case["ingestion"]["variant"]) for case in results["cases"]
    }
    assert ran_on == {("replayed", variant_a)}  # each case says which variant it ran on
    assert {row["variant"] for row in results["ingestion"]["users"]} == {variant_a}
    assert "orphan:" not in output(replay)  # a kept variant is no orphan
    assert "0 orphaned" in output(replay)
    project.clear_calls()
    project.run("--replay-http").assert_outcomes(passed=4)  # setup_user offline, on A's
    assert ingested(project) == [
        f"setup_user {user} {json.dumps(ONTOLOGY_A)}" for user in ("u-ana", "u-bo")
    ]
    # Nothing moved: A is still read from its folder, B still holds users/<id>.json.
    assert variant_in(project, "u-ana.json") == variant_b
    assert variant_in(project, f"variants/{variant_a}/u-bo.json") == variant_a


def test_a_kept_variant_is_re_recorded_in_its_own_place_when_its_data_changed(
    project: Project,
) -> None:
    variant_a, variant_b = two_variants(project)
    set_ingestion(project, ONTOLOGY_A)
    project.write_text("data/bo/chats.json", json.dumps(["Bo drives a red car.", "Bo sings."]))
    project.clear_calls()

    project.run("--live-stale").assert_outcomes(passed=4)

    assert ingested(project) == [f"setup_user u-bo {json.dumps(ONTOLOGY_A)}"]  # Bo's data only
    kept = load_user_recording(users_folder(project) / f"variants/{variant_a}/u-bo.json", Path())
    last = load_user_recording(users_folder(project) / "u-bo.json", Path())
    assert kept is not None and last is not None
    assert last.variant == variant_b  # B's recording untouched: made before the edit
    assert kept.key["user.u-bo"] != last.key["user.u-bo"]  # A's, in its place, on the new data


def test_ingestions_lists_each_users_recordings_with_settings_and_dates(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    variant_a, variant_b = two_variants(project)
    cassettes = str(project.root / "cassettes")
    capsys.readouterr()  # the runs' output

    assert main(["ingestions", "memory", "--cassettes", cassettes]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "memory: 4 ingestion recordings of 2 users, 2 variants"
    assert f'  variant {variant_a}: ontology="people, pets, places"' in lines
    assert f'  variant {variant_b}: ontology="people, pets, places and dates"' in lines
    assert lines[3].split() == ["user", "variant", "recorded", "at", "requests", "tokens"] + [
        "cost",
        "file",
    ]
    rows = [line.split() for line in lines[4:]]
    assert [(row[0], row[1], row[-1]) for row in rows] == [
        ("u-ana", variant_b, "recorded)"),
        ("u-ana", variant_a, f"users/variants/{variant_a}/u-ana.json"),
        ("u-bo", variant_b, "recorded)"),
        ("u-bo", variant_a, f"users/variants/{variant_a}/u-bo.json"),
    ]
    assert all(row[2].endswith("Z") for row in rows)  # the recording's date

    assert main(["ingestions", "--cassettes", cassettes, "--user", "u-bo", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)["suites"][0]
    assert view["variants"] == {variant_a: ONTOLOGY_A, variant_b: ONTOLOGY_B}
    assert [(row["user"], row["last_recorded"]) for row in view["recordings"]] == [
        ("u-bo", True),
        ("u-bo", False),
    ]
    assert view["recordings"][0]["result"]["graph_id"].startswith("u-bo-")

    assert main(["ingestions", "other", "--cassettes", cassettes]) == 1
    assert "no ingestion recording of suite 'other'" in capsys.readouterr().err


def test_eval_ingestion_runs_the_cases_on_a_named_variant(project: Project) -> None:
    variant_a, variant_b = two_variants(project)  # the suite says B, its cases recorded on B
    project.clear_calls()

    stale = project.run("--live-stale", "--eval-ingestion", variant_a)

    stale.assert_outcomes(passed=4)
    assert ingested(project) == []  # A's kept recording reused
    project.run("--eval-ingestion", variant_a).assert_outcomes(passed=4)
    replay = project.run()  # the suite's own settings (B): the cases now hold A
    replay.assert_outcomes(errors=4)
    assert (
        'ingestion.u-ana changed: ingestion.ontology "people, pets, places" -> "people, pets, '
        'places and dates"; re-record with --live' in output(replay)
    )
    project.clear_calls()
    project.run("--replay-http", "--eval-ingestion", variant_a).assert_outcomes(passed=4)
    assert ingested(project) == [  # setup_user got the variant's settings
        f"setup_user {user} {json.dumps(ONTOLOGY_A)}" for user in ("u-ana", "u-bo")
    ]

    unknown = project.run("--eval-ingestion", "0123abcd")
    assert unknown.ret != 0
    variants = ", ".join(sorted([variant_a, variant_b]))
    assert (
        "cases/memory.json: --eval-ingestion 0123abcd: no ingestion recording of suite "
        f"'memory' holds variant 0123abcd (its variants: {variants};" in output(unknown)
    )
    bad = project.run("--eval-ingestion", "ontology-a")
    assert bad.ret == 4
    assert "--eval-ingestion 'ontology-a': name an ingestion variant by its 8 hex" in output(bad)


def test_a_recording_made_before_variants_were_kept_still_names_its_settings(
    tmp_path: Path,
) -> None:
    """A recording in today's layout without `"ingestion"`: its settings read back from its
    key's labels when each hashes to its field (else the variant cannot be run by name)."""
    folder = tmp_path / "cassettes/memory/users"
    folder.mkdir(parents=True)
    doc = {
        "format": 2,
        "user": "u-ana",
        "recorded_at": "2026-12-01T19:14:03Z",
        "key": {"ingestion.chunk_size": content_hash(200), "user.u-ana": "0410b735dd771a25"},
        "labels": {"key": {"ingestion.chunk_size": "200"}},
        "integrity": {"http": content_hash([])},
        "result": None,
    }
    (folder / "u-ana.json").write_text(json.dumps(doc))
    found = load_user_recording(folder / "u-ana.json", tmp_path)
    assert found is not None

    assert variant_settings(tmp_path / "cassettes", "memory", found.variant) == {"chunk_size": 200}

    doc["labels"] = {"key": {}}  # a setting too long for its label
    (folder / "u-ana.json").write_text(json.dumps(doc))
    with pytest.raises(UnknownVariant, match="made before recordings kept their settings"):
        variant_settings(tmp_path / "cassettes", "memory", found.variant)


def test_the_orphan_scan_reads_kept_variants_as_their_users(tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    for relpath in (
        "memory/users/u-ana.json",
        "memory/users/variants/1a2b3c4d/u-ana.json",
        "memory/users/variants/1a2b3c4d/u-ana.http.json",
        "memory/users/variants/1a2b3c4d/u-gone.json",
    ):
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text("{}")
    (root / "memory/users/variants/9f9f9f9f").symlink_to(tmp_path)

    orphans = find_orphans(root, {"memory": ["users/u-ana"]})

    assert orphans == [root / "memory/users/variants/1a2b3c4d/u-gone.json"]
    assert (root / "memory/users/variants/9f9f9f9f", f"a symlink to {tmp_path}") in left_alone(root)


def test_a_recording_already_kept_for_a_variant_is_never_written_over(project: Project) -> None:
    """A run stopped between the two writes of a move leaves B both in users/<id>.json and in
    its folder; the kept one is what a run of B reads (and may be newer): it stays."""
    variant_a, variant_b = two_variants(project)
    kept_b = users_folder(project) / f"variants/{variant_b}/u-ana.json"
    kept_b.parent.mkdir()
    doc = json.loads((users_folder(project) / "u-ana.json").read_text())
    doc["recorded_at"] = "2026-12-31T00:00:00Z"  # as if recorded again since
    kept_b.write_text(json.dumps(doc))
    set_ingestion(project, {"ontology": "people"})

    project.run("--live-stale").assert_outcomes(passed=4)

    assert json.loads(kept_b.read_text())["recorded_at"] == "2026-12-31T00:00:00Z"
    assert json.loads((users_folder(project) / "u-ana.json").read_text())["ingestion"] == {
        "ontology": "people"
    }
    # Bo's B had no copy there: it moved as usual
    assert variant_in(project, f"variants/{variant_b}/u-bo.json") == variant_b


def test_the_kept_variants_of_a_user_no_longer_declared_are_orphans(project: Project) -> None:
    variant_a, _ = two_variants(project)

    def drop_bo(doc: dict[str, Any]) -> None:
        doc["users"] = doc["users"][:1]
        doc["cases"] = [case for case in doc["cases"] if case["user"] != "u-bo"]

    project.edit_suite("cases/memory.json", drop_bo)
    pruned = project.run("--live-prune")

    assert f"cassettes/memory/users/variants/{variant_a}/u-bo.json" in output(pruned)
    assert f"variants/{variant_a}/u-ana.json" not in output(pruned)
    assert not (users_folder(project) / f"variants/{variant_a}/u-bo.json").exists()
    assert (users_folder(project) / f"variants/{variant_a}/u-ana.json").is_file()
