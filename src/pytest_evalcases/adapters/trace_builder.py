"""The part every adapter shares: pair tool calls with their outputs, decode JSON arguments, fill
`retrieved`/`context` from the tools named in `retrievers`, sum usage, keep the final answer.

An adapter walks its framework's messages and feeds a `TraceBuilder`; `build()` returns a plain
trace dict (what `run(case)` returns). No framework is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .pricing import Prices, cost_usd
from .retrievers import Extractor, default_extractor

Retrievers = Mapping[str, Extractor | None] | Iterable[str] | None


def retriever_table(retrievers: Retrievers) -> dict[str, Extractor]:
    """`{"search_kb": extractor}` or `["search_kb"]` (the default extractor) as one table."""
    if retrievers is None:
        return {}
    if isinstance(retrievers, str):
        return {retrievers: default_extractor}
    if isinstance(retrievers, Mapping):
        return {name: fn or default_extractor for name, fn in retrievers.items()}
    return {name: default_extractor for name in retrievers}


def decode_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict: a JSON object string is decoded; anything that is not
    an object is kept under `_raw`, so a bad call is visible rather than dropped."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            return {"_raw": arguments}
        return value if isinstance(value, dict) else {"_raw": arguments}
    return {"_raw": arguments}


def as_text(content: Any) -> str:
    """A tool output or message content as the string the trace stores: strings as they are,
    content-part lists by their text, anything else as JSON (or its str when not JSON-able)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(_is_text_part(part) for part in content):
        return "".join(_part_text(part) for part in content)
    if hasattr(content, "model_dump"):
        content = content.model_dump(mode="json")
    try:
        return json.dumps(content, ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError):
        return str(content)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "page_content"):  # a LangChain Document inside a list or dict
        return {
            "id": getattr(value, "id", None),
            "page_content": value.page_content,
            "metadata": getattr(value, "metadata", {}),
        }
    return str(value)


def _is_text_part(part: Any) -> bool:
    if isinstance(part, str):
        return True
    kind = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
    return kind in {"text", "output_text", "input_text"}


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        return str(part.get("text") or "")
    return str(getattr(part, "text", "") or "")


class TraceBuilder:
    """Collects one run's tool calls, outputs, usage and answer, in the order they happened."""

    def __init__(self, retrievers: Retrievers = None, prices: Prices | None = None) -> None:
        self._retrievers = retriever_table(retrievers)
        self._prices = prices
        self._calls: list[dict[str, Any]] = []
        self._outputs: list[dict[str, str]] = []
        self._names_by_id: dict[str, str] = {}
        self._retrieved: list[str] = []
        self._context: list[str] = []
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost = 0.0
        self._priced = True  # every counted request's model had a price
        self._usage_seen = False
        self.answer = ""

    def call(self, name: str, arguments: Any, call_id: str | None = None) -> None:
        self._calls.append({"name": name, "args": decode_arguments(arguments)})
        if call_id:
            self._names_by_id[call_id] = name

    def output(
        self,
        content: Any,
        call_id: str | None = None,
        name: str | None = None,
        raw: Any = None,
    ) -> None:
        """A tool's output; `raw` is what the retriever extractor reads when the text sent to
        the model differs (a LangChain artifact, the Python value a pydantic-ai tool returned)."""
        tool = name or (self._names_by_id.get(call_id) if call_id else None) or "?"
        self._outputs.append({"tool": tool, "content": as_text(content)})
        extractor = self._retrievers.get(tool)
        if extractor is not None:
            self._add_documents(extractor(content if raw is None else raw))

    def _add_documents(self, documents: Iterable[tuple[str, str]]) -> None:
        for doc_id, text in documents:
            doc_id = str(doc_id)
            if doc_id not in self._retrieved:  # ranked once, at its first retrieval
                self._retrieved.append(doc_id)
                self._context.append(str(text))

    def usage(self, input_tokens: Any, output_tokens: Any, model: str | None = None) -> None:
        """One model request's tokens; priced when its model is in the price table."""
        if input_tokens is None and output_tokens is None:
            return
        prompt, completion = int(input_tokens or 0), int(output_tokens or 0)
        self._usage_seen = True
        self._prompt_tokens += prompt
        self._completion_tokens += completion
        cost = cost_usd(model, prompt, completion, self._prices)
        if cost is None:
            self._priced = False
        else:
            self._cost += cost

    def build(self) -> dict[str, Any]:
        trace: dict[str, Any] = {
            "answer": self.answer,
            "tool_calls": self._calls,
            "tool_outputs": self._outputs,
            "retrieved": self._retrieved,
            "context": self._context,
        }
        if self._usage_seen:
            usage: dict[str, Any] = {
                "prompt_tokens": self._prompt_tokens,
                "completion_tokens": self._completion_tokens,
            }
            if self._priced:
                usage["cost_usd"] = round(self._cost, 8)
            trace["usage"] = usage
        return trace


def field(item: Any, name: str, default: Any = None) -> Any:
    """`item[name]` for a dict, `item.name` for an SDK object: adapters accept both."""
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)
