"""Cost of a model request from its tokens, for the models in a small price table.

USD per million tokens (input, output), list prices. A model not in the table has no cost (an
unknown cost is not a zero cost): an adapter leaves the trace without `cost_usd`; pass `prices=`
to an adapter to price your own models or to correct a price. Floor 0, so that the adapters
(public path: `adapters/pricing.py`) and the HTTP layer (`http/usage.py`) price alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

Prices = Mapping[str, tuple[float, float]]

PRICE_TABLE: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
    # Embeddings: input only (what a memory agent's ingestion mostly pays for).
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}

# "gpt-4o-mini-2024-07-18", "claude-3-5-haiku-20241022", "claude-sonnet-4-0",
# "gemini-2.0-flash-001" (Gemini's modelVersion): dated or numbered snapshots.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{3}|\d)$|-latest$")


def price_of(model: str | None, prices: Prices | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens of `model`, from `prices` first, then the table.
    A provider prefix (`openai:`, `openai/`) and a snapshot date are ignored."""
    if not model:
        return None
    tables = (prices, PRICE_TABLE) if prices else (PRICE_TABLE,)
    name = model.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    for candidate in (model, name, _SNAPSHOT.sub("", name)):
        for table in tables:
            if candidate in table:
                return table[candidate]
    return None


def cost_usd(
    model: str | None, input_tokens: int, output_tokens: int, prices: Prices | None = None
) -> float | None:
    price = price_of(model, prices)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
