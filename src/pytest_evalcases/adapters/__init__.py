"""Trace adapters: one function per framework turns what the framework returns into a trace.

    from pytest_evalcases.adapters import from_langchain_messages
    return from_langchain_messages(result["messages"], retrievers=["search_kb"])

Every adapter takes the same options: `retrievers` (tool name -> a function from the tool's
output to ranked `(doc_id, text)` pairs, or a list of names for the default extractor),
`model` (prices usage that names no model) and `prices` (USD per million tokens, overriding the
table). None imports its framework: they read the framework's objects as they come, so this
package costs nothing until an adapter is used, and no framework is a dependency.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "capture_otel",
    "default_extractor",
    "fingerprint_of",
    "from_langchain_messages",
    "from_openai_agents",
    "from_openai_messages",
    "from_openai_response",
    "from_pydantic_ai",
    "tool_schemas",
    "trace_from_spans",
]

_WHERE = {
    "capture_otel": "otel",
    "trace_from_spans": "otel",
    "default_extractor": "retrievers",
    "fingerprint_of": "fingerprints",
    "tool_schemas": "fingerprints",
    "from_langchain_messages": "langchain",
    "from_openai_agents": "openai_agents",
    "from_openai_messages": "openai",
    "from_openai_response": "openai",
    "from_pydantic_ai": "pydantic_ai",
}


def __getattr__(name: str) -> Any:
    """Each adapter's module is imported on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
