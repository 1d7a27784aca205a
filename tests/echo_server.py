"""A loopback HTTP server for the HTTP-cassette tests (stdlib only, random port).

It answers every POST with JSON built from the request alone, so a replay that serves recorded
answers and a run against the server give the same trace:
- `/v1/chat/completions`: an OpenAI chat completion whose content is `you asked: <last user
  message>` (enough for the openai SDK);
- any other path: `{"answer": "you asked: <question>", "path": ..., "received": <the body>}`.
`?delay=<seconds>` holds the reply that long. Every request is kept (`requests`), with the
highest number answered at once (`max_in_flight`), so a test can tell whether anything reached
the server and whether cases overlapped.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class SeenRequest:
    method: str
    path: str
    body: Any


class EchoServer:
    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> EchoServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __enter__(self) -> EchoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the port (idempotent): a request now is refused."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _enter(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _reply(path: str, body: Any) -> dict[str, Any]:
    if path.rstrip("/").endswith("/chat/completions"):
        messages = body.get("messages") if isinstance(body, dict) else None
        last = next(
            (m.get("content", "") for m in reversed(messages or []) if m.get("role") == "user"), ""
        )
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
        return {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {"role": "assistant", "content": f"you asked: {last}"},
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
    question = body.get("question", "") if isinstance(body, dict) else ""
    return {"answer": f"you asked: {question}", "path": path, "received": body}


def _make_handler(server: EchoServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            url = urlsplit(self.path)
            server._enter(SeenRequest("POST", url.path, body))
            try:
                delay = float(parse_qs(url.query).get("delay", ["0"])[0])
                if delay:
                    time.sleep(delay)
                data = json.dumps(_reply(url.path, body), sort_keys=True).encode()
                self.send_response_only(200)  # no Date header: replies are stable
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                server._leave()

    return Handler


__all__ = ["EchoServer", "SeenRequest"]
