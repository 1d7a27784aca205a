"""End to end: re-records stay byte-stable against a provider that makes values fresh on every call
(issue 20, part 2).

The agent is examples/openai-agent's (the real openai SDK, two tools, a loop that echoes each
tool call's id back), its trace also noting each call's id. Its model is the example's scripted
model behind a loopback server that answers as a real provider does: a random `chatcmpl-…` id,
random `call_…` tool-call ids, `created` = now, a random `system_fingerprint`, and `date`,
`x-request-id`, `openai-processing-ms` and rate-limit headers that differ on every reply.

- Two `--live` runs of the unchanged agent leave every cassette and `.http.json` byte for byte
  (same mtime), and the section counts every case `unchanged`.
- After a tool-description edit, `--live` rewrites the files, and their git diff holds the
  description (and the code key that names the edit), no provider id, time or request id; the
  section names the request field with its old and new words; the new pair replays offline.
"""

from __future__ import annotations

import importlib.util
import json
import random
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, changes_section, git

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai-agent"
CASES = ("refund-window", "order-shipped", "cancel-processing-order")
OLD_WORDS = "Search the Kettlebird knowledge base"
NEW_WORDS = "Search the Kettlebird help center"


def _example_model() -> Any:
    """The example's model_server module, under a name of its own (not put on sys.path)."""
    spec = importlib.util.spec_from_file_location(
        "openai_agent_model_server", EXAMPLE / "model_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FreshValuesModel:
    """The example's scripted model, answering like a real provider: same request, same content,
    but fresh ids, time, fingerprint and request headers on every reply. `issued` holds every
    fresh id and request id it sent."""

    def __init__(self) -> None:
        self.issued: list[str] = []
        self._lock = threading.Lock()
        model, owner = _example_model(), self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                reply = owner.fresh(model.complete(body))
                data = json.dumps(reply).encode()
                request_id = owner.issue(f"req_{secrets.token_hex(16)}")
                self.send_response(200)  # with a Date header (and Server)
                self.send_header("Content-Type", "application/json")
                self.send_header("x-request-id", request_id)
                self.send_header("openai-processing-ms", str(random.randint(100, 999)))
                self.send_header("x-ratelimit-remaining-requests", str(random.randint(1, 9999)))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def issue(self, value: str) -> str:
        with self._lock:
            self.issued.append(value)
        return value

    def fresh(self, reply: dict[str, Any]) -> dict[str, Any]:
        reply["id"] = self.issue(f"chatcmpl-{secrets.token_urlsafe(21)}")
        reply["created"] = int(time.time())
        reply["system_fingerprint"] = f"fp_{secrets.token_hex(5)}"
        for choice in reply["choices"]:
            for call in choice["message"].get("tool_calls") or ():
                call["id"] = self.issue(f"call_{secrets.token_urlsafe(18)}")
        return reply

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fresh_model() -> Iterator[FreshValuesModel]:
    server = FreshValuesModel()
    yield server
    server.close()


@pytest.fixture
def support(project: Project, fresh_model: FreshValuesModel, monkeypatch: pytest.MonkeyPatch):
    """The example's agent and three of its cases (one, two and three model requests each), in
    a git repository; the agent's trace notes each tool call's id as well.

    Its runs are in this process (`run_pytest`), which sets aside for each run the
    `support_agent` package the example's own tests import from the repository: a run in this
    copy imports the copy's."""
    shutil.copytree(EXAMPLE / "support_agent", project.root / "support_agent")
    agent = project.root / "support_agent" / "agent.py"
    noted = 'trace["tool_calls"].append({"name": name, "args": args})'
    assert noted in agent.read_text()
    agent.write_text(
        agent.read_text().replace(
            noted, 'trace["tool_calls"].append({"name": name, "args": args, "id": call.id})'
        )
    )
    suite = json.loads((EXAMPLE / "cases" / "support.json").read_text())
    suite["cases"] = [case for case in suite["cases"] if case["id"] in CASES]
    project.write_suite(suite)
    monkeypatch.setenv("SUPPORT_AGENT_BASE_URL", fresh_model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    git(project.root, "init", "-q")
    return Project(project.root)


def changed_lines(diff: str) -> list[str]:
    return [
        line
        for line in diff.splitlines()
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]


def test_two_live_runs_of_an_unchanged_agent_leave_every_file_byte_for_byte(
    support: Project, fresh_model: FreshValuesModel
) -> None:
    support.run("--live").assert_outcomes(passed=3)
    before = support.files(http=True)
    assert len(before) == 6
    first_ids = list(fresh_model.issued)
    fresh_model.issued.clear()

    again = support.run("--live")

    again.assert_outcomes(passed=3)
    assert len(fresh_model.issued) == len(first_ids)  # the agent ran: 7 replies, all fresh
    assert support.files(http=True) == before  # not a byte, not an mtime
    assert changes_section(again) == ["3 unchanged, 0 changed, 0 new"]
    calls = support.cassette("support", "cancel-processing-order")["trace"]["tool_calls"]
    assert len(calls) == 2 and all(call["id"] in first_ids for call in calls)  # the first run's


def test_a_tool_description_edit_rerecords_the_description_alone(
    support: Project, fresh_model: FreshValuesModel
) -> None:
    support.run("--live").assert_outcomes(passed=3)
    git(support.root, "add", "-A")
    git(support.root, "commit", "-q", "-m", "recorded")
    tools = support.root / "support_agent" / "tools.py"
    tools.write_text(tools.read_text().replace(OLD_WORDS, NEW_WORDS))
    fresh_model.issued.clear()

    edited = support.run("--live")

    edited.assert_outcomes(passed=3)
    diff = git(support.root, "diff", "--unified=0", "--", "cassettes")
    lines = changed_lines(diff)
    http_lines = changed_lines(git(support.root, "diff", "--unified=0", "--", "*.http.json"))
    # Every request offers the tools: 2 + 2 + 3 description lines each way, nothing else.
    assert len(http_lines) == 14 and all(
        line.lstrip("+-").strip().startswith(f'"description": "{word}')
        for line, word in zip(sorted(http_lines), [NEW_WORDS] * 7 + [OLD_WORDS] * 7, strict=True)
    ), http_lines
    for value in fresh_model.issued:  # no id or request id of this run, anywhere
        assert value not in diff
    for marker in (
        '"created"',
        "chatcmpl-",
        "call_",
        "fp_",
        "req_",
        "date",
        "x-request-id",
        "openai-processing-ms",
        "x-ratelimit",
    ):
        assert not [line for line in lines if marker in line.lower()], (marker, diff)

    section = changes_section(edited)
    assert section[-1] == "0 unchanged, 3 changed, 0 new"
    assert (
        "  HTTP request $.tools[0].function.description: 'Search the Kettlebird knowledge base…' "
        "-> 'Search the Kettlebird help center…' (3 exchanges)"
    ) in section, section
    assert "  key changed: code.support_agent.tools" in section

    support.run().assert_outcomes(passed=3)
    support.run("--replay-http").assert_outcomes(passed=3)  # echoed ids match their replies
