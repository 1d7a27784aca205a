"""Public import path of the statistics helpers (`pytest_evalcases.stats`); they live in
`core/stats.py`. Nothing inside the package imports this module."""

from .core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    mean,
    median,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "bootstrap_ci",
    "mean",
    "median",
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
]
