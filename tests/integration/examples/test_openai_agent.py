"""Smoke test of examples/openai-agent: the real openai SDK against the example's loopback model.

The example is not installed, so its folder goes on sys.path here (its names, `support_agent`
and `model_server`, are not used anywhere else in the test suite).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.domain.returned_traces import normalize_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openai-agent"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

import model_server  # noqa: E402 - needs the sys.path entry above
from support_agent.agent import system  # noqa: E402
from support_agent.tools import TOOLS  # noqa: E402

FAKE_KEY = "sk-example-not-a-real-key"


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    server, base_url = model_server.start_server(port=0)  # random port: xdist-safe
    yield base_url
    model_server.stop_server(server)


@pytest.fixture
def agent_env(model_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SUPPORT_AGENT_BASE_URL", model_url)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.delenv("SUPPORT_AGENT_MODEL", raising=False)
    # The SDK reads OPENAI_BASE_URL; the agent must not follow it (nothing listens on port 9).
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    return model_url


def run_case(case_id: str, question: str) -> dict[str, Any]:
    trace = system.run({"id": case_id, "input": question})
    return normalize_trace(trace, f"support::{case_id}")  # what the plugin would record


def test_kb_question_searches_and_answers_from_the_top_article(agent_env: str) -> None:
    trace = run_case("refund-window", "How many days do I have to return my kettle for a refund?")

    assert trace["tool_calls"] == [
        {
            "name": "search_kb",
            "args": {"query": "How many days do I have to return my kettle for a refund?", "k": 3},
        }
    ]
    assert trace["retrieved"][0] == "refund-policy" and len(trace["retrieved"]) == 3
    assert trace["context"][0].startswith("You can return a Kettlebird kettle within 30 days")
    assert trace["answer"] == (
        "You can return a Kettlebird kettle within 30 days of delivery for a full refund."
    )
    assert trace["usage"]["prompt_tokens"] > 0 and trace["usage"]["completion_tokens"] > 0


def test_order_question_calls_both_tools_in_turn(agent_env: str) -> None:
    trace = run_case("cancel-processing-order", "Can I still cancel order A-1002?")

    assert [call["name"] for call in trace["tool_calls"]] == ["get_order", "search_kb"]
    assert trace["tool_calls"][0]["args"] == {"order_id": "A-1002"}
    assert json.loads(trace["tool_outputs"][0]["content"])["status"] == "processing"
    assert trace["retrieved"][0] == "cancel-order"
    assert "A-1002" in trace["answer"] and "processing" in trace["answer"]
    assert "cancel an order free of charge until it ships" in trace["answer"]
    # Same question, same trace: the recordings are stable.
    assert run_case("cancel-processing-order", "Can I still cancel order A-1002?") == trace


def test_model_only_calls_offered_tools(agent_env: str) -> None:
    client = system.client()
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Where is my order A-1001?"}],
        tools=[TOOLS[0]],  # search_kb only: the model wants get_order
    )

    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content


def test_agent_module_imports_without_a_key_and_without_openai() -> None:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("OPENAI_API_KEY", "OPENAI_BASE_URL") and not name.startswith("PYTEST_")
    }
    probe = (
        "import json, sys\nfrom support_agent.agent import system\n"
        "print(json.dumps(system.fingerprint()))\nprint('openai' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert proc.returncode == 0, proc.stderr
    fingerprint, openai_imported = proc.stdout.splitlines()
    assert json.loads(fingerprint)["model"] == "gpt-4o-mini"
    assert "Kettlebird" in json.loads(fingerprint)["prompt"]
    assert openai_imported == "False"  # a replay only needs fingerprint(): no SDK import


def test_model_replies_are_byte_for_byte_stable(model_url: str) -> None:
    import urllib.request

    body = {
        "model": "gpt-4o-mini",
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "How do I descale the kettle?"}],
    }

    def post(payload: dict[str, Any]) -> tuple[bytes, list[tuple[str, str]]]:
        request = urllib.request.Request(
            f"{model_url}/chat/completions",
            data=json.dumps(payload).encode(),
            headers={"Authorization": f"Bearer {FAKE_KEY}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read(), sorted(response.headers.items())

    first = post(body)
    assert post(dict(reversed(body.items()))) == first  # key order never matters
    assert not any(name.lower() == "date" for name, _ in first[1])
