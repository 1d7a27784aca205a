"""Side-by-side comparison (issue 13 §3): `python -m pytest_evalcases compare A/ B/ [-o OUT]`.

Checked on hand-made results documents whose figures are known (the command on two real report
folders: tests/integration/test_compare_command.py).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pytest_evalcases.core.stats import DEFAULT_SEED, bootstrap_ci
from pytest_evalcases.report import aggregate
from pytest_evalcases.report.compare import (
    compare_runs,
    render_compare_html,
    render_compare_markdown,
)

XSS = '<script>alert("x")</script>'


def result(case_id: str, outcome: str, scores: dict[str, float | None], **extra: Any) -> dict:
    stages = {
        name: {"score": score, "passed": None if score is None else score >= 0.5, "gating": True}
        for name, score in scores.items()
    }
    first = next(
        (
            {"stage": n, "reason": f"{n} {s:.2f} < 0.50"}
            for n, s in scores.items()
            if s is not None and s < 0.5
        ),
        None,
    )
    return {
        "nodeid": f"cases/s.json::{case_id}",
        "suite": "s",
        "id": case_id,
        "file": "cases/s.json",
        "index": int(case_id.strip("c") or 0) if case_id.strip("c").isdigit() else 0,
        "category": extra.pop("category", None),
        "group": None,
        "outcome": outcome,
        "first_failure": first,
        "stages": stages,
        "recording": extra.pop("recording", {}),
        **extra,
    }


def doc_of(cases: list[dict], mode: str = "replay") -> dict:
    return aggregate(cases, {"mode": mode, "run_id": f"run-{mode}"})


def usage(cost: float, latency: float) -> dict:
    return {
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cost_usd": cost},
        "latency_ms": latency,
    }


@pytest.fixture
def two_runs() -> tuple[dict, dict]:
    a_scores = [1.0, 1.0, 0.0, 0.0, 1.0, 0.5]
    b_scores = [1.0, 1.0, 1.0, 1.0, 0.0, 0.5]
    a = [
        result(
            f"c{i}",
            "passed" if s >= 0.5 else "failed",
            {"retrieval": s},
            category="billing" if i < 3 else "shipping",
            recording=usage(0.01, 100 + i),
        )
        for i, s in enumerate(a_scores)
    ]
    b = [
        result(
            f"c{i}",
            "passed" if s >= 0.5 else "failed",
            {"retrieval": s},
            category="billing" if i < 3 else "shipping",
            recording=usage(0.03, 300 + i),
        )
        for i, s in enumerate(b_scores)
    ]
    a.append(result("c90", "failed", {"retrieval": 0.0}))  # only in A: counted, never paired
    b.append(result("c91", "passed", {"retrieval": 1.0}))  # only in B
    b.append(result("c92", "skipped", {}))
    return doc_of(a), doc_of(b, mode="live")


def test_stage_means_intervals_and_the_paired_difference(two_runs: tuple[dict, dict]) -> None:
    a, b = two_runs
    cmp = compare_runs(a, b, ["gpt-a", "gpt-b"])

    assert cmp["cases"] == {"shared": 6, "only_a": 1, "only_b": 2}
    s = cmp["stages"]["retrieval"]
    assert s["cases"] == 6
    assert s["a_mean"] == pytest.approx(3.5 / 6) and s["b_mean"] == pytest.approx(4.5 / 6)
    assert s["a_ci95"] == list(bootstrap_ci([1.0, 1.0, 0.0, 0.0, 1.0, 0.5]))
    diffs = [0.0, 0.0, 1.0, 1.0, -1.0, 0.0]
    assert s["delta"] == pytest.approx(1 / 6)
    assert s["delta_ci95"] == list(bootstrap_ci(diffs))
    assert s["delta_ci95"][0] < 0 < s["delta_ci95"][1]
    assert s["verdict"] == "no clear difference"
    # the paired interval is the bootstrap of pairs: resampling case indices directly agrees
    rng = np.random.default_rng(DEFAULT_SEED)
    idx = rng.integers(0, 6, size=(20_000, 6))
    direct = np.percentile(np.asarray(diffs)[idx].mean(axis=1), [2.5, 97.5])
    assert s["delta_ci95"] == pytest.approx(list(direct), abs=0.04)
    assert cmp["seed"] == DEFAULT_SEED


def test_the_comparison_is_seeded_and_independent_of_case_order(
    two_runs: tuple[dict, dict],
) -> None:
    a, b = two_runs
    first = compare_runs(a, b)
    shuffled = dict(b, cases=list(b["cases"]))
    random.Random(7).shuffle(shuffled["cases"])
    again = compare_runs(a, shuffled)
    assert again["stages"] == first["stages"]
    assert again["categories"] == first["categories"]


def test_a_clear_difference_reads_as_one() -> None:
    a = doc_of([result(f"c{i}", "failed", {"tools": 0.0}) for i in range(30)])
    b = doc_of([result(f"c{i}", "passed", {"tools": 1.0 if i % 10 else 0.0}) for i in range(30)])
    s = compare_runs(a, b)["stages"]["tools"]
    assert s["delta"] == pytest.approx(0.9) and s["delta_ci95"][0] > 0
    assert s["verdict"] == "B higher"
    assert compare_runs(b, a)["stages"]["tools"]["verdict"] == "B lower"
    assert compare_runs(a, a)["stages"]["tools"]["verdict"] == "same"


def test_categories_flips_and_cost_are_over_shared_cases(two_runs: tuple[dict, dict]) -> None:
    cmp = compare_runs(*two_runs)

    billing, shipping = cmp["categories"]["billing"], cmp["categories"]["shipping"]
    assert (billing["a"]["passed"], billing["a"]["decided"]) == (2, 3)
    assert (billing["b"]["passed"], billing["b"]["decided"]) == (3, 3)
    assert (shipping["a"]["passed"], shipping["b"]["passed"]) == (2, 2)
    assert billing["b"]["pass_rate_ci95"][1] == 1.0
    assert set(cmp["categories"]) == {"billing", "shipping"}  # c90-c92 are not shared
    assert cmp["pass_rate"]["a"]["passed"] == 4 and cmp["pass_rate"]["b"]["passed"] == 5

    to_failing, to_passing = cmp["flipped"]["to_failing"], cmp["flipped"]["to_passing"]
    assert [f["case"] for f in to_failing] == ["s::c4"]
    assert to_failing[0]["b"] == {
        "outcome": "failed",
        "stage": "retrieval",
        "reason": "retrieval 0.00 < 0.50",
    }
    assert to_failing[0]["a"]["outcome"] == "passed"
    assert [f["case"] for f in to_passing] == ["s::c2", "s::c3"]

    cost = cmp["cost"]
    assert cost["a"]["system"]["cases"] == 6 and cost["b"]["system"]["cases"] == 6
    assert cost["a"]["system"]["cost_usd"] == pytest.approx(0.06)
    assert cost["b"]["system"]["cost_usd"] == pytest.approx(0.18)
    assert cost["a"]["system"]["latency_ms_median"] == pytest.approx(102.5)
    assert cost["b"]["system"]["latency_ms_median"] == pytest.approx(302.5)


def test_markdown_and_html_show_the_comparison(two_runs: tuple[dict, dict]) -> None:
    a, b = two_runs
    b["cases"][4]["first_failure"]["reason"] = XSS
    cmp = compare_runs(a, b, ["gpt-a", XSS])

    md = render_compare_markdown(cmp)
    assert "6 shared cases (compared); 1 only in gpt-a, 2 only in" in md
    assert "| retrieval | 6 | 0.583 |" in md and "| +0.167 |" in md
    assert "no clear difference" in md
    assert "| billing | 2/3 | 66.7% |" in md and "+33.3 pts" in md
    assert "### Passed in A, not in B (1)" in md and "s::c4" in md
    assert "### Not passed in A, passed in B (2)" in md
    assert "| system cost | $0.0600 | $0.1800 |" in md
    assert "<script>" not in md

    page = render_compare_html(cmp)
    assert "<script" not in page  # no script of its own, and the payload is text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert (
        "default-src &#39;none&#39;; style-src &#39;sha256-" in page
        and "http" not in page.split("<body>")[1]
    )
    assert '<svg class="forest"' in page and "+0.167" in page
    assert "s::c2" in page and "$0.1800" in page


def test_documents_that_are_not_results_are_refused() -> None:
    from pytest_evalcases.report.baseline import BaselineError

    good = doc_of([result("c1", "passed", {"tools": 1.0})])
    with pytest.raises(BaselineError, match="B results.json is not a results.json"):
        compare_runs(good, {"cases": []}, ["A", "B"])


def test_a_flipped_conversation_names_its_failing_turn() -> None:
    """A conversation case's first failure is at a turn: the flip says which, as the terminal
    does (`turn 2 tools`)."""
    passing = result("c1", "passed", {"tools": 1.0})
    failing = result("c1", "failed", {"tools": 0.0})
    failing["first_failure"] = {"stage": "tools", "reason": "turn 2: missing: x", "turn": 2}
    cmp = compare_runs(doc_of([passing]), doc_of([failing]))
    assert cmp["flipped"]["to_failing"][0]["b"]["stage"] == "turn 2 tools"


# ------------------------------------------------------------ the token break-even (issue 23 §5)


def tokens_run(per_case: list[int], ingestion_tokens: int | None | bool = False) -> dict:
    """A run whose cases each spent `per_case[i]` system tokens (prompt 90%, completion 10%
    when it divides, else all prompt); with an ingestion of `ingestion_tokens` (False: none)
    split over two users."""
    cases = []
    for i, tokens in enumerate(per_case):
        completion = tokens // 10 if tokens % 10 == 0 else 0
        usage = {"prompt_tokens": tokens - completion, "completion_tokens": completion}
        extra: dict[str, Any] = {}
        if ingestion_tokens is not False:
            user = f"u-{i % 2}"
            if ingestion_tokens is None:
                usage_of_user = None
            else:  # the whole ingestion on u-0, nothing on u-1: the total is what counts
                spent = ingestion_tokens if i % 2 == 0 else 0
                usage_of_user = {"prompt_tokens": spent, "completion_tokens": 0}
            extra = {
                "user": user,
                "ingestion": {"user": user, "source": "recorded", "usage": usage_of_user},
            }
        cases.append(result(f"c{i}", "passed", {"tools": 1.0}, recording={"usage": usage}, **extra))
    return doc_of(cases)


def test_break_even_after_ingestion_tokens_over_the_tokens_saved_per_question() -> None:
    full = tokens_run([770, 770])
    memory = tokens_run([450, 450], ingestion_tokens=12_000)
    cmp = compare_runs(full, memory, ["full", "memory"])
    # 12,000 / (770 - 450) = 37.5: the 38th question pays it back
    assert cmp["break_even"] == {
        "memory": "b",
        "ingestion_tokens": 12_000,
        "per_question_memory": 450.0,
        "per_question_full": 770.0,
        "questions": 38,
        "never": False,
    }
    sentence = (
        "Break-even: ingestion (12,000 tokens) pays for itself after 38 questions (450 tokens "
        "per question with memory, 770 with the full context)."
    )
    md = render_compare_markdown(cmp)
    assert "### Token break-even" in md
    assert sentence in md  # its parentheses as written
    assert "Memory run: B memory (the run with an ingestion phase); full-context run: A full" in md
    page = render_compare_html(cmp)
    assert f"<p>{sentence}</p>" in page
    # the memory run may be A
    assert compare_runs(memory, full)["break_even"]["memory"] == "a"
    assert compare_runs(memory, full)["break_even"]["questions"] == 38


@pytest.mark.parametrize(
    ("ingestion_tokens", "questions"),
    [(3200, 10), (3201, 11), (320, 1), (1, 1)],  # 3200 / 320 = 10 exactly: not 11
)
def test_break_even_at_the_boundary(ingestion_tokens: int, questions: int) -> None:
    cmp = compare_runs(tokens_run([770]), tokens_run([450], ingestion_tokens=ingestion_tokens))
    assert cmp["break_even"]["questions"] == questions


def test_break_even_is_exact_where_floats_are_not() -> None:
    # q_full - q_mem = 1201/3 - 900/3 = 301/3, and 301 / (301/3) = 3: floats say 3.0000000000000004
    assert 301 / (1201 / 3 - 900 / 3) > 3
    cmp = compare_runs(
        tokens_run([400, 400, 401]), tokens_run([300, 300, 300], ingestion_tokens=301)
    )
    assert cmp["break_even"]["questions"] == 3
    assert cmp["break_even"]["per_question_full"] == pytest.approx(400.3333333)
    assert "400.3 with the full context" in render_compare_html(cmp)


@pytest.mark.parametrize("memory_per_case", [770, 800])  # equal, and worse
def test_ingestion_never_pays_for_itself_when_questions_cost_no_less(
    memory_per_case: int,
) -> None:
    cmp = compare_runs(
        tokens_run([770, 770]), tokens_run([memory_per_case] * 2, ingestion_tokens=12_000)
    )
    assert cmp["break_even"]["questions"] is None and cmp["break_even"]["never"] is True
    page = render_compare_html(cmp)
    assert (
        "<p>Break-even: ingestion (12,000 tokens) never pays for itself: the memory run spends "
        f"{memory_per_case} tokens per question, the full-context run 770.</p>"
    ) in page


def test_no_break_even_unless_exactly_one_run_ingested_with_known_tokens() -> None:
    full, memory = tokens_run([770]), tokens_run([450], ingestion_tokens=12_000)
    assert "break_even" in compare_runs(full, memory)
    cases = {
        "neither": (full, tokens_run([450])),
        "both": (tokens_run([770], ingestion_tokens=500), memory),
        "unknown ingestion tokens": (full, tokens_run([450], ingestion_tokens=None)),
        "no ingestion tokens": (full, tokens_run([450], ingestion_tokens=0)),
    }
    for why, (a, b) in cases.items():
        cmp = compare_runs(a, b)
        assert "break_even" not in cmp, why
        assert "break-even" not in render_compare_markdown(cmp).lower(), why
        assert "break-even" not in render_compare_html(cmp).lower(), why
    no_usage = doc_of([result("c0", "passed", {"tools": 1.0})])
    assert "break_even" not in compare_runs(no_usage, memory)


def test_a_user_of_unknown_tokens_leaves_the_break_even_unknown() -> None:
    # u-a ingested 1,000 tokens, u-b's are unknown (its provider reports no usage): the total's
    # 1,000 is a lower bound, and 1,000 / (770 - 450) = 3.125 would claim 4 questions.
    users = {"u-a": {"prompt_tokens": 1000, "completion_tokens": 0}, "u-b": None}
    cases = [
        result(
            f"c{i}",
            "passed",
            {"tools": 1.0},
            recording={"usage": {"prompt_tokens": 450, "completion_tokens": 0}},
            user=user,
            ingestion={"user": user, "source": "recorded", "usage": users[user]},
        )
        for i, user in enumerate(users)
    ]
    memory = doc_of(cases)
    assert memory["ingestion"]["total"]["total_tokens"] == 1000
    assert memory["ingestion"]["total"]["usage_unknown_users"] == 1
    cmp = compare_runs(tokens_run([770, 770]), memory)
    assert "break_even" not in cmp
    assert "break-even" not in render_compare_markdown(cmp).lower()
    assert "break-even" not in render_compare_html(cmp).lower()
