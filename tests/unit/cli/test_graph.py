"""`python -m pytest_evalcases graph RECORDING`: a recorded graph's nodes and edges, as Zep's
graph inspector prints them; from a case's recorded triples (the knowledge-graph example's real
cassette) and from a user's ingestion result of nodes and edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.report.graph_view import NoGraph, recorded_graph

CURIE = (
    Path(__file__).resolve().parents[3]
    / "examples"
    / "knowledge-graph"
    / "cassettes"
    / "people"
    / "curie-life.json"
)

USER_RECORDING = {
    "suite": "memory",
    "user": "u-ana",
    "result": {
        "graph": {
            "nodes": [
                {"uuid": "n1", "name": "Ana", "labels": ["Person"]},
                {"uuid": "n2", "name": "Miso", "labels": ["Cat"]},
                {"uuid": "n3", "name": "Lisbon", "type": "City"},
                {"uuid": "n4", "name": "Porto"},
            ],
            "edges": [
                {"source": "n1", "target": "n2", "type": "ADOPTED"},
                {"source": "n1", "target": "n3", "type": "LIVES_IN"},
            ],
        }
    },
}


def test_a_cases_recorded_triples_print_as_nodes_then_edges(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["graph", str(CURIE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "people::curie-life (trace.triples): 7 nodes, 5 edges"
    assert lines[1:3] == ["nodes:", "  Marie Curie (4 edges)"]
    assert "  Marie Curie --spouse--> Pierre Curie" in lines
    assert lines.index("edges:") == 9 and len(lines) == 15


def test_a_users_ingested_graph_names_nodes_by_name_with_their_types_and_lone_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "u-ana.json"
    path.write_text(json.dumps(USER_RECORDING))
    assert main(["graph", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "user u-ana of suite memory (result.graph): 4 nodes, 2 edges",
        "nodes:",
        "  Ana [Person] (2 edges)",
        "  Lisbon [City] (1 edge)",
        "  Miso [Cat] (1 edge)",
        "  Porto (0 edges)",
        "edges:",
        "  Ana --ADOPTED--> Miso",
        "  Ana --LIVES_IN--> Lisbon",
    ]
    assert main(["graph", str(path), "--json", "--node", "Miso"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["edges"] == [{"subject": "Ana", "relation": "ADOPTED", "object": "Miso"}]
    assert shown["nodes"] == [
        {"name": "Ana", "type": None, "edges": 1},
        {"name": "Miso", "type": "Cat", "edges": 1},
    ]


def test_a_recording_without_a_graph_or_a_bad_edge_is_an_error_saying_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"suite": "s", "case": "c", "trace": {"answer": "hi"}}))
    assert main(["graph", str(plain)]) == 1
    assert "holds no graph: looked for `triples`, `graph` and `nodes`/`edges`" in (
        capsys.readouterr().err
    )
    with pytest.raises(NoGraph, match=r"trace.triples\[1\] is not an edge"):
        recorded_graph({"trace": {"triples": [["a", "b", "c"], "a b c"]}})
    assert main(["graph", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
