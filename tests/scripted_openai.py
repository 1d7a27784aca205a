"""A scripted OpenAI-compatible server on loopback (stdlib only), for the adapter tests.

It answers POST /v1/chat/completions and POST /v1/responses with the next step of its script,
in the shape of the endpoint asked: a step is a list of tool calls `[("search_kb", {...})]` or
an answer string. Every request body is kept (`requests`), and each reply counts usage as
`prompt_tokens = 10 * request number`, `completion_tokens = 5`, so sums are checkable.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Step = str | list[tuple[str, dict[str, Any]]]


class ScriptedOpenAI:
    def __init__(self) -> None:
        self.script: list[Step] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                path = self.path.split("?")[0].rstrip("/")
                status, reply = owner.answer(path, body)
                data = json.dumps(reply).encode()
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append((path, body))
            number = len(self.requests)
            if not self.script:
                return 500, {"error": {"message": "script exhausted", "type": "server_error"}}
            step = self.script.pop(0)
        model = body.get("model", "")
        if path.endswith("/chat/completions"):
            return 200, _chat_reply(step, model, number)
        if path.endswith("/responses"):
            return 200, _responses_reply(step, model, number)
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _chat_reply(step: Step, model: str, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(step, str):
        message["content"], finish = step, "stop"
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for index, (name, args) in enumerate(step)
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": 10 * number,
            "completion_tokens": 5,
            "total_tokens": 10 * number + 5,
        },
    }


def _responses_reply(step: Step, model: str, number: int) -> dict[str, Any]:
    if isinstance(step, str):
        output: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": f"msg_{number}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step, "annotations": []}],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": f"fc_{number}_{index}",
                "call_id": f"call_{number}_{index}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            for index, (name, args) in enumerate(step)
        ]
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": {
            "input_tokens": 10 * number,
            "output_tokens": 5,
            "total_tokens": 10 * number + 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


@pytest.fixture
def scripted_openai() -> Iterator[ScriptedOpenAI]:
    server = ScriptedOpenAI()
    yield server
    server.close()
