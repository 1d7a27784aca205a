"""A recorded graph as people read it (`python -m pytest_evalcases graph`, as Zep's graph
inspector prints a user's graph): its nodes with their edge counts, then every edge.

Pure functions over a recording's JSON: a case cassette's `trace` (its `triples`, as the graph
stage reads them, or a `graph` of nodes and edges) or a user's ingestion recording's `result`
(the same fields), read by domain/graph_elements.py (which says what shapes it takes). Nodes
only edges name are listed too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.graph_elements import GraphElements, NoGraph, graph_elements

# Where a recording keeps what its system returned: a case's trace, an ingestion's result.
_HOLDERS = ("trace", "result")

__all__ = [
    "Graph",
    "NoGraph",
    "graph_json",
    "graph_lines",
    "recorded_elements",
    "recorded_graph",
]


@dataclass(slots=True)
class Graph:
    where: str  # e.g. "trace.triples"
    edges: list[tuple[str, str, str]]
    types: dict[str, str] = field(default_factory=dict)  # node -> its type, where given
    lone: list[str] = field(default_factory=list)  # nodes no edge names
    facts: dict[int, str] = field(default_factory=dict)  # an edge's index -> its Zep `fact`

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
        kept = [i for i, edge in enumerate(self.edges) if node in (edge[0], edge[2])]
        return Graph(
            self.where,
            [self.edges[i] for i in kept],
            {n: t for n, t in self.types.items() if n == node},
            facts={new: self.facts[i] for new, i in enumerate(kept) if i in self.facts},
        )


def recorded_graph(doc: Mapping[str, Any]) -> Graph:
    """The graph a recording holds; NoGraph when it holds none."""
    return _viewed(recorded_elements(doc))


def recorded_elements(doc: Mapping[str, Any]) -> GraphElements:
    """The nodes and edges a recording holds, as the `graph_schema` stage reads them; NoGraph
    when it holds none."""
    for holder in _HOLDERS:
        part = doc.get(holder)
        if not isinstance(part, Mapping):
            continue
        elements = graph_elements(part, holder)
        if elements is not None:
            return elements
    raise NoGraph(
        "holds no graph: looked for `triples`, `graph` and `nodes`/`edges` in its "
        + " and ".join(f"`{holder}`" for holder in _HOLDERS)
    )


def _viewed(elements: GraphElements) -> Graph:
    edges = [edge.triple for edge in elements.edges]
    types: dict[str, str] = {}
    for node in elements.nodes:
        if node.types:
            types[node.name] = ", ".join(node.types)
        else:
            types.setdefault(node.name, "")
    named = {part for subject, _, obj in edges for part in (subject, obj)}
    lone = [name for name in types if name not in named]
    facts = {i: edge.fact for i, edge in enumerate(elements.edges) if edge.fact}
    return Graph(elements.where, edges, {n: t for n, t in types.items() if t}, lone, facts)


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
    for index, (subject, relation, obj) in enumerate(graph.edges):
        fact = f"  ({graph.facts[index]})" if index in graph.facts else ""
        lines.append(f"  {subject} --{relation}--> {obj}{fact}")
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
            | ({"fact": graph.facts[index]} if index in graph.facts else {})
            for index, (subject, relation, obj) in enumerate(graph.edges)
        ],
    }
