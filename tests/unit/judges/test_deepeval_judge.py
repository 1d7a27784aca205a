"""The deepeval-backed judge without a server: background loading, a missing provider
package, its version and params."""

from __future__ import annotations

import importlib.metadata

import pytest

from pytest_evalcases.judges import (
    JudgeConfigError,
    judge_version,
    make_judge,
)
from pytest_evalcases.judges import deepeval_judge as deepeval_judge_module


def test_warm_up_starts_loading_deepeval_in_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deepeval_judge_module, "_loading", None)
    make_judge("lexical").warm_up()  # nothing to prepare
    assert deepeval_judge_module._loading is None
    judge = make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})
    assert deepeval_judge_module._loading is None  # making a judge loads nothing
    judge.warm_up()
    loading = deepeval_judge_module._loading
    assert loading is not None
    judge.warm_up()  # once per process
    assert deepeval_judge_module._loading is loading
    assert loading.result(timeout=120) is None


def test_missing_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def installed(module: str) -> bool:
        return module != "google.genai"

    monkeypatch.setattr(deepeval_judge_module, "_installed", installed)
    with pytest.raises(JudgeConfigError, match="pip install google-genai"):
        make_judge("gemini:gemini-2.0-flash", environ={"GOOGLE_API_KEY": "k"})


def test_llm_judge_version_and_params() -> None:
    judge = make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})
    expected = f"deepeval=={importlib.metadata.version('deepeval')}; evalcases-prompts==1"
    assert judge.id == "openai:gpt-4o-mini"
    assert judge_version("openai:gpt-4o-mini") == expected
    assert judge_version("ollama:llama3.1:8b") == expected  # no key needed for a version
    assert judge.stage_params("faithfulness", {"strict": False}) == {"strict": False}
    assert judge.stage_params("context_completeness", {"accept_partial": True}) == {}
    with pytest.raises(JudgeConfigError):
        judge_version("nope")
