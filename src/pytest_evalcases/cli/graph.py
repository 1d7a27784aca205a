"""``python -m pytest_evalcases graph RECORDING``: print the graph a recording holds (a case's
recorded `triples`, or a user's ingestion result with nodes and edges), as text or JSON; with
`--schema FILE`, check it against a declared `graph_schema` instead (as Episteme checks a graph
store: the graph a user's ingestion built, which the `graph_schema` stage, reading a case's
trace, does not see).

Exit codes: 0 printed (or every element keeps to the schema); 1 the recording holds no graph
(or some element does not keep to the schema); 2 a file that cannot be read, or a bad schema.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.files import RefusedFile, read_bounded
from ..core.suite_schema import GraphSchemaOptions
from ..domain.graph_elements import GraphElements
from ..domain.stages.graph_schema import schema_offences
from ..report.graph_view import (
    NoGraph,
    graph_json,
    graph_lines,
    recorded_elements,
    recorded_graph,
)
from ..store.files import CASE_FILE_CAP, CASSETTE_CAP


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
    graph.add_argument(
        "--schema",
        type=Path,
        metavar="FILE",
        help=(
            'check the graph against the "graph_schema" of FILE (a suite file, or the schema '
            "itself) instead of printing it: exit 1 when an element does not keep to it"
        ),
    )
    graph.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path: Path = args.recording
    doc = _read_json(path, CASSETTE_CAP, "a recording (a cassette or users/<id>.json)")
    if isinstance(doc, _Failed):
        return doc.code
    if not isinstance(doc, dict):
        return _error(f"{path}: not a recording (a JSON object)", 2)
    if args.schema is not None:
        return _check(doc, path, args.schema, args.json)
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


def _check(doc: dict[str, Any], path: Path, schema_file: Path, as_json: bool) -> int:
    """The recording's graph against a declared schema: each element that does not keep to it."""
    schema = _schema(schema_file)
    if isinstance(schema, int):
        return schema
    try:
        elements: GraphElements = recorded_elements(doc)
    except NoGraph as exc:
        return _error(f"{path} {exc}", 1)
    trace = doc.get("trace")
    if schema.sources == "retrieved" and not isinstance(trace, dict):
        return _error(
            f'{schema_file}: "sources": "retrieved" checks a case\'s provenance against what its '
            f"trace retrieved, and {path} is no case's recording (an ingestion retrieves "
            'nothing); list the allowed sources ("sources": ["doc-1", ...]) or leave "sources" '
            "out to check this recording",
            2,
        )
    retrieved = (trace.get("retrieved") if isinstance(trace, dict) else None) or []
    offences = schema_offences(elements, schema, retrieved)
    total = len(elements.nodes) + len(elements.edges)
    title = _title(doc, path)
    if as_json:
        report = {
            "recording": title,
            "where": elements.where,
            "schema": str(schema_file),
            "elements": total,
            "conforming": total - len(offences),
            "violations": offences,
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(
            f"{title} ({elements.where}): {total - len(offences)}/{total} elements keep to the "
            f"graph_schema of {schema_file}"
        )
        for offence in offences:
            print(f"  {offence}")
    return 1 if offences else 0


def _schema(path: Path) -> GraphSchemaOptions | int:
    """The `graph_schema` FILE declares (a suite's field, or the whole file), or an exit code."""
    doc = _read_json(path, CASE_FILE_CAP, "the suite file that declares graph_schema")
    if isinstance(doc, _Failed):
        return doc.code
    declared = doc.get("graph_schema", doc) if isinstance(doc, dict) else doc
    if isinstance(doc, dict) and "graph_schema" not in doc and "name" in doc:
        return _error(
            f'{path}: the suite declares no "graph_schema"; add one (docs/case-files.md)', 2
        )
    try:
        return GraphSchemaOptions.model_validate(declared)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'graph_schema'}: {error['msg']}"
            for error in exc.errors()
        )
        return _error(f"{path}: graph_schema is not valid: {problems}", 2)


@dataclass(frozen=True, slots=True)
class _Failed:
    code: int  # the exit code; the error is printed


def _read_json(path: Path, cap: int, wanted: str) -> Any:
    """The JSON of `path`, or _Failed once the error (naming the file) is printed."""
    try:
        return json.loads(read_bounded(path, cap))
    except FileNotFoundError:
        return _Failed(_error(f"{path}: no such file; give {wanted}", 2))
    except RefusedFile as exc:
        return _Failed(_error(f"{path} {exc.reason}; give {wanted}", 2))
    except (OSError, ValueError) as exc:
        return _Failed(_error(f"{path}: cannot read it as JSON ({exc})", 2))


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
