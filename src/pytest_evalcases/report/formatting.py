"""Number formatting shared by the markdown, terminal and HTML renderers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def fmt_score(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_ci(ci: Sequence[float] | None, digits: int = 3) -> str:
    if not ci:
        return "–"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100.0 * value:.{digits}f}%"


def fmt_pct_ci(ci: Sequence[float] | None, digits: int = 1) -> str:
    if not ci:
        return "–"
    return f"{100.0 * ci[0]:.{digits}f}–{100.0 * ci[1]:.{digits}f}%"


def fmt_usd(value: float | None) -> str:
    if value is None:
        return "–"
    if value == 0:
        return "$0"
    if abs(value) < 1:
        return f"${value:.4f}"
    return f"${value:,.2f}"


def fmt_delta(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:+.{digits}f}"


def fmt_int(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def fmt_ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def fmt_seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f} s"


def uncommitted_changes(run: Mapping[str, Any]) -> bool:
    """Whether the run's working tree had uncommitted changes (the run manifest's git state)."""
    config = run.get("config")
    git = config.get("git") if isinstance(config, Mapping) else None
    return isinstance(git, Mapping) and git.get("dirty") is True


def input_manifest_parts(values: Mapping[str, Any]) -> list[str]:
    """What an authored input manifest fixed, one part a value (`seed 7`, `model model
    gpt-4o-mini`, `split ids q1, q2 and 3 more`): report.md's line and the run's header."""
    parts = [
        f"{name} {values[name]}"
        for name in ("name", "seed", "language")
        if values.get(name) is not None
    ]
    for table, label in (("prompt_versions", "prompt"), ("models", "model")):
        parts += [
            f"{label} {key} {value}" for key, value in sorted((values.get(table) or {}).items())
        ]
    for part, names in sorted((values.get("split") or {}).items()):
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        parts.append(f"split {part} {', '.join(str(name) for name in names[:5])}{more}")
    return parts
