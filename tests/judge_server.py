"""A loopback OpenAI-compatible chat-completions server for the judge tests (stdlib only).

It answers POST /v1/chat/completions (and /chat/completions) deterministically. It recognises
which prompt it got (deepeval 4.3.1's Faithfulness, ContextualRecall, ContextualPrecision,
ContextualRelevancy, AnswerRelevancy and GEval prompts, and our completeness / accuracy / rubric
item prompts) by distinctive phrases, and replies with JSON that fits the schema the caller asked
for, built from the items in the prompt itself (one verdict per claim, per sentence, per node...).

Verdicts are steered by markers in the test data: an item containing POISON ("zzz") is judged
bad (contradicted claim, unsupported sentence, irrelevant node, WRONG answer, INSUFFICIENT
context, GEval score 2/10, rubric item not met or graded 0); an item containing BORDERLINE
("yyy") gets "borderline" where the vocabulary allows it (PARTIAL context, GEval 5/10, a half-scale
rubric item graded 0.5); a half-scale rubric item containing OFF_SCALE ("xxx") is graded 0.7;
everything else is good (GEval 9/10, rubric item met or graded 1).

Faults are scripted per request (`fail_next`), latency is configurable, and every request is
recorded together with the client's port (one port = one reused connection) and the highest
number of requests in flight at once.

A `RateLimit` makes it a rate-limited provider: a token bucket of requests per minute; the excess
is refused at once (no latency) with 429 and a Retry-After in whole seconds (or, `fractional`,
the exact seconds until a token, as many proxies and self-hosted servers say it), and every
reply announces the limit in OpenAI's x-ratelimit-* headers (unless told not to).
"""

from __future__ import annotations

import ast
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest
import pytest_asyncio

POISON = "zzz"
BORDERLINE = "yyy"
OFF_SCALE = "xxx"  # a half-scale rubric item holding it is graded 0.7: off the 0 / 0.5 / 1 scale
# The opening of the prompt the test projects' own deepeval metric sends (a suite's "metrics"):
# answered with score 0.2 for an answer holding POISON, else 0.8.
OWN_METRIC_TASK = "Task: grade brand voice."

FaultKind = Literal[
    "429",
    "503",
    "500",
    "401",
    "hang",
    "garbage",
    "reset",
    "malformed",
    "reject_json_mode",
    "reject_temperature",
    "empty",
    "blank",
    "short",
    "long",
    "out_of_scale",
]


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, used for the next request that arrives.

    "empty": the canned reply with every list emptied (claims, truths, statements, verdicts);
    "blank": the canned reply with every text field emptied (reasons), lists kept;
    "short": the canned reply with the last item of every list dropped (one verdict too few);
    "long": every text of the canned reply (reasons, steps, claims...) padded to `size`
    characters;
    "out_of_scale": GEval's score request answered with score 1000.
    """

    kind: FaultKind
    retry_after: str | None = None  # Retry-After header value for 429 / 503
    seconds: float = 5.0  # how long "hang" holds the request
    headers: tuple[tuple[str, str], ...] = ()  # more reply headers (429 / 503)
    size: int = 0  # characters of every text of a "long" reply


@dataclass
class RateLimit:
    """The server's requests-per-minute limit: a token bucket refilled at rpm/60 a second that
    holds `burst_seconds` of them (rpm 0: a limit that never lifts)."""

    rpm: float
    burst_seconds: float = 1.0
    announce: bool = True  # x-ratelimit-limit/-remaining/-reset-requests on every reply
    retry_after: str | None = None  # a fixed Retry-After; else the seconds until a token:
    fractional: bool = False  # exact ("0.037"), else whole seconds, at least 1

    def __post_init__(self) -> None:
        self.capacity = max(1.0, self.rpm / 60 * self.burst_seconds) if self.rpm else 0.0
        self.level = self.capacity
        self.updated = time.monotonic()

    def take(self) -> tuple[bool, dict[str, str]]:
        """(admitted, headers for the reply); call under the server's lock."""
        now, rate = time.monotonic(), self.rpm / 60
        self.level = min(self.capacity, self.level + (now - self.updated) * rate)
        self.updated = now
        admitted = self.level >= 1.0
        if admitted:
            self.level -= 1.0
        headers: dict[str, str] = {}
        if self.announce:
            full = (self.capacity - self.level) / rate if rate else 60.0
            headers = {
                "x-ratelimit-limit-requests": f"{self.rpm:g}",
                "x-ratelimit-remaining-requests": str(int(self.level)),
                "x-ratelimit-reset-requests": _duration(full),
            }
        if not admitted:
            wait = (1.0 - self.level) / rate if rate else 60.0
            exact = f"{max(0.001, wait):.3f}" if self.fractional else None
            headers["Retry-After"] = self.retry_after or exact or str(max(1, math.ceil(wait)))
        return admitted, headers


def _duration(seconds: float) -> str:
    """OpenAI's form of a reset time: "20ms", "1.5s", "1m0s"."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"


@dataclass
class RecordedRequest:
    path: str
    body: dict[str, Any]
    prompt: str
    kind: str  # which prompt the server recognised ("" when it did not)
    client_port: int
    received: float  # time.monotonic()
    status: int = 0
    answered: float = 0.0  # time.monotonic() once the reply is sent (or the request dropped)
    headers: dict[str, str] | None = None
    fault: str | None = None
    limit_headers: dict[str, str] | None = None  # the rate limit's headers for this reply
    refused: bool = False  # refused by the rate limit (429)


# ---- prompt recognition -----------------------------------------------------------------------
# (kind, phrase) in the order they are tried; phrases are from deepeval's templates.json and
# from pytest_evalcases.judges.prompts.
_KINDS: tuple[tuple[str, str], ...] = (
    ("completeness", "Task: grade context completeness."),
    ("accuracy_unanswerable", "Task: grade answer accuracy for an unanswerable question."),
    ("accuracy", "Task: grade answer accuracy."),
    ("rubric_item_half", "Task: grade one rubric item on a three-point scale."),
    ("rubric_item", "Task: grade one rubric item."),
    ("faithfulness_truths", 'with the "truths" key'),
    ("faithfulness_claims", 'with the "claims" key'),
    ("faithfulness_verdicts", "whether EACH claim contradicts any facts in the retrieval context"),
    ("faithfulness_reason", "Below is a list of Contradictions"),
    ("recall_verdicts", "For EACH sentence in the given expected output below"),
    ("recall_reason", "Contextual Recall Score:"),
    ("precision_verdicts", "was remotely useful in arriving at the expected output"),
    ("precision_reason", "Contextual Precision Score:"),
    ("relevancy_verdicts", "whether each statement found in the context is relevant"),
    ("relevancy_reason", "Contextual Relevancy Score:"),
    ("answer_relevancy_statements", 'with the "statements" key'),
    ("answer_relevancy_verdicts", "determine whether each statement is relevant to address"),
    ("answer_relevancy_reason", "Answer Relevancy Score:"),
    ("geval_steps", "generate 3-4 concise evaluation steps"),
    ("geval_score", "You are an evaluator. Given the following evaluation steps"),
    ("own_metric", OWN_METRIC_TASK),
)


def recognise(prompt: str) -> str:
    for kind, phrase in _KINDS:
        if phrase in prompt:
            return kind
    return ""


def _after(prompt: str, start: str, end: str) -> str:
    """Text between the LAST `start` and the next `end` (examples come earlier in prompts)."""
    begin = prompt.rfind(start)
    if begin == -1:
        raise ValueError(f"section {start!r} not found")
    begin += len(start)
    stop = prompt.find(end, begin)
    return prompt[begin : stop if stop != -1 else len(prompt)].strip()


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s.strip()]


def _verdict(item: str, *, borderline: bool) -> str:
    if POISON in item:
        return "no"
    if borderline and BORDERLINE in item:
        return "borderline"
    return "yes"


def _rows(items: list[str], *, borderline: bool, with_statement: bool = False) -> dict[str, Any]:
    rows = []
    for item in items:
        row: dict[str, Any] = {"verdict": _verdict(item, borderline=borderline)}
        row["reason"] = "canned: marked bad" if row["verdict"] != "yes" else "canned: fine"
        if with_statement:
            row["statement"] = item
        rows.append(row)
    return {"verdicts": rows}


def _reason(prompt: str, score_header: str) -> dict[str, Any]:
    score = _after(prompt, score_header, "\n\n")
    return {"reason": f"The score is {score} because of canned judge_server reasoning."}


def _geval_score(prompt: str) -> int:
    """GEval's score on 0-10: from the answer (correctness, or a suite's own criteria reading
    it), else from every field the criteria read (`Test Case:` up to `Parameters:`)."""
    if "Actual Output:\n" in prompt:  # deepeval writes each field as "<Name>:\n<value> \n\n"
        graded = _after(prompt, "Actual Output:\n", " \n\n")
    else:
        graded = _after(prompt, "Test Case:\n", "\nParameters:")
    return 2 if POISON in graded else 5 if BORDERLINE in graded else 9


def canned_reply(kind: str, prompt: str) -> dict[str, Any]:
    """The JSON object the server answers a recognised prompt with."""
    if kind == "faithfulness_truths":
        return {"truths": _sentences(_after(prompt, "\nText:\n", "\n\nJSON:"))}
    if kind == "faithfulness_claims":
        return {"claims": _sentences(_after(prompt, "AI Output:\n", "\n\nJSON:"))}
    if kind == "faithfulness_verdicts":
        claims = ast.literal_eval(_after(prompt, "\nClaims:\n", "\n\nJSON:"))
        return _rows(claims, borderline=True)
    if kind == "faithfulness_reason":
        return _reason(prompt, "Faithfulness Score:\n")
    if kind == "recall_verdicts":
        expected = _after(prompt, "Expected Output:\n", "\n\nRetrieval Context:")
        return _rows(_sentences(expected), borderline=False)
    if kind == "recall_reason":
        return _reason(prompt, "Contextual Recall Score:\n")
    if kind == "precision_verdicts":
        match = re.search(r"Retrieval Context\s*\(\d+ documents?\):\n(.*?)\n\nJSON:", prompt, re.S)
        if match is None:
            raise ValueError("no retrieval context list in the precision prompt")
        return _rows(ast.literal_eval(match.group(1)), borderline=False)
    if kind == "precision_reason":
        return _reason(prompt, "Contextual Precision Score:\n")
    if kind == "relevancy_verdicts":
        context = _after(prompt, "\nContext:\n", "\n\nJSON:")
        return _rows(_sentences(context), borderline=False, with_statement=True)
    if kind == "relevancy_reason":
        return _reason(prompt, "Contextual Relevancy Score:\n")
    if kind == "answer_relevancy_statements":
        return {"statements": _sentences(_after(prompt, "\nText:\n", "\n\nJSON:"))}
    if kind == "answer_relevancy_verdicts":
        statements = ast.literal_eval(_after(prompt, "\nStatements:\n", "\n\nJSON:"))
        return _rows(statements, borderline=True)
    if kind == "answer_relevancy_reason":
        return _reason(prompt, "Answer Relevancy Score:\n")
    if kind == "geval_steps":
        return {"steps": ["Compare the facts.", "Look for contradictions.", "Score the match."]}
    if kind == "geval_score":
        score = _geval_score(prompt)
        return {"reason": "canned GEval reasoning", "score": score}
    if kind == "own_metric":  # the test projects' own metric class (OWN_METRIC_TASK)
        answer = _after(prompt, "<answer>\n", "\n</answer>")
        return {"score": 0.2 if POISON in answer else 0.8, "reason": "canned: brand voice"}
    if kind == "completeness":
        context = _after(prompt, "<context>\n", "\n</context>")
        reference = _sentences(_after(prompt, "<golden_answer>\n", "\n</golden_answer>"))
        if POISON in context:
            return {
                "present_elements": [],
                "missing_elements": reference,
                "reason": "canned: nothing there",
                "label": "INSUFFICIENT",
            }
        if BORDERLINE in context:
            return {
                "present_elements": reference[:1],
                "missing_elements": reference[1:] or ["x"],
                "reason": "canned: some of it",
                "label": "partial",
            }  # lower case on purpose
        return {
            "present_elements": reference,
            "missing_elements": [],
            "reason": "canned: all there",
            "label": "COMPLETE",
        }
    if kind == "accuracy":
        answer = _after(prompt, "<answer>\n", "\n</answer>")
        label = "WRONG" if POISON in answer else "CORRECT"
        return {"reason": f"canned: {label.lower()}", "label": label}
    if kind == "accuracy_unanswerable":
        answer = _after(prompt, "<answer>\n", "\n</answer>")
        label = "CORRECT" if "not available" in answer.lower() else "WRONG"
        return {"reason": f"canned: {label.lower()}", "label": label}
    if kind == "rubric_item":  # a rubric item marked POISON is not met
        item = _after(prompt, "<rubric_item>\n", "\n</rubric_item>")
        met = POISON not in item
        return {"reason": f"canned: {'met' if met else 'not met'}", "met": met}
    if kind == "rubric_item_half":  # POISON: 0, BORDERLINE: 0.5, OFF_SCALE: 0.7, else 1
        item = _after(prompt, "<rubric_item>\n", "\n</rubric_item>")
        grade = 0 if POISON in item else 0.5 if BORDERLINE in item else 1
        grade = 0.7 if OFF_SCALE in item else grade
        return {"reason": f"canned: graded {grade}", "grade": grade}
    raise ValueError(f"no canned reply for {kind!r}")


def emptied(reply: dict[str, Any]) -> dict[str, Any]:
    """A canned reply with every list emptied: schema-valid, and says nothing."""
    return {key: [] if isinstance(value, list) else value for key, value in reply.items()}


def blanked(reply: dict[str, Any]) -> dict[str, Any]:
    """A canned reply with every text field emptied: the lists and labels are kept."""
    return {
        key: "" if isinstance(value, str) and key != "label" else value
        for key, value in reply.items()
    }


def shortened(reply: dict[str, Any]) -> dict[str, Any]:
    """A canned reply with the last item of every list dropped."""
    return {key: value[:-1] if isinstance(value, list) else value for key, value in reply.items()}


def lengthened(reply: Any, size: int) -> Any:
    """A canned reply with every text (a label aside) padded to `size` characters."""
    if isinstance(reply, dict):
        return {
            key: value if key in ("label", "verdict") else lengthened(value, size)
            for key, value in reply.items()
        }
    if isinstance(reply, list):
        return [lengthened(item, size) for item in reply]
    if isinstance(reply, str):
        return (reply + " " + "x" * size)[:size] if size > len(reply) else reply
    return reply


# ---- the server -------------------------------------------------------------------------------
class JudgeServer:
    """Start with `start()` (or use the fixture); `base_url` ends in /v1."""

    def __init__(
        self,
        latency: float = 0.0,
        rate_limit: RateLimit | None = None,
        rules: list[tuple[set[str], str, Fault]] | None = None,
    ) -> None:
        self.latency = latency
        self.rate_limit = rate_limit
        # Faults for every request a rule matches: (prompt kinds, a phrase of the prompt, the
        # fault). Faults scripted with `fail_next` come first.
        self.rules = rules or []
        self.requests: list[RecordedRequest] = []
        # Answers that change from one request to the next (`answer_in_turn`): phrase -> the
        # poisoned flags of its requests in arrival order (then the last flag for the rest).
        self._turns: dict[str, tuple[list[bool], list[int]]] = {}
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control --
    def start(self) -> JudgeServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # a short poll interval keeps stop() (shutdown) fast between tests
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers that hang or sleep
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def fail_next(self, *faults: Fault | FaultKind) -> None:
        """Script faults for the next requests, one per request, in order."""
        with self._lock:
            for fault in faults:
                self._faults.append(fault if isinstance(fault, Fault) else Fault(fault))

    def answer_in_turn(self, phrase: str, *poisoned: bool) -> None:
        """Judge the requests whose prompt holds `phrase` differently, one after another: the
        n-th such request is answered as if `phrase` carried POISON when `poisoned[n]` is true
        (after the last flag, the last flag holds). A judge asked the same thing three times
        then answers e.g. WRONG, CORRECT, CORRECT: an unstable verdict, or a missed defect."""
        with self._lock:
            self._turns[phrase] = (list(poisoned), [0])

    def _poisoned_prompt(self, prompt: str) -> str:
        """The prompt as this turn judges it (the phrase poisoned or not)."""
        with self._lock:
            for phrase, (flags, seen) in self._turns.items():
                if phrase in prompt:
                    turn = min(seen[0], len(flags) - 1)
                    seen[0] += 1
                    if flags[turn]:
                        return prompt.replace(phrase, f"{phrase} {POISON}")
        return prompt

    def kinds(self) -> list[str]:
        with self._lock:
            return [r.kind for r in self.requests]

    def ports(self) -> set[int]:
        with self._lock:
            return {r.client_port for r in self.requests}

    # -- used by the handler --
    def _enter(self, request: RecordedRequest) -> Fault | None:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self.rate_limit is not None:
                admitted, request.limit_headers = self.rate_limit.take()
                if not admitted:  # refused before any scripted fault is used
                    request.refused = True
                    return None
            if self._faults:
                return self._faults.popleft()
            for kinds, phrase, fault in self.rules:
                if request.kind in kinds and phrase in request.prompt:
                    return fault
            return None

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


def _completion(model: str, content: str, prompt: str) -> dict[str, Any]:
    prompt_tokens, completion_tokens = len(prompt.split()), len(content.split())
    return {
        "id": "chatcmpl-judge-server",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _make_handler(server: JudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is observable
        disable_nagle_algorithm = True  # else headers and body meet delayed ACKs: +40 ms a reply
        current: RecordedRequest | None = None  # the request being answered

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            limit_headers = {}
            if self.current is not None:  # before the reply leaves: a client may look at once
                self.current.status = status
                limit_headers = self.current.limit_headers or {}
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in {**limit_headers, **(headers or {})}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout test)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}")
            messages = body.get("messages") or [{}]
            content = messages[-1].get("content", "")
            if isinstance(content, list):  # content parts
                content = "".join(part.get("text", "") for part in content)
            record = RecordedRequest(
                path=self.path,
                body=body,
                prompt=content,
                kind=recognise(content),
                client_port=self.client_address[1],
                received=time.monotonic(),
                headers=dict(self.headers.items()),
            )
            self.current = record
            fault = server._enter(record)
            try:
                if record.refused:  # a provider refuses at once: no latency
                    record.fault = "rate_limit"
                    self._send(
                        429,
                        _error(
                            "Rate limit reached for requests", "requests", "rate_limit_exceeded"
                        ),
                    )
                    record.status = 429
                    return
                server._wait(server.latency)
                record.fault = fault.kind if fault else None
                record.status = self._respond(record, body, fault)
            finally:
                record.answered = time.monotonic()
                server._leave()

        def _respond(
            self, record: RecordedRequest, body: dict[str, Any], fault: Fault | None
        ) -> int:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, _error(f"no route {self.path}", "invalid_request_error", None))
                return 404
            if fault is not None:
                headers = dict(fault.headers)
                if fault.retry_after:
                    headers["Retry-After"] = fault.retry_after
                if fault.kind == "429":
                    self._send(
                        429,
                        _error("Rate limit reached", "requests", "rate_limit_exceeded"),
                        headers,
                    )
                    return 429
                if fault.kind == "503":
                    self._send(
                        503, _error("The server is overloaded", "server_error", None), headers
                    )
                    return 503
                if fault.kind == "500":
                    self._send(500, _error("The server had an error", "server_error", None))
                    return 500
                if fault.kind == "401":
                    self._send(
                        401,
                        _error(
                            "Incorrect API key provided", "invalid_request_error", "invalid_api_key"
                        ),
                    )
                    return 401
                if fault.kind == "reset":
                    self.close_connection = True  # drop the connection without an answer
                    return 0
                if fault.kind == "malformed":  # not HTTP: a broken proxy or server
                    self.wfile.write(b"HTTP/1.1 OK-ISH\r\n\r\n")
                    self.close_connection = True
                    return 0
                if fault.kind == "hang":
                    server._wait(fault.seconds)  # longer than the client's timeout
                if fault.kind == "garbage":
                    payload = _completion(body.get("model", ""), "this is not JSON at all", "")
                    self._send(200, payload)
                    return 200
                if fault.kind == "reject_json_mode" and "response_format" in body:
                    self._send(
                        400,
                        _error(
                            "response_format json_object is not supported",
                            "invalid_request_error",
                            None,
                        ),
                    )
                    return 400
                if fault.kind == "reject_temperature" and "temperature" in body:
                    # what OpenAI's reasoning models answer
                    self._send(
                        400,
                        _error(
                            "Unsupported value: 'temperature' does not support 0.0 "
                            "with this model. Only the default (1) value is "
                            "supported.",
                            "invalid_request_error",
                            "unsupported_value",
                        ),
                    )
                    return 400
            if not record.kind:
                self._send(
                    400, _error("judge_server: unrecognised prompt", "invalid_request_error", None)
                )
                return 400
            canned = canned_reply(record.kind, server._poisoned_prompt(record.prompt))
            if fault is not None and fault.kind == "empty":
                canned = emptied(canned)
            if fault is not None and fault.kind == "blank":
                canned = blanked(canned)
            if fault is not None and fault.kind == "short":
                canned = shortened(canned)
            if fault is not None and fault.kind == "long":
                canned = lengthened(canned, fault.size)
            if fault is not None and fault.kind == "out_of_scale" and "score" in canned:
                canned["score"] = 1000
            reply = json.dumps(canned)
            self._send(200, _completion(body.get("model", ""), reply, record.prompt))
            return 200

    return Handler


# The environment settings a judge reads besides its key and endpoint.
JUDGE_SETTINGS = (
    "EVALCASES_JUDGE_TIMEOUT",
    "EVALCASES_JUDGE_CONCURRENCY",
    "EVALCASES_JUDGE_RETRIES",
    "EVALCASES_JUDGE_BACKOFF",
    "EVALCASES_JUDGE_RATE_LIMIT_WAIT",
    "EVALCASES_JUDGE_BREAKER",
    "EVALCASES_RPM",
    "EVALCASES_TPM",
    "PYTEST_XDIST_WORKER_COUNT",
    "DEEPEVAL_EVAL_MODE",
    "EVALCASES_JUDGE_BASE_URL",
    "EVALCASES_JUDGE_API_KEY",
)


def clear_judge_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge made in this test reads none of the runner's own settings (xdist sets
    PYTEST_XDIST_WORKER_COUNT, which divides client-side rate limits)."""
    for name in JUDGE_SETTINGS:
        monkeypatch.delenv(name, raising=False)


def use_judge_server(monkeypatch: pytest.MonkeyPatch, server: JudgeServer) -> JudgeServer:
    """Point `openai:` judges made in this test at `server`, with a test key."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    clear_judge_settings(monkeypatch)
    return server


def judge_maker_fixture(name: str = "judges") -> Callable[..., Any]:
    """A pytest fixture (named `name`) yielding `make(**make_judge_kwargs)`: an openai: judge
    with a 1 ms error backoff unless a `retry` is given. The judges are closed at teardown, on
    the test's event loop (their connection pools belong to it)."""

    @pytest_asyncio.fixture(name=name)
    async def _judges() -> AsyncIterator[Callable[..., Any]]:
        from pytest_evalcases.judges import RetryPolicy, make_judge

        made = []

        def make(**kwargs: Any) -> Any:
            retry = kwargs.pop("retry", None) or RetryPolicy(base_delay=0.001, max_delay=0.5)
            made.append(make_judge("openai:gpt-4o-mini", retry=retry, **kwargs))
            return made[-1]

        yield make
        for judge in made:
            await judge.aclose()
        # A judge that was asked for a verdict started importing deepeval in a background thread
        # (judges/deepeval_judge.py): let it end with its test, or a later pytester run's
        # restore of sys.modules meets it importing ("dictionary changed size during iteration").
        from pytest_evalcases.judges import deepeval_judge

        if deepeval_judge._loading is not None:
            deepeval_judge._loading.result(timeout=120)

    return _judges


def judge_server_fixture(name: str = "judge_server") -> Callable[..., Any]:
    """A pytest fixture (named `name`) yielding a started JudgeServer, stopped afterwards."""

    @pytest.fixture(name=name)
    def _serve() -> Iterator[JudgeServer]:
        server = JudgeServer().start()
        try:
            yield server
        finally:
            server.stop()

    return _serve


__all__ = [
    "BORDERLINE",
    "OWN_METRIC_TASK",
    "POISON",
    "Fault",
    "JudgeServer",
    "RateLimit",
    "RecordedRequest",
    "blanked",
    "canned_reply",
    "clear_judge_settings",
    "emptied",
    "lengthened",
    "shortened",
    "judge_maker_fixture",
    "judge_server_fixture",
    "recognise",
    "use_judge_server",
]
