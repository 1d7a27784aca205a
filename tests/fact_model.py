"""A loopback chat model for the ingestion tests (stdlib only): the facts of a line are the line;
each reply has a fresh id and usage of 7 prompt and 3 completion tokens (gpt-4o-mini's price
makes its cost checkable). The `model` fixture starts one per test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class FactModel:
    """A loopback chat model: the facts of a line are the line; each reply has a fresh id and
    usage of 7 prompt and 3 completion tokens."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with owner._lock:
                    owner.requests += 1
                    number = owner.requests
                reply = {
                    "id": f"chatcmpl-{number}-{id(self)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000 + number,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": body["messages"][0]["content"],
                            },
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                }
                data = json.dumps(reply).encode()
                self.send_response_only(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def model() -> Iterator[FactModel]:
    server = FactModel()
    yield server
    server.server.shutdown()
    server.server.server_close()
