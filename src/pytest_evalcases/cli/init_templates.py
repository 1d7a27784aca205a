"""The files `python -m pytest_evalcases init` writes, as Python strings.

Shared by every framework: the pytest config, the case file, the README of next steps, the
agent's tools and the stand-in model's rules (`stand_in.py`, framework-neutral). Each framework
adds its stand-in model in the framework's own objects (`model.py`), the agent (`agent.py`) and
the thin system module over the framework's adapter (`system.py`).
"""

from __future__ import annotations

FRAMEWORKS = ("openai", "langchain", "pydantic-ai", "plain")
PACKAGE = "my_agent"

PYTEST_INI = """\
[pytest]
# deepeval's and langsmith's pytest plugins load in every run where they are installed (about
# 2 s each, and deepeval writes .deepeval/ folders); a replay needs neither.
addopts = -p no:deepeval -p no:langsmith_plugin
eval_cases = cases
eval_cassettes = cassettes
{asyncio_line}
"""

ASYNCIO_LINE = "asyncio_default_fixture_loop_scope = function"
ASYNCIO_COMMENT = (
    "# with pytest-asyncio installed, add: asyncio_default_fixture_loop_scope = function"
)

CASES_JSON = """\
{{
  "name": "{suite}",
  "system": "my_agent.system:system",
  "judge": "lexical",
  "stages": ["tools", "retrieval", "faithfulness", "answer_relevancy"],
  "k": 2,
  "cases": [
    {{"id": "return-window", "input": "How many days do I have to return an item?",
     "category": "returns", "expected_tools": ["search_kb"], "expected_docs": ["returns"],
     "reference": "30 days after delivery."}},
    {{"id": "shipping-time", "input": "How long does express shipping take?",
     "category": "shipping", "expected_tools": ["search_kb"], "expected_docs": ["shipping"],
     "reference": "Express shipping takes 1 business day."}},
    {{"id": "order-status", "input": "Where is my order A-100?", "category": "orders",
     "expected_tools": [{{"name": "get_order", "args": {{"order_id": "A-100"}}}}]}}
  ]
}}
"""

README = """\
# {suite}: an eval gate with pytest-evalcases

Scaffolded by `python -m pytest_evalcases init --framework {framework}`. `my_agent/` is a
stand-in agent: its "model" is a deterministic function (`my_agent/stand_in.py`{model_note}), so
everything here runs offline, with no key.

```bash
pytest --live --eval-judge lexical   # run the agent and the offline judge, record cassettes/
pytest                               # replay the recordings: no model call, no key, no network
```

Next steps:

1. **Replace the stand-in** with your agent: {replace_hint} Keep `my_agent/system.py` a few
   lines over the adapter (docs/adapters.md of pytest-evalcases), and build clients inside
   functions, not at import: a replay imports the module with no key.
2. **Write your cases** in `cases/{suite}.json` (fields: docs/case-files.md), and pick a real
   judge: `"judge": "openai:gpt-4o-mini"` (or keep `lexical`, offline and deterministic).
3. **Record**: `OPENAI_API_KEY=... pytest --live`. A recording covers the cases, the judge, the
   system's `fingerprint()` and the source of every module of this project that the system
   imports: change one and the replay names what went stale.
4. **Commit `cassettes/`**, and check them for secrets: `python -m pytest_evalcases scan`.
5. **In CI**, run `pytest` (e.g. `pytest -n auto --junitxml=evals.xml --eval-report evals/`).
"""

INIT_PY = '''\
"""A stand-in agent scaffolded by `python -m pytest_evalcases init`: replace it with yours."""
'''

TOOLS_PY = '''\
"""The agent's tools: a help-article search and an order lookup over tiny in-code data.
Each returns JSON text, the way a tool answers a model."""

from __future__ import annotations

import json
import re

ARTICLES = {
    "returns": "You can return an item within 30 days after delivery. Refunds reach your card "
    "within 5 business days.",
    "shipping": "Standard shipping takes 3 to 5 business days. Express shipping takes 1 "
    "business day.",
    "warranty": "Every product has a two year warranty against manufacturing defects.",
}
ORDERS = {"A-100": {"id": "A-100", "status": "shipped", "detail": "it left our warehouse today"}}


def terms(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}


def search_kb(query: str) -> str:
    """Search the help articles; returns the two best matches as a JSON list of {id, text}."""
    ranked = sorted(ARTICLES, key=lambda doc: -len(terms(ARTICLES[doc]) & terms(query)))
    return json.dumps([{"id": doc, "text": ARTICLES[doc]} for doc in ranked[:2]])


def get_order(order_id: str) -> str:
    """Look up an order by its id (such as A-100); returns its status as JSON."""
    order = ORDERS.get(order_id.upper(), {"error": f"There is no order {order_id}"})
    return json.dumps(order)


TOOLS = {"search_kb": search_kb, "get_order": get_order}
'''

STAND_IN_PY = '''\
"""The stand-in model's rules: a deterministic function in place of an LLM, so the scaffold
runs offline. Given the question and the tool results so far, it returns the tool calls to
make next, or the answer. Delete this file when your agent has a real model."""

from __future__ import annotations

import json
import re

from .tools import terms

MODEL_NAME = "stand-in-1"
ORDER_ID = re.compile(r"\\b[A-Z]-\\d{3}\\b", re.IGNORECASE)


def next_step(question: str, results: list[tuple[str, str]]) -> list[tuple[str, dict]] | str:
    """`results` holds (tool name, output) pairs; the answer once there are results."""
    if results:
        return answer(question, results)
    if match := ORDER_ID.search(question):
        return [("get_order", {"order_id": match.group().upper()})]
    return [("search_kb", {"query": question})]


def answer(question: str, results: list[tuple[str, str]]) -> str:
    parts = []
    for name, output in results:
        value = json.loads(output)
        if name == "get_order":
            parts.append(
                f"Order {value['id']} is {value['status']}: {value['detail']}."
                if "status" in value
                else value["error"] + "."
            )
        elif value:
            sentences = re.split(r"(?<=\\.)\\s+", value[0]["text"])
            parts.append(max(sentences, key=lambda s: len(terms(s) & terms(question))))
    return " ".join(parts) or "I can't find anything about that."
'''

PROMPT_LINE = """\
PROMPT = (
    "You are the assistant of a web shop. Use search_kb for questions about returns, shipping "
    "and warranty, and get_order when the customer names an order id such as A-100."
)
"""

# --- plain: a function, no framework --------------------------------------------------------

PLAIN_AGENT_PY = (
    '''\
"""The agent: a plain loop over the tools (swap the stand-in for your model call)."""

from __future__ import annotations

from .stand_in import next_step
from .tools import TOOLS

'''
    + PROMPT_LINE
    + '''

def answer(question: str) -> tuple[str, list[tuple[str, dict, str]]]:
    """The answer and the tool calls made, as (name, args, output)."""
    calls: list[tuple[str, dict, str]] = []
    step = next_step(question, [])
    while not isinstance(step, str):
        calls += [(name, args, TOOLS[name](**args)) for name, args in step]
        step = next_step(question, [(name, output) for name, _, output in calls])
    return step, calls
'''
)

PLAIN_SYSTEM_PY = '''\
"""What the eval suite runs: the agent, its answer and tool calls turned into a trace."""

import json

from .agent import PROMPT, answer
from .stand_in import MODEL_NAME


class System:
    def fingerprint(self):  # the prompt and the model are in the recording's key
        return {"prompt": PROMPT, "model": MODEL_NAME}

    def run(self, case):
        text, calls = answer(case.input)
        docs = [
            doc for name, _, output in calls if name == "search_kb" for doc in json.loads(output)
        ]
        return {
            "answer": text,
            "tool_calls": [{"name": name, "args": args} for name, args, _ in calls],
            "tool_outputs": [{"tool": name, "content": output} for name, _, output in calls],
            "retrieved": [doc["id"] for doc in docs],
            "context": [doc["text"] for doc in docs],
        }


system = System()
'''

# --- openai: the Chat Completions SDK -------------------------------------------------------

OPENAI_MODEL_PY = '''\
"""The stand-in for `openai.OpenAI()`: `client.chat.completions.create(...)` answers with real
`ChatCompletion` objects made by the stand-in's rules, offline. Replace `StandInClient()` with
`OpenAI()` in agent.py and delete this file."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from openai.types.chat import ChatCompletion

from .stand_in import MODEL_NAME, next_step


def _get(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, dict) else getattr(message, key, None)


class StandInClient:
    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, model: str, messages: list, tools: Any = None, **_: Any) -> ChatCompletion:
        asked = [i for i, m in enumerate(messages) if _get(m, "role") == "user"][-1]
        names = {
            _get(call, "id"): _get(_get(call, "function"), "name")
            for m in messages
            for call in _get(m, "tool_calls") or []
        }
        results = [
            (names[_get(m, "tool_call_id")], _get(m, "content"))
            for m in messages[asked:]
            if _get(m, "role") == "tool"
        ]
        step = next_step(_get(messages[asked], "content"), results)
        if isinstance(step, str):
            message, finish = {"role": "assistant", "content": step}, "stop"
        else:
            calls = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(step)
            ]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        words = sum(len(str(_get(m, "content") or "").split()) for m in messages)
        reply_words = len(json.dumps(message).split())
        return ChatCompletion.model_validate(
            {
                "id": "chatcmpl-stand-in",
                "object": "chat.completion",
                "created": 0,
                "model": model or MODEL_NAME,
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": {
                    "prompt_tokens": words,
                    "completion_tokens": reply_words,
                    "total_tokens": words + reply_words,
                },
            }
        )
'''

OPENAI_AGENT_PY = (
    '''\
"""The agent: a Chat Completions tool loop on the openai SDK."""

from __future__ import annotations

import json

from .model import StandInClient
from .stand_in import MODEL_NAME
from .tools import TOOLS

'''
    + PROMPT_LINE
    + '''MODEL = MODEL_NAME  # your agent: "gpt-4o-mini"
TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "search_kb",
            "description": "Search the help articles.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
]


def client():
    return StandInClient()  # your agent: `return OpenAI()` (built here, not at import)


def run(question: str) -> tuple[list, list]:
    """The conversation's messages and the completions (for their usage)."""
    chat, replies = client(), []
    messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": question}]
    while not replies or replies[-1].choices[0].message.tool_calls:
        replies.append(
            chat.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)
        )
        messages.append(replies[-1].choices[0].message)
        for call in replies[-1].choices[0].message.tool_calls or []:
            output = TOOLS[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return messages, replies
'''
)

OPENAI_SYSTEM_PY = '''\
"""What the eval suite runs: the agent, its messages turned into a trace by the adapter."""

from pytest_evalcases.adapters import fingerprint_of, from_openai_messages

from .agent import MODEL, PROMPT, TOOL_SCHEMAS, run


class System:
    def fingerprint(self):  # the model, the prompt and each tool's schema are in the key
        return fingerprint_of(TOOL_SCHEMAS, prompt=PROMPT, model=MODEL)

    def run(self, case):
        messages, replies = run(case.input)
        return from_openai_messages(messages, completions=replies, retrievers=["search_kb"])


system = System()
'''

# --- langchain: a LangGraph tool loop on a langchain-core chat model ------------------------

LANGCHAIN_MODEL_PY = '''\
"""The stand-in chat model: a real langchain-core chat model whose replies come from the
stand-in's rules, offline. Replace `StandInModel()` with your model (`ChatOpenAI(...)`) in
agent.py and delete this file."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from .stand_in import MODEL_NAME, next_step


class StandInModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def bind_tools(self, tools: Any, **kwargs: Any) -> StandInModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        asked = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)][-1]
        results = [(m.name, str(m.content)) for m in messages[asked:] if isinstance(m, ToolMessage)]
        step = next_step(str(messages[asked].content), results)
        if isinstance(step, str):
            reply = AIMessage(step)
        else:
            calls = [{"name": n, "args": a, "id": f"call_{i}"} for i, (n, a) in enumerate(step)]
            reply = AIMessage("", tool_calls=calls)
        words = sum(len(str(m.content).split()) for m in messages)
        reply.usage_metadata = {
            "input_tokens": words,
            "output_tokens": len(reply.text.split()),
            "total_tokens": words + len(reply.text.split()),
        }
        reply.response_metadata = {"model_name": MODEL_NAME}
        return ChatResult(generations=[ChatGeneration(message=reply)])
'''

LANGCHAIN_AGENT_PY = (
    '''\
"""The agent: a LangGraph tool loop (model -> tools -> model ... until it answers)."""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from .model import StandInModel
from .tools import get_order, search_kb

'''
    + PROMPT_LINE
    + """TOOLS = [tool(search_kb), tool(get_order)]


@cache
def agent() -> Any:
    model = StandInModel().bind_tools(TOOLS)  # your agent: ChatOpenAI(model=...).bind_tools(TOOLS)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([SystemMessage(PROMPT), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()
"""
)

LANGCHAIN_SYSTEM_PY = '''\
"""What the eval suite runs: the LangGraph agent, its messages turned into a trace."""

from pytest_evalcases.adapters import fingerprint_of, from_langchain_messages

from .agent import PROMPT, TOOLS, agent
from .stand_in import MODEL_NAME


class System:
    def fingerprint(self):  # the model, the prompt and each tool's schema are in the key
        return fingerprint_of(TOOLS, prompt=PROMPT, model=MODEL_NAME)

    def run(self, case):
        result = agent().invoke({"messages": [{"role": "user", "content": case.input}]})
        return from_langchain_messages(result["messages"][1:], retrievers=["search_kb"])


system = System()
'''

# --- pydantic-ai ------------------------------------------------------------------------------

PYDANTIC_AI_MODEL_PY = '''\
"""The stand-in model: pydantic-ai's own `FunctionModel`, its replies made by the stand-in's
rules, offline. Replace `model()` with your model name ("openai:gpt-4o-mini") in agent.py and
delete this file."""

from __future__ import annotations

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

from .stand_in import MODEL_NAME, next_step


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    parts = [part for m in requests for part in m.parts]
    asked = max(i for i, p in enumerate(parts) if isinstance(p, UserPromptPart))
    results = [
        (p.tool_name, str(p.content)) for p in parts[asked:] if isinstance(p, ToolReturnPart)
    ]
    step = next_step(str(parts[asked].content), results)
    if isinstance(step, str):
        return ModelResponse(parts=[TextPart(step)])
    return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])


def model() -> FunctionModel:
    return FunctionModel(reply, model_name=MODEL_NAME)
'''

PYDANTIC_AI_AGENT_PY = (
    '''\
"""The agent: pydantic-ai with the two tools."""

from pydantic_ai import Agent

from .model import model
from .tools import get_order, search_kb

'''
    + PROMPT_LINE
    + """
agent = Agent(model(), system_prompt=PROMPT, tools=[search_kb, get_order])
"""
)

PYDANTIC_AI_SYSTEM_PY = '''\
"""What the eval suite runs: the pydantic-ai agent, its run turned into a trace."""

from pytest_evalcases.adapters import fingerprint_of, from_pydantic_ai

from .agent import agent


class System:
    def fingerprint(self):  # the model name, the prompt and each tool's schema are in the key
        return fingerprint_of(agent)

    def run(self, case):
        return from_pydantic_ai(agent.run_sync(case.input), retrievers=["search_kb"])


system = System()
'''

FRAMEWORK_FILES: dict[str, dict[str, str]] = {
    "plain": {"agent.py": PLAIN_AGENT_PY, "system.py": PLAIN_SYSTEM_PY},
    "openai": {
        "model.py": OPENAI_MODEL_PY,
        "agent.py": OPENAI_AGENT_PY,
        "system.py": OPENAI_SYSTEM_PY,
    },
    "langchain": {
        "model.py": LANGCHAIN_MODEL_PY,
        "agent.py": LANGCHAIN_AGENT_PY,
        "system.py": LANGCHAIN_SYSTEM_PY,
    },
    "pydantic-ai": {
        "model.py": PYDANTIC_AI_MODEL_PY,
        "agent.py": PYDANTIC_AI_AGENT_PY,
        "system.py": PYDANTIC_AI_SYSTEM_PY,
    },
}

REPLACE_HINTS = {
    "plain": "call your model in `my_agent/agent.py` where it calls `next_step`.",
    "openai": "in `my_agent/agent.py`, `client()` returns `OpenAI()` and `MODEL` is yours.",
    "langchain": "in `my_agent/agent.py`, bind your chat model (`ChatOpenAI(...)`) instead "
    "of `StandInModel()`.",
    "pydantic-ai": 'in `my_agent/agent.py`, `Agent("openai:gpt-4o-mini", ...)` instead of '
    "`Agent(model(), ...)`.",
}
