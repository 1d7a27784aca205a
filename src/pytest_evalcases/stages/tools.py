"""`tools`: were exactly the expected tools called (and with the expected arguments)?"""

from __future__ import annotations

from typing import Any

from ..schema import Case, Suite, ToolExpectation
from . import register
from .base import Stage, StageResult, skipped


def _matches(expected: str | ToolExpectation, call: dict[str, Any]) -> bool:
    if isinstance(expected, str):
        return call.get("name") == expected
    if call.get("name") != expected.name:
        return False
    # Only the arguments the case names are checked; others the call passed are ignored.
    args = call.get("args") or {}
    return all(args.get(k) == v for k, v in (expected.args or {}).items())


def _label(expected: str | ToolExpectation) -> str:
    if isinstance(expected, str) or not expected.args:
        return expected if isinstance(expected, str) else expected.name
    args = ", ".join(f"{k}={v!r}" for k, v in expected.args.items())
    return f"{expected.name}({args})"


def score_tools(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    expected = case.expected_tools
    if expected is None:
        return skipped("no expected_tools")
    calls = trace.get("tool_calls") or []
    called = [call.get("name", "?") for call in calls]
    if not expected:
        if not calls:
            return StageResult(1.0, True, "no tool called, as expected", threshold=1.0)
        return StageResult(
            0.0, False, f"no tool expected; called {', '.join(called)}", threshold=1.0
        )
    unused = list(calls)
    missing = []
    for item in expected:
        hit = next((call for call in unused if _matches(item, call)), None)
        if hit is None:
            missing.append(_label(item))
        else:
            unused.remove(hit)
    expected_names = {item if isinstance(item, str) else item.name for item in expected}
    unexpected = sorted({name for name in called if name not in expected_names})
    score = (len(expected) - len(missing)) / len(expected)
    problems = []
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if unexpected:
        problems.append(f"unexpected: {', '.join(unexpected)}")
    if problems:
        return StageResult(score, False, "; ".join(problems), threshold=1.0)
    return StageResult(score, True, f"called {', '.join(called)}", threshold=1.0)


register(Stage("tools", score_tools))
