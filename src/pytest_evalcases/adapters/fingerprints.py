"""`fingerprint_of(...)`: what a recording depends on in an agent's definition, for a system's
`fingerprint()`: its model name, its system prompt and, per tool, the schema the model sees
(name, description, JSON schema). Each tool is its own key field (`fingerprint.tool.<name>`),
so an edited tool description stales the recording, and the stale message names the tool,
even without code fingerprints.

Understood: a pydantic-ai `Agent`, an OpenAI Agents SDK `Agent`, and lists of tools (OpenAI
tool dicts in the Chat Completions or Responses shape, LangChain tools, pydantic-ai `Tool`s,
Agents SDK `FunctionTool`s). Whatever it cannot read can be given: `prompt=`, `model=`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def fingerprint_of(
    target: Any = None,
    *,
    tools: Iterable[Any] | None = None,
    prompt: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """`{"model": ..., "prompt": ..., "tool.<name>": {"description", "parameters"}}` of an
    agent (or a list of tools as `target`); entries that are unknown are left out."""
    found: dict[str, Any] = {}
    agent_tools: Iterable[Any] = ()
    if target is not None and _is_tool_list(target):
        agent_tools = target
    elif target is not None:
        found.update(_agent_fields(target))
        agent_tools = _agent_tools(target)
    if model is not None:
        found["model"] = model
    if prompt is not None:
        found["prompt"] = prompt
    for name, schema in tool_schemas([*agent_tools, *(tools or ())]).items():
        found[f"tool.{name}"] = schema
    return found


def _is_tool_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def tool_schemas(tools: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> `{"description", "parameters"}` as the model sees it."""
    schemas = {}
    for tool in tools:
        name, description, parameters = _tool_schema(tool)
        schemas[name] = {"description": description or "", "parameters": parameters or {}}
    return schemas


def _tool_schema(tool: Any) -> tuple[str, str | None, Any]:
    if isinstance(tool, Mapping):  # OpenAI: {"type": "function", "function": {...}} or flat
        spec = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        return str(spec.get("name")), spec.get("description"), spec.get("parameters")
    tool_def = getattr(tool, "tool_def", None)  # pydantic-ai Tool
    if tool_def is not None:
        return tool_def.name, tool_def.description, tool_def.parameters_json_schema
    if hasattr(tool, "params_json_schema"):  # Agents SDK FunctionTool
        return tool.name, getattr(tool, "description", None), tool.params_json_schema
    if hasattr(tool, "tool_call_schema") or hasattr(tool, "args_schema"):  # LangChain BaseTool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        spec = convert_to_openai_tool(tool)["function"]
        return spec["name"], spec.get("description"), spec.get("parameters")
    raise TypeError(
        f"fingerprint_of: cannot read the schema of tool {tool!r}; pass OpenAI tool dicts, "
        "LangChain tools, pydantic-ai Tools or Agents SDK FunctionTools"
    )


def _agent_fields(agent: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if hasattr(agent, "_function_toolset"):  # pydantic-ai Agent
        model = getattr(agent, "model", None)
        name = getattr(model, "model_name", model)
        if name is not None:
            found["model"] = str(name)
        parts = [str(p) for p in getattr(agent, "_system_prompts", ())]
        parts += [
            str(getattr(i, "instruction", i))
            for i in getattr(agent, "_instructions", ())
            if isinstance(getattr(i, "instruction", i), str)
        ]
        if parts:
            found["prompt"] = "\n\n".join(parts)
        return found
    instructions = getattr(agent, "instructions", None)  # Agents SDK Agent
    if isinstance(instructions, str):
        found["prompt"] = instructions
    model = getattr(agent, "model", None)
    if model is not None:
        found["model"] = model if isinstance(model, str) else str(getattr(model, "model", model))
    return found


def _agent_tools(agent: Any) -> list[Any]:
    toolset = getattr(agent, "_function_toolset", None)  # pydantic-ai
    if toolset is not None:
        return list(getattr(toolset, "tools", {}).values())
    return list(getattr(agent, "tools", None) or [])
