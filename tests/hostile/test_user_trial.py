"""What a user tried and noticed (issue 30, part 6; and the importers' unbounded reads of part 4):
three agents written from the docs ran a memory system whose ingestion calls a service over HTTP,
changed one word of a user's data, re-recorded and read what the run printed and wrote.

- an ingestion re-record keeps the old form of the values a service makes fresh on every call
  (the built-in list and the suite's `http_volatile`), as a case's re-record does;
- the "recording changes" section and recording-changes.md list the ingestion recordings;
- the cosmetic and doc items, and the importers' `--ids` / FILE read through the bounded readers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, changes_section, output, summary_section
from guarded import GuardedInterpreter, guarded_interpreter_fixture
from loopback import CountedService

# A memory service: each chat line is sent to `/v1/ingest`, which answers with a fresh id, a
# fresh job id (listed in the suite's `http_volatile`), a date and a request id, as real ones do.
INGESTING_SYSTEM = """\
import json
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MEMORY = {}


def ingest(text):
    request = urllib.request.Request(
        (ROOT / "service_url.txt").read_text() + "/ingest",
        data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["facts"]


class Memory:
    def setup_user(self, user):
        MEMORY[user.id] = [ingest(line) for line in json.loads(Path(user.chats).read_text())]
        return {"memory_id": "mem-" + user.id, "facts": len(MEMORY[user.id])}

    def run(self, case):
        facts = MEMORY.get(case.get("user"), [])
        hit = [fact for fact in facts if any(w in fact for w in case["input"].split())]
        return {"answer": hit[0] if hit else "I don't know.", "context": hit}


system = Memory()
"""


class MemoryService(CountedService):
    """A loopback memory service whose every reply carries fresh values."""

    def __init__(self) -> None:
        super().__init__("/v1")

    def reply(self, number: int, body: Any) -> tuple[int, Any, dict[str, str]]:
        fresh = {"Date": f"Wed, 02 Dec 2026 05:{number:02d}:00 GMT", "X-Request-Id": f"r{number}"}
        return (
            200,
            {
                "id": f"ing-{number:08d}-fresh",
                "job_id": f"job-{number:08d}-fresh",
                "status": "done",
                "facts": body["text"],
            },
            fresh,
        )


@pytest.fixture
def service() -> Iterator[MemoryService]:
    server = MemoryService()
    yield server
    server.close()


def memory_suite(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "memory",
        "system": "memsys:system",
        "judge": "lexical",
        "stages": ["context_completeness"],
        "http_volatile": ["$.job_id"],
        "users": [
            {"id": "u-ana", "chats": "data/ana.json"},
            {"id": "u-ben", "chats": "data/ben.json"},
        ],
        "cases": [
            {"id": "ana-cat", "input": "cat", "user": "u-ana", "reference": "The cat is Miso."},
            {"id": "ben-car", "input": "car", "user": "u-ben", "reference": "Ben has a red car."},
        ],
    }
    doc.update(fields)
    return doc


def memory_project(
    project: Project, service: MemoryService, system: str = INGESTING_SYSTEM, **fields: Any
) -> Project:
    project.write_text("memsys.py", system)
    project.write_text("service_url.txt", service.url)
    project.write_text("data/ana.json", json.dumps(["The cat is Miso.", "Ana lives in Porto."]))
    project.write_text("data/ben.json", json.dumps(["Ben has a red car.", "Ben likes tea."]))
    project.write_suite(memory_suite(**fields))
    return project


def changed_lines(before: str, after: str) -> list[str]:
    """The lines of `after` that are not at their place in `before` (the files keep one shape)."""
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new), (before, after)
    return [line.strip() for was, line in zip(old, new, strict=True) if was != line]


# ---- 1. an ingestion re-record keeps the old volatile values ------------------------------
def test_an_ingestion_rerecord_after_a_data_change_keeps_the_old_fresh_values(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service).run("--live").assert_outcomes(passed=2)
    http_file = project.root / "cassettes/memory/users/u-ben.http.json"
    before = http_file.read_text()
    assert '"job_id": "job-0000000' in before and '"x-request-id"' in before.lower()

    # One word of Ben's data changes: his ingestion is recorded again (a new key).
    project.write_text("data/ben.json", json.dumps(["Ben has a blue car.", "Ben likes tea."]))
    project.run("--live").assert_outcomes(passed=1, failed=1)

    changed = changed_lines(before, http_file.read_text())
    # The real change alone: the request's text and the reply's facts (formerly also the date,
    # the request id, `$.id` and `$.job_id` of both exchanges: 11 of 12 changed lines).
    assert changed and all("blue" in line for line in changed), changed


# ---- 2. the recording changes list the ingestion recordings -------------------------------
def test_recording_changes_list_a_changed_ingestion_recording(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service).run("--live").assert_outcomes(passed=2)
    project.write_text("data/ben.json", json.dumps(["Ben has a blue car.", "Ben likes tea."]))

    live = project.run("--live", "--eval-report", "r")

    section = changes_section(live)
    at = section.index("memory::users/u-ben (ingestion changed)")
    assert section[at + 1 : at + 3] == [
        "  key changed: user.u-ben",
        "  HTTP request $.text: 'Ben has a red car.' -> 'Ben has a blue car.'",
    ], section
    assert not any("users/u-ana" in line for line in section)  # re-ingested to the same
    assert section[-1].endswith("; ingestion recordings: 1 unchanged, 1 changed, 0 new"), section
    markdown = (project.root / "r" / "recording-changes.md").read_text()
    assert "| memory::users/u-ben | ingestion changed | key changed: user.u-ben<br>" in markdown


# ---- 3. the first-failure column uses the terminal's width ------------------------------------
def test_a_long_first_failure_is_shown_whole_in_a_narrow_terminal() -> None:
    from pytest_evalcases.report.terminal import RunSummary

    reason = (
        "stale recording: code.shopbot/tools.py changed: search_orders (re-record with --live, "
        "or --live-stale)"
    )
    summary = RunSummary()
    for number in range(2):
        summary.add(
            {
                "suite": "shop",
                "id": f"order-status-{number}",
                "file": "cases/shop.json",
                "index": number,
                "category": "orders",
                "outcome": "stale",
                "first_failure": {"reason": reason},
                "stages": {
                    name: {"score": None, "passed": None, "gating": True}
                    for name in ("tools", "retrieval", "answer_accuracy")
                },
                "recording": {"status": "stale"},
            }
        )

    lines = summary.lines(orphans=[], width=100)

    table = lines[: lines.index("") if "" in lines else len(lines)]
    assert max(map(len, table)) <= 100, "\n".join(lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("shop::order-status-0"))
    below = [line.strip() for line in lines[start + 1 : start + 4] if line.startswith(" ")]
    shown = " ".join([lines[start][lines[0].index("first failure") :].strip(), *below])
    # It was cut to the room left: `STALE: stale recording: code.shopbot/to...`.
    assert shown.startswith(f"STALE: {reason}"), "\n".join(lines)


# ---- 4. cosmetic ------------------------------------------------------------------------------
def test_a_not_recorded_line_says_the_error_once_without_our_class(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service)
    project.write_text("service_url.txt", "http://127.0.0.1:9/v1")  # the service is down

    # not retried (a refused connection is transient: docs/system.md): the error as raised
    live = project.run("--live", "--eval-system-retries", "0")

    lines = [line for line in changes_section(live) if "not recorded: memory::ben-car" in line]
    assert len(lines) == 1, changes_section(live)
    assert "UserSetupError" not in lines[0]  # formerly `(UserSetupError: setup_user(...`
    assert lines[0].count("Connection refused") == 1, lines[0]
    assert (
        "not recorded: memory::ben-car (setup_user('u-ben') of suite 'memory' raised " in (lines[0])
    )


def with_a_case_without_user(doc: dict[str, Any]) -> dict[str, Any]:
    doc["cases"].append({"id": "hello", "input": "hello", "reference": "Hello."})
    return doc


def test_a_case_without_a_user_has_no_row_in_the_per_user_table(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service)
    project.write_suite(with_a_case_without_user(memory_suite()))

    live = project.run("--live")

    lines = summary_section(live)
    start = next(i for i, line in enumerate(lines) if line.startswith("user "))
    rows = lines[start + 1 : lines.index("", start)]
    names = [row.split()[0] for row in rows]
    assert names[:2] == ["u-ana", "u-ben"] and "-" not in names, lines  # it had a `-` row


def test_the_stage_legend_is_printed_only_when_a_table_abbreviates(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service)

    live = project.run("--live")

    lines = summary_section(live)
    assert any("mean context_completeness" in line for line in lines), lines  # the full name
    assert not any(line.startswith("stages:") for line in lines), lines


def test_an_ingestion_that_wrote_nothing_is_not_called_recorded(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service).run("--live").assert_outcomes(passed=2)
    project.write_text("data/ben.json", json.dumps(["Ben has a blue car.", "Ben likes tea."]))

    live = project.run("--live")

    line = next(line for line in summary_section(live) if line.startswith("ingestion: "))
    # Both users were ingested again (no user_ready); only Ben's recording was written.
    assert line.startswith("ingestion: 2 users: 1 recorded ("), line
    assert ", 1 ingested again, recording unchanged (" in line, line


def test_report_md_escapes_only_what_markdown_needs(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service).run("--live", "--eval-report", "r")

    markdown = (project.root / "r" / "report.md").read_text()

    # Formerly 33 escapes in 93 lines: `\(bootstrap\)`, `\[0.769, 1.000\]`, `95% CI \(Wilson\)`.
    needless = [m for m in ("\\(", "\\)", "\\[", "\\]", "\\!") if m in markdown]
    assert not needless, markdown
    assert "(Wilson)" in markdown
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    assert "<a " not in html and "<img" not in html


# ---- 5. the docs say what the run says ------------------------------------------------------
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_case_files_md_quotes_the_ingestion_setting_message_as_the_run_prints_it(
    project: Project, service: MemoryService
) -> None:
    row = next(
        line
        for line in (DOCS / "case-files.md").read_text().splitlines()
        if line.startswith("| `ingestion` |")
    )
    quoted = re.search(r"naming it[^`]*`([^`]+)`", row)
    assert quoted, row  # formerly `ingestion.chunk_size changed (200 -> 400)`: never printed
    memory_project(project, service, ingestion={"chunk_size": 200}).run("--live")
    project.edit_suite("cases/memory.json", lambda doc: doc["ingestion"].update(chunk_size=400))

    replay = project.run()

    assert quoted.group(1) in output(replay), output(replay)


# The system's state of a user is gone when `gone.json` names the user.
WITH_USER_READY = (
    INGESTING_SYSTEM
    + """

class Remembering(Memory):
    def user_ready(self, user, result):
        gone = ROOT / "gone.json"
        return user.id not in (json.loads(gone.read_text()) if gone.exists() else [])


system = Remembering()
"""
)


def test_ingest_only_ingests_again_a_current_user_whose_state_user_ready_says_is_gone(
    project: Project, service: MemoryService
) -> None:
    memory_project(project, service, WITH_USER_READY).run("--live").assert_outcomes(passed=2)
    project.write_text("gone.json", json.dumps(["u-ben"]))
    before = service.requests

    ingest = project.run("--eval-ingest-only")

    text = output(ingest)
    assert "memory::u-ana: reused: its recording is current" in text, text
    # Ingested again, alone (to the same result here: its recording stays as it was).
    assert "memory::u-ben: ingested again in " in text, text
    assert service.requests == before + 2  # Ben's two chat lines
    # The docs say so (they said that alone the flag skips every current user).
    section = (DOCS / "memory.md").read_text().split("## Ingestion alone")[1]
    said = "unless the system has a `user_ready` that says the user's ingested state is gone"
    assert said in " ".join(section.split())


# ---- 6. the importers read through the bounded readers (issue 30 part 4) -----------------------
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "hotpotqa.json"
# The old code read `/dev/zero` until the memory ran out: those runs are in another interpreter
# under a cap on its address space (tests/guarded.py), killed if they block.
guarded_interpreter = guarded_interpreter_fixture(700_000_000, 60)


@pytest.mark.parametrize("given", ["FILE", "--ids"])
def test_an_importer_given_dev_zero_says_so_naming_the_file(
    project: Project, guarded_interpreter: GuardedInterpreter, given: str
) -> None:
    shutil.copy(SAMPLE, project.root / "hotpotqa.json")
    (project.root / "zero").symlink_to("/dev/zero")
    source, more = ("zero", []) if given == "FILE" else ("hotpotqa.json", ["--ids", "zero"])
    args = ["import", "hotpotqa", source, "-o", "cases/bench.json", *more]

    result = guarded_interpreter.run(project.root, *args, module="pytest_evalcases")

    assert result.ret == 2, output(result)  # formerly a MemoryError traceback
    what = "the benchmark file" if given == "FILE" else "the ids file"
    assert result.errlines == [
        f"error: zero: {what} is a device, not a regular file: it was not read; give the path "
        "of a file",
        "nothing was written",
    ], output(result)


def test_an_ids_file_over_the_cap_is_refused_naming_its_size_and_the_cap(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_evalcases.__main__ import main
    from pytest_evalcases.importers.base import IDS_FILE_CAP

    monkeypatch.chdir(project.root)
    shutil.copy(SAMPLE, "hotpotqa.json")
    with open("ids.txt", "wb") as ids:  # sparse: no byte of it is written
        os.truncate(ids.fileno(), IDS_FILE_CAP + 10_000_000)

    code = main(
        ["import", "hotpotqa", "hotpotqa.json", "-o", "cases/bench.json", "--ids", "ids.txt"]
    )

    assert code == 2
    cap = IDS_FILE_CAP // 1_000_000
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: ids.txt: the ids file is {cap + 10}.0 MB, over the cap of {cap} MB; an ids "
        "file holds case ids or 0-based indices, one a line (or a JSON array): check that it is "
        "the file you meant"
    )
