"""pydantic-ai: a run result (or its messages).

`ToolCallPart`s are the calls, `ToolReturnPart`s the outputs (their Python value is what the
retriever extractor reads), `RetryPromptPart`s the outputs of calls the agent rejected.
The output tool pydantic-ai adds for structured output (`final_result`) is not a tool call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .pricing import Prices
from .trace_builder import Retrievers, TraceBuilder, as_text


def from_pydantic_ai(
    result: Any,
    *,
    retrievers: Retrievers = None,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """A trace from an `AgentRunResult` (its `new_messages()`: this run's turn, not a
    `message_history` passed in) or from a list of `ModelMessage`s. Usage is summed from each
    `ModelResponse.usage`, priced by its `model_name` (or `model`); the answer is the run's
    `output` (JSON for a structured one), else the last text part."""
    if hasattr(result, "new_messages"):
        messages: Iterable[Any] = result.new_messages()
        output_tool = getattr(result, "_output_tool_name", None)
        has_output = True
    else:
        messages, output_tool, has_output = result, None, False
    builder = TraceBuilder(retrievers, prices)
    output_calls: set[str] = set()
    for message in messages:
        if getattr(message, "kind", None) == "response":
            usage = getattr(message, "usage", None)
            if usage is not None:
                builder.usage(
                    usage.input_tokens,
                    usage.output_tokens,
                    getattr(message, "model_name", None) or model,
                )
            for part in message.parts:
                kind = getattr(part, "part_kind", None)
                if kind == "tool-call":
                    if part.tool_name == output_tool:
                        output_calls.add(part.tool_call_id)
                        continue
                    builder.call(part.tool_name, part.args_as_dict(), part.tool_call_id)
                elif kind == "text":
                    builder.answer = part.content
        else:
            for part in getattr(message, "parts", ()):
                kind = getattr(part, "part_kind", None)
                if kind == "tool-return" and part.tool_call_id not in output_calls:
                    builder.output(
                        part.model_response_str(),
                        call_id=part.tool_call_id,
                        name=part.tool_name,
                        raw=part.content,
                    )
                elif (
                    kind == "retry-prompt"
                    and part.tool_name
                    and part.tool_call_id not in output_calls
                ):
                    builder.output(
                        part.model_response(), call_id=part.tool_call_id, name=part.tool_name
                    )
    if has_output:
        output = result.output
        builder.answer = output if isinstance(output, str) else as_text(output)
    return builder.build()
