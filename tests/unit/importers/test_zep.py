"""`python -m pytest_evalcases import zep DIR`: Zep's eval-harness layout (tests/data/zep/,
invented content in the harness's shapes) as a suite: users with their conversations,
telemetry and the shared documents as data files, test cases as cases, the `source` record,
sampling, and a bad folder (one error naming the file, the record and the next step; nothing
written)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite

from .conftest import written_files

ZEP = Path(__file__).parents[2] / "data" / "zep"
CASE_IDS = [
    "zep_user_a01-a01_move_city",
    "zep_user_a01-a01_sister_visit",
    "zep_user_a01-a01_saved_flat",
    "zep_user_a01-a01_deposit_days",
    "zep_user_b02-b02_race",
    "zep_user_b02-b02_bike",
]


def imported(source: Path | str, *args: str) -> dict[str, Any]:
    assert main(["import", "zep", str(source), "-o", "cases/zep.json", *args]) == 0
    suite = json.loads(Path("cases/zep.json").read_text())
    Suite.model_validate(suite)
    for case in suite["cases"]:
        validate_case(case)
    return suite


def read(path: str) -> Any:
    return json.loads(Path(path).read_text())


@pytest.fixture
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture folder to edit, outside the project."""
    return Path(shutil.copytree(ZEP, tmp_path_factory.mktemp("zep") / "harness"))


def test_users_get_their_conversations_telemetry_and_the_suite_the_shared_documents(
    project: Path,
) -> None:
    suite = imported(ZEP, "--system", "memory_agent.agent:system")

    assert suite["system"] == "memory_agent.agent:system"
    documents = ["data/zep/documents/cycling_notes.txt", "data/zep/documents/tenancy_guide.md"]
    assert suite["users"] == [
        {
            "id": "zep_user_a01",
            "conversations": "data/zep/zep_user_a01/conversations.json",
            "telemetry": ["data/zep/zep_user_a01/telemetry/zep_user_a01_flat_searches.json"],
        },
        {
            "id": "zep_user_b02",
            "conversations": "data/zep/zep_user_b02/conversations.json",
        },
    ]
    # Zep's document graph: ingested once for all users (setup_documents), not per user
    assert suite["documents"] == {"files": documents}
    conversations = read("data/zep/zep_user_a01/conversations.json")
    assert conversations["speaker_a"] == "Priya Nair"
    assert conversations["speaker_b"] == "Assistant"
    assert conversations["user"]["email"] == "priya.nair@example.com"
    sessions = conversations["sessions"]
    assert [(s["session"], s["conversation_id"], s["date_time"]) for s in sessions] == [
        (1, "conv_001", "2025-02-03T09:00:00Z"),
        (2, "conv_002", "2025-02-20T18:30:00Z"),
    ]
    assert sessions[1]["turns"][0] == {
        "speaker": "Priya Nair",
        "dia_id": "D2:1",
        "text": "My sister Ines is visiting on 14 March, so I booked a table at Tharavadu.",
        "role": "user",
        "timestamp": "2025-02-20T18:30:00Z",
    }
    assert [t["speaker"] for t in sessions[0]["turns"]] == ["Priya Nair", "Assistant", "Priya Nair"]
    # telemetry and documents are copied byte for byte, each document once
    for written, original in [
        (
            "data/zep/zep_user_a01/telemetry/zep_user_a01_flat_searches.json",
            "telemetry/zep_user_a01_flat_searches.json",
        ),
        ("data/zep/documents/tenancy_guide.md", "documents/tenancy_guide.md"),
    ]:
        assert Path(written).read_bytes() == (ZEP / "data" / original).read_bytes()
    users = {f"data/zep/{user}/conversations.json" for user in ("zep_user_a01", "zep_user_b02")}
    telemetry = "data/zep/zep_user_a01/telemetry/zep_user_a01_flat_searches.json"
    assert written_files(project) == {"cases/zep.json", telemetry, *users, *documents}


def test_test_cases_map_query_golden_answer_category_and_needles(project: Path) -> None:
    suite = imported(ZEP)

    assert [case["id"] for case in suite["cases"]] == CASE_IDS
    assert suite["cases"][0] == {
        "id": "zep_user_a01-a01_move_city",
        "input": "Which city is Priya moving to in April?",
        "reference": "Priya is moving to Leeds in April.",
        "user": "zep_user_a01",
        "category": "basic_facts",
        "expected_context": ["I am moving to Leeds in April"],
        "metadata": {
            "needles": [
                {
                    "description": "Priya says she is moving to Leeds in April",
                    "source_file": "data/conversations/zep_user_a01_conv_001.json",
                    "source_line": 7,
                    "excerpt": "I am moving to Leeds in April",
                }
            ]
        },
    }
    assert suite["cases"][2]["metadata"] == {"requires_telemetry": True}
    assert "metadata" not in suite["cases"][3]
    assert [case["category"] for case in suite["cases"]] == [
        "basic_facts",
        "temporal",
        "telemetry",
        "documents",
        "basic_facts",
        "basic_facts",
    ]
    assert suite["stages"] == ["context_completeness", "answer_accuracy"]
    assert suite["report_only"] == ["context_coverage"]


def test_source_names_every_file_read_with_its_sha256_and_the_counts(project: Path) -> None:
    source = imported(ZEP)["source"]

    files = sorted(p for p in (ZEP / "data").rglob("*") if p.is_file())
    hashes = {
        f"data/{p.relative_to(ZEP / 'data').as_posix()}": hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }
    assert source["files"] == hashes
    lines = "".join(f"{name[len('data/') :]} {digest}\n" for name, digest in sorted(hashes.items()))
    assert source["sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    counts = {
        key: source[key] for key in ("users", "conversations", "messages", "telemetry", "documents")
    }
    assert counts == {"users": 2, "conversations": 3, "messages": 8, "telemetry": 1, "documents": 2}
    assert (source["format"], source["records"], source["cases"]) == ("zep", 6, 6)
    assert source["test_case_files"] == 2


def test_dir_may_be_the_folder_holding_data_or_data_itself(project: Path) -> None:
    outer = imported(ZEP)
    files = {path: Path(path).read_bytes() for path in written_files(project)}
    inner = imported(ZEP / "data", "--force")

    assert (outer["source"].pop("file"), inner["source"].pop("file")) == ("zep", "data")
    assert inner == outer
    assert {path: Path(path).read_bytes() for path in written_files(project)} != {} and all(
        Path(path).read_bytes() == content
        for path, content in files.items()
        if path != "cases/zep.json"
    )


def test_limit_stratify_and_ids_sample_as_the_other_importers(project: Path) -> None:
    by_category = imported(ZEP, "--limit", "4", "--stratify", "category", "--seed", "3")
    categories = [case["category"] for case in by_category["cases"]]
    assert len(categories) == 4 and categories.count("basic_facts") == 2
    assert by_category["source"]["sampling"].startswith("each category's share")

    (project / "ids.txt").write_text("zep_user_b02-b02_bike\n0\n")
    named = imported(ZEP, "--ids", "ids.txt", "--force")
    assert [case["id"] for case in named["cases"]] == [CASE_IDS[0], CASE_IDS[5]]

    tomas = imported(ZEP, "--limit", "2", "--stratify", "user", "--force")
    assert {case["user"] for case in tomas["cases"]} == {"zep_user_a01", "zep_user_b02"}

    (project / "ids.txt").write_text("zep_user_b02-b02_race\n")
    only_tomas = imported(ZEP, "--ids", "ids.txt", "--force")
    assert [user["id"] for user in only_tomas["users"]] == ["zep_user_b02"]  # its users only


def test_conversations_are_ordered_by_timestamp_else_by_file_name(
    project: Path, harness: Path
) -> None:
    conversations = harness / "data" / "conversations"
    later = json.loads((conversations / "zep_user_a01_conv_001.json").read_text())
    for message in later["messages"]:
        message["timestamp"] = message["timestamp"].replace("2025-02-03", "2025-03-01")
    (conversations / "zep_user_a01_conv_001.json").write_text(json.dumps(later))

    imported(harness)
    sessions = read("data/zep/zep_user_a01/conversations.json")["sessions"]
    assert [s["conversation_id"] for s in sessions] == ["conv_002", "conv_001"]
    assert sessions[1]["turns"][0]["dia_id"] == "D2:1"

    del later["messages"][0]["timestamp"]  # one message without: file-name order, as Zep
    (conversations / "zep_user_a01_conv_001.json").write_text(json.dumps(later))
    imported(harness, "--force")
    sessions = read("data/zep/zep_user_a01/conversations.json")["sessions"]
    assert [s["conversation_id"] for s in sessions] == ["conv_001", "conv_002"]
    assert sessions[0]["date_time"] is None


def test_a_file_belongs_to_the_longest_user_id_it_starts_with(project: Path, harness: Path) -> None:
    data = harness / "data"
    users = json.loads((data / "users.json").read_text())
    users.append({"user_id": "zep_user_a01_x", "first_name": "Xavi"})
    (data / "users.json").write_text(json.dumps(users))
    conversation = {"user_id": "zep_user_a01_x", "messages": [{"role": "user", "content": "Hi."}]}
    (data / "conversations" / "zep_user_a01_x_conv_001.json").write_text(json.dumps(conversation))
    cases = {"user_id": "zep_user_a01_x", "test_cases": [{"query": "Hi?", "golden_answer": "Hi."}]}
    (data / "test_cases" / "zep_user_a01_x_tests.json").write_text(json.dumps(cases))

    suite = imported(harness)

    xavis = [case["id"] for case in suite["cases"] if case["user"] == "zep_user_a01_x"]
    assert xavis == ["zep_user_a01_x-q001"]  # a test case without an id: its position
    xavi = read("data/zep/zep_user_a01_x/conversations.json")["sessions"]
    assert [s["conversation_id"] for s in xavi] == ["conv_1"]
    priya = read("data/zep/zep_user_a01/conversations.json")["sessions"]
    assert len(priya) == 2


def _edit_json(relative: str, edit: Callable[[Any], Any]) -> Callable[[Path], None]:
    def apply(data: Path) -> None:
        doc = json.loads((data / relative).read_text())
        edit(doc)
        (data / relative).write_text(json.dumps(doc, indent=2))

    return apply


def _write(relative: str, text: str) -> Callable[[Path], None]:
    return lambda data: (data / relative).write_text(text)


BAD = {
    "no users file": (
        lambda data: (data / "users.json").unlink(),
        "harness: holds neither users.json nor data/users.json; give Zep's harness folder",
    ),
    "users not an array": (
        _write("users.json", '{"user_id": "u"}'),
        "data/users.json: expected a non-empty JSON array of users",
    ),
    "user without first name": (
        _edit_json("users.json", lambda doc: doc[1].pop("first_name")),
        "data/users.json: user 1 (zep_user_b02): field 'first_name' is missing; fix it there "
        "(Zep's harness reads the same field), then import again",
    ),
    "message without content": (
        _edit_json(
            "conversations/zep_user_b02_conv_001.json",
            lambda doc: doc["messages"][2].pop("content"),
        ),
        "data/conversations/zep_user_b02_conv_001.json: the conversation: field "
        "'messages[2].content' is missing",
    ),
    "conversation of another user": (
        _edit_json(
            "conversations/zep_user_b02_conv_001.json",
            lambda doc: doc.update(user_id="zep_user_a01"),
        ),
        "field 'user_id' is 'zep_user_a01', but the file name says 'zep_user_b02'",
    ),
    "conversation of no user": (
        _write("conversations/someone_conv_001.json", '{"messages": []}'),
        "data/conversations/someone_conv_001.json: its name starts with no user id of "
        "users.json (zep_user_a01, zep_user_b02) followed by '_'",
    ),
    "broken telemetry": (
        _write("telemetry/zep_user_a01_clicks.json", '{"events": [}'),
        "data/telemetry/zep_user_a01_clicks.json: not valid JSON (line 1, column 13",
    ),
    "test case without golden answer": (
        _edit_json(
            "test_cases/zep_user_a01_tests.json",
            lambda doc: doc["test_cases"][1].pop("golden_answer"),
        ),
        "data/test_cases/zep_user_a01_tests.json: the test cases file (zep_user_a01): field "
        "'test_cases[1].golden_answer' is missing",
    ),
    "test cases of an undeclared user": (
        _edit_json("test_cases/zep_user_b02_tests.json", lambda doc: doc.update(user_id="zz")),
        "field 'user_id' is 'zz', which users.json does not declare (zep_user_a01, "
        "zep_user_b02): add the user there or remove this file",
    ),
    "same test case twice": (
        _edit_json(
            "test_cases/zep_user_b02_tests.json",
            lambda doc: doc["test_cases"].append(dict(doc["test_cases"][0])),
        ),
        "case id 'zep_user_b02-b02_race' appears twice",
    ),
    "no test cases": (
        lambda data: shutil.rmtree(data / "test_cases"),
        "data/test_cases: holds no *_tests.json file, so there is no case to import",
    ),
    "document not UTF-8": (
        lambda data: (data / "documents" / "scan.txt").write_bytes(b"\xff\xfe caf\xe9"),
        "data/documents/scan.txt: cannot read the file as UTF-8 text",
    ),
}


@pytest.mark.parametrize("problem", BAD)
def test_a_bad_folder_is_one_error_naming_the_file_and_nothing_is_written(
    project: Path, harness: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    break_it, message = BAD[problem]
    break_it(harness / "data")

    assert main(["import", "zep", str(harness), "-o", "cases/zep.json"]) == 2

    err = capsys.readouterr().err
    assert message in err
    assert err.count("error:") == 1 and err.rstrip().endswith("nothing was written")
    assert written_files(project) == set()


def test_a_file_not_a_folder_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "zep", str(ZEP / "data" / "users.json"), "-o", "cases/z.json"]) == 2
    assert "users.json: not a folder; give Zep's harness folder" in capsys.readouterr().err
