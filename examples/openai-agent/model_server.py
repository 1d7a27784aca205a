"""A scripted, deterministic OpenAI-compatible model for the support agent (stdlib only).

It answers POST /v1/chat/completions like a tool-calling chat model would, by rules:
1. It works on the conversation since the last user message, and only calls tools that the
   request offers in `tools` (a tool it wants but is not offered is simply not called).
2. A question naming an order id (A-1001) gets a `get_order` call first.
3. A question without an order id, or one that also asks about cancelling, returns, refunds or
   the warranty, gets a `search_kb` call (the question, order id removed, as the query; `k` from
   the schema's default). Each tool is called at most once per question.
4. Then it answers from the tool results: an order's status and details, and the sentence of the
   top search result that shares the most words with the question. No usable result: it says it
   can't find it.
Same request, same reply bytes: ids are hashes of the request, `created` is fixed, and no Date or
Server header is sent. Requests need an `Authorization: Bearer <anything>` header.

    python model_server.py --port 8765     # as a script (--port 0 picks a free port)
    server, base_url = start_server()      # from tests; stop_server(server) when done
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_700_000_000  # fixed, so a reply never depends on the clock
ORDER_ID = re.compile(r"\b[A-Za-z]-\d{4}\b")
POLICY_WORDS = frozenset({"cancel", "return", "refund", "warranty"})
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_STOPWORDS = frozenset(
    """a about an and any are be by can do does for from have how i if in is it me my of on
    or the there this to what when where which who why will with you your""".split()
)
NOT_FOUND = "I can't find anything in the knowledge base that answers this."
NO_TOOLS = "I can't answer that without my support tools."


class BadRequest(ValueError):
    """A request the model cannot serve; answered as a 400 in OpenAI's error shape."""


# ---- the model's decisions ---------------------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _terms(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _STOPWORDS}


def _offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> its function definition, for the tools in this request."""
    offered = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            offered[function["name"]] = function
    return offered


def _since_last_question(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """The last user message and the messages after it (this question's tool turns)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content")), messages[index + 1 :]
    raise BadRequest("the conversation has no user message")


def _tool_results(turns: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool name, output) for every tool message, named through the assistant's calls."""
    names: dict[str, str] = {}
    results = []
    for message in turns:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                names[call.get("id", "")] = call.get("function", {}).get("name", "")
        elif message.get("role") == "tool":
            call_id = message.get("tool_call_id", "")
            results.append((names.get(call_id, ""), _text(message.get("content"))))
    return results


def _next_tool_call(
    question: str, offered: dict[str, dict[str, Any]], called: set[str]
) -> tuple[str, dict[str, Any]] | None:
    order = ORDER_ID.search(question)
    if order and "get_order" in offered and "get_order" not in called:
        return "get_order", {"order_id": order.group().upper()}
    wants_kb = not order or bool(_terms(question) & POLICY_WORDS)
    if wants_kb and "search_kb" in offered and "search_kb" not in called:
        query = re.sub(r"\s+([?!.,])", r"\1", " ".join(ORDER_ID.sub(" ", question).split()))
        k_schema = offered["search_kb"].get("parameters", {}).get("properties", {}).get("k", {})
        return "search_kb", {"query": query, "k": k_schema.get("default", 3)}
    return None


def _best_sentence(question: str, text: str) -> str:
    """The sentence sharing the most words with the question; ties go to the earlier one."""
    wanted = _terms(question)
    best, best_overlap = "", -1
    for sentence in _SENTENCE_END.split(text.strip()):
        overlap = len(wanted & _terms(sentence))
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best


def _answer_from(question: str, results: list[tuple[str, str]]) -> str:
    parts = []
    for name, output in results:
        try:
            data = json.loads(output)
        except json.JSONDecodeError:
            continue
        if name == "get_order" and isinstance(data, dict):
            if "status" in data:
                parts.append(
                    f"Order {data.get('id')} ({data.get('item')}) is {data['status']}: "
                    f"{data.get('detail', '')}."
                )
            else:
                order = ORDER_ID.search(question)
                parts.append(f"I can't find order {order.group().upper() if order else ''}.")
        elif name == "search_kb" and isinstance(data, list) and data:
            top = data[0] if isinstance(data[0], dict) else {}
            sentence = _best_sentence(question, str(top.get("text", "")))
            if sentence:
                parts.append(sentence)
    return " ".join(parts) or NOT_FOUND


def _words(value: Any) -> int:
    return len(json.dumps(value).split())


def complete(body: dict[str, Any]) -> dict[str, Any]:
    """The chat.completion object answering one request body (a pure function)."""
    if body.get("stream"):
        raise BadRequest("this scripted model does not stream; send stream=false")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    question, turns = _since_last_question(messages)
    turns = [message for message in turns if isinstance(message, dict)]
    offered = _offered(body)
    results = _tool_results(turns)
    called = {name for name, _ in results}
    # Keys sorted: the same conversation hashes the same whatever order the client wrote.
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    message: dict[str, Any] = {"role": "assistant", "content": None}
    next_call = _next_tool_call(question, offered, called)
    if next_call is not None:
        name, args = next_call
        message["tool_calls"] = [
            {
                "id": f"call_{digest[:24]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
        finish_reason, completion = "tool_calls", args
    else:
        # No call left to make: answer from the results, or say the tools it needs are missing.
        message["content"] = _answer_from(question, results) if results else NO_TOOLS
        finish_reason, completion = "stop", message["content"]
    prompt_tokens = _words(messages) + _words(body.get("tools") or [])
    completion_tokens = _words(completion)
    return {
        "id": f"chatcmpl-{digest[:24]}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", ""),
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


# ---- HTTP --------------------------------------------------------------------------------------
def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ModelHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK reuses its connection
    disable_nagle_algorithm = True  # else small replies wait on delayed ACKs (~40 ms each)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # quiet: tests and recordings run many requests

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, sort_keys=True).encode()
        # send_response_only: no Date or Server header, so replies are byte-for-byte stable.
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._send(404, _error(f"no route GET {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, _error(f"no route POST {self.path}", "invalid_request_error"))
            return
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            self._send(
                401,
                _error(
                    "missing API key: send Authorization: Bearer <key>",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise BadRequest("the request body must be a JSON object")
            reply = complete(body)
        except (json.JSONDecodeError, BadRequest) as exc:
            self._send(400, _error(str(exc), "invalid_request_error"))
            return
        self._send(200, reply)


def start_server(port: int = 0, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, str]:
    """Serve in a daemon thread; returns the server and its base URL (ending in /v1)."""
    server = ThreadingHTTPServer((host, port), ModelHandler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return server, f"http://{host}:{server.server_address[1]}/v1"


def stop_server(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible model (loopback).")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    options = parser.parse_args(argv)
    server = ThreadingHTTPServer((options.host, options.port), ModelHandler)
    server.daemon_threads = True
    print(f"model server on http://{options.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
