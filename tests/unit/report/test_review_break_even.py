"""Review of issue 23 (scratch): the break-even of a memory run with a user of unknown tokens."""

from __future__ import annotations

import pytest

from pytest_evalcases.report.compare import compare_runs

from .test_compare import doc_of, result


def run(per_case: list[int], users: dict[str, dict | None] | None = None) -> dict:
    cases = []
    for i, tokens in enumerate(per_case):
        extra = {}
        if users:
            user = sorted(users)[i % len(users)]
            extra = {
                "user": user,
                "ingestion": {"user": user, "source": "recorded", "usage": users[user]},
            }
        usage = {"prompt_tokens": tokens, "completion_tokens": 0}
        cases.append(result(f"c{i}", "passed", {"tools": 1.0}, recording={"usage": usage}, **extra))
    return doc_of(cases)


@pytest.mark.xfail(
    strict=True, reason="review of issue 23, finding 10: break-even from a partial ingestion total"
)
def test_a_user_of_unknown_tokens_leaves_the_break_even_unknown() -> None:
    # u-a ingested 1,000 tokens; u-b's ingestion tokens are unknown (its provider's shape).
    memory = run([450, 450], {"u-a": {"prompt_tokens": 1000, "completion_tokens": 0}, "u-b": None})
    assert memory["ingestion"]["total"]["usage_unknown_users"] == 1
    cmp = compare_runs(run([770, 770]), memory)
    # docs/reports.md: no break-even "when the memory run's ingestion tokens are unknown"
    assert "break_even" not in cmp, cmp.get("break_even")
