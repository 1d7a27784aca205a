"""Where a case's recording comes from in this run: one source per way of running, chosen once
when the run starts (hooks.pytest_runtestloop). The item asks its source; the source asks the
engine. The default, here, is the replay: the cassette, checked, no call of any kind. A run that
runs the system (--replay-http, live modes) takes its source from `running.py`, which only
such a run imports."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...engine.recording import JudgeBinding, Recording
from ...engine.replay import replay

if TYPE_CHECKING:
    from ..items import CaseItem


JudgeOf = Callable[[str | None, bool], JudgeBinding]  # (judge spec, live) -> binding


class ReplaySource:
    """The default: every case replays its cassette (the hot path: one call per case)."""

    def __init__(self, judge: JudgeOf) -> None:
        self.judge = judge

    def recording_for(self, item: CaseItem) -> Recording:
        ctx = item.ctx
        return replay(ctx, item.case, self.judge(ctx.judge_spec, False))
