"""One Ctrl-C ends a live run whose `async def run` blocks the event loop (a `time.sleep`, or C
code, inside the coroutine): asyncio's first Ctrl-C only cancels the batch, which a blocked loop
never sees, so the run waited for a second one (issue 30 part 1: one Ctrl-C ends any run)."""

from __future__ import annotations

import json

import pytest
from evalhelpers import Project, output, summary_section

from hostile.test_bounded_hooks import _interrupted

SYSTEM = """\
import time

from mysys import log


class Blocking:
    async def run(self, case):
        log("hang run " + case["id"])
        time.sleep(3600)  # blocks the event loop: no await until it returns
        return {"answer": case["input"]}


system = Blocking()
"""


def test_one_ctrl_c_ends_a_live_run_whose_async_run_blocks_the_event_loop(
    project: Project,
) -> None:
    project.write_text("blocking.py", SYSTEM)
    project.write_text(
        "cases/block.json",
        json.dumps(
            {
                "name": "block",
                "system": "blocking:system",
                "stages": ["exact_match"],
                "cases": [{"id": f"c{n}", "input": "q", "reference": "q"} for n in range(3)],
            }
        ),
    )

    result = _interrupted(project, "--live", "-rs")

    text = output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert summary_section(result)  # the summary is printed
    assert "not run: interrupted" in text, text
    assert "INTERNALERROR" not in text, text
