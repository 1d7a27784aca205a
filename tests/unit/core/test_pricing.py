from __future__ import annotations

import pytest

from pytest_evalcases.adapters import pricing as public_path
from pytest_evalcases.core import pricing
from pytest_evalcases.core.pricing import cost_usd, price_of


def test_the_adapters_path_is_the_same_table_and_functions() -> None:
    assert public_path.PRICE_TABLE is pricing.PRICE_TABLE
    assert public_path.price_of is price_of and public_path.cost_usd is cost_usd


def test_cost_is_tokens_times_the_price_per_million() -> None:
    # gpt-4o-mini: 0.15 in, 0.60 out per million: 2000 * 0.15e-6 + 500 * 0.60e-6 = 0.0006
    assert cost_usd("gpt-4o-mini", 2000, 500) == 0.0006
    # a price given beside the table comes first
    assert cost_usd("gpt-4o", 1_000_000, 0, {"gpt-4o": (1.0, 1.0)}) == 1.0


def test_gemini_model_versions_and_embedding_models_are_priced() -> None:
    assert price_of("gemini-2.0-flash-001") == (0.10, 0.40)  # a numbered snapshot
    assert price_of("text-embedding-ada-002") == (0.10, 0.0)  # its own name, not a snapshot
    # text-embedding-3-small: 0.02 per million input tokens, no output
    assert cost_usd("text-embedding-3-small", 50_000, 0) == pytest.approx(0.001)
