"""Every system module of docs/adapters.md runs as written: each block is imported with a small
`myapp` package standing for the application (the real framework, its model scripted by the
loopback server of tests/scripted_openai.py or its own fake model), and gives the trace."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_openai import ScriptedOpenAI

from pytest_evalcases.domain.returned_traces import normalize_trace
from pytest_evalcases.domain.system import CaseInput

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)

TOOLS = '''
import json

PROMPT = "Answer from the knowledge base."
ARTICLES = [{"id": "refunds", "text": "Refunds within 30 days."}]


def search_kb(query: str) -> list:
    """Search the knowledge base."""
    return ARTICLES


def call_tool(name, args):
    return json.dumps(search_kb(**args))


SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = [{"type": "function", "function": {"name": "search_kb", "description": "Search.",
                                           "parameters": SCHEMA}}]
RESPONSES_TOOLS = [{"type": "function", "name": "search_kb", "description": "Search.",
                    "parameters": SCHEMA}]
'''

GRAPH = """
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from .tools import PROMPT, search_kb as search


class Fake(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


TOOLS = [tool(search)]
model = Fake(messages=iter([
    AIMessage("", tool_calls=[{"name": "search_kb", "args": {"query": "refund"}, "id": "c1"}]),
    AIMessage("Within 30 days."),
]))
graph = StateGraph(MessagesState)
graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
graph.add_node("tools", ToolNode(TOOLS))
graph.add_edge(START, "model")
graph.add_conditional_edges("model", tools_condition)
graph.add_edge("tools", "model")
agent = graph.compile()
"""

PYDANTIC_AI = """
from pydantic_ai import Agent

from .tools import PROMPT, search_kb

agent = Agent("openai:gpt-4o-mini", system_prompt=PROMPT, tools=[search_kb])
"""

INSTRUMENTED = (
    PYDANTIC_AI
    + """
from pydantic_ai import InstrumentationSettings

agent.instrument = InstrumentationSettings()
"""
)

AGENTS_SDK = """
from agents import Agent, function_tool

from .tools import PROMPT, search_kb

agent = Agent(name="support", instructions=PROMPT, model="gpt-4o-mini",
              tools=[function_tool(search_kb)])
"""

# What each block's `myapp.agent` / `myapp.graph` is, by the framework the block imports.
APPS = [
    ("from_openai_messages", {}),
    ("from_openai_response", {}),
    ("from_langchain_messages", {"graph": GRAPH}),
    ("from_pydantic_ai", {"agent": PYDANTIC_AI}),
    ("from_openai_agents", {"agent": AGENTS_SDK}),
    ("capture_otel", {"agent": INSTRUMENTED}),
]


def test_the_page_has_one_block_per_adapter() -> None:
    assert len(BLOCKS) == len(APPS)
    for block, (adapter, _) in zip(BLOCKS, APPS, strict=True):
        assert adapter in block
        code = [line for line in block.splitlines() if line.strip()]
        assert len(code) < 15, block  # "the whole system module in under 15 lines"


@pytest.fixture
def app_env(scripted_openai: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    scripted_openai.script = [[("search_kb", {"query": "refund"})], "Within 30 days."]
    yield scripted_openai


def load_block(tmp_path: Path, index: int, files: dict[str, str]) -> Any:
    package = f"docsapp{index}"
    root = tmp_path / package
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "tools.py").write_text(TOOLS)
    for name, source in files.items():
        (root / f"{name}.py").write_text(source)
    (root / "system.py").write_text(BLOCKS[index].replace("myapp.", f"{package}."))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(f"{package}.system")
    finally:
        sys.path.remove(str(tmp_path))


@pytest.mark.parametrize("index", range(len(APPS)), ids=[adapter for adapter, _ in APPS])
def test_each_block_runs_and_gives_the_trace(index: int, app_env: Any, tmp_path: Path) -> None:
    module = load_block(tmp_path, index, APPS[index][1])
    system = getattr(module, "system", None) or module
    case = CaseInput(id="refund", input="How long do I have for a refund?")

    trace = normalize_trace(system.run(case), "docs")

    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "refund"}}]
    assert trace["retrieved"] == ["refunds"] and trace["context"] == ["Refunds within 30 days."]
    assert trace["answer"] == "Within 30 days."
    if hasattr(system, "fingerprint"):
        assert "tool.search_kb" in system.fingerprint()
