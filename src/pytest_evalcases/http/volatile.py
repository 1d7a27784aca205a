"""Values a provider makes fresh on every call: the built-in list, and a suite's own.

A model API answers the same request with a new response id (`chatcmpl-…`), new tool-call ids
(`call_…`, which the client then sends back as `tool_call_id` and in the assistant message's
`tool_calls[].id`), a new `created` time and new request-id, date and rate-limit headers. None of
that is a change: http/rerecord.py leaves these values out when it compares a re-record with the
old exchanges, and puts their old form back.

The built-in list (PROVIDERS, VOLATILE_HEADERS) covers OpenAI-compatible APIs (chat completions,
completions, responses; vLLM, LM Studio, Ollama's /v1, litellm's proxy, Azure OpenAI), Anthropic's
messages API, Gemini's generateContent and Ollama's own API; a suite adds JSONPaths and header
names with `"http_volatile"` (`Volatility`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.json_paths import parse_json_path

__all__ = [
    "COUNTER_KEYS",
    "MIN_ID_CHARS",
    "PROVIDERS",
    "JsonPath",
    "Provider",
    "VOLATILE_HEADERS",
    "VOLATILE_HEADER_PREFIXES",
    "Volatility",
]

# A fresh string at least this long is an id: replaced by its old form wherever it appears.
# Shorter values (a status word, a small number) are only put back where they were found.
MIN_ID_CHARS = 8
# Counters that differ between runs of the same request (cached tokens, durations): left out
# of the comparison at any depth of a response body, and never carried over.
COUNTER_KEYS = frozenset({"usage", "usageMetadata", "latency_ms"})


@dataclass(frozen=True)
class Provider:
    """Where one API puts fresh values. `endpoints`: URL path endings it answers on (none: every
    JSON response); `response`: JSONPaths into a response body (or each event of a streamed
    one); `request`: where a client sends such values back in a later request."""

    name: str
    endpoints: tuple[str, ...]
    response: tuple[str, ...]
    request: tuple[str, ...] = ()


# The fields every OpenAI-compatible server sends, whatever path it answers on.
ANY_JSON = Provider("any JSON response", (), ("$.id", "$.created", "$.system_fingerprint"))

PROVIDERS: tuple[Provider, ...] = (
    ANY_JSON,
    Provider(
        "OpenAI chat completions",
        ("/chat/completions",),
        (
            "$.obfuscation",
            "$.choices[*].message.tool_calls[*].id",
            "$.choices[*].delta.tool_calls[*].id",
            "$.usage.prompt_tokens_details.cached_tokens",
        ),
        ("$.messages[*].tool_call_id", "$.messages[*].tool_calls[*].id"),
    ),
    Provider(
        "OpenAI responses",
        ("/responses",),
        (
            "$.created_at",
            "$.completed_at",
            "$.obfuscation",
            "$.output[*].id",
            "$.output[*].call_id",
            "$.output[*].encrypted_content",
            # streamed events
            "$.item_id",
            "$.item.id",
            "$.item.call_id",
            "$.item.encrypted_content",
            "$.response.id",
            "$.response.created_at",
            "$.response.completed_at",
            "$.response.output[*].id",
            "$.response.output[*].call_id",
            "$.response.output[*].encrypted_content",
            "$.usage.input_tokens_details.cached_tokens",
            "$.response.usage.input_tokens_details.cached_tokens",
        ),
        (
            "$.previous_response_id",
            "$.input[*].id",
            "$.input[*].call_id",
            "$.input[*].encrypted_content",
        ),
    ),
    Provider(
        "Anthropic messages",
        ("/messages",),
        (
            "$.content[*].id",
            "$.message.id",
            "$.content_block.id",
            "$.usage.cache_read_input_tokens",
            "$.usage.cache_creation_input_tokens",
            "$.message.usage.cache_read_input_tokens",
            "$.message.usage.cache_creation_input_tokens",
        ),
        ("$.messages[*].content[*].id", "$.messages[*].content[*].tool_use_id"),
    ),
    Provider(
        "Gemini generateContent",
        (":generateContent", ":streamGenerateContent"),
        (
            "$.responseId",
            "$.createTime",
            "$.candidates[*].content.parts[*].functionCall.id",
            "$.candidates[*].content.parts[*].thoughtSignature",
            "$.usageMetadata.cachedContentTokenCount",
        ),
        (
            "$.contents[*].parts[*].functionCall.id",
            "$.contents[*].parts[*].functionResponse.id",
            "$.contents[*].parts[*].thoughtSignature",
        ),
    ),
    Provider(
        "Ollama",
        ("/api/chat", "/api/generate", "/api/embed", "/api/embeddings"),
        (
            "$.created_at",
            "$.total_duration",
            "$.load_duration",
            "$.prompt_eval_duration",
            "$.eval_duration",
        ),
    ),
)

# Response headers (lower case) that say when and where a reply was made, never what it holds.
VOLATILE_HEADERS = frozenset(
    {
        "date",
        "expires",
        "age",
        "x-request-id",
        "request-id",
        "x-correlation-id",
        "x-trace-id",
        "traceparent",
        "openai-processing-ms",
        "x-envoy-upstream-service-time",
        "cf-ray",
        "server-timing",
        "x-cloud-trace-context",
        "apim-request-id",
        "azureml-model-session",
        "x-ms-request-id",
        "x-ms-client-request-id",
        "x-amzn-requestid",
        "x-amz-request-id",
        "x-amzn-trace-id",
        "x-litellm-call-id",
        "x-litellm-response-duration-ms",
        "x-litellm-overhead-duration-ms",
    }
)
VOLATILE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "x-ms-ratelimit-", "ratelimit-")

JsonPath = tuple[str | int, ...]
_PARSED: dict[str, tuple[list[JsonPath], list[JsonPath]]] = {
    provider.name: (
        [tuple(parse_json_path(path)) for path in provider.request],
        [tuple(parse_json_path(path)) for path in provider.response],
    )
    for provider in PROVIDERS
}


class Volatility:
    """The volatile values of one suite's exchanges: the built-in list and the suite's
    `http_volatile` entries (JSONPaths, applied to request and response bodies alike; other
    entries are response header names, a trailing `*` standing for any ending)."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        extra = list(extra)
        self._extra_paths = [tuple(parse_json_path(e)) for e in extra if e.startswith("$")]
        names = [e.lower() for e in extra if not e.startswith("$")]
        self._headers = VOLATILE_HEADERS | {n for n in names if not n.endswith("*")}
        self._prefixes = VOLATILE_HEADER_PREFIXES + tuple(n[:-1] for n in names if n.endswith("*"))
        self._by_path: dict[str, tuple[list[JsonPath], list[JsonPath]]] = {}

    def paths(self, uri: str) -> tuple[list[JsonPath], list[JsonPath]]:
        """(request paths, response paths) of volatile values for a request to `uri`."""
        path = urlsplit(uri).path.rstrip("/")
        found = self._by_path.get(path)
        if found is None:
            request, response = list(self._extra_paths), list(self._extra_paths)
            for provider in PROVIDERS:
                if not provider.endpoints or path.endswith(provider.endpoints):
                    request += _PARSED[provider.name][0]
                    response += _PARSED[provider.name][1]
            found = self._by_path[path] = (request, response)
        return found

    def is_volatile_header(self, name: str) -> bool:
        lower = name.lower()
        return lower in self._headers or lower.startswith(self._prefixes)


def replay_ignored(suite: Any) -> list[str]:
    """The request fields --replay-http does not match on: the suite's `http_ignore`, and the
    body fields it calls volatile (fresh on every run: never the same twice)."""
    return suite.http_ignore + [entry for entry in suite.http_volatile if entry.startswith("$")]
