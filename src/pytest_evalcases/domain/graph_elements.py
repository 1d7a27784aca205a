"""A recorded graph's nodes and edges, read from what a system returned: a case's trace (its
`triples`, as the graph stage reads them, or a `graph` of nodes and edges) or a user's ingestion
result (the same fields). One reading for `python -m pytest_evalcases graph`
(report/graph_view.py) and the `graph_schema` stage.

Edges may be `[subject, relation, object]` lists or objects with subject/relation/object,
source/target or Zep's source_node_uuid/target_node_uuid, and relation/type/label/name (Zep's
`fact`, the edge's sentence, is kept for the printout); nodes objects with an id or a name
(and optionally a type, or `labels`) or plain names. Each object element may name where it
came from (its provenance): `provenance`, `sources`, `source_ids`, `source_id`,
`document_id`, `doc_id` or `episodes` (Zep's), a string or a list; a node's `source` too, and
an edge's when its subject is given by another field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_SUBJECT = ("subject", "source", "from", "head")
_RELATION = ("relation", "type", "label", "predicate", "name")
_OBJECT = ("object", "target", "to", "tail")
# Zep's edge names its nodes by these (the graph API's EntityEdge); tried after the keys above
_ZEP_SUBJECT, _ZEP_OBJECT = ("source_node_uuid",), ("target_node_uuid",)
_NODE_ID = ("id", "uuid", "name", "label")
PROVENANCE_FIELDS = (
    "provenance",
    "sources",
    "source_ids",
    "source_id",
    "document_id",
    "doc_id",
    "episodes",
)


class NoGraph(ValueError):
    """What was given holds no graph, or an element of it cannot be read: the message says where."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    name: str
    types: tuple[str, ...]  # its `type`, or each of its `labels`; () when not given
    sources: tuple[str, ...]  # its provenance; () when not given
    where: str  # e.g. "trace.graph.nodes[2]"


@dataclass(frozen=True, slots=True)
class GraphEdge:
    subject: str
    relation: str
    object: str
    sources: tuple[str, ...]
    where: str
    fact: str | None = None  # Zep's `fact`: the sentence the edge was drawn from

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.subject, self.relation, self.object)


@dataclass(frozen=True, slots=True)
class GraphElements:
    where: str  # e.g. "trace.triples"
    nodes: list[GraphNode]  # the nodes the graph lists (triples list none)
    edges: list[GraphEdge]


def graph_elements(part: Mapping[str, Any], where: str) -> GraphElements | None:
    """The graph `part` (a trace, a result) holds, or None when it holds none; NoGraph when an
    element cannot be read."""
    if isinstance(part.get("triples"), list):
        at = f"{where}.triples"
        return GraphElements(
            at, [], [_edge(e, f"{at}[{n}]") for n, e in enumerate(part["triples"])]
        )
    graph = part.get("graph") if isinstance(part.get("graph"), Mapping) else part
    if isinstance(graph.get("edges"), list) or isinstance(graph.get("nodes"), list):
        return _nodes_and_edges(graph, f"{where}.graph" if graph is not part else where)
    return None


def _nodes_and_edges(graph: Mapping[str, Any], where: str) -> GraphElements:
    names: dict[str, str] = {}  # a node's id -> the name it is shown by
    nodes: list[GraphNode] = []
    for index, raw in enumerate(graph.get("nodes") or []):
        at = f"{where}.nodes[{index}]"
        if isinstance(raw, Mapping):
            ident = _first(raw, _NODE_ID, at)
            name = str(raw.get("name") or raw.get("label") or ident)
            kind = raw.get("type") or raw.get("labels")
            types = (
                tuple(map(str, kind)) if isinstance(kind, list) else (str(kind),) if kind else ()
            )
            nodes.append(GraphNode(name, types, _sources(raw, ("source",)), at))
        else:
            name = ident = str(raw)
            nodes.append(GraphNode(name, (), (), at))
        names[ident] = name
    edges = [
        _edge(raw, f"{where}.edges[{index}]", names)
        for index, raw in enumerate(graph.get("edges") or [])
    ]
    return GraphElements(where, nodes, edges)


def _edge(raw: Any, where: str, names: Mapping[str, str] | None = None) -> GraphEdge:
    names = names or {}
    sources: tuple[str, ...] = ()
    fact: str | None = None
    if isinstance(raw, list | tuple) and len(raw) == 3:
        subject, relation, obj = (str(part) for part in raw)
    elif isinstance(raw, Mapping):
        subject = _first(raw, _SUBJECT, where, _ZEP_SUBJECT)
        relation = _first(raw, _RELATION, where)
        obj = _first(raw, _OBJECT, where, _ZEP_OBJECT)
        # `source` is the subject of a source/target edge, else where the edge came from
        own_subject = any(
            raw.get(key) not in (None, "")
            for key in ("subject", "source_node_uuid", "from", "head")
        )
        sources = _sources(raw, ("source",) if own_subject else ())
        fact = str(raw["fact"]) if raw.get("fact") not in (None, "") else None
    else:
        raise NoGraph(
            f"{where} is not an edge: give [subject, relation, object] or an object with "
            "subject/relation/object (or source/target and relation)"
        )
    return GraphEdge(
        names.get(subject, subject), relation, names.get(obj, obj), sources, where, fact
    )


def _first(
    raw: Mapping[str, Any], keys: tuple[str, ...], where: str, also: tuple[str, ...] = ()
) -> str:
    """The first of `keys` (then of `also`, Zep's names, left out of the message) given."""
    for key in (*keys, *also):
        value = raw.get(key)
        if value is not None and value != "":
            return str(value)
    raise NoGraph(f"{where} has none of {', '.join(keys)}")


def _sources(raw: Mapping[str, Any], also: tuple[str, ...]) -> tuple[str, ...]:
    """The ids an element names as its provenance (the first provenance field given)."""
    for key in (*PROVENANCE_FIELDS, *also):
        value = raw.get(key)
        if value in (None, "", []):
            continue
        values = value if isinstance(value, list) else [value]
        return tuple(str(v) for v in values if v not in (None, ""))
    return ()
