"""Agreement with people (issue 31 parts 2-4) against hand-worked examples: Cohen's kappa of a
2x2 table, the threshold search on six scores, McNemar's exact test, the bootstrap intervals
(seeded, containing the estimate), and the figures a run's calibration rows give."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pytest_evalcases.core.agreement import (
    Confusion,
    ScoredItem,
    best_threshold,
    confusion_at,
    figures,
    kappa_exact,
    kappa_interval,
    mcnemar_exact_p,
    paired_cells,
    paired_kappa_difference,
    split_paired,
    threshold_candidates,
)
from pytest_evalcases.domain.calibration_agreement import (
    calibration_report,
    judges_compared,
    terminal_agreement_lines,
    threshold_text,
)


# ---- kappa and the fail class --------------------------------------------------------------
def test_kappa_of_a_two_by_two_table_worked_by_hand() -> None:
    # 50 items: people said fail on 25, the judge failed 30.
    #                judge fail  judge pass
    #   people fail       20          5
    #   people pass       10         15
    # observed agreement p_o = (20 + 15) / 50 = 0.70
    # chance agreement p_e = (30/50)(25/50) + (20/50)(25/50) = 0.30 + 0.20 = 0.50
    # kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
    table = Confusion(tp=20, fn=5, fp=10, tn=15)
    assert kappa_exact(20, 5, 10, 15) == Fraction(2, 5)
    shares = figures(table)
    assert shares["kappa"] == pytest.approx(0.4)
    assert shares["accuracy"] == pytest.approx(0.7)
    assert shares["precision"] == pytest.approx(20 / 30)  # of the 30 the judge failed
    assert shares["recall"] == pytest.approx(20 / 25)  # of the 25 people failed
    assert shares["f1"] == pytest.approx(40 / 55)  # 2TP / (2TP + FP + FN)


def test_kappa_is_undefined_when_everything_is_on_one_side() -> None:
    assert kappa_exact(0, 0, 0, 4) is None  # chance agreement is 1
    assert figures(Confusion())["kappa"] is None
    assert kappa_interval(Confusion(tn=4)) is None
    # the judge never fails anything: kappa 0, F1 0, precision undefined
    never = figures(Confusion(tp=0, fn=3, fp=0, tn=3))
    assert (never["kappa"], never["f1"], never["precision"]) == (0.0, 0.0, None)


def test_a_table_counts_each_item_in_its_cell() -> None:
    calls = [(True, True), (True, True), (True, False), (False, True), (False, False)]
    assert Confusion.of(calls) == Confusion(tp=2, fn=1, fp=1, tn=1)
    assert Confusion(2, 1, 1, 1).as_dict() == {
        "label_fail": {"judge_fail": 2, "judge_pass": 1},
        "label_pass": {"judge_fail": 1, "judge_pass": 1},
    }


# ---- the bootstrap -------------------------------------------------------------------------
def test_the_kappa_interval_is_deterministic_under_a_seed_and_holds_the_estimate() -> None:
    table = Confusion(tp=20, fn=5, fp=10, tn=15)
    first = kappa_interval(table, resamples=2000, seed=7)
    assert first == kappa_interval(table, resamples=2000, seed=7)
    assert first is not None and first != kappa_interval(table, resamples=2000, seed=8)
    low, high = first
    assert low < 0.4 < high
    # sampling error of kappa on 50 items: roughly +-0.25 (its normal-theory SE is ~0.13)
    assert 0.15 < high - low < 0.75
    wider = kappa_interval(table, resamples=2000, seed=7, level=0.99)
    assert wider is not None and wider[0] < low and wider[1] > high


def test_a_perfect_judge_has_a_point_interval_and_more_items_narrow_it() -> None:
    assert kappa_interval(Confusion(tp=5, tn=5)) == (1.0, 1.0)
    small = kappa_interval(Confusion(tp=20, fn=5, fp=10, tn=15))
    large = kappa_interval(Confusion(tp=2000, fn=500, fp=1000, tn=1500))
    assert small is not None and large is not None
    assert large[1] - large[0] < (small[1] - small[0]) / 5  # 100 times the items: ~1/10 wide


# ---- thresholds from labels ----------------------------------------------------------------
SIX = [
    ScoredItem.of(True, [0.1]),
    ScoredItem.of(True, [0.3]),
    ScoredItem.of(True, [0.6]),
    ScoredItem.of(False, [0.4]),
    ScoredItem.of(False, [0.7]),
    ScoredItem.of(False, [0.9]),
]


def test_the_threshold_search_on_six_scores_worked_by_hand() -> None:
    # Three items labelled fail (0.1, 0.3, 0.6), three labelled pass (0.4, 0.7, 0.9); a score
    # below the threshold fails. Candidates: the lowest score (nothing fails), then midpoints.
    assert threshold_candidates(SIX) == pytest.approx([0.1, 0.2, 0.35, 0.5, 0.65, 0.8])
    # Every candidate splits 3 fail / 3 pass labels, so chance agreement is 0.5 whenever the
    # judge fails k items: p_e = (k/6)(3/6) + ((6-k)/6)(3/6) = 0.5, kappa = 2 p_o - 1.
    #   t      judge fails       tp fn fp tn   p_o   kappa
    #   0.1    nothing            0  3  0  3   3/6    0
    #   0.2    0.1                1  2  0  3   4/6   1/3
    #   0.35   0.1 0.3            2  1  0  3   5/6   2/3   <- best, lower of the tie
    #   0.5    0.1 0.3 0.4        2  1  1  2   4/6   1/3   <- the suite's threshold
    #   0.65   ... 0.6            3  0  1  2   5/6   2/3
    #   0.8    ... 0.7            3  0  2  1   4/6   1/3
    assert confusion_at(SIX, 0.5) == Confusion(2, 1, 1, 2)
    assert figures(confusion_at(SIX, 0.5))["kappa"] == pytest.approx(1 / 3)
    fit = best_threshold(SIX)
    assert fit is not None
    assert fit.threshold == pytest.approx(0.35)
    assert fit.confusion == Confusion(2, 1, 0, 3)
    assert fit.kappa == pytest.approx(2 / 3)
    assert fit.candidates == 6


def test_a_threshold_holds_every_repeat_to_the_label() -> None:
    # A fail-labelled item is failed only when all its repeats fall below the threshold; a
    # pass-labelled item is failed as soon as one does.
    wobbly_defect = ScoredItem.of(True, [0.2, 0.8])
    wobbly_control = ScoredItem.of(False, [0.4, 0.9])
    assert not wobbly_defect.says_fail(0.5) and wobbly_defect.says_fail(0.85)
    assert wobbly_control.says_fail(0.5) and not wobbly_control.says_fail(0.4)
    assert threshold_candidates([wobbly_defect, wobbly_control]) == pytest.approx([0.4, 0.6])


def test_the_sweep_finds_what_trying_every_candidate_finds() -> None:
    rng = random.Random(3)
    for _ in range(30):
        items = [
            ScoredItem.of(
                rng.random() < 0.4,
                [round(rng.random(), 1) for _ in range(rng.choice([1, 3]))],
            )
            for _ in range(rng.randint(2, 25))
        ]
        fit = best_threshold(items)
        kappas = [
            (kappa_exact(*_cells(confusion_at(items, t))), t) for t in threshold_candidates(items)
        ]
        defined = [(k, t) for k, t in kappas if k is not None]
        if not defined:
            assert fit is None
            continue
        best = max(k for k, _ in defined)
        assert fit is not None and fit.kappa == pytest.approx(float(best))
        assert fit.threshold == min(t for k, t in defined if k == best)


def _cells(c: Confusion) -> tuple[int, int, int, int]:
    return c.tp, c.fn, c.fp, c.tn


# ---- two judges ----------------------------------------------------------------------------
def test_mcnemar_exact_p_worked_by_hand() -> None:
    # b = 1, c = 6: 7 items only one judge got right. Under "equally good", b ~ Binomial(7, 1/2)
    # P(X <= 1) = (C(7,0) + C(7,1)) / 2^7 = 8 / 128; two-sided p = 2 * 8/128 = 0.125
    assert mcnemar_exact_p(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact_p(6, 1) == pytest.approx(0.125)
    assert mcnemar_exact_p(0, 0) == 1.0  # the judges never split: no evidence either way
    assert mcnemar_exact_p(5, 5) == 1.0  # 2 * 638/1024 > 1: capped
    # 0 against 10: 2 / 2^10
    assert mcnemar_exact_p(0, 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact_p(0, 3000) == 0.0  # 2 / 2^3000 underflows to 0.0: no OverflowError
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 2)


@pytest.mark.parametrize(("b", "c"), [(3, 9), (40, 61), (7, 7), (250, 190)])
def test_mcnemar_exact_p_is_the_binomial_tail(b: int, c: int) -> None:
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    assert mcnemar_exact_p(b, c) == pytest.approx(min(1.0, 2 * tail / 2**n), rel=1e-12)


def test_the_paired_difference_of_two_judges_on_the_same_items() -> None:
    # Ten items, five labelled fail. A calls all ten right (kappa 1); B never fails anything
    # (kappa 0): B - A = -1 in every resample where both are defined.
    calls = [(label, label, False) for label in [True] * 5 + [False] * 5]
    counts = paired_cells(calls)
    a, b = split_paired(counts)
    assert a == Confusion(tp=5, tn=5) and b == Confusion(fn=5, tn=5)
    delta, ci = paired_kappa_difference(counts)
    assert delta == pytest.approx(-1.0)
    assert ci == pytest.approx((-1.0, -1.0))


def test_the_paired_interval_is_narrower_than_the_sides_when_judges_mostly_agree() -> None:
    # 200 items: both judges make the same 30 mistakes, B makes 6 more. Pairing cancels the
    # shared mistakes, so B - A is known far better than either kappa alone.
    calls = [(i < 100, (i < 100) != (i % 200 < 30), False) for i in range(200)]
    calls = [(label, a, a if i >= 6 else not a) for i, (label, a, _) in enumerate(calls)]
    counts = paired_cells(calls)
    a, b = split_paired(counts)
    delta, ci = paired_kappa_difference(counts, seed=1)
    side = kappa_interval(a, seed=1)
    assert delta is not None and ci is not None and side is not None
    ka, kb = figures(a)["kappa"], figures(b)["kappa"]
    assert delta == pytest.approx(kb - ka)  # type: ignore[operator]
    assert ci[0] <= delta <= ci[1]
    assert ci[1] - ci[0] < (side[1] - side[0]) / 2


# ---- a run's calibration rows --------------------------------------------------------------
def _case(case_id: str, expect: str, scores: list[float], status: str, **extra: object) -> dict:
    block = {
        "stage": "faithfulness",
        "judge": "lexical",
        "expect": expect,
        "defect": "planted" if expect == "fail" else None,
        "scores": scores,
        "labels": [None] * len(scores),
        "status": status,
        "spread": max(scores) - min(scores) if scores else 0.0,
        "category": None,
        "threshold": 0.5,
        "ungraded": False,
        "reason": "",
    }
    block.update(extra)
    return {"suite": "people", "id": case_id, "outcome": "passed", "calibration": block}


def _six_cases() -> list[dict]:
    return [
        _case("a", "fail", [0.1], "caught", category="health"),
        _case("b", "fail", [0.3], "caught", category="health"),
        _case("c", "fail", [0.6], "MISSED", category="law", reason="supported, it says"),
        _case("d", "pass", [0.4], "false alarm", category="law", reason="looks invented"),
        _case("e", "pass", [0.7], "ok", category="law"),
        _case("f", "pass", [0.9], "ok", category="health"),
        _case("g", "pass", [], "judge error", ungraded=True, reason="HTTP 500"),
    ]


def test_the_runs_figures_from_its_calibration_rows() -> None:
    section = calibration_report(_six_cases())
    assert section is not None
    (group,) = section["agreement"]
    assert (group["items"], group["graded"], group["ungraded"]) == (7, 6, 1)
    assert group["ungraded_share"] == pytest.approx(1 / 7)
    assert group["confusion"] == Confusion(2, 1, 1, 2).as_dict()
    assert group["kappa"] == pytest.approx(1 / 3)
    low, high = group["kappa_ci95"]
    assert low <= 1 / 3 <= high
    assert set(group["categories"]) == {"health", "law"}
    # health: a, b caught, f ok -> perfect; law: c missed, d false alarm, e ok
    assert group["categories"]["health"]["kappa"] == 1.0
    assert group["categories"]["law"]["items"] == 3
    threshold = group["threshold"]
    assert threshold["current"] == 0.5 and threshold["current_kappa"] == pytest.approx(1 / 3)
    assert threshold["best"] == pytest.approx(0.35)
    assert threshold["best_kappa"] == pytest.approx(2 / 3)
    assert threshold_text(group) == (
        f"threshold 0.35 agrees best with people (kappa 0.67 "
        f"[{threshold['best_kappa_ci95'][0]:.2f}, {threshold['best_kappa_ci95'][1]:.2f}]); "
        "the suite's 0.5 gives 0.33 (6 thresholds tried)"
    )
    assert [(d["case"], d["label"], d["judge"], d["reason"]) for d in group["disagreements"]] == [
        ("people::c", "fail", "pass", "supported, it says"),
        ("people::d", "pass", "fail", "looks invented"),
    ]
    assert group["people"] == []


def test_a_label_stage_has_no_threshold_and_people_agreement_is_shown_per_suite() -> None:
    stated = {"statistic": "fleiss_kappa", "value": 0.811, "annotators": 3, "source": "HaluEval"}
    cases = [
        _case("a", "fail", [0.0], "caught", threshold=None, human_agreement=stated),
        _case("b", "pass", [1.0], "ok", threshold=None, human_agreement=stated),
    ]
    section = calibration_report(cases)
    assert section is not None
    assert all("human_agreement" not in row for row in section["cases"])  # once, not per row
    (group,) = section["agreement"]
    assert group["threshold"] is None and group["categories"] == {}
    assert group["people"] == [{"suite": "people", **stated}]
    lines = terminal_agreement_lines(section)
    assert "  people agree at fleiss_kappa 0.811 (3 annotators; HaluEval), suite people" in lines
    assert not any(line.lstrip().startswith("threshold") for line in lines)


def test_the_terminal_lists_the_first_disagreements_and_counts_them_all() -> None:
    cases = [_case(f"m{i}", "fail", [0.9], "MISSED", reason=f"why {i}") for i in range(7)]
    cases.append(_case("ok", "pass", [0.9], "ok"))
    section = calibration_report(cases)
    assert section is not None
    lines = terminal_agreement_lines(section)
    start = lines.index(
        "  7 items the judge and people disagree on (the first 5; report.md lists all):"
    )
    assert lines[start + 1 : start + 6] == [
        f"    people::m{i}: people fail, judge pass [0.90]: why {i}" for i in range(5)
    ]
    assert len(section["agreement"][0]["disagreements"]) == 7


def test_a_long_reason_is_one_cut_line_in_the_terminal() -> None:
    reason = "first line\nsecond line " + "word " * 100
    section = calibration_report([_case("m", "fail", [0.9], "MISSED", reason=reason)])
    assert section is not None
    (line,) = [x for x in terminal_agreement_lines(section) if x.startswith("    people::m")]
    assert line.startswith("    people::m: people fail, judge pass [0.90]: first line second line")
    assert line.endswith("...") and len(line) < 220
    assert section["agreement"][0]["disagreements"][0]["reason"] == reason  # whole in the files


def test_two_runs_compared_on_the_same_labelled_items() -> None:
    a = calibration_report(_six_cases())
    b_cases = _six_cases()
    # B: catches c (A missed it), misses b (A caught it), and also false-alarms e
    b_cases[1]["calibration"].update(status="MISSED", scores=[0.55])
    b_cases[2]["calibration"].update(status="caught", scores=[0.2])
    b_cases[4]["calibration"].update(status="false alarm", scores=[0.3])
    for case in b_cases:
        case["calibration"]["judge"] = "openai:gpt-4o-mini"
    b = calibration_report(b_cases)
    assert a is not None and b is not None
    (found,) = judges_compared(a["cases"], b["cases"])
    assert found["judges"] == {"a": "lexical", "b": "openai:gpt-4o-mini"}
    assert (found["items"], found["graded_by_both"], found["labels_differ"]) == (7, 6, 0)
    # A right, B wrong: b (caught -> missed), e (ok -> false alarm); A wrong, B right: c
    assert found["mcnemar"] == {"b": 2, "c": 1, "p": pytest.approx(1.0)}
    assert [d["case"] for d in found["disagreements"]] == ["people::b", "people::c", "people::e"]
    # A: tp 2 fn 1 fp 1 tn 2 -> 1/3; B: tp 2 (a, c) fn 1 (b) fp 2 (d, e) tn 1 (f):
    # p_o = 3/6, p_e = (4/6)(3/6) + (2/6)(3/6) = 1/2 -> kappa 0
    assert found["a"]["kappa"] == pytest.approx(1 / 3)
    assert found["b"]["kappa"] == pytest.approx(0.0)
    assert found["delta"] == pytest.approx(-1 / 3)
    low, high = found["delta_ci95"]
    assert low <= -1 / 3 <= high

    b_cases[5]["calibration"]["expect"] = "fail"  # relabelled in B: not the same item any more
    relabelled = calibration_report(b_cases)
    assert relabelled is not None
    (found,) = judges_compared(a["cases"], relabelled["cases"])
    assert (found["items"], found["labels_differ"]) == (6, 1)
