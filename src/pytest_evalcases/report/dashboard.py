"""dashboard.html: one self-contained, offline HTML file (inline CSS, SVG and JS). This module
renders the page and builds its context (the headline, the stage cards and charts); each case's
view is `dashboard_cases.py`, the run's tables `dashboard_tables.py`.

Safety model: every value that comes from a case, a trace or a judge goes through
jinja2 autoescaping (no ``|safe`` on data); the page's own script and stylesheet
are static package files, allowed by a Content-Security-Policy *hash*, so even a
markup injection could neither run script (inline handlers and injected <script>
are refused) nor load anything from the network (default-src 'none').
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.outcomes import OUTCOMES, SUMMARY_KEYS
from .case_table import dashboard_columns
from .charts import histogram_bars, interval_chart
from .dashboard_cases import case_view
from .dashboard_tables import (
    baseline_view,
    breakdown_labels,
    breakdown_rows,
    calibration_view,
    has_complete_rate,
    ingestion_view,
    timings_view,
    total_rows,
)
from .formatting import (
    fmt_ci,
    fmt_pct,
    fmt_pct_ci,
    fmt_score,
    uncommitted_changes,
)
from .html import csp_hash, page_environment, static_file, static_markup
from .markdown import cost_text

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
    extras = dashboard_columns(doc["cases"], stage_order)  # tools called, hit, RR
    cases = [case_view(c, i, stage_order, regressed, extras) for i, c in enumerate(doc["cases"])]
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
        "colspan": 5 + len(stage_order) + len(extras),
        "extra_columns": [
            {"header": c.header, "type": "num" if c.numeric else "text"} for c in extras
        ],
        "stage_cards": stage_cards,
        "stage_chart": stage_chart,
        "category_chart": category_chart,
        "categories": breakdown_rows(cats, stage_order),
        "totals": total_rows(doc.get("totals") or {}, stage_order),
        "groups": breakdown_rows(doc.get("groups") or {}, stage_order),
        "category_labels": [label for _, label in breakdown_labels(cats)],
        "group_labels": [label for _, label in breakdown_labels(doc.get("groups") or {})],
        "category_complete_rate": has_complete_rate(cats),
        "group_complete_rate": has_complete_rate(doc.get("groups") or {}),
        "group_kind": doc.get("group_kind") or "group",
        "ingestion": ingestion_view(doc.get("ingestion")),
        "cva": doc.get("completeness_vs_accuracy"),
        "cva_accuracy": fmt_pct(
            (doc.get("completeness_vs_accuracy") or {}).get("accuracy_when_complete")
        ),
        "baseline": baseline_view(baseline),
        "calibration": calibration_view(doc.get("calibration")),
        "timings": timings_view(doc.get("timings")),
        "cases": cases,
        "outcomes": list(OUTCOMES),
        "filter_categories": sorted({c.category for c in cases if c.category}),
        "filter_stages": [s for s in stage_order if s in ff_stages]
        + sorted(ff_stages - set(stage_order)),
        "has_uncategorised": any(not c.category for c in cases),
    }
