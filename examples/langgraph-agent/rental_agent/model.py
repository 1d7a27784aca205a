"""A scripted, deterministic chat model for the example (a real langchain-core chat model:
LangGraph binds tools to it and calls it like any other). Its rules, on the whole conversation:

1. A rental id (R-101) in the last user message, or else in an earlier one (the conversation's
   memory), gets a `get_rental` call; a question about fees, extensions, deposits, equipment or
   cancelling (or with no rental id) gets a `search_kb` call with the question. Only tools that
   were bound are called, each once per question, all in one reply.
2. Then it answers from the tool results: the rental's status, and the sentence of the top
   article that shares the most words with the question.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from .tools import terms

MODEL_NAME = "pedalworks-rules-1"
RENTAL_ID = re.compile(r"\bR-\d{3}\b", re.IGNORECASE)
KB_WORDS = frozenset(
    {"fee", "late", "extend", "deposit", "helmet", "lock", "seat", "cancel", "cost", "price"}
)


class RuleModel(BaseChatModel):
    tool_names: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "pedalworks-rules"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RuleModel:
        return self.model_copy(update={"tool_names": tuple(t.name for t in tools)})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        reply = self._reply(messages)
        words = sum(len(str(m.content).split()) for m in messages)
        reply.usage_metadata = {
            "input_tokens": words,
            "output_tokens": len(reply.text.split()),
            "total_tokens": words + len(reply.text.split()),
        }
        reply.response_metadata = {"model_name": MODEL_NAME}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        asked = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        question = str(messages[asked[-1]].content)
        results = [m for m in messages[asked[-1] + 1 :] if isinstance(m, ToolMessage)]
        if results:
            return AIMessage(_answer(question, results))
        earlier = [str(messages[i].content) for i in reversed(asked[:-1])]
        rental = next(
            (m.group().upper() for text in [question, *earlier] if (m := RENTAL_ID.search(text))),
            None,
        )
        calls = []
        if rental and "get_rental" in self.tool_names:
            calls.append({"name": "get_rental", "args": {"rental_id": rental}, "id": "call_0"})
        if (not rental or terms(question) & KB_WORDS) and "search_kb" in self.tool_names:
            calls.append(
                {"name": "search_kb", "args": {"query": question}, "id": f"call_{len(calls)}"}
            )
        return AIMessage("", tool_calls=calls) if calls else AIMessage("How can I help?")


def _answer(question: str, results: list[ToolMessage]) -> str:
    parts = []
    for message in results:
        if message.name == "get_rental":
            rental = json.loads(str(message.content))
            parts.append(
                f"Rental {rental['id']} ({rental['bike']}) is {rental['status']}: "
                f"{rental['detail']}."
                if "status" in rental
                else rental["error"] + "."
            )
        elif message.artifact:
            sentences = re.split(r"(?<=\.)\s+", message.artifact[0].page_content)
            parts.append(max(sentences, key=lambda s: len(terms(s) & terms(question))))
    return " ".join(parts) or "I can't find anything about that."
