"""Settings read from environment variables (EVALCASES_JUDGE_BACKOFF, EVALCASES_SYSTEM_BACKOFF,
...): a bad value is an error naming the variable, of the kind its reader says."""

from __future__ import annotations

from collections.abc import Callable, Mapping


def env_number(
    env: Mapping[str, str],
    name: str,
    default: float,
    error: Callable[[str], Exception] = ValueError,
) -> float:
    """A non-negative finite number from the environment, else `default`; `error(message)`
    raised when it is set to anything else."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise error(f"{name}={raw!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise error(f"{name}={raw!r} must be a non-negative number")
    return value
