"""Running a conversation case: one trace per turn, kept together as one recorded trace.

A system with `run_turn(case, history)` is driven turn by turn: `case.input` is this turn's
message, `case.turns` the user messages so far, `case.history` (and `history`) the earlier
turns as `[{"role": "user", ...}, {"role": "assistant", ...}]`. Otherwise `run(case)` gets the
whole conversation (`case.turns`) and returns one trace per turn, as a list.

The recorded trace is `{"answer": <the last turn's>, "turns": [<trace>, ...], "usage": <sum>}`.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from ..core.errors import TraceError, UserCodeExit
from ..core.event_loops import run_interruptible
from ..domain.returned_traces import normalize_trace
from ..domain.system import (
    CaseInput,
    System,
    carried,
    exit_message,
    run_in_daemon_thread,
)

_RUN_TURN = "run_turn(case, history)"


def _turn_view(view: CaseInput, index: int, history: list[dict[str, str]]) -> CaseInput:
    turn = CaseInput(view)
    turn["input"] = view["turns"][index]
    turn["turns"] = view["turns"][: index + 1]
    turn["history"] = [dict(message) for message in history]
    return turn


def _next_history(history: list[dict[str, str]], user: str, trace: dict[str, Any]) -> None:
    history.append({"role": "user", "content": user})
    history.append({"role": "assistant", "content": trace.get("answer", "")})


def conversation_trace(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """The recorded trace of a conversation: its turns, the last answer, the summed usage."""
    combined: dict[str, Any] = {"answer": traces[-1].get("answer", ""), "turns": traces}
    usages = [trace["usage"] for trace in traces if isinstance(trace.get("usage"), dict)]
    if usages:
        total: dict[str, Any] = {}
        for usage in usages:
            for name, value in usage.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    total[name] = total.get(name, 0) + value
        combined["usage"] = total
    latencies = [t["latency_ms"] for t in traces if isinstance(t.get("latency_ms"), int | float)]
    if latencies:
        combined["latency_ms"] = sum(latencies)
    return combined


def split_traces(result: Any, view: CaseInput, where: str) -> dict[str, Any]:
    """`run(case)`'s list of per-turn traces, checked, as the conversation's trace."""
    count = len(view["turns"])
    if not isinstance(result, list | tuple) or len(result) != count:
        got = (
            f"a list of {len(result)}"
            if isinstance(result, list | tuple)
            else (type(result).__name__)
        )
        raise TraceError(
            f"malformed trace for {where}: a conversation case of {count} turns needs one trace "
            f"per turn from run(case), a list of {count}; it returned {got} (or implement "
            "run_turn(case, history) and the plugin drives the turns)"
        )
    return conversation_trace(
        [normalize_trace(trace, f"{where} turn {n}") for n, trace in enumerate(result, 1)]
    )


def run_conversation_sync(
    system: System, view: CaseInput, where: str, turn_ms: list[float] | None = None
) -> dict[str, Any]:
    """The whole conversation, in this thread (an async `run_turn` runs in its own loop).
    `turn_ms` (a live run): each `run_turn`'s wall time is appended to it, in ms."""
    if system.run_turn is None:
        result = system.call(view)
        if inspect.isawaitable(result):
            result = run_interruptible(_awaited(result))
        return split_traces(result, view, where)
    traces: list[dict[str, Any]] = []
    history: list[dict[str, str]] = []
    for index in range(len(view["turns"])):
        turn = _turn_view(view, index, history)
        started = time.perf_counter()
        try:
            result = system.run_turn(turn, turn["history"])
        except (KeyboardInterrupt, Exception):
            raise
        except BaseException as exc:  # SystemExit & co. would end the whole session
            raise UserCodeExit(exit_message(_RUN_TURN, exc)) from exc
        if inspect.isawaitable(result):
            result = run_interruptible(_awaited(result))
        if turn_ms is not None:
            turn_ms.append(_ms_since(started))
        trace = normalize_trace(result, f"{where} turn {index + 1}")
        traces.append(trace)
        _next_history(history, turn["input"], trace)
    return conversation_trace(traces)


async def run_conversation(
    system: System, view: CaseInput, where: str, turn_ms: list[float] | None = None
) -> dict[str, Any]:
    """The whole conversation in the event loop: an async `run_turn` is awaited turn after
    turn, a sync system runs in a daemon thread of its own (as `System.arun` runs `run`).
    `turn_ms` (a live run): each `run_turn`'s wall time is appended to it, in ms (a `run(case)`
    that answers all the turns at once has no time per turn)."""
    if system.run_turn is None:
        return split_traces(await system.arun(view, where), view, where)
    if not inspect.iscoroutinefunction(system.run_turn):
        return await run_in_daemon_thread(
            lambda v: run_conversation_sync(system, v, where, turn_ms),
            view,
            _RUN_TURN,
            f"{_RUN_TURN} of {where}",
        )
    traces: list[dict[str, Any]] = []
    history: list[dict[str, str]] = []
    for index in range(len(view["turns"])):
        turn = _turn_view(view, index, history)
        started = time.perf_counter()
        try:
            result = await system.run_turn(turn, turn["history"])
        except RuntimeError as exc:  # PEP 479 wraps a coroutine's StopIteration
            if not isinstance(exc.__cause__, StopIteration):
                raise
            raise carried(_RUN_TURN, exc.__cause__) from exc.__cause__
        except (KeyboardInterrupt, Exception):
            raise
        except BaseException as exc:
            if type(exc).__name__ == "CancelledError":  # a timeout or Ctrl-C cancelling us
                raise
            raise UserCodeExit(exit_message(_RUN_TURN, exc)) from exc
        if turn_ms is not None:
            turn_ms.append(_ms_since(started))
        trace = normalize_trace(result, f"{where} turn {index + 1}")
        traces.append(trace)
        _next_history(history, turn["input"], trace)
    return conversation_trace(traces)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
