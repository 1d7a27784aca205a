"""A recorded graph as people read it (`python -m pytest_evalcases graph`, as Zep's graph
inspector prints a user's graph): its nodes with their edge counts, then every edge.

Pure functions over a recording's JSON: a case cassette's `trace` (its `triples`, as the graph
stage reads them, or a `graph` of nodes and edges) or a user's ingestion recording's `result`
(the same fields). Edges may be `[subject, relation, object]` lists or objects with
subject/relation/object or source/target and relation/type/label; nodes objects with an id or a
name (and optionally a type) or plain names. Nodes only edges name are listed too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Where a recording keeps what its system returned: a case's trace, an ingestion's result.
_HOLDERS = ("trace", "result")
_SUBJECT = ("subject", "source", "from", "head")
_RELATION = ("relation", "type", "label", "predicate", "name")
_OBJECT = ("object", "target", "to", "tail")


class NoGraph(ValueError):
    """The recording holds no graph: the message says where we looked."""


@dataclass(slots=True)
class Graph:
    where: str  # e.g. "trace.triples"
    edges: list[tuple[str, str, str]]
    types: dict[str, str] = field(default_factory=dict)  # node -> its type, where given
    lone: list[str] = field(default_factory=list)  # nodes no edge names

    def nodes(self) -> list[tuple[str, int]]:
        """Each node with its number of edges, most connected first, then by name."""
        degree: Counter[str] = Counter()
        for subject, _, obj in self.edges:
            degree[subject] += 1
            degree[obj] += 1
        for node in [*self.types, *self.lone]:
            degree.setdefault(node, 0)
        return sorted(degree.items(), key=lambda item: (-item[1], item[0]))

    def around(self, node: str) -> Graph:
        """The edges that touch `node` (its neighbourhood)."""
        edges = [edge for edge in self.edges if node in (edge[0], edge[2])]
        return Graph(self.where, edges, {n: t for n, t in self.types.items() if n == node})


def recorded_graph(doc: Mapping[str, Any]) -> Graph:
    """The graph a recording holds; NoGraph when it holds none."""
    for holder in _HOLDERS:
        part = doc.get(holder)
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("triples"), list):
            where = f"{holder}.triples"
            edges = [_edge(edge, f"{where}[{n}]") for n, edge in enumerate(part["triples"])]
            return Graph(where, edges)
        graph = part.get("graph") if isinstance(part.get("graph"), Mapping) else part
        if isinstance(graph.get("edges"), list) or isinstance(graph.get("nodes"), list):
            where = f"{holder}.graph" if graph is not part else holder
            return _nodes_and_edges(graph, where)
    raise NoGraph(
        "holds no graph: looked for `triples`, `graph` and `nodes`/`edges` in its "
        + " and ".join(f"`{holder}`" for holder in _HOLDERS)
    )


def _nodes_and_edges(graph: Mapping[str, Any], where: str) -> Graph:
    names: dict[str, str] = {}  # a node's id -> the name it is shown by
    types: dict[str, str] = {}
    for index, node in enumerate(graph.get("nodes") or []):
        if isinstance(node, Mapping):
            ident = _first(node, ("id", "uuid", "name", "label"), f"{where}.nodes[{index}]")
            name = str(node.get("name") or node.get("label") or ident)
            names[ident] = name
            kind = node.get("type") or node.get("labels")
            if kind:
                types[name] = ", ".join(kind) if isinstance(kind, list) else str(kind)
            else:
                types.setdefault(name, "")
        else:
            names[str(node)] = str(node)
            types.setdefault(str(node), "")
    edges = [
        _edge(edge, f"{where}.edges[{index}]", names)
        for index, edge in enumerate(graph.get("edges") or [])
    ]
    named = {part for subject, _, obj in edges for part in (subject, obj)}
    lone = [name for name in types if name not in named]
    return Graph(where, edges, {n: t for n, t in types.items() if t}, lone)


def _edge(raw: Any, where: str, names: Mapping[str, str] | None = None) -> tuple[str, str, str]:
    names = names or {}
    if isinstance(raw, list | tuple) and len(raw) == 3:
        subject, relation, obj = (str(part) for part in raw)
    elif isinstance(raw, Mapping):
        subject = _first(raw, _SUBJECT, where)
        relation = _first(raw, _RELATION, where)
        obj = _first(raw, _OBJECT, where)
    else:
        raise NoGraph(
            f"{where} is not an edge: give [subject, relation, object] or an object with "
            "subject/relation/object (or source/target and relation)"
        )
    return names.get(subject, subject), relation, names.get(obj, obj)


def _first(raw: Mapping[str, Any], keys: tuple[str, ...], where: str) -> str:
    for key in keys:
        value = raw.get(key)
        if value is not None and value != "":
            return str(value)
    raise NoGraph(f"{where} has none of {', '.join(keys)}")


def graph_lines(graph: Graph, title: str) -> list[str]:
    """The text view: a heading, the nodes with their edge counts, then the edges."""
    nodes = graph.nodes()
    lines = [
        f"{title} ({graph.where}): {len(nodes)} node{'s' * (len(nodes) != 1)}, "
        f"{len(graph.edges)} edge{'s' * (len(graph.edges) != 1)}",
        "nodes:",
    ]
    for node, degree in nodes:
        kind = f" [{graph.types[node]}]" if graph.types.get(node) else ""
        lines.append(f"  {node}{kind} ({degree} edge{'s' * (degree != 1)})")
    lines.append("edges:")
    lines += [f"  {subject} --{relation}--> {obj}" for subject, relation, obj in graph.edges]
    return lines


def graph_json(graph: Graph, title: str) -> dict[str, Any]:
    return {
        "recording": title,
        "where": graph.where,
        "nodes": [
            {"name": node, "type": graph.types.get(node) or None, "edges": degree}
            for node, degree in graph.nodes()
        ],
        "edges": [
            {"subject": subject, "relation": relation, "object": obj}
            for subject, relation, obj in graph.edges
        ],
    }
