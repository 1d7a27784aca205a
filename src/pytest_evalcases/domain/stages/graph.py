"""`graph`: the trace's knowledge-graph `triples` against the case's `expected_triples`.

Labels are normalised (camelCase and snake_case split, lower case, punctuation to spaces, white
space collapsed), then mapped through the suite's aliases; each side becomes a set of edges.
Exact matching pairs equal edges. With a suite `"graph": {"similarity": "module:function"}`,
a gold and a predicted edge may also pair when every label in `soft` (default: all three) has
similarity >= `min_similarity`; the pairs are a maximum bipartite matching (no edge counted
twice), computed in sorted order so the same edges always give the same pairs.
Score = F1; metrics: precision, recall, hallucination_rate (unmatched predicted / predicted),
omission_rate (unmatched gold / gold) and the unmatched edges by name.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ...core.errors import CaseFileError
from ...core.schema import Case
from ...core.suite_schema import GraphOptions, Suite
from ..system import import_spec, split_spec
from .assignment import max_weight_matching
from .base import Stage, StageResult, skipped
from .registry import register

Edge = tuple[str, str, str]
Similarity = Callable[[str, str], float]

PARTS = ("subject", "relation", "object")
MAX_LISTED = 20  # unmatched edges kept in the metrics (all are counted)
DEFAULT_MIN_SIMILARITY = 0.95  # the graph-scoring spec's tau, whenever a similarity is given

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))
_NO_OPTIONS = GraphOptions()


def normalize_label(label: str) -> str:
    """`worksFor`, `works_for` and ` Works  for.` all read `works for`."""
    return " ".join(_CAMEL.sub(" ", label).lower().translate(_PUNCTUATION).split())


def normalize_aliases(aliases: dict[str, str]) -> dict[str, str]:
    return {normalize_label(alias): normalize_label(name) for alias, name in aliases.items()}


def normalize_edges(triples: Iterable[Sequence[str]], aliases: dict[str, str]) -> list[Edge]:
    """Distinct normalised edges, sorted (a graph is a set of edges)."""
    edges = set()
    for triple in triples:
        labels = (normalize_label(str(label)) for label in triple)
        edges.add(tuple(aliases.get(label, label) for label in labels))
    return sorted(edges)  # type: ignore[arg-type]


def edge_name(edge: Edge) -> str:
    return f"({edge[0]}, {edge[1]}, {edge[2]})"


def match_edges(
    gold: list[Edge],
    predicted: list[Edge],
    similarity: Similarity | None = None,
    min_similarity: float = 1.0,
    soft: Sequence[str] = PARTS,
    matching: str = "maximum",
) -> list[tuple[int, int, float]]:
    """A matching of gold to predicted edges, as (gold index, predicted index, weight) triples;
    an edge pair's weight is the mean similarity of its three labels (1.0 for equal edges).

    Without `similarity` only equal edges pair. With it, two edges pair when their labels are
    equal or, for the parts in `soft`, similar enough. `maximum` pairs as many edges as can be,
    each gold edge trying its candidates from the most similar down (Kuhn's augmenting paths:
    few edges per case, so O(V*E) is fine); `max_weight` pairs for the greatest total weight
    (the Hungarian method).
    """
    weights = edge_weights(gold, predicted, similarity, min_similarity, soft)
    if matching == "max_weight":
        return [(g, p, weights[g][p]) for g, p in max_weight_matching(weights)]  # type: ignore[misc]
    candidates = [
        [p for _, p in sorted((-w, p) for p, w in enumerate(row) if w is not None)]
        for row in weights
    ]
    owner: dict[int, int] = {}  # predicted index -> gold index

    def augment(g: int, visited: set[int]) -> bool:
        for p in candidates[g]:
            if p in visited:
                continue
            visited.add(p)
            if p not in owner or augment(owner[p], visited):
                owner[p] = g
                return True
        return False

    for g in range(len(gold)):
        augment(g, set())
    return sorted((g, p, weights[g][p]) for p, g in owner.items())  # type: ignore[misc]


def edge_weights(
    gold: list[Edge],
    predicted: list[Edge],
    similarity: Similarity | None,
    min_similarity: float,
    soft: Sequence[str],
) -> list[list[float | None]]:
    """Each gold/predicted pair's weight, or None where they may not pair."""
    soft_parts = [PARTS.index(part) for part in soft]
    cache: dict[tuple[str, str], float] = {}

    def label_similarity(a: str, b: str) -> float:
        if a == b:
            return 1.0
        if similarity is None:
            return 0.0
        pair = (a, b)
        if pair not in cache:
            cache[pair] = similarity(a, b)
        return cache[pair]

    weights: list[list[float | None]] = []
    for g in gold:
        row: list[float | None] = []
        for p in predicted:
            total = 0.0
            for part in range(3):
                if part in soft_parts:
                    value = label_similarity(g[part], p[part])
                    if value < min_similarity:
                        row.append(None)
                        break
                elif g[part] != p[part]:
                    row.append(None)
                    break
                else:
                    value = 1.0
                total += value
            else:
                row.append(total / 3)
        weights.append(row)
    return weights


def graph_metrics(
    gold: list[Edge],
    predicted: list[Edge],
    pairs: list[tuple[int, int, float]],
    weighted: bool = False,
) -> dict[str, Any]:
    """Precision and recall count the matched pairs, or (`weighted`, with max_weight matching)
    sum their similarity weights: soft precision and recall."""
    matched = len(pairs)
    found = sum(weight for _, _, weight in pairs) if weighted else matched
    precision = found / len(predicted) if predicted else float(not gold)
    recall = found / len(gold) if gold else float(not predicted)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    paired_gold = {g for g, _, _ in pairs}
    paired_predicted = {p for _, p, _ in pairs}
    hallucinated = [edge_name(e) for i, e in enumerate(predicted) if i not in paired_predicted]
    omitted = [edge_name(e) for i, e in enumerate(gold) if i not in paired_gold]
    return {
        "f1": f1,
        "precision": precision,
        "recall": recall,
        "hallucination_rate": len(hallucinated) / len(predicted) if predicted else 0.0,
        "omission_rate": len(omitted) / len(gold) if gold else 0.0,
        "matched": matched,
        "gold": len(gold),
        "predicted": len(predicted),
        "hallucinated": hallucinated[:MAX_LISTED],
        "omitted": omitted[:MAX_LISTED],
    }


def min_similarity_of(options: GraphOptions) -> float:
    """The suite's `min_similarity`, else the graph-scoring spec's tau = 0.95."""
    return DEFAULT_MIN_SIMILARITY if options.min_similarity is None else options.min_similarity


def _checked_similarity(options: GraphOptions, case: Case) -> Similarity | None:
    """The suite's similarity function, wrapped so a bad value errors naming the function."""
    function = options._similarity_function
    if function is None:
        return None

    def similarity(a: str, b: str) -> float:
        try:
            value = function(a, b)
        except Exception as exc:
            raise CaseFileError(
                f"graph similarity {options.similarity!r} raised {type(exc).__name__}: {exc} "
                f"on ({a!r}, {b!r}) for case {case.id!r}; fix the function"
            ) from None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and 0.0 <= value <= 1.0)
        ):
            raise CaseFileError(
                f"graph similarity {options.similarity!r} returned {value!r} for ({a!r}, {b!r}) "
                f"(case {case.id!r}); it must return a number in [0, 1]"
            )
        return float(value)

    return similarity


def score_graph(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    if case.expected_triples is None:
        return skipped("no expected_triples")
    options = suite.graph or _NO_OPTIONS
    aliases = options._aliases
    if aliases is None:  # normalised once per suite
        aliases = options._aliases = normalize_aliases(options.aliases)
    gold = normalize_edges(case.expected_triples, aliases)
    predicted = normalize_edges(trace.get("triples") or [], aliases)
    similarity = _checked_similarity(options, case)
    pairs = match_edges(
        gold,
        predicted,
        similarity,
        min_similarity_of(options) if similarity else 1.0,
        options.soft,
        options.matching,
    )
    metrics = graph_metrics(gold, predicted, pairs, weighted=options.matching == "max_weight")
    f1 = metrics["f1"]
    threshold = suite.threshold_for("graph", default=1.0)
    passed = f1 >= threshold
    reason = (
        f"F1 {f1:.2f} {'>=' if passed else '<'} {threshold:.2f} (precision "
        f"{metrics['precision']:.2f}, recall {metrics['recall']:.2f})"
    )
    omitted, hallucinated = metrics["omitted"], metrics["hallucinated"]
    if omitted:
        reason += f"; omitted: {', '.join(omitted)}"
    if hallucinated:
        reason += f"; hallucinated: {', '.join(hallucinated)}"
    return StageResult(f1, passed, reason, threshold, metrics=metrics)


def prepare_graph(suite: Suite, rootdir: Path) -> None:
    """Once per suite, at collection: normalise the aliases and import the similarity function
    (CaseFileError when it cannot be imported or is not callable)."""

    options = suite.graph or _NO_OPTIONS
    if options.similarity is None:
        return
    parts = split_spec(options.similarity)
    if parts is None:
        raise CaseFileError(
            f'"graph": "similarity": {options.similarity!r} must read "module:function", e.g. '
            '"myproject.similarity:embedding_cosine"'
        )
    try:
        function = import_spec(*parts, rootdir)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # user code: the suite errors, the run goes on
        raise CaseFileError(
            f'"graph": "similarity": cannot import {options.similarity!r}: '
            f"{type(exc).__name__}: {exc}; check the module path (imported with {rootdir} on "
            "sys.path)"
        ) from None
    if not callable(function):
        raise CaseFileError(
            f'"graph": "similarity": {options.similarity!r} is not callable; point it at a '
            "function(a: str, b: str) -> float in [0, 1]"
        )
    options._similarity_function = function


register(Stage("graph", score_graph, prepare=prepare_graph))
