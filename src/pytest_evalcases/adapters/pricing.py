"""Public import path of the price table (`pytest_evalcases.adapters.pricing`); it lives in
`core/pricing.py`, where the engine prices an ingestion's HTTP exchanges with it too."""

from ..core.pricing import PRICE_TABLE, Prices, cost_usd, price_of

__all__ = ["PRICE_TABLE", "Prices", "cost_usd", "price_of"]
