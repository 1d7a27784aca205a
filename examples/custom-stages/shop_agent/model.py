"""A scripted, deterministic model for the example: pydantic-ai's own `FunctionModel` with
rules. For a question it writes one SQL query and calls `run_sql`; given the rows, it answers in
a sentence. The rules stand in for an LLM that writes SQL: a real model goes where `model()` is.
"""

from __future__ import annotations

import json
import re

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

MODEL_NAME = "shop-sql-rules-1"
ORDER_ID = re.compile(r"\border (\d{4})\b", re.IGNORECASE)
CUSTOMER = re.compile(r"\bhas ([A-Z][a-z]+ [A-Z][a-z]+) placed\b")
EUROS = re.compile(r"more than (\d+) euros", re.IGNORECASE)

ORDER_TOTAL = (
    "SELECT SUM(p.price_cents * l.quantity) FROM order_lines l "
    "JOIN products p ON p.id = l.product_id WHERE l.order_id = {order}"
)


def _sql_for(question: str) -> str:
    """The query that answers a question, by rule."""
    order = ORDER_ID.search(question)
    if order and "total" in question.lower():
        return ORDER_TOTAL.format(order=order.group(1))
    if order:
        return f"SELECT id, status, placed_on FROM orders WHERE id = {order.group(1)}"
    if customer := CUSTOMER.search(question):
        return (
            "SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id "
            f"WHERE c.name = '{customer.group(1)}'"
        )
    if euros := EUROS.search(question):
        cents = int(euros.group(1)) * 100
        return f"SELECT name FROM products WHERE price_cents > {cents} ORDER BY name"
    return "SELECT name FROM products ORDER BY name"


def _answer(question: str, rows: list[list[object]]) -> str:
    """One sentence from the rows the query returned."""
    order = ORDER_ID.search(question)
    if order and "total" in question.lower():
        return f"Order {order.group(1)} comes to {rows[0][0] / 100:.2f} euros."
    if order and rows:
        number, status, placed_on = rows[0]
        if status == "refund refused":
            return (
                f"I'm sorry about order {number}: its refund was refused because it was placed "
                f"on {placed_on}, outside our refund window. "
                "I'd be glad to help with anything else."
            )
        return f"Order {number}, placed on {placed_on}, is {status}."
    if customer := CUSTOMER.search(question):
        return f"{customer.group(1)} has placed {rows[0][0]} orders."
    names = ", ".join(str(row[0]) for row in rows)
    return f"These products match: {names}." if rows else "No product matches."


def _last_question(messages: list[ModelMessage]) -> str:
    prompts = [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]
    return prompts[-1]


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    question = _last_question(messages)
    last = messages[-1]
    returned = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    if returned:
        content = returned[-1].content
        rows = json.loads(content) if isinstance(content, str) else content
        return ModelResponse(parts=[TextPart(_answer(question, rows))])
    return ModelResponse(parts=[ToolCallPart("run_sql", {"sql": _sql_for(question)})])


def model() -> FunctionModel:
    return FunctionModel(reply, model_name=MODEL_NAME)
