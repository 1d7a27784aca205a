"""A loopback JSON server for the tests (stdlib only): `JsonServer(answer)` serves on 127.0.0.1,
answering each GET and POST with `answer(method, path, body)` -> (status, JSON document, extra
headers); `close()` stops it. The model and memory services of the ingestion tests are built on
it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (method, path, the request's JSON body or None) -> (status, reply document, extra headers)
Answer = Callable[[str, str, Any], tuple[int, Any, Mapping[str, str]]]


class JsonServer:
    """A threading HTTP/1.1 server on a free loopback port; `url` is its base (and `prefix`)."""

    def __init__(self, answer: Answer, prefix: str = "") -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, doc, headers = answer(self.command, self.path, body)
                data = json.dumps(doc).encode()
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer  # noqa: N815 - stdlib names

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{prefix}"
        # a short poll interval: close() (shutdown) waits for it, at every test's teardown
        serve = lambda: self.server.serve_forever(poll_interval=0.02)  # noqa: E731
        threading.Thread(target=serve, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class CountedService:
    """A loopback JSON service that counts its requests (`requests`) and answers each with
    `reply(number, body)`, `number` counting from 1 in the order they arrived."""

    def __init__(self, prefix: str = "") -> None:
        self.requests = 0
        self._lock = threading.Lock()
        self.server = JsonServer(self._answer, prefix)
        self.url = self.server.url

    def _answer(self, method: str, path: str, body: Any) -> tuple[int, Any, Mapping[str, str]]:
        with self._lock:
            self.requests += 1
            number = self.requests
        return self.reply(number, body)

    def reply(self, number: int, body: Any) -> tuple[int, Any, Mapping[str, str]]:
        raise NotImplementedError

    def close(self) -> None:
        self.server.close()
