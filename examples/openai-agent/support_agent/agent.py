"""The agent loop: Chat Completions with tools, until the model answers in plain text.

The OpenAI client is built on the first `run`, never at import time: a replay imports this module
(for `fingerprint()`) with no API key, and importing openai alone costs about a second.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .prompts import SYSTEM_PROMPT
from .tools import TOOLS, call_tool

if TYPE_CHECKING:
    from openai import OpenAI

DEFAULT_BASE_URL = "http://127.0.0.1:8765/v1"
DEFAULT_MODEL = "gpt-4o-mini"
MAX_TURNS = 4  # model requests per question; a scripted model needs at most three


def base_url() -> str:
    return os.environ.get("SUPPORT_AGENT_BASE_URL", DEFAULT_BASE_URL)


def model_name() -> str:
    return os.environ.get("SUPPORT_AGENT_MODEL", DEFAULT_MODEL)


class Agent:
    def __init__(self) -> None:
        # One client per (url, key), reused across cases: the recorder runs cases in threads.
        self._clients: dict[tuple[str, str | None], OpenAI] = {}
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        return {"model": model_name(), "prompt": SYSTEM_PROMPT}

    def client(self) -> OpenAI:
        # base_url is always passed: openai also reads OPENAI_BASE_URL, which a judge's
        # configuration may set, and that must never redirect the agent. The loopback model
        # takes any key, so an offline replay (--replay-http) needs none.
        url, key = base_url(), os.environ.get("OPENAI_API_KEY") or "no-key-for-the-local-model"
        with self._lock:
            client = self._clients.get((url, key))
            if client is None:
                from openai import OpenAI

                client = OpenAI(base_url=url, api_key=key)
                self._clients[(url, key)] = client
        return client

    def run(self, case: Mapping[str, Any]) -> dict[str, Any]:
        import openai

        client = self.client()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": case["input"]},
        ]
        trace: dict[str, Any] = {
            "answer": "",
            "tool_calls": [],
            "tool_outputs": [],
            "retrieved": [],
            "context": [],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        }
        for _ in range(MAX_TURNS):
            try:
                response = client.chat.completions.create(
                    model=model_name(), messages=messages, tools=TOOLS, temperature=0
                )
            except openai.APIConnectionError as exc:
                raise RuntimeError(
                    f"cannot reach the model at {client.base_url}: start the loopback model with "
                    "`python model_server.py --port 8765`, or set SUPPORT_AGENT_BASE_URL"
                ) from exc
            if response.usage is not None:
                trace["usage"]["prompt_tokens"] += response.usage.prompt_tokens
                trace["usage"]["completion_tokens"] += response.usage.completion_tokens
            message = response.choices[0].message
            if not message.tool_calls:
                trace["answer"] = message.content or ""
                return trace
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        call.model_dump(exclude_none=True) for call in message.tool_calls
                    ],
                }
            )
            for call in message.tool_calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": self._call(call, trace)}
                )
        trace["answer"] = f"I could not finish within {MAX_TURNS} model turns."
        return trace

    def _call(self, call: Any, trace: dict[str, Any]) -> str:
        """Run one tool call and note it in the trace; returns what goes back to the model."""
        if call.type != "function":  # custom (free-text) tools: this agent offers none
            return json.dumps({"error": f"unsupported tool call type {call.type!r}"})
        name = call.function.name
        try:
            args = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as exc:
            args, output = {}, json.dumps({"error": f"arguments are not JSON: {exc}"})
        else:
            if isinstance(args, dict):
                output = call_tool(name, args)
            else:
                args, output = {}, json.dumps({"error": "arguments must be a JSON object"})
        trace["tool_calls"].append({"name": name, "args": args})
        trace["tool_outputs"].append({"tool": name, "content": output})
        if name == "search_kb":
            for hit in _search_hits(output):
                if hit["id"] not in trace["retrieved"]:
                    trace["retrieved"].append(hit["id"])
                    trace["context"].append(hit["text"])
        return output


def _search_hits(output: str) -> list[dict[str, str]]:
    try:
        hits = json.loads(output)
    except json.JSONDecodeError:
        return []
    return hits if isinstance(hits, list) else []  # an {"error": ...} object has no hits


system = Agent()
