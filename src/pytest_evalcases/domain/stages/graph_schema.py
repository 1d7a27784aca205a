"""`graph_schema`: does the graph the trace recorded keep to the suite's declared schema (as
Episteme checks a graph store's schema and provenance)?

The graph is read as `python -m pytest_evalcases graph` reads it (domain/graph_elements.py): the
trace's `triples`, or a `graph` of nodes and edges. Each listed node and each edge is an element;
an element conforms when
- a node: each of its types is among `node_types` (when declared; a node without a type then
  does not conform);
- an edge: its relation is one of `relations` (when declared), its subject's and object's types
  (from the nodes the graph lists) meet the relation's `[subject, object]` types, when given;
- either: with `"provenance": "required"`, it names a source; every source it names is one the
  trace retrieved (`"sources": "retrieved"`) or one of the listed `sources`, when given.
Score = the share of elements that conform (threshold 1.0 unless the suite sets one); the reason
names the first offending elements, the metrics list them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.errors import CaseFileError
from ...core.names import clip
from ...core.schema import Case
from ...core.suite_schema import GraphSchemaOptions, Suite
from ..graph_elements import GraphEdge, GraphElements, GraphNode, NoGraph, graph_elements
from .base import Stage, StageResult, skipped
from .registry import register

NAME_CHARS = 60  # of a node name or relation an offence shows
IN_REASON = 3  # offending elements the reason names
MAX_LISTED = 20  # offending elements the metrics list (all are counted)
OFFENCES_SHOWN = 5  # offending elements a failure shows, unless -vv


def prepare_graph_schema(suite: Suite, rootdir: Path) -> None:
    """Once per suite, at collection: the stage checks against a schema the suite declares."""
    if suite.graph_schema is None:
        raise CaseFileError(
            'the graph_schema stage needs the suite\'s "graph_schema" (e.g. {"node_types": '
            '["Person", "Place"], "relations": {"born_in": ["Person", "Place"]}, "provenance": '
            '"required"}): add it, or take graph_schema out of "stages"/"report_only"'
        )


def score_graph_schema(
    case: Case, trace: dict[str, Any], suite: Suite, verdict: Any
) -> StageResult:
    schema = suite.graph_schema
    if schema is None:  # prepare_graph_schema refuses such a suite at collection
        return skipped("no graph_schema in the suite")
    threshold = suite.threshold_for("graph_schema", default=1.0)
    try:
        graph = graph_elements(trace, "trace")
    except NoGraph as exc:
        return StageResult(0.0, False, f"the recorded graph cannot be read: {exc}", threshold)
    if graph is None:
        return StageResult(
            0.0,
            False,
            "the trace holds no graph: give `triples`, or a `graph` of `nodes` and `edges`",
            threshold,
        )
    total = len(graph.nodes) + len(graph.edges)
    if not total:
        return skipped("the recorded graph is empty")
    offences = schema_offences(graph, schema, trace.get("retrieved") or [])
    conforming = total - len(offences)
    score = conforming / total
    metrics = {
        "elements": total,
        "conforming": conforming,
        "violations": offences[:MAX_LISTED],
    }
    if not offences:
        return StageResult(
            score, True, f"all {total} elements keep to the schema", threshold, metrics=metrics
        )
    named = "; ".join(offences[:IN_REASON])
    more = f"; and {len(offences) - IN_REASON} more" if len(offences) > IN_REASON else ""
    op = ">=" if score >= threshold else "<"
    reason = (
        f"{conforming}/{total} elements keep to the schema ({score:.2f} {op} {threshold:.2f}); "
        f"{named}{more}"
    )
    return StageResult(score, score >= threshold, reason, threshold, metrics=metrics)


def schema_offences(
    graph: GraphElements, schema: GraphSchemaOptions, retrieved: Sequence[Any]
) -> list[str]:
    """One line per element that does not conform, in the graph's order (nodes, then edges):
    `edge (Ada, born_in, Paris): object Paris is a City; born_in takes Place`."""
    allowed = _allowed_sources(schema, retrieved)
    types_of = {node.name: node.types for node in graph.nodes}
    offences = []
    for node in graph.nodes:
        problems = _node_problems(node, schema) + _provenance_problems(
            node.sources, schema, allowed
        )
        if problems:
            offences.append(f"node {_short(node.name)}: {', '.join(problems)}")
    for edge in graph.edges:
        problems = _edge_problems(edge, types_of, schema)
        problems += _provenance_problems(edge.sources, schema, allowed)
        if problems:
            triple = ", ".join(_short(part) for part in edge.triple)
            offences.append(f"edge ({triple}): {', '.join(problems)}")
    return offences


def _node_problems(node: GraphNode, schema: GraphSchemaOptions) -> list[str]:
    if schema.node_types is None:
        return []
    if not node.types:
        return ["no type"]
    return [
        f"type {_short(kind)} not declared" for kind in node.types if kind not in schema.node_types
    ]


def _edge_problems(
    edge: GraphEdge, types_of: Mapping[str, tuple[str, ...]], schema: GraphSchemaOptions
) -> list[str]:
    if schema.relations is None:
        return []
    if edge.relation not in schema.relations:
        return [f"relation {_short(edge.relation)} not declared"]
    signature = schema.relations[edge.relation]
    if signature is None:
        return []
    problems = []
    for side, name, wanted in zip(
        ("subject", "object"), (edge.subject, edge.object), signature, strict=True
    ):
        wanted_types = [wanted] if isinstance(wanted, str) else wanted
        types = types_of.get(name, ())
        if not types:
            problems.append(f"{side} {_short(name)} has no type")
        elif not set(types) & set(wanted_types):
            problems.append(
                f"{side} {_short(name)} is a {' and '.join(types)}; {_short(edge.relation)} takes "
                f"{' or '.join(wanted_types)}"
            )
    return problems


def _allowed_sources(schema: GraphSchemaOptions, retrieved: Sequence[Any]) -> set[str] | None:
    if schema.sources == "retrieved":
        return {str(doc) for doc in retrieved}
    return None if schema.sources is None else set(schema.sources)


def _provenance_problems(
    sources: Sequence[str], schema: GraphSchemaOptions, allowed: Collection[str] | None
) -> list[str]:
    if not sources:
        return ["no source"] if schema.provenance == "required" else []
    if allowed is None:
        return []
    unknown = [source for source in sources if source not in allowed]
    if not unknown:
        return []
    where = "retrieved" if schema.sources == "retrieved" else "among the sources"
    return [f"source {', '.join(_short(s) for s in unknown)} not {where}"]


def _short(text: str) -> str:
    return clip(text, NAME_CHARS, ellipsis="…")


def show_graph_schema(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    """A failure shows the offending elements (the first OFFENCES_SHOWN, unless -vv) and the
    graph it read: `offending: edge (Ada, born_in, Paris): object Paris is a City; …`."""
    try:
        graph = graph_elements(trace, "trace")
    except NoGraph:
        return []  # the reason says where the graph cannot be read
    if graph is None or suite.graph_schema is None:
        return []
    offences = schema_offences(graph, suite.graph_schema, trace.get("retrieved") or [])
    shown = offences if whole else offences[:OFFENCES_SHOWN]
    more = len(offences) - len(shown)
    read = f"{graph.where}: {len(graph.nodes)} nodes listed, {len(graph.edges)} edges"
    return [
        ("offending", " | ".join(shown) + (f" | … ({more} more)" if more else "")),
        ("graph", read),
    ]


register(
    Stage("graph_schema", score_graph_schema, prepare=prepare_graph_schema, shows=show_graph_schema)
)
