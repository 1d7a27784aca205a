"""A scripted, deterministic model for the example: pydantic-ai's own `FunctionModel` with
rules. On the whole conversation it is given:

1. A loan id (L-501) in the last user message, or else in an earlier one (the conversation's
   memory), gets a `get_loan` call; a question about renewals, fees, reservations or opening
   hours (or with no loan id) gets a `search_catalog` call. Only tools the agent offers are
   called, each once per question, all in one reply.
2. Then it answers from the results: the loan's status, and the sentence of the top page that
   shares the most words with the question.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from .tools import terms

MODEL_NAME = "library-rules-1"
LOAN_ID = re.compile(r"\bL-\d{3}\b", re.IGNORECASE)
KB_WORDS = frozenset({"renew", "fee", "late", "reserve", "reservation", "open", "hour", "cost"})


def _user_prompts(message: ModelMessage) -> list[str]:
    if not isinstance(message, ModelRequest):
        return []
    return [str(p.content) for p in message.parts if isinstance(p, UserPromptPart)]


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    asked = [i for i, m in enumerate(messages) if _user_prompts(m)]
    question = _user_prompts(messages[asked[-1]])[-1]
    results = [
        part
        for m in messages[asked[-1] :]
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart)
    ]
    if results:
        return ModelResponse(parts=[TextPart(_answer(question, results))])
    offered = {tool.name for tool in info.function_tools}
    earlier = [text for i in reversed(asked[:-1]) for text in _user_prompts(messages[i])]
    loan = next(
        (m.group().upper() for text in [question, *earlier] if (m := LOAN_ID.search(text))), None
    )
    calls: list[Any] = []
    if loan and "get_loan" in offered:
        calls.append(ToolCallPart("get_loan", {"loan_id": loan}))
    if (not loan or terms(question) & KB_WORDS) and "search_catalog" in offered:
        calls.append(ToolCallPart("search_catalog", {"query": question}))
    return ModelResponse(parts=calls or [TextPart("How can I help?")])


def _answer(question: str, results: list[ToolReturnPart]) -> str:
    parts = []
    for result in results:
        if result.tool_name == "get_loan":
            loan = json.loads(str(result.content))
            parts.append(
                f"Loan {loan['id']} ({loan['title']}) is {loan['status']}: {loan['detail']}."
                if "status" in loan
                else loan["error"] + "."
            )
        elif result.content:
            sentences = re.split(r"(?<=\.)\s+", result.content[0]["text"])
            parts.append(max(sentences, key=lambda s: len(terms(s) & terms(question))))
    return " ".join(parts) or "I can't find anything about that."


def model() -> FunctionModel:
    return FunctionModel(reply, model_name=MODEL_NAME)
