"""domain/judging: the advice a stale verdict gives when the judge came from elsewhere."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("changed", "recorded_from", "current_from", "expected"),
    [
        (
            {"judge", "judge_version"},
            "--eval-judge",
            "suite",
            'recorded with --eval-judge openai:m; pass the same option, set "judge" in the suite, '
            "or re-judge with --live-judges",
        ),
        (
            {"judge"},
            "ini eval_judge",
            "suite",
            "recorded with ini eval_judge = openai:m; pass --eval-judge openai:m, "
            'set "judge" in the suite, or re-judge with --live-judges',
        ),
        (
            {"judge"},
            "suite",
            "--eval-judge",
            "recorded with the suite's judge openai:m, while this run's lexical comes from "
            "--eval-judge; run without the option, or re-judge with --live-judges",
        ),
        ({"judge"}, "suite", "suite", None),  # the suite's judge was edited: no override to name
        ({"judge", "reference"}, "--eval-judge", "suite", None),  # not only the judge differs
        ({"judge_version"}, "--eval-judge", "--eval-judge", None),  # same judge, new version
    ],
)
def test_judge_source_advice(
    changed: set[str], recorded_from: str, current_from: str, expected: str | None
) -> None:
    from pytest_evalcases.domain.verdicts import judge_source_advice

    recorded = {"judge": "openai:m", "judge_version": "deepeval==1"}
    assert (
        judge_source_advice(changed, recorded, recorded_from, "lexical", current_from) == expected
    )
    assert judge_source_advice(changed, None, recorded_from, "lexical", current_from) is None
