"""`tools`: were exactly the expected tools called (and with the expected arguments), in the
listed order when the case says `"tool_order": "strict"`, and no more often than
`"max_tool_calls"` allows?"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.names import clip, listed, shown_value
from ...core.schema import Case, ToolExpectation
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .registry import register

ARG_CHARS = 40  # of each argument value (and name) a failure shows, unless -vv
CALLS_LISTED = 8  # calls (and expected tools) a failure lists, unless -vv


def _matches(expected: str | ToolExpectation, call: dict[str, Any]) -> bool:
    if isinstance(expected, str):
        return call.get("name") == expected
    if call.get("name") != expected.name:
        return False
    # Only the arguments the case names are checked; others the call passed are ignored.
    args = call.get("args") or {}
    return all(args.get(k) == v for k, v in (expected.args or {}).items())


def _label(expected: str | ToolExpectation, limit: int | None = None) -> str:
    if isinstance(expected, str) or not expected.args:
        return expected if isinstance(expected, str) else expected.name
    args = ", ".join(f"{k}={shown_value(v, limit)}" for k, v in expected.args.items())
    return f"{expected.name}({args})"


def _match_any_order(
    expected: Sequence[str | ToolExpectation], calls: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(missing, out of order): each expected entry consumes one matching call."""
    unused = list(calls)
    missing = []
    for item in expected:
        hit = next((call for call in unused if _matches(item, call)), None)
        if hit is None:
            missing.append(_label(item))
        else:
            unused.remove(hit)
    return missing, []


def _match_in_order(
    expected: Sequence[str | ToolExpectation], calls: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(missing, out of order): each expected entry consumes the first matching call after the
    previous entry's; one that was called, but only earlier, is out of order."""
    position = 0
    used: set[int] = set()
    missing, misplaced = [], []
    for item in expected:
        index = next(
            (i for i in range(position, len(calls)) if i not in used and _matches(item, calls[i])),
            None,
        )
        if index is not None:
            used.add(index)
            position = index + 1
            continue
        earlier = next(
            (i for i in range(position) if i not in used and _matches(item, calls[i])), None
        )
        if earlier is None:
            missing.append(_label(item))
        else:
            used.add(earlier)
            misplaced.append(_label(item))
    return missing, misplaced


def _over_limit(limit: int | Mapping[str, int] | None, called: list[str]) -> str | None:
    if limit is None:
        return None
    if isinstance(limit, int):
        return f"{len(called)} tool calls, at most {limit} allowed" if len(called) > limit else None
    counts = Counter(called)
    over = [
        f"{name} called {counts[name]} times, at most {most}"
        for name, most in limit.items()
        if counts[name] > most
    ]
    return "; ".join(over) or None


def score_tool_calls(
    expected: Sequence[str | ToolExpectation] | None,
    calls: list[dict[str, Any]],
    order: str = "any",
    max_calls: int | Mapping[str, int] | None = None,
) -> StageResult:
    """The `tools` stage on one list of calls (a case's, or one turn's of a conversation)."""
    if expected is None and max_calls is None:
        return skipped("no expected_tools")
    called = [call.get("name", "?") for call in calls]
    too_many = _over_limit(max_calls, called)
    if expected is None:  # only a bound on the calls
        if too_many:
            return StageResult(0.0, False, f"too many calls: {too_many}", threshold=1.0)
        return StageResult(1.0, True, f"{len(called)} tool calls, within the bound", threshold=1.0)
    if not expected:  # [] means no tool may be called at all
        if not calls:
            return StageResult(1.0, True, "no tool called, as expected", threshold=1.0)
        return StageResult(
            0.0, False, f"no tool expected; called {', '.join(called)}", threshold=1.0
        )
    strict = order == "strict"
    missing, misplaced = (_match_in_order if strict else _match_any_order)(expected, calls)
    expected_names = {item if isinstance(item, str) else item.name for item in expected}
    unexpected = sorted({name for name in called if name not in expected_names})
    score = (len(expected) - len(missing) - len(misplaced)) / len(expected)
    problems = []
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if misplaced:
        problems.append(
            f"out of order: {', '.join(misplaced)} (expected "
            f"{', '.join(_label(item) for item in expected)}; called {', '.join(called)})"
        )
    if unexpected:
        problems.append(f"unexpected: {', '.join(unexpected)}")
    if too_many:
        problems.append(f"too many calls: {too_many}")
    if problems:
        return StageResult(score, False, "; ".join(problems), threshold=1.0)
    return StageResult(score, True, f"called {', '.join(called)}", threshold=1.0)


def score_tools(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    return score_tool_calls(
        case.expected_tools, trace.get("tool_calls") or [], case.tool_order, case.max_tool_calls
    )


def call_text(call: Any, limit: int | None) -> str:
    """One call as a failure shows it: `search_kb(query='How many days…', k=3)`."""
    if not isinstance(call, Mapping):
        return shown_value(call, limit)
    args = call.get("args")
    if isinstance(args, Mapping):
        inner = ", ".join(
            f"{k if limit is None else clip(str(k), limit, ellipsis='…')}={shown_value(v, limit)}"
            for k, v in args.items()
        )
    else:
        inner = "" if args is None else shown_value(args, limit)
    return f"{call.get('name', '?')}({inner})"


def _bound_text(limit: int | Mapping[str, int]) -> str:
    if isinstance(limit, int):
        return f"at most {limit} call{'' if limit == 1 else 's'}"
    return ", ".join(f"{name} at most {most}x" for name, most in limit.items())


def show_tools(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    """A `tools` failure shows the calls made, with their arguments, beside the expected ones:
    `called: search_kb(query='How many days…')` / `expected: get_order`."""
    limit, most = (None, None) if whole else (ARG_CHARS, CALLS_LISTED)
    calls = trace.get("tool_calls") or []
    called = listed([call_text(call, limit) for call in calls], most) or "no tool"
    expected_tools = case.expected_tools
    parts = []
    if expected_tools is not None:
        names = listed([_label(item, limit) for item in expected_tools], most)
        strict = case.tool_order == "strict" and len(expected_tools) > 1
        parts.append((names + " (in this order)" if strict else names) or "no tool")
    if case.max_tool_calls is not None:
        parts.append(_bound_text(case.max_tool_calls))
    return [("called", called), ("expected", "; ".join(parts))]


register(Stage("tools", score_tools, shows=show_tools))
