"""``python -m pytest_evalcases graph RECORDING``: print the graph a recording holds (a case's
recorded `triples`, or a user's ingestion result with nodes and edges), as text or JSON.

Exit codes: 0 printed; 1 the recording holds no graph; 2 a file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.files import RefusedFile, read_bounded
from ..report.graph_view import NoGraph, graph_json, graph_lines, recorded_graph
from ..store.files import CASSETTE_CAP


def add_parser(sub: Any) -> None:
    graph = sub.add_parser(
        "graph",
        help="print the graph a recording holds (its nodes and edges)",
        description=(
            "Print the nodes (with their edge counts) and the edges of the graph a recording "
            "holds: a case cassette's trace `triples` (or a `graph` of nodes and edges), or a "
            "user's ingestion recording (<cassettes>/<suite>/users/<user>.json) whose result "
            "holds `triples`, `graph` or `nodes`/`edges`."
        ),
    )
    graph.add_argument("recording", type=Path, metavar="RECORDING", help="a recording file")
    graph.add_argument("--json", action="store_true", help="print JSON instead of text")
    graph.add_argument("--node", metavar="NAME", help="only the edges that touch this node")
    graph.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path: Path = args.recording
    try:
        doc = json.loads(read_bounded(path, CASSETTE_CAP))
    except FileNotFoundError:
        return _error(f"{path}: no such file; give a recording (a cassette or users/<id>.json)", 2)
    except RefusedFile as exc:
        return _error(f"{path} {exc.reason}; give a recording file", 2)
    except (OSError, ValueError) as exc:
        return _error(f"{path}: cannot read it as JSON ({exc})", 2)
    if not isinstance(doc, dict):
        return _error(f"{path}: not a recording (a JSON object)", 2)
    try:
        graph = recorded_graph(doc)
    except NoGraph as exc:
        return _error(f"{path} {exc}", 1)
    if args.node is not None:
        graph = graph.around(args.node)
    title = _title(doc, path)
    if args.json:
        print(json.dumps(graph_json(graph, title), indent=2, ensure_ascii=False))
    else:
        print("\n".join(graph_lines(graph, title)))
    return 0


def _title(doc: dict[str, Any], path: Path) -> str:
    suite = doc.get("suite")
    if isinstance(doc.get("user"), str):
        return f"user {doc['user']} of suite {suite}"
    if isinstance(doc.get("case"), str):
        return f"{suite}::{doc['case']}"
    return str(path)


def _error(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
