"""engine/limits (issue 9, point 5): the stop rule of -x / --maxfail and --eval-budget."""

from __future__ import annotations


def test_the_stop_rule() -> None:
    from pytest_evalcases.engine.limits import StopRule, budget_text

    rule = StopRule(maxfail=2)
    rule.count(True)
    assert rule.reason is None
    rule.count(False)
    rule.count(True)
    assert rule.reason == "--maxfail 2 reached (2 cases failed or errored)"
    budget = StopRule(budget=0.1)
    budget.spend(0.06)
    assert budget.reason is None and budget.active
    budget.spend(0.05)
    assert budget.reason == "--eval-budget $0.10 reached (recorded cost $0.11)"
    assert not StopRule().active
    assert [budget_text(v) for v in (0.5, 0.0123, 12.34567)] == ["$0.50", "$0.0123", "$12.3457"]
    # under a hundredth of a cent: two significant digits, not "$0.00"
    assert [budget_text(v) for v in (0.000001, 0.00000857, 0.0000999, 0.0)] == [
        "$0.000001",
        "$0.0000086",
        "$0.0001",
        "$0.00",
    ]
