"""Retries of the system's calls (issue 32, part 3), end to end: a loopback service that fails
twice (a 503, a reset connection) then answers is recorded with the 2 retries shown and only the
good exchange in the case's .http.json; a declared transient exception is retried, an error of
the code is not; --eval-timeout stops the retries. EVALCASES_SYSTEM_BACKOFF makes the waits a
few milliseconds."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from evalhelpers import Project, error_block

pytest.importorskip("httpx")
pytest.importorskip("vcr")


# What the service answers: a priced model's usage, so a request's cost is known.
ANSWER = {
    "answer": "30 days",
    "model": "gpt-4o-mini",
    "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
}


class FlakyService:
    """A loopback model service: each request takes the next fault in `faults` ("503",
    "reset"), then every request is answered 200 with a JSON answer and its usage."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.requests = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("content-length") or 0))
                service.requests += 1
                fault = service.faults.pop(0) if service.faults else None
                if fault == "hang":  # no answer before the client gives up
                    time.sleep(3)
                    return
                if fault == "reset":  # RST instead of a reply: ECONNRESET at the client
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()
                    self.close_connection = True
                    return
                status = 503 if fault == "503" else 200
                body = {"error": "overloaded"} if status == 503 else dict(ANSWER)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads, self.server.block_on_close = True, False
        self.port = self.server.server_address[1]


@pytest.fixture
def service() -> Iterator[FlakyService]:
    flaky = FlakyService()
    thread = threading.Thread(target=flaky.server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield flaky
    flaky.server.shutdown()
    flaky.server.server_close()


AGENT = """\
import json
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent


class Flaky(Exception):
    "The system's own: its backend was busy."


def note(what):
    with open(ROOT / "calls.log", "a") as log:
        log.write(what + "\\n")


def run(case):
    note("run")
    steer = json.loads((ROOT / "steer.json").read_text())
    raises = steer.get("raise", [])
    if raises:  # the next error to raise, once
        (ROOT / "steer.json").write_text(json.dumps({{**steer, "raise": raises[1:]}}))
        raise {{"Flaky": Flaky, "ValueError": ValueError}}[raises[0]]("busy")
    answer = None
    for step in range(steer.get("steps", 1)):  # a step's request each: search, then answer
        reply = httpx.post("http://127.0.0.1:{port}/v1/answer", json={{"q": case["input"]}})
        reply.raise_for_status()
        answer = reply.json()["answer"]
    return {{"answer": answer}}
"""


def suite(**fields: object) -> dict[str, object]:
    return {
        "name": "m",
        "system": "agent:run",
        "stages": ["exact_match"],
        "cases": [{"id": "q", "input": "Return window?", "reference": "30 days"}],
        **fields,
    }


@pytest.fixture
def agent(project: Project, service: FlakyService, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("EVALCASES_SYSTEM_BACKOFF", "0.001")
    project.write_text("agent.py", AGENT.format(port=service.port))
    project.write_text("steer.json", "{}")
    project.write_suite(suite())
    return project


def calls(project: Project) -> int:
    return (project.root / "calls.log").read_text().count("run\n")


def test_a_503_and_a_reset_are_retried_and_only_the_good_exchange_is_recorded(
    agent: Project, service: FlakyService
) -> None:
    service.faults = ["503", "reset"]

    result = agent.run("--live", "--eval-report", "r")

    result.assert_outcomes(passed=1)
    assert service.requests == 3 and calls(agent) == 3
    case = json.loads((agent.root / "r/results.json").read_text())["cases"][0]
    retries = case["recording"]["system_retries"]
    assert [retry["reason"].split(":")[0] for retry in retries] == [
        "HTTP 503",
        retries[1]["reason"].split(":")[0],
    ]
    assert "Server error '503 Service Unavailable'" in retries[0]["reason"]
    # httpx says a reset its own way (ReadError, RemoteProtocolError): a transient class
    assert retries[1]["reason"].split(":")[0] in ("ReadError", "RemoteProtocolError")
    assert all(0.001 <= retry["wait_s"] <= 0.003 for retry in retries)
    http = json.loads((agent.root / "cassettes/m/q.http.json").read_text())
    assert [x["response"]["status"]["code"] for x in http["interactions"]] == [200]
    output = "\n".join(result.outlines)
    assert "system retries: 2 (m::q 2)" in output
    assert "m::q (new)\n  system run retried 2 times (HTTP 503, " in output  # recording changes
    assert ", 2 system retries" in output  # the progress line

    replay = agent.run()  # nothing to retry: no system call

    replay.assert_outcomes(passed=1)
    assert calls(agent) == 3 and "system retries" not in "\n".join(replay.outlines)


def test_a_declared_transient_exception_is_retried_an_undeclared_one_is_not(
    agent: Project,
) -> None:
    agent.write_text("steer.json", json.dumps({"raise": ["Flaky"]}))

    undeclared = agent.run("--live")

    undeclared.assert_outcomes(errors=1)
    assert calls(agent) == 1
    assert error_block(undeclared, "m::q").startswith("Flaky: busy")

    agent.write_suite(suite(system_retries={"transient": ["agent:Flaky"]}))
    agent.write_text("steer.json", json.dumps({"raise": ["Flaky", "Flaky"]}))

    declared = agent.run("--live")

    declared.assert_outcomes(passed=1)
    assert calls(agent) == 1 + 3
    assert "system retries: 2 (m::q 2)" in "\n".join(declared.outlines)


def test_an_error_of_the_code_is_never_retried(agent: Project) -> None:
    agent.write_suite(suite(system_retries={"transient": ["agent:Flaky"]}))
    agent.write_text("steer.json", json.dumps({"raise": ["ValueError", "Flaky"]}))

    result = agent.run("--live")

    result.assert_outcomes(errors=1)
    assert calls(agent) == 1
    assert error_block(result, "m::q").startswith("ValueError: busy")
    assert "system retries" not in "\n".join(result.outlines)


def test_the_retries_stop_within_eval_timeout(
    agent: Project, service: FlakyService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.4 s, then 0.8 s: the second wait would end past the 1 s (an attempt started near the
    # bound is cut by it, as the next test shows: the waits here leave no attempt there)
    monkeypatch.setenv("EVALCASES_SYSTEM_BACKOFF", "0.4")
    service.faults = ["503"] * 20

    result = agent.run("--live", "--eval-timeout", "1")

    result.assert_outcomes(errors=1)
    block = error_block(result, "m::q").splitlines()
    first = re.fullmatch(
        r"run\(case\) of m::q still failed after 1 retry \(HTTP 503\): the next wait of "
        r"0\.[89] s would pass the 1 s of --eval-timeout, or the suite's \"timeout\" "
        r"\(POST http://127\.0\.0\.1:\d+/v1/answer\)",
        block[0],
    )
    assert first is not None, block[0]
    assert service.requests == 2
    assert block[1].startswith(
        "  caused by HTTPStatusError: Server error '503 Service Unavailable'"
    )
    assert re.fullmatch(r"  at agent\.py:\d+ in run: reply\.raise_for_status\(\)", block[2])
    assert not (agent.root / "cassettes/m/q.json").exists()


def test_a_failed_attempts_cost_counts_but_its_exchanges_are_not_recorded(
    agent: Project, service: FlakyService
) -> None:
    from pytest_evalcases.core.pricing import cost_usd

    agent.write_text("steer.json", json.dumps({"steps": 2}))
    service.faults = ["", "503"]  # attempt 1: its first request paid for, its second refused

    result = agent.run("--live", "--eval-report", "r")

    result.assert_outcomes(passed=1)
    assert service.requests == 4 and calls(agent) == 2
    http = json.loads((agent.root / "cassettes/m/q.http.json").read_text())
    assert [x["response"]["status"]["code"] for x in http["interactions"]] == [200, 200]
    case = json.loads((agent.root / "r/results.json").read_text())["cases"][0]
    one_request = cost_usd("gpt-4o-mini", 1000, 500)
    assert one_request is not None and one_request > 0
    assert case["recording"]["spent_usd"] == pytest.approx(one_request)  # the failed attempt's
    assert len(case["recording"]["system_retries"]) == 1


def test_an_attempt_that_hangs_after_a_retry_ends_at_the_same_timeout(
    agent: Project, service: FlakyService
) -> None:
    service.faults = ["503", "hang"]

    result = agent.run("--live", "--eval-timeout", "1")

    result.assert_outcomes(errors=1)
    assert error_block(result, "m::q").startswith(
        "run(case) of m::q did not finish within 1 s (retried 1 time); raise the limit with "
        "--eval-timeout"
    )
    assert service.requests == 2


MEMORY_AGENT = """\
import httpx


class Memory:
    def setup_user(self, user):
        reply = httpx.post("http://127.0.0.1:{port}/v1/ingest", json={{"user": user.id}})
        reply.raise_for_status()
        return {{"memory": "m-1"}}

    def run(self, case):
        return {{"answer": "30 days"}}


system = Memory()
"""


def test_a_users_ingestion_is_retried_and_records_only_the_good_exchange(
    agent: Project, service: FlakyService
) -> None:
    agent.write_text("memory.py", MEMORY_AGENT.format(port=service.port))
    agent.write_text("data/ana.json", "[]")
    doc = suite(system="memory:system", users=[{"id": "u-ana", "chats": "data/ana.json"}])
    doc["cases"][0]["user"] = "u-ana"  # type: ignore[index]
    agent.write_suite(doc)
    service.faults = ["503"]

    result = agent.run("--live", "--eval-report", "r")

    result.assert_outcomes(passed=1)
    assert service.requests == 2
    http = json.loads((agent.root / "cassettes/m/users/u-ana.http.json").read_text())
    assert [x["response"]["status"]["code"] for x in http["interactions"]] == [200]
    case = json.loads((agent.root / "r/results.json").read_text())["cases"][0]
    assert case["ingestion"]["retries"] == 1
    assert "system retries: 1 (m::users/u-ana (ingestion) 1)" in "\n".join(result.outlines)
