"""The cyclic garbage collector in a run with eval cases.

What a run with eval cases keeps alive (the collected items, their cases, pytest's reports) lives
until the end of the run. The collector's full passes would walk all of it again and again: at
100,000 cases ~12 passes of ~0.1-0.2 s each in collection and as many in the run loop (measured
with `gc.callbacks`, benchmarks/replay.py). So what is alive when the first case file is
collected is frozen (`gc.freeze`: moved out of the collector's sight), and so is what survives
each later full pass, at the moment that pass ends: a full pass has just freed every unreachable
cycle, so only live objects are frozen, and the next full pass walks only what came after it.
The collector keeps collecting the run's young garbage as before.

The cost: an object frozen while alive that later becomes part of an unreachable cycle is not
freed before the process ends (freed by reference counting, as almost all are, it is freed).
Only what is alive at the end of a full pass is frozen, so this is bounded by what one case or
test holds at that moment.
"""

from __future__ import annotations

import gc
from typing import Any


def keep_run_heap_out_of_gc() -> None:
    """Freeze what is alive now and, from now on, what survives each full collection."""
    gc.freeze()
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)


def stop_freezing() -> None:
    """Full collections' survivors stay in the collector's sight again (the run's end, or a run
    that selected no eval case); what was frozen stays frozen."""
    if _freeze_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_survivors)


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()
