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

# The judge's own endpoint and key. An agent built on the openai SDK reads OPENAI_BASE_URL and
# OPENAI_API_KEY too, so pointing the judge at a local server through them moves the agent with
# it; these two configure the judge only (the provider's own variables remain the fallback).
JUDGE_BASE_URL_ENV = "EVALCASES_JUDGE_BASE_URL"
JUDGE_API_KEY_ENV = "EVALCASES_JUDGE_API_KEY"

ACCEPTED_FORMS: tuple[str, ...] = (
    "openai:<model>   (EVALCASES_JUDGE_API_KEY or OPENAI_API_KEY; EVALCASES_JUDGE_BASE_URL or "
    "OPENAI_BASE_URL for vLLM, LM Studio, Ollama's /v1)",
    "gemini:<model>   (EVALCASES_JUDGE_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY)",
    "ollama:<model>   (EVALCASES_JUDGE_BASE_URL or OLLAMA_HOST, default http://localhost:11434)",
    "litellm:<model>  (EVALCASES_JUDGE_API_KEY / EVALCASES_JUDGE_BASE_URL, else the variables "
    "of the provider litellm routes to)",
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
        raise JudgeConfigError(f"unknown judge {value!r}; --eval-judge accepts:\n  {_forms()}")
    if not model:
        raise JudgeConfigError(
            f"judge {value!r} names no model; write {provider}:<model>, e.g. "
            f"{_EXAMPLES[provider]}. --eval-judge accepts:\n  {_forms()}"
        )
    # Split on the first colon only: Ollama tags contain one ("ollama:llama3.1:8b").
    return JudgeSpec(provider, model)


def _first(env: Mapping[str, str], *names: str) -> tuple[str | None, str | None]:
    """The first of `names` set to a non-blank value: (value, name), else (None, None)."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value, name
    return None, None


def resolve_spec(value: str, environ: Mapping[str, str] | None = None) -> JudgeSpec:
    """Parse a spec and attach the key and endpoint from the environment.

    EVALCASES_JUDGE_BASE_URL / EVALCASES_JUDGE_API_KEY come first (they configure the judge
    only), then the provider's own variables. Raises JudgeConfigError naming the missing
    variable and what to do about it.
    """
    env = os.environ if environ is None else environ
    spec = parse_spec(value)
    fallback = (
        "or use --eval-judge lexical for the offline heuristic judge, or run without --live to "
        "replay recorded verdicts (no key needed)"
    )
    base_url, _ = _first(env, JUDGE_BASE_URL_ENV)
    if spec.provider == "openai":
        key, key_env = _first(env, JUDGE_API_KEY_ENV, "OPENAI_API_KEY")
        if not key:
            raise JudgeConfigError(
                f"judge {spec.id!r} needs {JUDGE_API_KEY_ENV} or OPENAI_API_KEY, and neither is "
                f"set. Export OPENAI_API_KEY=<your key> (or {JUDGE_API_KEY_ENV}, read by the "
                "judge only); for a local OpenAI-compatible server (vLLM, LM Studio, Ollama's "
                f"/v1) also set {JUDGE_BASE_URL_ENV}=http://host:port/v1 (the judge only; "
                "OPENAI_BASE_URL would move an openai-SDK agent too) and any non-empty key; "
                + fallback
            )
        if base_url is None:
            base_url = env.get("OPENAI_BASE_URL", "").strip() or None
        # The organization and project belong to OPENAI_API_KEY: sent with another key, OpenAI
        # refuses the request (mismatched organization).
        own_key = key_env == "OPENAI_API_KEY"
        return JudgeSpec(
            "openai",
            spec.model,
            base_url,
            key_env,
            key,
            organization=(env.get("OPENAI_ORG_ID", "").strip() or None) if own_key else None,
            project=(env.get("OPENAI_PROJECT_ID", "").strip() or None) if own_key else None,
        )
    if spec.provider == "gemini":
        if base_url is not None:
            raise JudgeConfigError(
                f"judge {spec.id!r}: {JUDGE_BASE_URL_ENV} is set, but deepeval's Gemini model "
                f"takes no endpoint; unset {JUDGE_BASE_URL_ENV} for this run, or use an "
                "openai:<model> judge for an OpenAI-compatible server"
            )
        key, key_env = _first(env, JUDGE_API_KEY_ENV, "GOOGLE_API_KEY", "GEMINI_API_KEY")
        if key:
            return JudgeSpec("gemini", spec.model, None, key_env, key)
        raise JudgeConfigError(
            f"judge {spec.id!r} needs {JUDGE_API_KEY_ENV}, GOOGLE_API_KEY or GEMINI_API_KEY, and "
            "none is set. Export GOOGLE_API_KEY=<your key from Google AI Studio>; " + fallback
        )
    if spec.provider == "ollama":
        host, host_env = _first(env, JUDGE_BASE_URL_ENV, "OLLAMA_HOST")
        host = host or DEFAULT_OLLAMA_HOST
        if "://" not in host:  # the ollama CLI accepts "host:port"; the HTTP client needs a scheme
            host = "http://" + host
        return JudgeSpec("ollama", spec.model, host.rstrip("/"), host_env or "OLLAMA_HOST")
    if spec.provider == "litellm":
        # Without our variables litellm reads the routed provider's own (OPENAI_API_KEY,
        # ANTHROPIC_API_KEY...).
        key, key_env = _first(env, JUDGE_API_KEY_ENV)
        return JudgeSpec(
            "litellm", spec.model, base_url, key_env or "the provider's API key variable", key
        )
    return spec


def canonical_judge(spec: str) -> str:
    """The judge id keys are made with (`OpenAI:x` and `openai:x` are one judge). Checks the
    form only, no key, so replay can validate it; raises JudgeConfigError listing the forms."""
    return parse_spec(spec).id
