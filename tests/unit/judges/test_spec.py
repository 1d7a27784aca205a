"""Judge specs: the accepted forms, keys and endpoints from the environment (the judge's own
variables first), and configuration errors that name the fix."""

from __future__ import annotations

import pytest

from pytest_evalcases.judges import (
    JudgeConfigError,
    make_judge,
)
from pytest_evalcases.judges.spec import parse_spec, resolve_spec


# ---- spec parsing, configuration errors, versions -----------------------------------------------
@pytest.mark.parametrize(
    ("value", "provider", "model"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        (" OpenAI:gpt-4o ", "openai", "gpt-4o"),
        ("gemini:gemini-2.0-flash", "gemini", "gemini-2.0-flash"),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),  # the tag's colon stays in the model
        ("litellm:anthropic/claude-3-5-haiku", "litellm", "anthropic/claude-3-5-haiku"),
        ("lexical", "lexical", None),
        ("LEXICAL", "lexical", None),
    ],
)
def test_parse_accepted_forms(value: str, provider: str, model: str | None) -> None:
    spec = parse_spec(value)
    assert (spec.provider, spec.model) == (provider, model)


@pytest.mark.parametrize("value", ["foo", "claude:3", "lexical:x", "", "openai:", "gemini"])
def test_unknown_spec_lists_forms(value: str) -> None:
    with pytest.raises(JudgeConfigError) as caught:
        make_judge(value, environ={})
    message = str(caught.value)
    for form in (
        "openai:<model>",
        "gemini:<model>",
        "ollama:<model>",
        "litellm:<model>",
        "lexical",
    ):
        assert form in message


def test_missing_keys_name_the_variable() -> None:
    with pytest.raises(JudgeConfigError) as openai_error:
        make_judge("openai:gpt-4o-mini", environ={"OPENAI_BASE_URL": "http://x/v1"})
    assert "needs EVALCASES_JUDGE_API_KEY or OPENAI_API_KEY" in str(openai_error.value)
    assert "EVALCASES_JUDGE_BASE_URL=http://host:port/v1" in str(openai_error.value)
    assert "--eval-judge lexical" in str(openai_error.value)
    with pytest.raises(
        JudgeConfigError, match="EVALCASES_JUDGE_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY"
    ):
        make_judge("gemini:gemini-2.0-flash", environ={})


def test_credentials_and_endpoints_from_env() -> None:
    env = {"OPENAI_API_KEY": "sk-secret-1", "OPENAI_BASE_URL": "http://h:1/v1"}
    openai = resolve_spec("openai:m", env)
    assert (openai.base_url, openai.key_env, openai.api_key) == (
        "http://h:1/v1",
        "OPENAI_API_KEY",
        "sk-secret-1",
    )
    assert "sk-secret-1" not in repr(openai)  # keys stay out of logs
    gemini = resolve_spec("gemini:g", {"GEMINI_API_KEY": "g-key"})
    assert (gemini.key_env, gemini.api_key) == ("GEMINI_API_KEY", "g-key")
    assert resolve_spec("ollama:m", {}).base_url == "http://localhost:11434"
    assert resolve_spec("ollama:m", {"OLLAMA_HOST": "box:1234"}).base_url == "http://box:1234"
    assert resolve_spec("litellm:x/y", {}).model == "x/y"  # litellm finds its own keys


# What an openai-SDK agent reads, set to somewhere else than the judge's own endpoint.
AGENT_ENV = {
    "OPENAI_API_KEY": "sk-agent",
    "OPENAI_BASE_URL": "http://agent:1/v1",
    "OPENAI_ORG_ID": "org-agent",
    "GOOGLE_API_KEY": "g-agent",
    "OLLAMA_HOST": "agent:2",
}


JUDGE_ENV = {"EVALCASES_JUDGE_API_KEY": "sk-judge", "EVALCASES_JUDGE_BASE_URL": "http://judge:3/v1"}


def test_the_judges_own_endpoint_and_key_come_before_the_providers_variables() -> None:
    env = {**AGENT_ENV, **JUDGE_ENV}
    openai = resolve_spec("openai:m", env)
    assert (openai.base_url, openai.api_key, openai.key_env) == (
        "http://judge:3/v1",
        "sk-judge",
        "EVALCASES_JUDGE_API_KEY",
    )
    assert openai.organization is None  # OPENAI_ORG_ID belongs to OPENAI_API_KEY
    ollama = resolve_spec("ollama:m", {**AGENT_ENV, "EVALCASES_JUDGE_BASE_URL": "judge:4"})
    assert ollama.base_url == "http://judge:4"
    litellm = resolve_spec("litellm:x/y", env)
    assert (litellm.api_key, litellm.base_url) == ("sk-judge", "http://judge:3/v1")
    gemini = resolve_spec("gemini:g", {**AGENT_ENV, "EVALCASES_JUDGE_API_KEY": "g-judge"})
    assert (gemini.api_key, gemini.key_env) == ("g-judge", "EVALCASES_JUDGE_API_KEY")


def test_each_judge_variable_falls_back_on_its_own() -> None:
    only_url = resolve_spec("openai:m", {**AGENT_ENV, "EVALCASES_JUDGE_BASE_URL": "http://j/v1"})
    assert (only_url.base_url, only_url.api_key, only_url.organization) == (
        "http://j/v1",
        "sk-agent",
        "org-agent",
    )
    only_key = resolve_spec("openai:m", {**AGENT_ENV, "EVALCASES_JUDGE_API_KEY": "sk-judge"})
    assert (only_key.base_url, only_key.api_key) == ("http://agent:1/v1", "sk-judge")
    assert resolve_spec("ollama:m", AGENT_ENV).base_url == "http://agent:2"
    litellm = resolve_spec("litellm:x/y", AGENT_ENV)  # litellm reads the provider's variables
    assert (litellm.api_key, litellm.base_url) == (None, None)


def test_a_judge_base_url_for_gemini_is_refused_by_name() -> None:
    with pytest.raises(JudgeConfigError, match="EVALCASES_JUDGE_BASE_URL is set, but"):
        resolve_spec("gemini:g", {"GOOGLE_API_KEY": "g", "EVALCASES_JUDGE_BASE_URL": "http://x"})


def test_bad_tuning_env_is_a_config_error() -> None:
    env = {"OPENAI_API_KEY": "k", "EVALCASES_JUDGE_TIMEOUT": "soon"}
    with pytest.raises(JudgeConfigError, match="EVALCASES_JUDGE_TIMEOUT"):
        make_judge("openai:gpt-4o-mini", environ=env)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("EVALCASES_JUDGE_RETRIES", "2.5", "must be a whole number"),
        ("EVALCASES_JUDGE_RETRIES", "-1", "must be a non-negative number"),
        ("EVALCASES_JUDGE_BACKOFF", "soon", "is not a number"),
        ("EVALCASES_JUDGE_RATE_LIMIT_WAIT", "inf", "must be a non-negative number"),
        ("EVALCASES_JUDGE_BREAKER", "x", "is not a number"),
        ("EVALCASES_JUDGE_TIMEOUT", "0", "must be positive"),
    ],
)
def test_bad_judge_settings_fail_before_any_case(name: str, value: str, message: str) -> None:
    with pytest.raises(JudgeConfigError, match=message) as caught:
        make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k", name: value})
    assert name in str(caught.value)
