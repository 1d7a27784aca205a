"""The agent: a LangGraph tool loop (model -> tools -> model ... until it answers)."""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from .model import RuleModel
from .tools import TOOLS

SYSTEM_PROMPT = (
    "You are the assistant of Pedalworks, a bike rental shop. Use search_kb for questions about "
    "fees, extensions, deposits and equipment, and get_rental when the customer names a rental "
    "id such as R-101. Answer in one or two sentences from what the tools returned."
)


@cache
def agent() -> Any:
    model = RuleModel().bind_tools(TOOLS)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()
