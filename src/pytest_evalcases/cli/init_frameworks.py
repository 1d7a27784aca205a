"""The files `init` writes that differ by framework: the stand-in model in the framework's own
objects (`model.py`), the agent as a user writes it on that framework (`agent.py`) and the thin
system module over its adapter (`system.py`)."""

from __future__ import annotations

from .init_templates import PROMPT_LINE

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
