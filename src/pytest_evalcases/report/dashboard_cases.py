"""dashboard.html's view of one case: its row (outcome, first failure, a score per stage) and
what its details show (the texts, tool calls, retrieved context, each stage's verdict, the
recording's usage), as namespaces the template reads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from ..core.outcomes import case_label, failure_of
from .aggregate import stage_score, stage_status
from .case_table import CaseColumn
from .formatting import fmt_int, fmt_ms, fmt_score, fmt_usd

# Per-case view objects are namespaces, not dicts: jinja resolves `c.x` with getattr
# first, and on 10k cases the failed-getattr-then-getitem path of dicts costs seconds.
_NS = SimpleNamespace


def case_view(
    case: Mapping[str, Any],
    index: int,
    stage_order: Sequence[str],
    regressed: set[str],
    extras: Sequence[CaseColumn] = (),
) -> SimpleNamespace:
    """One case as the page shows it: its row in the table (with the `extras` columns after the
    stages' scores) and, folded, its details."""
    stages = case.get("stages") or {}
    ff_stage, reason = failure_of(case)
    scores = []
    for name in stage_order:
        st = stages.get(name)
        if st is None:
            scores.append(_NS(text="", sort="", cls="s-none", title=f"{name}: not run"))
            continue
        status = stage_status(st)
        score = stage_score(st)
        text = "JE" if status == "judge_error" else fmt_score(score, 2)
        title = f"{name}: {status}" + (f" ({st['label']})" if st.get("label") else "")
        scores.append(
            _NS(
                text=text,
                sort="" if score is None else f"{score:.6f}",
                cls=f"s-{status}",
                title=title,
            )
        )
    detail = case.get("detail") or {}
    rec = case.get("recording") or {}
    # A conversation shows one row a turn and stage, and each turn's message and answer.
    turns = [t for t in case.get("turns") or [] if isinstance(t, Mapping)]
    parts = [(f"turn {t.get('turn')} ", t.get("stages") or {}) for t in turns] or [("", stages)]
    stage_rows = [
        _stage_row(prefix + name, part[name])
        for prefix, part in parts
        for name in _ordered(part, stage_order)
    ]
    texts = [(key, _text_or_none(detail.get(key))) for key in ("input", "answer", "reference")]
    if turns:
        texts = [
            (
                f"turn {t.get('turn')}",
                f"user: {t.get('input', '')}\nassistant: {t.get('answer', '')}",
            )
            for t in turns
        ] + texts[2:]
    tool_calls = [
        _NS(
            name=str(tc.get("name", "?")) if isinstance(tc, Mapping) else str(tc),
            args=_json_text(tc.get("args", {})) if isinstance(tc, Mapping) else "",
        )
        for tc in (detail.get("tool_calls") or [])
    ]
    category, group = case.get("category"), case.get("group")
    return _NS(
        n=index,
        label=case_label(case),
        nodeid=case.get("nodeid"),
        outcome=case["outcome"],
        category="" if category is None else str(category),
        group="" if group is None else str(group),
        group_kind="user" if case.get("user") else "group",
        ff_stage=ff_stage or "",
        ff_text=(
            f"turn {(case.get('first_failure') or {}).get('turn')} {ff_stage}"
            if ff_stage and (case.get("first_failure") or {}).get("turn")
            else ff_stage or ""
        ),
        reason=reason if case["outcome"] not in ("passed", "xpassed", "skipped") else "",
        # what the first failing stage compared: (label, text), as the terminal showed it
        ff_details=[
            (str(line[0]), str(line[1]))
            for line in (case.get("first_failure") or {}).get("details") or []
            if isinstance(line, Sequence) and not isinstance(line, str) and len(line) == 2
        ],
        regressed=case.get("nodeid") in regressed,
        scores=scores,
        extras=[_extra_cell(column, case) for column in extras],
        # (title, text) blocks in display order; None when the trace has no such field
        texts=texts,
        tool_calls=tool_calls,
        retrieved=[str(r) for r in (detail.get("retrieved") or [])],
        context=[str(c) for c in (detail.get("context") or [])],
        stage_rows=stage_rows,
        rec=_NS(
            status=rec.get("status") or "",
            recorded_at=rec.get("recorded_at") or "",
            usage=_usage_text(rec.get("usage")),
            judge_usage=_usage_text(rec.get("judge_usage")),
            latency=fmt_ms(rec["latency_ms"]) if rec.get("latency_ms") is not None else None,
            judge_latency=(
                fmt_ms(rec["judge_latency_ms"]) if rec.get("judge_latency_ms") is not None else None
            ),
            timings=_timings_text(case.get("timings")),
        ),
    )


def _extra_cell(column: CaseColumn, case: Mapping[str, Any]) -> SimpleNamespace:
    text = column.cell(case)
    missing = text == "–"
    return _NS(text=text, sort="" if missing and column.numeric else text)


def _timings_text(timings: Any) -> str | None:
    """The case's timings on one line (`measured run 32 ms · search 5 ms · judge 42 ms`), the
    turns' list as each turn's time; None when it has none."""
    if not isinstance(timings, Mapping) or not timings:
        return None
    parts = []
    for step, value in timings.items():
        values = value if isinstance(value, list) else [value]
        shown = ", ".join(fmt_ms(v) for v in values if isinstance(v, int | float))
        parts.append(f"{str(step).removesuffix('_ms')} {shown}")
    return " · ".join(parts)


def _ordered(stages: Mapping[str, Any], stage_order: Sequence[str]) -> list[str]:
    """Stage dicts read back from results.json have sorted keys: use the run's order."""
    return [n for n in stage_order if n in stages] + [n for n in stages if n not in stage_order]


def _stage_row(name: str, st: Mapping[str, Any]) -> SimpleNamespace:
    metrics = st.get("metrics") or {}
    return _NS(
        name=name,
        gating=bool(st.get("gating")),
        status=stage_status(st),
        score=fmt_score(stage_score(st)),
        threshold=fmt_score(st.get("threshold"))
        if isinstance(st.get("threshold"), (int, float))
        else "–",
        label=st.get("label") or "",
        reason=st.get("reason") or "",
        metrics=" · ".join(f"{k} {_fmt_num(v)}" for k, v in metrics.items()),
    )


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else _json_text(value)


def _fmt_num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):  # e.g. the graph stage's unmatched edges, the schema's violations
        return "; ".join(map(str, v)) if v else "none"
    return str(v)


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _usage_text(usage: Mapping[str, Any] | None) -> str | None:
    if not usage:
        return None
    parts = [
        f"{k.replace('_', ' ')} {fmt_int(usage[k])}"
        for k in ("prompt_tokens", "completion_tokens")
        if usage.get(k) is not None
    ]
    if usage.get("cost_usd") is not None:
        parts.append(fmt_usd(usage["cost_usd"]))
    return " · ".join(parts) or None
