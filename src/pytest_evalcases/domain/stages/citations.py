"""`citations`: the document ids the answer cites (`citations` in the trace) are all among the
retrieved ones (provenance), and, when the case gives `expected_docs`, at least one of them is
cited. Citations are a list of ids for the whole answer, or per sentence:
`[{"sentence": "...", "docs": ["d1"]}, ...]`; with the suite's
`"citations": {"every_sentence": true}` each of those sentences must cite a document.

Score = the share of cited ids that were retrieved; the stage passes when that share reaches the
threshold (default 1.0), an expected document is cited and no sentence is left uncited.
"""

from __future__ import annotations

from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .registry import register


def cited_docs(citations: list[Any]) -> tuple[list[str], dict[str, list[int]], list[int]]:
    """(distinct cited ids in order, id -> numbers of the sentences citing it (1-based), numbers
    of the sentences citing nothing); answer-level ids cite from no particular sentence."""
    cited: dict[str, list[int]] = {}
    uncited = []
    for number, entry in enumerate(citations, start=1):
        if isinstance(entry, str):
            cited.setdefault(entry, [])
            continue
        docs = entry.get("docs") or []
        if not docs:
            uncited.append(number)
        for doc in docs:
            cited.setdefault(doc, []).append(number)
    return list(cited), cited, uncited


def _named(doc: str, sentences: list[int]) -> str:
    if not sentences:
        return doc
    where = ", ".join(str(n) for n in sentences)
    return f"{doc} (sentence{'s' if len(sentences) > 1 else ''} {where})"


def score_citations(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    citations = trace.get("citations") or []
    docs, where, uncited = cited_docs(citations)
    if not docs and case.unanswerable:
        return skipped("unanswerable case cites nothing")
    threshold = suite.threshold_for("citations", default=1.0)
    if not docs:
        return StageResult(
            0.0,
            False,
            "the answer cites no document",
            threshold,
            metrics={"cited": 0, "supported": 0},
        )
    retrieved = set(trace.get("retrieved") or [])
    unsupported = [doc for doc in docs if doc not in retrieved]
    share = (len(docs) - len(unsupported)) / len(docs)
    metrics: dict[str, Any] = {
        "cited": len(docs),
        "supported": len(docs) - len(unsupported),
        "unsupported": [_named(doc, where[doc]) for doc in unsupported],
    }
    problems = []
    if share < threshold:
        problems.append(
            f"provenance {share:.2f} < {threshold:.2f}; not retrieved: "
            + ", ".join(metrics["unsupported"])
        )
    if case.expected_docs:
        expected_cited = [doc for doc in docs if doc in set(case.expected_docs)]
        metrics["expected_cited"] = expected_cited
        if not expected_cited:
            problems.append(f"cites none of the expected docs ({', '.join(case.expected_docs)})")
    if suite.citations is not None and suite.citations.every_sentence:
        metrics["uncited_sentences"] = uncited
        if any(isinstance(entry, str) for entry in citations):
            problems.append(
                'every_sentence needs per-sentence citations ({"sentence": ..., "docs": [...]}); '
                "the trace cites for the whole answer"
            )
        elif uncited:
            problems.append(f"uncited sentences: {', '.join(map(str, uncited))}")
    if problems:
        return StageResult(share, False, "; ".join(problems), threshold, metrics=metrics)
    reason = (
        f"{len(docs)} cited, all retrieved"
        if not unsupported
        else (
            f"provenance {share:.2f} >= {threshold:.2f}; not retrieved: "
            + ", ".join(metrics["unsupported"])
        )
    )
    return StageResult(share, True, reason, threshold, metrics=metrics)


register(Stage("citations", score_citations))
