"""HTTP cassettes end to end: `--live` records each case's HTTP into `<id>.http.json`, and
`--replay-http` runs the real system offline with vcrpy serving those exchanges.

The project's system (`httpsys.py`) asks the loopback EchoServer (tests/echo_server.py, started
in this process on a random port) over one client library per function: the openai SDK (over
httpx2), httpx (sync and async), requests and aiohttp. `behaviour.json` steers what it sends
(`style`, `request_id`, key order) and what it makes of the reply (`suffix`), so a test changes
the requests, or only the trace, without touching the code. Every run is a pytest subprocess.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from echo_server import EchoServer
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    output,
    summary_section,
)
from judge_server import JudgeServer, judge_server_fixture

HTTP_SYSTEM = '''\
"""Systems that ask a loopback server over HTTP, one per client library."""
import json
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def settings():
    steer = ROOT / "behaviour.json"
    return {**json.loads((ROOT / "server.json").read_text()),
            **(json.loads(steer.read_text()) if steer.exists() else {})}


def reverse_keys(value):
    if isinstance(value, dict):
        return {key: reverse_keys(value[key]) for key in reversed(list(value))}
    return value


def request_body(case, steer):
    body = {"case": case["id"], "question": case["input"], "style": steer.get("style", "plain"),
            "metadata": {"client": "evals", "request_id": steer.get("request_id", "req-1")}}
    return reverse_keys(body) if steer.get("reverse_keys") else body


def endpoint(case, steer):
    delay = case.get("delay")
    return steer["url"] + "/ask" + (f"?delay={delay}" if delay else "")


def knock(steer):
    """A raw socket to the server: no HTTP client, nothing vcrpy can record or serve."""
    host, port = steer["url"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5):
        pass


def trace(case, answers, steer):
    answer = (answers[-1] if answers else "I did not ask anyone.") + steer.get("suffix", "")
    return {
        "answer": answer,
        "tool_calls": [{"name": "ask", "args": {"question": case["input"]}}] * len(answers),
        "tool_outputs": [{"tool": "ask", "content": text} for text in answers],
        "retrieved": [],
        "context": answers,
    }


def ask(case, post):
    """Ask `requests` times (default once) with `post(url, body) -> reply JSON`."""
    steer = settings()
    if case.get("raw_socket"):
        knock(steer)
    answers = [post(endpoint(case, steer), request_body(case, steer))["answer"]
               for _ in range(case.get("requests", 1))]
    return trace(case, answers, steer)


async def ask_async(case, post):
    steer = settings()
    answers = [(await post(endpoint(case, steer), request_body(case, steer)))["answer"]
               for _ in range(case.get("requests", 1))]
    return trace(case, answers, steer)


def run_httpx(case):
    import httpx

    with httpx.Client(timeout=5) as client:
        return ask(case, lambda url, body: client.post(url, json=body).raise_for_status().json())


async def run_httpx_async(case):
    import httpx

    async with httpx.AsyncClient(timeout=5) as client:
        async def post(url, body):
            return (await client.post(url, json=body)).raise_for_status().json()

        return await ask_async(case, post)


def run_requests(case):
    import requests

    def post(url, body):
        reply = session.post(url, json=body, timeout=5)
        reply.raise_for_status()
        return reply.json()

    with requests.Session() as session:
        return ask(case, post)


async def run_aiohttp(case):
    import aiohttp

    async with aiohttp.ClientSession(raise_for_status=True) as session:
        async def post(url, body):
            async with session.post(url, json=body) as reply:
                return await reply.json()

        return await ask_async(case, post)


async def run_in_executor(case):
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, run_requests, case)


def run_in_pool(case):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return pool.submit(run_httpx, case).result()


def run_openai(case):
    from openai import OpenAI

    steer = settings()
    client = OpenAI(base_url=steer["url"] + "/v1", api_key="sk-test-not-a-key", max_retries=0)
    answers = []
    for _ in range(case.get("requests", 1)):
        reply = client.chat.completions.create(
            model="echo-1",
            messages=[{"role": "system", "content": f"Answer {steer.get('style', 'plain')}."},
                      {"role": "user", "content": case["input"]}],
            temperature=0,
        )
        answers.append(reply.choices[0].message.content)
    return trace(case, answers, steer)
'''

CLIENTS = ["openai", "httpx", "httpx_async", "requests", "aiohttp"]
# Where the body each client sends says `style`: what a changed request differs at.
STYLE_PATH = {"openai": "$.messages[0].content"}
STYLE_VALUES = {"openai": ("'Answer plain.'", "'Answer pirate.'")}
PATH_OF = {"openai": "/v1/chat/completions"}


def http_case(case_id: str, text: str, **fields: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": case_id,
        "input": text,
        "expected_tools": ["ask"],
        "reference": f"you asked: {text}",
    }
    case.update(fields)
    return case


def http_suite(
    name: str, client: str = "httpx", cases: list[Any] | None = None, **fields: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": name,
        "system": f"httpsys:run_{client}",
        "stages": ["tools", "exact_match"],
        "cases": cases
        if cases is not None
        else [http_case("alpha", "alpha beta"), http_case("gamma", "gamma delta")],
    }
    doc.update(fields)
    return doc


def http_project(project: Project, server: EchoServer, *suites: dict[str, Any]) -> Project:
    project.write_text("httpsys.py", HTTP_SYSTEM)
    project.write_text("server.json", json.dumps({"url": server.url}))
    for doc in suites:
        project.write_suite(doc)
    return project


def http_doc(project: Project, suite: str, case_id: str) -> dict[str, Any]:
    return json.loads((project.root / "cassettes" / suite / f"{case_id}.http.json").read_text())


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    """suite::id -> outcome, from the per-stage summary's case table."""
    return {
        line.split()[0]: line.split()[2]
        for line in summary_section(result)
        if "::" in line.split(" ", 1)[0]
    }


def message_of(result: pytest.RunResult, case: str, marker: str) -> str:
    """The line of `case`'s error block that holds `marker`."""
    block = error_block(result, case)
    return next((line.strip() for line in block.splitlines() if marker in line), block)


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


judge_server = judge_server_fixture()


@pytest.fixture
def echo_server() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


# The subprocesses inherit this process's environment: no key, endpoint or proxy leaks in.
LEAKY_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)


# ---- each client: record, replay offline, a changed request is stale ---------------------------
@pytest.mark.parametrize("client", CLIENTS)
def test_client_records_and_replays_offline(
    project: Project, echo_server: EchoServer, client: str
) -> None:
    http_project(project, echo_server, http_suite("http", client))

    recorded = project.run("--live", "-p", "no:cacheprovider")

    recorded.assert_outcomes(passed=2)
    assert echo_server.count() == 2
    doc = http_doc(project, "http", "alpha")
    assert (doc["format"], doc["suite"], doc["case"]) == (1, "http", "alpha")
    [exchange] = doc["interactions"]
    path = PATH_OF.get(client, "/ask")
    assert exchange["request"]["method"] == "POST"
    assert exchange["request"]["uri"] == f"{echo_server.url}{path}"
    assert "alpha beta" in json.dumps(exchange["request"]["body"]["json"])  # parsed, not a string
    assert exchange["response"]["status"]["code"] == 200
    assert "you asked: alpha beta" in json.dumps(exchange["response"]["body"]["json"])

    port = echo_server.port
    echo_server.stop()  # from here on, a request that left the process would be refused
    replayed = project.run("--replay-http", "-p", "no:cacheprovider")

    replayed.assert_outcomes(passed=2)
    assert "2 replayed (2 ran today's code over recorded HTTP)" in recordings_line(replayed)

    project.steer(style="pirate")
    changed = project.run("--replay-http", "-p", "no:cacheprovider")

    changed.assert_outcomes(errors=2)
    assert outcomes(changed) == {"http::alpha": "stale", "http::gamma": "stale"}
    old, new = STYLE_VALUES.get(client, ("'plain'", "'pirate'"))
    assert message_of(changed, "http::alpha", "stale recording") == (
        f"stale recording: the system sent a request that is not recorded: POST "
        f"127.0.0.1:{port}{path}; closest recorded request differs at "
        f"{STYLE_PATH.get(client, '$.style')} ({old} -> {new}) — re-record with --live"
    )
    assert echo_server.count() == 2


# ---- overlapping cases ------------------------------------------------------------------------
@pytest.mark.parametrize("client", ["httpx_async", "aiohttp", "requests"])
def test_overlapping_cases_each_record_only_their_own_exchanges(
    project: Project, echo_server: EchoServer, client: str
) -> None:
    ids = ["c1", "c2", "c3", "c4"]
    cases = [http_case(case_id, f"question {case_id}", requests=2, delay=0.1) for case_id in ids]
    http_project(project, echo_server, http_suite("slow", client, cases))

    result = project.run("--live", "--eval-concurrency", "4", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=4)
    assert echo_server.count() == 8
    assert echo_server.max_in_flight >= 2, "the cases did not overlap: the test proves nothing"
    for case_id in ids:
        interactions = http_doc(project, "slow", case_id)["interactions"]
        assert [i["request"]["body"]["json"]["case"] for i in interactions] == [case_id] * 2
        assert all(
            i["response"]["body"]["json"]["received"]["case"] == case_id for i in interactions
        )

    echo_server.stop()
    project.run("--replay-http", "-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_request_overlapping_a_vcrpy_send_in_another_thread_is_recorded(
    echo_server: EchoServer,
) -> None:
    """vcrpy's http.client/urllib3 stubs open a `force_reset` window (the real client classes
    put back, process-wide) while they send. A case's request in another thread at that moment
    must still go through the run's patches. In process: the layer patches this process."""
    import httpx
    import requests
    import vcr.patch

    from pytest_evalcases.http.router import CaseHttp, HttpLayer

    layer = HttpLayer()
    layer.start()
    sending, finish = threading.Event(), threading.Event()

    def another_case_sending() -> None:
        with vcr.patch.force_reset():
            sending.set()
            finish.wait(10)

    other = threading.Thread(target=another_case_sending)
    other.start()
    try:
        assert sending.wait(10)
        with layer.case(CaseHttp("http::alpha")) as case:
            requests.post(f"{echo_server.url}/ask", json={"question": "requests"}, timeout=5)
            httpx.post(f"{echo_server.url}/ask", json={"question": "httpx"}, timeout=5)
            request = urllib.request.Request(
                f"{echo_server.url}/ask", method="POST", data=b'{"question": "urllib"}'
            )
            with urllib.request.urlopen(request, timeout=5) as reply:
                reply.read()
    finally:
        finish.set()
        other.join(10)
        layer.stop()

    assert echo_server.count() == 3
    assert [i["request"]["body"]["json"]["question"] for i in case.interactions] == [
        "requests",
        "httpx",
        "urllib",
    ]


@pytest.mark.parametrize("client", ["in_executor", "in_pool"])
def test_requests_made_in_the_systems_thread_pool_belong_to_its_case(
    project: Project, echo_server: EchoServer, client: str
) -> None:
    """`loop.run_in_executor` and a pool of the system's own start threads with no context."""
    ids = ["c1", "c2", "c3"]
    cases = [http_case(case_id, f"question {case_id}", delay=0.1) for case_id in ids]
    http_project(project, echo_server, http_suite("pooled", client, cases))

    project.run("--live", "--eval-concurrency", "3", "-p", "no:cacheprovider").assert_outcomes(
        passed=3
    )

    assert echo_server.count() == 3
    for case_id in ids:
        interactions = http_doc(project, "pooled", case_id)["interactions"]
        assert [i["request"]["body"]["json"]["case"] for i in interactions] == [case_id]
    echo_server.stop()
    project.run("--replay-http", "-p", "no:cacheprovider").assert_outcomes(passed=3)


# ---- the judge's own requests ------------------------------------------------------------------
def test_judge_requests_are_not_recorded(
    project: Project,
    echo_server: EchoServer,
    judge_server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The system and the openai judge both use aiohttp, in the same event loop."""
    http_project(
        project, echo_server, http_suite("judged", "aiohttp", stages=["tools", "answer_accuracy"])
    )
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)

    result = project.run("--live", "--eval-judge", "openai:gpt-4o-mini", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)
    assert judge_server.kinds() == ["accuracy", "accuracy"]  # the judge did run, over HTTP
    for case_id in ("alpha", "gamma"):
        assert project.cassette("judged", case_id)["verdicts"]["answer_accuracy"]["score"] == 1.0
        uris = [i["request"]["uri"] for i in http_doc(project, "judged", case_id)["interactions"]]
        assert uris == [f"{echo_server.url}/ask"]
    judge_port = judge_server.base_url.split(":")[2].split("/")[0]
    assert not [
        p
        for p in (project.root / "cassettes").rglob("*.http.json")
        if judge_port in p.read_text() or "/chat/completions" in p.read_text()
    ]

    # Judging today's offline trace: the network guard is up, yet the judge reaches its server.
    http_files = project.files(http=True)
    echo_server.stop()
    project.steer(suffix=" Indeed.")
    rejudged = project.run(
        "--replay-http",
        "--live-judges",
        "--eval-judge",
        "openai:gpt-4o-mini",
        "-p",
        "no:cacheprovider",
    )

    rejudged.assert_outcomes(passed=2)
    assert judge_server.kinds() == ["accuracy"] * 4
    assert all(
        "you asked: alpha beta Indeed." in request.prompt
        for request in judge_server.requests[2:]
        if "alpha" in request.prompt
    )
    assert project.cassette("judged", "alpha")["trace"]["answer"] == "you asked: alpha beta Indeed."
    assert {
        name: content
        for name, (content, _) in project.files(http=True).items()
        if name.endswith(".http.json")
    } == {name: content for name, (content, _) in http_files.items() if name.endswith(".http.json")}


# ---- one recorded project, copied by each test -------------------------------------------------
TEMPLATE_SUITES = [
    http_suite(
        "http",
        cases=[
            http_case("alpha", "alpha beta"),
            http_case("gamma", "gamma delta"),
            http_case(
                "quiet",
                "say nothing",
                requests=0,
                expected_tools=[],
                reference="I did not ask anyone.",
            ),
        ],
    ),
    http_suite(
        "ignoring", cases=[http_case("alpha", "alpha beta")], http_ignore=["$.metadata.request_id"]
    ),
    http_suite(
        "judged",
        cases=[http_case("alpha", "alpha beta")],
        stages=["tools", "faithfulness"],
        judge="lexical",
    ),
    http_suite("sock", cases=[http_case("alpha", "alpha beta", raw_socket=True)]),
]


@pytest.fixture(scope="module")
def template_server() -> Iterator[EchoServer]:
    """Up for the whole module: a test proves its replay sent nothing by the request count."""
    with EchoServer() as server:
        yield server


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, template_server: EchoServer) -> Path:
    root = tmp_path_factory.mktemp("http-template")
    project = http_project(Project(root).write_base(), template_server, *TEMPLATE_SUITES)
    with pytest.MonkeyPatch.context() as env:  # module scope: before _clean_env
        for name in LEAKY_ENV:
            env.delenv(name, raising=False)
        result = project.run("--live", "-p", "no:cacheprovider")
    assert_not_aborted(result)
    result.assert_outcomes(passed=6)
    return root


@pytest.fixture
def recorded(project: Project, template: Path, template_server: EchoServer) -> Project:
    project.copy_from(template)
    project.requests_before = template_server.count()  # type: ignore[attr-defined]
    return project


def sent_since_copy(project: Project, server: EchoServer) -> int:
    return server.count() - project.requests_before  # type: ignore[attr-defined]


def test_case_that_made_no_request_gets_an_empty_recording(
    recorded: Project, template_server: EchoServer
) -> None:
    assert http_doc(recorded, "http", "quiet") == {
        "case": "quiet",
        "format": 1,
        "interactions": [],
        "suite": "http",
    }

    result = recorded.run("--replay-http", "cases/http.json", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)
    assert sent_since_copy(recorded, template_server) == 0


def test_recording_older_than_http_recording_is_missing(recorded: Project) -> None:
    (recorded.root / "cassettes" / "http" / "alpha.http.json").unlink()

    result = recorded.run("--replay-http", "cases/http.json", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=2, errors=1)
    assert outcomes(result)["http::alpha"] == "missing"
    assert message_of(result, "http::alpha", "no HTTP") == (
        "no HTTP recording for http::alpha; record it with --live"
    )
    # The trace replay does not need it.
    recorded.run("cases/http.json", "-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_json_key_order_never_matters(recorded: Project, template_server: EchoServer) -> None:
    recorded.steer(reverse_keys=True)

    result = recorded.run("--replay-http", "cases/http.json", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=3)
    assert sent_since_copy(recorded, template_server) == 0


def test_http_ignore_lets_a_listed_field_differ(recorded: Project) -> None:
    recorded.steer(request_id="req-2")

    result = recorded.run(
        "--replay-http", "cases/http.json", "cases/ignoring.json", "-p", "no:cacheprovider"
    )

    # Listed: the cases that did not pass; http::quiet and ignoring::alpha passed.
    assert outcomes(result) == {"http::alpha": "stale", "http::gamma": "stale"}
    result.assert_outcomes(passed=2, errors=2)
    assert "closest recorded request differs at $.metadata.request_id ('req-1' -> 'req-2')" in (
        message_of(result, "http::alpha", "stale recording")
    )


def test_network_guard_refuses_a_raw_socket_unless_the_host_is_allowed(
    recorded: Project, template_server: EchoServer
) -> None:
    assert http_doc(recorded, "sock", "alpha")["interactions"][0]["request"]["uri"].endswith("/ask")

    refused = recorded.run("--replay-http", "cases/sock.json", "-p", "no:cacheprovider")

    refused.assert_outcomes(errors=1)
    assert message_of(refused, "sock::alpha", "network guard").startswith(
        f"stale recording: network guard: the system opened a connection to "
        f"127.0.0.1:{template_server.port}, which the HTTP recording cannot serve"
    )
    assert '"allow_hosts"' in error_block(refused, "sock::alpha")

    recorded.edit_suite("cases/sock.json", lambda doc: doc.update(allow_hosts=["127.0.0.1"]))
    allowed = recorded.run("--replay-http", "cases/sock.json", "-p", "no:cacheprovider")

    allowed.assert_outcomes(passed=1)
    assert sent_since_copy(recorded, template_server) == 0  # the socket sent no request


def test_changed_answer_needs_rejudging_then_live_judges_judges_it(
    recorded: Project, template_server: EchoServer
) -> None:
    recorded.steer(suffix=" Checked twice.")  # same requests, another answer

    result = recorded.run("--replay-http", "cases/judged.json", "-p", "no:cacheprovider")

    # Not evaluated: an error, in the summary and in pytest's terms.
    result.assert_outcomes(errors=1)
    assert outcomes(result) == {"judged::alpha": "error"}
    block = error_block(result, "judged::alpha")
    assert "faithfulness" in block and "needs re-judging: answer changed" in block
    assert "--live-judges" in block

    rejudged = recorded.run(
        "--replay-http", "--live-judges", "cases/judged.json", "-p", "no:cacheprovider"
    )

    rejudged.assert_outcomes(passed=1)
    doc = recorded.cassette("judged", "alpha")
    assert doc["trace"]["answer"] == "you asked: alpha beta Checked twice."
    claims = [c["claim"] for c in doc["verdicts"]["faithfulness"]["details"]["claims"]]
    assert claims == ["you asked: alpha beta Checked twice."]
    assert sent_since_copy(recorded, template_server) == 0
    recorded.run("--replay-http", "cases/judged.json", "-p", "no:cacheprovider").assert_outcomes(
        passed=1
    )


def test_live_stale_after_a_refactor_refreshes_keys_without_a_request(
    recorded: Project, template_server: EchoServer
) -> None:
    source = (recorded.root / "httpsys.py").read_text()
    refactored = source.replace("answers", "replies")  # a local name, in every function
    assert refactored.count("replies") > 10
    recorded.write_text("httpsys.py", refactored)
    old_key = recorded.cassette("http", "alpha")["key"]

    stale = recorded.run("cases/http.json", "-p", "no:cacheprovider")

    stale.assert_outcomes(errors=3)
    assert "stale recording: code.httpsys changed" in message_of(stale, "http::alpha", "stale")

    refreshed = recorded.run(
        "--replay-http", "--live-stale", "cases/http.json", "-p", "no:cacheprovider"
    )

    refreshed.assert_outcomes(passed=3)
    assert sent_since_copy(recorded, template_server) == 0
    new_key = recorded.cassette("http", "alpha")["key"]
    assert {name for name in old_key if old_key[name] != new_key[name]} == {"code.httpsys"}
    recorded.run("cases/http.json", "-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_ini_eval_replay_http_sets_how_to_replay_not_how_to_record(
    recorded: Project, template_server: EchoServer
) -> None:
    ini = recorded.root / "pytest.ini"
    ini.write_text(ini.read_text() + "eval_replay = http\n")

    replayed = recorded.run("cases/http.json", "-p", "no:cacheprovider")

    replayed.assert_outcomes(passed=3)
    assert "3 replayed (3 ran today's code over recorded HTTP)" in recordings_line(replayed)
    assert sent_since_copy(recorded, template_server) == 0

    # Re-recording needs no edit of the ini.
    live = recorded.run("--live", "cases/http.json", "-p", "no:cacheprovider")

    live.assert_outcomes(passed=3)
    assert recordings_line(live).startswith("recordings: 3 recorded")
    assert sent_since_copy(recorded, template_server) == 2  # alpha and gamma; quiet asks nobody

    recorded.cassette_path("http", "alpha").unlink()
    stale = recorded.run("--live-stale", "cases/http.json", "-p", "no:cacheprovider")

    stale.assert_outcomes(passed=3)
    assert recordings_line(stale).startswith("recordings: 1 recorded, 2 replayed")
    assert sent_since_copy(recorded, template_server) == 3


def test_replay_http_with_live_is_a_usage_error(recorded: Project) -> None:
    result = recorded.run("--replay-http", "--live", "-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--live" in output(result) and "--replay-http" in output(result)


# edit -> (suite, file, what it does to the file's JSON, the mode, the message)
HAND_EDITS = {
    "trace": (
        "http",
        "alpha.json",
        lambda d: d["trace"].update(answer="you asked: alpha beta!"),
        (),
        "recording edited by hand: trace changed",
    ),
    "verdict": (
        "judged",
        "alpha.json",
        lambda d: d["verdicts"]["faithfulness"].update(score=0.99),
        (),
        "recording edited by hand: verdict faithfulness changed",
    ),
    "http": (
        "http",
        "alpha.http.json",
        lambda d: d["interactions"][0]["response"]["body"]["json"].update(answer="edited"),
        ("--replay-http",),
        "mismatched recording: cassettes/http/alpha.http.json is not the HTTP recording",
    ),
}


@pytest.mark.parametrize("edit", list(HAND_EDITS))
def test_hand_edit_is_refused(recorded: Project, edit: str) -> None:
    suite, name, change, mode, message = HAND_EDITS[edit]
    path = recorded.root / "cassettes" / suite / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))

    result = recorded.run(*mode, f"cases/{suite}.json", "-p", "no:cacheprovider")

    assert outcomes(result)[f"{suite}::alpha"] == "error"
    assert message in message_of(result, f"{suite}::alpha", "edited by hand")
    assert f"cassettes/{suite}/{name}" in message_of(result, f"{suite}::alpha", "edited by hand")


def test_cassette_of_a_newer_format_is_never_replayed_nor_overwritten(
    recorded: Project,
) -> None:
    path = recorded.cassette_path("http", "alpha")
    doc = json.loads(path.read_text())
    doc["format"] = 99
    path.write_text(json.dumps(doc, indent=2))
    before = recorded.files(http=True)

    for mode in ((), ("--live",)):
        result = recorded.run(*mode, "cases/http.json", "-p", "no:cacheprovider")

        assert outcomes(result)["http::alpha"] == "error", mode
        message = message_of(result, "http::alpha", "newer")
        assert re.search(
            r"recorded by a newer pytest-evalcases \(cassette format 99; .*\); "
            r"upgrade pytest-evalcases",
            message,
        ), message
    after = recorded.files(http=True)
    assert {name: after[name] for name in before if "/alpha." in name} == {
        name: before[name] for name in before if "/alpha." in name
    }


def test_case_id_ending_in_http_is_refused(project: Project) -> None:
    project.write_text("httpsys.py", HTTP_SYSTEM)
    project.write_suite(
        http_suite(
            "http", cases=[http_case("page.http", "a b"), http_case("page", "c d", requests=0)]
        )
    )

    result = project.run("-p", "no:cacheprovider")

    assert_not_aborted(result)
    block = error_block(result, "cases[0]")
    assert "'page.http'" in block and "'.http' at the end is not allowed" in block
