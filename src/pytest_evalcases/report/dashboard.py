"""dashboard.html: one self-contained, offline HTML file (inline CSS, SVG and JS).

Safety model: every value that comes from a case, a trace or a judge goes through
jinja2 autoescaping (no ``|safe`` on data); the page's own script and stylesheet
are static package files, allowed by a Content-Security-Policy *hash*, so even a
markup injection could neither run script (inline handlers and injected <script>
are refused) nor load anything from the network (default-src 'none').
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from ..core.outcomes import OUTCOMES, SUMMARY_KEYS, case_label, failure_of
from ..domain.calibration_scoring import case_rows, figures_rows
from .aggregate import stage_score, stage_status
from .charts import histogram_bars, interval_chart
from .formatting import (
    fmt_ci,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_pct_ci,
    fmt_score,
    fmt_usd,
    uncommitted_changes,
)
from .html import csp_hash, page_environment, static_file, static_markup
from .ingestion import TABLE_ALIGN, TABLE_HEADER, table_rows, total_cells
from .markdown import cost_text
from .timings import TIMINGS_ALIGN, TIMINGS_HEADER, timing_rows

# Per-case view objects are namespaces, not dicts: jinja resolves `c.x` with getattr
# first, and on 10k cases the failed-getattr-then-getitem path of dicts costs seconds.
_NS = SimpleNamespace
_RETRIEVAL_LABELS = (
    ("hit@k", "hit_at_k"),
    ("recall@k", "recall_at_k"),
    ("precision@k", "precision_at_k"),
    ("MRR", "mrr"),
    ("nDCG@k", "ndcg_at_k"),
    ("MAP", "map"),
)
_GRAPH_LABELS = (
    ("precision", "precision"),
    ("recall", "recall"),
    ("hallucination", "hallucination_rate"),
    ("omission", "omission_rate"),
)


def render_dashboard(doc: Mapping[str, Any]) -> str:
    """Render the results document to a standalone HTML page."""
    script, style = static_file("dashboard.js"), static_file("dashboard.css")
    csp = (
        "default-src 'none'; "
        f"script-src {csp_hash(script)}; style-src {csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    ctx = dashboard_context(doc)
    # Markup only for our own static files; all data below is autoescaped.
    ctx.update(script=static_markup(script), style=static_markup(style), csp=csp)
    return page_environment().get_template("dashboard.html.j2").render(**ctx)


# ----------------------------------------------------------------- view model


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


def _case_view(
    case: Mapping[str, Any], index: int, stage_order: Sequence[str], regressed: set[str]
) -> SimpleNamespace:
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
        ),
    )


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


def breakdown_labels(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, label) columns of a memory suite's rows: completeness then accuracy counts."""
    return [
        (field, label)
        for field in ("completeness", "accuracy")
        for label in dict.fromkeys(label for c in section.values() for label in c.get(field) or {})
    ]


def has_complete_rate(section: Mapping[str, Any]) -> bool:
    """Whether the table gets a `complete rate` column: as report.md, when any row has one."""
    return any("complete_rate" in c for c in section.values())


def _breakdown_rows(section: Mapping[str, Any], stage_order: Sequence[str]) -> list[dict]:
    labels = breakdown_labels(section)
    complete = has_complete_rate(section)
    rows = []
    for name, c in section.items():
        rows.append(
            {
                "name": name,
                "cases": c["cases"],
                "passed": c["passed"] + c["xpassed"],
                "failed": c["failed"] + c["xfailed"],
                "other": c["cases"] - c["decided"],
                "rate": fmt_pct(c["pass_rate"]),
                "ci": fmt_pct_ci(c["pass_rate_ci95"]),
                "labels": [(c.get(field) or {}).get(label, 0) for field, label in labels],
                # Zep's share judged COMPLETE, beside the counts and the completeness mean
                "complete_rate": [fmt_pct(c.get("complete_rate"))] if complete else [],
                "means": [fmt_score(c["stage_means"].get(s)) for s in stage_order],
            }
        )
    return rows


def _total_rows(totals: Mapping[str, Any], stage_order: Sequence[str]) -> list[dict]:
    return [
        {
            "name": name,
            "cases": total["cases"],
            "excluded": total["excluded"],
            "rate": fmt_pct(total["pass_rate"]),
            "ci": fmt_pct_ci(total["pass_rate_ci95"]),
            "means": [fmt_score(total["stage_means"].get(s)) for s in stage_order],
        }
        for name, total in totals.items()
    ]


def dashboard_context(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template needs, as plain (still unescaped) values."""
    summary = doc["summary"]
    stages = doc.get("stages") or {}
    stage_order = list(doc.get("stage_order") or stages)
    run = doc.get("run") or {}
    baseline = doc.get("baseline")
    regressed = {r.get("nodeid") for r in (baseline or {}).get("regressions", [])}

    stage_cards = []
    for name in stage_order:
        s = stages[name]
        metrics = [
            (label, fmt_score(s.get(key)))
            for label, key in _RETRIEVAL_LABELS + _GRAPH_LABELS
            if key in s
        ]
        stage_cards.append(
            {
                "name": name,
                "gating": s["gating"],
                "passed": s["passed"],
                "failed": s["failed"],
                "skipped": s["skipped"],
                "judge_errors": s["judge_errors"],
                "scored": s["scored"],
                "mean": fmt_score(s["mean"]),
                "ci": fmt_ci(s["ci95"]),
                "hist": histogram_bars(s.get("histogram") or []),
                "metrics": metrics,
                "k": s.get("k"),
            }
        )
    stage_chart = interval_chart(
        [
            (
                name,
                stages[name]["mean"],
                stages[name]["ci95"],
                f"{fmt_score(stages[name]['mean'])} {fmt_ci(stages[name]['ci95'], 2)}",
            )
            for name in stage_order
        ]
    )
    cats = doc.get("categories") or {}
    category_chart = interval_chart(
        [
            (
                name,
                c["pass_rate"],
                c["pass_rate_ci95"],
                f"{fmt_pct(c['pass_rate'])} "
                f"({fmt_pct_ci(c['pass_rate_ci95'], 0)}, n={c['decided']})",
            )
            for name, c in cats.items()
        ]
    )
    cases = [_case_view(c, i, stage_order, regressed) for i, c in enumerate(doc["cases"])]
    ff_stages = {c.ff_stage for c in cases if c.ff_stage}
    chips = [
        {"outcome": o, "key": SUMMARY_KEYS[o], "count": summary.get(SUMMARY_KEYS[o], 0)}
        for o in OUTCOMES
    ]
    meta = [
        (k.replace("_", " "), str(run[k]))
        for k in (
            "mode",
            "judge",
            "plugin_version",
            "git_commit",
            "started",
            "started_at",
            "finished",
            "finished_at",
            "shards",
            "run_id",
        )
        if run.get(k) not in (None, "")
    ]
    if uncommitted_changes(run):
        meta.append(("git", "uncommitted changes"))
    return {
        "title": "pytest-evalcases: " + (", ".join(summary.get("suites") or []) or "eval cases"),
        "summary": summary,
        "pass_rate": fmt_pct(summary.get("pass_rate")),
        "pass_rate_ci": fmt_pct_ci(summary.get("pass_rate_ci95")),
        "chips": chips,
        "cost": cost_text(doc.get("cost")),
        "meta": meta,
        "stage_order": stage_order,
        "colspan": 5 + len(stage_order),
        "stage_cards": stage_cards,
        "stage_chart": stage_chart,
        "category_chart": category_chart,
        "categories": _breakdown_rows(cats, stage_order),
        "totals": _total_rows(doc.get("totals") or {}, stage_order),
        "groups": _breakdown_rows(doc.get("groups") or {}, stage_order),
        "category_labels": [label for _, label in breakdown_labels(cats)],
        "group_labels": [label for _, label in breakdown_labels(doc.get("groups") or {})],
        "category_complete_rate": has_complete_rate(cats),
        "group_complete_rate": has_complete_rate(doc.get("groups") or {}),
        "group_kind": doc.get("group_kind") or "group",
        "ingestion": _ingestion_view(doc.get("ingestion")),
        "cva": doc.get("completeness_vs_accuracy"),
        "cva_accuracy": fmt_pct(
            (doc.get("completeness_vs_accuracy") or {}).get("accuracy_when_complete")
        ),
        "baseline": _baseline_view(baseline),
        "calibration": _calibration_view(doc.get("calibration")),
        "timings": _timings_view(doc.get("timings")),
        "cases": cases,
        "outcomes": list(OUTCOMES),
        "filter_categories": sorted({c.category for c in cases if c.category}),
        "filter_stages": [s for s in stage_order if s in ff_stages]
        + sorted(ff_stages - set(stage_order)),
        "has_uncategorised": any(not c.category for c in cases),
    }


def _ingestion_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Each user's ingestion figures and their total, as cells; None without ingestion."""
    if not section:
        return None
    return {
        "header": [(h, a == "r") for h, a in zip(TABLE_HEADER, TABLE_ALIGN, strict=True)],
        "rows": table_rows(section),
        "total": total_cells(section),
        "right": [a == "r" for a in TABLE_ALIGN],
    }


def _timings_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Each step's cases, mean and p95, as report.md's Timings table; None when it has none."""
    rows = timing_rows(section)
    if not rows:
        return None
    return {
        "header": [(h, a == "r") for h, a in zip(TIMINGS_HEADER, TIMINGS_ALIGN, strict=True)],
        "rows": rows,
        "right": [a == "r" for a in TIMINGS_ALIGN],
    }


def _calibration_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The judge calibration tables as rows of cells (header first), or None."""
    if not section:
        return None
    return {"cases": case_rows(section), "figures": figures_rows(section)}


def _baseline_view(cmp: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not cmp:
        return None
    deltas = cmp.get("stage_deltas") or {}
    return {
        "failed": cmp["failed"],
        "tolerance": f"{cmp['tolerance']:.3f}",
        "regressions": cmp["regressions"],
        "drops": [
            {
                **d,
                "baseline": fmt_score(d["baseline_mean"]),
                "current": fmt_score(d["current_mean"]),
                "delta": f"{d['delta']:+.3f}",
            }
            for d in cmp["stage_drops"]
        ],
        "fixed": cmp["fixed"],
        "unstable": cmp.get("unstable") or [],
        "new": cmp["new"],
        "removed": cmp["removed"],
        "still_failing": cmp["still_failing"],
        "deltas": [
            {
                "name": n,
                "cases": d["cases"],
                "baseline": fmt_score(d["baseline_mean"]),
                "current": fmt_score(d["current_mean"]),
                "delta": "–" if d["delta"] is None else f"{d['delta']:+.3f}",
                "down": d["delta"] is not None and d["delta"] < 0,
                "ci": fmt_ci(d["ci95"]),
                "baseline_ci": fmt_ci(d["baseline_ci95"]),
            }
            for n in (cmp.get("stage_order") or deltas)
            for d in [deltas[n]]
        ],
    }
