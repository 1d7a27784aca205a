"""A user's stage (`@ev.stage`) as a Stage like the built-in ones: its function called with
read-only views of the case and the trace, what it returns turned into a StageResult against
its threshold (the suite's `"thresholds"` entry, else the declaration's, else the suite's
`"threshold"`).

A stage that raises, or returns what is not a score, errors its case, never the session: its
result is a failure marked `stage_error`, whose reason says what it raised and where (file and
line) or what it returned; the item turns it into an error (pytest_plugin/items.py)."""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import threading
import traceback
from collections.abc import Callable, Coroutine, Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from ...core.exception_chain import link_text
from ...core.schema import Case
from ...core.stage_declarations import DeclaredStage, Score, shown_source_file
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .views import CaseView, TraceView

_OWN_PACKAGE = str(Path(__file__).resolve().parents[2]) + os.sep
_STDLIB = os.path.dirname(os.__file__) + os.sep


def user_stage(declared: DeclaredStage) -> Stage:
    """The Stage a declaration registers."""
    name, default_threshold = declared.name, declared.threshold
    call = _in_loop_thread(declared.function) if _is_async(declared.function) else declared.function

    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        threshold = suite.thresholds.get(name)
        if threshold is None:
            threshold = suite.threshold if default_threshold is None else default_threshold
        try:
            returned = call(CaseView(case), TraceView(trace))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the user's code: this case's error, not the session's
            return _failed(f"raised {link_text(exc)} ({_where(exc, declared)})", threshold)
        return scored(name, returned, threshold)

    return Stage(name, score)


def scored(name: str, returned: Any, threshold: float) -> StageResult:
    """What a stage returned, against its threshold; a wrong value errors the case, naming it."""
    reason, shows = "", None
    value = returned
    if isinstance(returned, Score):
        value, reason, shows = returned.value, returned.reason, returned.shows
        if not isinstance(reason, str):
            return _failed(f"returned a Score whose reason is {_kind(reason)}, not text", threshold)
        if shows is not None and not (
            isinstance(shows, Mapping) and all(isinstance(label, str) for label in shows)
        ):
            return _failed(
                f"returned a Score whose shows is {_kind(shows)}; give a dict of label -> value",
                threshold,
            )
        if value is None:  # the stage does not apply to this case
            return skipped(reason or "does not apply")
    number = _as_score(value)
    if number is None:
        if returned is None:
            what = "None (did the function forget to return?)"
        elif isinstance(value, Real):
            what = _kind(value, "not a number" if math.isnan(float(value)) else "outside [0, 1]")
        else:
            what = _kind(value)
        return _failed(
            f"returned {what}; a stage returns a number in [0, 1], a bool, or "
            "ev.Score(value, reason=..., shows={...})",
            threshold,
        )
    passed = number >= threshold
    if not reason:
        reason = f"{name} {number:.2f} {'>=' if passed else '<'} {threshold:.2f}"
    return StageResult(number, passed, reason, threshold, shows=dict(shows) if shows else None)


def _as_score(value: Any) -> float | None:
    """A bool as 1.0 or 0.0, a finite number in [0, 1] as a float; else None."""
    kind = type(value)
    if kind is bool:
        return 1.0 if value else 0.0
    if kind is float or kind is int:  # before the ABC check below, ten times slower
        return float(value) if 0 <= value <= 1 else None  # NaN fails both comparisons
    if isinstance(value, bool):  # a subclass of bool
        return 1.0 if value else 0.0
    if isinstance(value, Real):
        number = float(value)
        if math.isfinite(number) and 0 <= number <= 1:
            return number
    return None


def _kind(value: Any, problem: str = "") -> str:
    """A returned value as a message names it: `'0.5' (a str)`, `1.5 (a float, outside [0, 1])`."""
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    kind = type(value).__name__
    note = f", {problem}" if problem else ""
    return f"{shown} ({'an' if kind[0] in 'aeiou' else 'a'} {kind}{note})"


def _failed(reason: str, threshold: float) -> StageResult:
    return StageResult(None, False, reason, threshold, stage_error=True)


def _where(exc: BaseException, declared: DeclaredStage) -> str:
    """`file:line` where the exception was raised in the user's code: the innermost frame that
    is neither ours nor the standard library's, preferring one outside installed packages; else
    the stage's declaration."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith((_OWN_PACKAGE, _STDLIB, "<"))
    ]
    own = [frame for frame in frames if "-packages" + os.sep not in frame.filename]
    chosen = (own or frames or [None])[-1]
    if chosen is None:
        return f"in the stage declared at {declared.place}"
    return f"at {shown_source_file(chosen.filename)}:{chosen.lineno}"


def _is_async(function: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


# Async stages run on one event loop of their own, in a thread of its own: scoring is called
# both outside any loop (replay) and inside a running one (a live run scores as it records),
# and one loop for every call lets a stage keep loop-bound clients between cases.
_LOOP: list[asyncio.AbstractEventLoop] = []
_LOOP_LOCK = threading.Lock()


def _stage_loop() -> asyncio.AbstractEventLoop:
    with _LOOP_LOCK:
        if not _LOOP:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="evalcases-async-stages", daemon=True
            ).start()
            _LOOP.append(loop)
        return _LOOP[0]


def _in_loop_thread(
    function: Callable[..., Coroutine[Any, Any, Any]],
) -> Callable[[CaseView, TraceView], Any]:
    def call(case: CaseView, trace: TraceView) -> Any:
        future = asyncio.run_coroutine_threadsafe(function(case, trace), _stage_loop())
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    return call
