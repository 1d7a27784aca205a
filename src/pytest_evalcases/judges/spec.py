"""Parsing `--eval-judge` values and finding the credentials each provider needs.

Pure: reads only the environment mapping it is given, imports nothing heavy. `parse_spec` checks
the form; `resolve_spec` also checks the credentials (what `make_judge` calls, so a missing key
fails before any case runs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import JudgeConfigError

PROVIDERS: tuple[str, ...] = ("openai", "gemini", "ollama", "litellm", "lexical")

ACCEPTED_FORMS: tuple[str, ...] = (
    "openai:<model>   (OPENAI_API_KEY; OPENAI_BASE_URL for vLLM, LM Studio, Ollama's /v1)",
    "gemini:<model>   (GOOGLE_API_KEY or GEMINI_API_KEY)",
    "ollama:<model>   (OLLAMA_HOST, default http://localhost:11434)",
    "litellm:<model>  (the key variables of the provider litellm routes to)",
    "lexical          (built-in offline heuristic judge, no key, no network)",
)

DEFAULT_OLLAMA_HOST = "http://localhost:11434"

_EXAMPLES = {
    "openai": "openai:gpt-4o-mini",
    "gemini": "gemini:gemini-2.0-flash",
    "ollama": "ollama:llama3.1:8b",
    "litellm": "litellm:anthropic/claude-3-5-haiku-latest",
}


@dataclass(frozen=True)
class JudgeSpec:
    """A parsed judge spec. `api_key` is kept out of repr so it never lands in a log."""

    provider: str
    model: str | None
    base_url: str | None = None
    key_env: str | None = None  # the variable the key came from, named in auth errors
    api_key: str | None = field(default=None, repr=False)
    # OpenAI: OPENAI_ORG_ID / OPENAI_PROJECT_ID, sent as the openai SDK sends them
    organization: str | None = None
    project: str | None = None

    @property
    def id(self) -> str:
        return self.provider if self.model is None else f"{self.provider}:{self.model}"


def _forms() -> str:
    return "\n  ".join(ACCEPTED_FORMS)


def parse_spec(value: str) -> JudgeSpec:
    """Check the form of a spec (no credentials). Raises JudgeConfigError listing the forms."""
    text = (value or "").strip()
    provider, sep, model = text.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if provider == "lexical" and not sep:
        return JudgeSpec("lexical", None)
    if provider not in PROVIDERS or provider == "lexical":
        raise JudgeConfigError(
            f"unknown judge {value!r}; --eval-judge accepts:\n  {_forms()}"
        )
    if not model:
        raise JudgeConfigError(
            f"judge {value!r} names no model; write {provider}:<model>, e.g. "
            f"{_EXAMPLES[provider]}. --eval-judge accepts:\n  {_forms()}"
        )
    # Split on the first colon only: Ollama tags contain one ("ollama:llama3.1:8b").
    return JudgeSpec(provider, model)


def resolve_spec(value: str, environ: Mapping[str, str] | None = None) -> JudgeSpec:
    """Parse a spec and attach the key and endpoint from the environment.

    Raises JudgeConfigError naming the missing variable and what to do about it.
    """
    env = os.environ if environ is None else environ
    spec = parse_spec(value)
    fallback = (
        "or use --eval-judge lexical for the offline heuristic judge, or run without --live to "
        "replay recorded verdicts (no key needed)"
    )
    if spec.provider == "openai":
        key = env.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise JudgeConfigError(
                f"judge {spec.id!r} needs OPENAI_API_KEY, which is not set. Export "
                "OPENAI_API_KEY=<your key>; for a local OpenAI-compatible server (vLLM, LM Studio, "
                "Ollama's /v1) also set OPENAI_BASE_URL=http://host:port/v1 and any non-empty key; "
                + fallback
            )
        base_url = env.get("OPENAI_BASE_URL", "").strip() or None
        return JudgeSpec(
            "openai",
            spec.model,
            base_url,
            "OPENAI_API_KEY",
            key,
            organization=env.get("OPENAI_ORG_ID", "").strip() or None,
            project=env.get("OPENAI_PROJECT_ID", "").strip() or None,
        )
    if spec.provider == "gemini":
        for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
            key = env.get(name, "").strip()
            if key:
                return JudgeSpec("gemini", spec.model, None, name, key)
        raise JudgeConfigError(
            f"judge {spec.id!r} needs GOOGLE_API_KEY (or GEMINI_API_KEY), which is not set. "
            "Export GOOGLE_API_KEY=<your key from Google AI Studio>; " + fallback
        )
    if spec.provider == "ollama":
        host = env.get("OLLAMA_HOST", "").strip() or DEFAULT_OLLAMA_HOST
        if "://" not in host:  # the ollama CLI accepts "host:port"; the HTTP client needs a scheme
            host = "http://" + host
        return JudgeSpec("ollama", spec.model, host.rstrip("/"), "OLLAMA_HOST")
    if spec.provider == "litellm":
        # litellm reads the routed provider's own variables (OPENAI_API_KEY, ANTHROPIC_API_KEY...)
        return JudgeSpec("litellm", spec.model, None, "the provider's API key variable")
    return spec
