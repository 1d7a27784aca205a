"""Gaps the feature audit against the seed systems found (docs/seeds.md), each with its fix.

Zep's graph API returns an edge as `{"uuid", "source_node_uuid", "target_node_uuid", "name",
"fact", "episodes"}` and a node as `{"uuid", "name", "labels", "summary"}`. A system that returns
what Zep gave it was refused by `graph` and failed `graph_schema` ("has none of subject, source,
from, head"); both now read Zep's shape, and `graph` prints each edge's fact, as Zep's
`zep_graph_inspect.py` does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.graph_elements import graph_elements
from pytest_evalcases.domain.stages.registry import STAGES, prepare_stages

# What Zep's graph.node / graph.edge listings return for one user (the fields Zep's inspector
# prints), trimmed to two nodes and two edges.
ZEP_GRAPH: dict[str, Any] = {
    "nodes": [
        {"uuid": "4f1c", "name": "Bob", "labels": ["Entity", "Person"], "summary": "a cellist"},
        {"uuid": "9a2e", "name": "cello", "labels": ["Entity", "Instrument"]},
    ],
    "edges": [
        {
            "uuid": "e-1",
            "source_node_uuid": "4f1c",
            "target_node_uuid": "9a2e",
            "name": "PLAYS",
            "fact": "Bob plays the cello in the city orchestra",
            "episodes": ["ep-7"],
        },
        {
            "uuid": "e-2",
            "source_node_uuid": "4f1c",
            "target_node_uuid": "4f1c",
            "name": "IS",
            "fact": "Bob is a cellist",
            "episodes": ["ep-8"],
        },
    ],
}


def test_zeps_edges_are_read_with_their_nodes_names_facts_and_episodes() -> None:
    graph = graph_elements({"graph": ZEP_GRAPH}, "result")
    assert graph is not None
    edge = graph.edges[0]
    assert edge.triple == ("Bob", "PLAYS", "cello")
    assert edge.fact == "Bob plays the cello in the city orchestra"
    assert edge.sources == ("ep-7",)
    assert [node.types for node in graph.nodes] == [("Entity", "Person"), ("Entity", "Instrument")]


def test_graph_prints_a_zep_users_graph_with_each_edges_fact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "bob.json"
    recording.write_text(json.dumps({"suite": "zs", "user": "bob", "result": {"graph": ZEP_GRAPH}}))
    assert main(["graph", str(recording)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "user bob of suite zs (result.graph): 2 nodes, 2 edges",
        "nodes:",
        "  Bob [Entity, Person] (3 edges)",
        "  cello [Entity, Instrument] (1 edge)",
        "edges:",
        "  Bob --PLAYS--> cello  (Bob plays the cello in the city orchestra)",
        "  Bob --IS--> Bob  (Bob is a cellist)",
    ]
    # --node keeps each kept edge's own fact; --json gives it as "fact"
    assert main(["graph", str(recording), "--node", "cello", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["edges"] == [
        {
            "subject": "Bob",
            "relation": "PLAYS",
            "object": "cello",
            "fact": "Bob plays the cello in the city orchestra",
        }
    ]


def test_an_edge_without_a_fact_prints_and_exports_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "case.json"
    recording.write_text(
        json.dumps({"suite": "s", "case": "c", "trace": {"triples": [["a", "r", "b"]]}})
    )
    assert main(["graph", str(recording), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["edges"] == [
        {"subject": "a", "relation": "r", "object": "b"}
    ]


def test_graph_schema_checks_a_zep_graph_its_types_and_its_episodes_as_provenance() -> None:
    suite = Suite.model_validate(
        {
            "name": "s",
            "stages": ["graph_schema"],
            "cases": [],
            "graph_schema": {
                "node_types": ["Entity", "Person", "Instrument"],
                "relations": {"PLAYS": ["Person", "Instrument"]},
                "provenance": "required",
                "sources": ["ep-7", "ep-8"],
            },
        }
    )
    prepare_stages(suite, suite.stages, Path("."))
    case = validate_case({"id": "c", "input": "q"})
    result = STAGES["graph_schema"].score(case, {"answer": "", "graph": ZEP_GRAPH}, suite, None)
    # the nodes have no provenance of their own (Zep lists episodes on edges): 2 nodes fail
    # "no source"; PLAYS conforms; IS is not a declared relation
    assert result.score == pytest.approx(1 / 4)
    assert "relation IS not declared" in result.reason
    assert "node Bob: no source" in result.reason


ZEP_FOLDER = Path(__file__).resolve().parents[1] / "data" / "zep"


def test_an_import_of_one_user_says_one_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ids.json").write_text("[0]")
    code = main(["import", "zep", str(ZEP_FOLDER), "-o", "cases/zep.json", "--ids", "ids.json"])
    assert code == 0
    assert "imported 1 of 6 cases, 1 user from " in capsys.readouterr().out


DOCS = Path(__file__).resolve().parents[2] / "docs"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'."""
    kept = "".join(ch for ch in heading.strip().lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def test_every_link_of_the_seeds_page_names_a_file_and_a_heading_it_has() -> None:
    page = (DOCS / "seeds.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+\.md)(?:#([^)\s]+))?\)", page)
    assert len(links) >= 15
    for file, anchor in links:
        target = DOCS / file
        assert target.is_file(), file
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, f"{file}#{anchor}"


# Episteme checks the graph store an ingestion built; the graph_schema stage reads a case's
# trace only, so `graph --schema` checks a user's ingestion recording (or a cassette) apart.
ZEP_SCHEMA = {
    "node_types": ["Entity", "Person", "Instrument"],
    "relations": {"PLAYS": ["Person", "Instrument"], "IS": None},
    "provenance": "optional",
    "sources": ["ep-7", "ep-8"],
}


def _bob(tmp_path: Path) -> Path:
    recording = tmp_path / "bob.json"
    recording.write_text(json.dumps({"suite": "zs", "user": "bob", "result": {"graph": ZEP_GRAPH}}))
    return recording


def _suite_file(tmp_path: Path, schema: dict[str, Any] | None) -> Path:
    suite = {"name": "zs", "cases": []} | ({"graph_schema": schema} if schema else {})
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    return path


def test_graph_schema_checks_a_users_ingested_graph_as_episteme_checks_its_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _bob(tmp_path)
    conforming = _suite_file(tmp_path, ZEP_SCHEMA)
    assert main(["graph", str(recording), "--schema", str(conforming), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "recording": "user bob of suite zs",
        "where": "result.graph",
        "schema": str(conforming),
        "elements": 4,
        "conforming": 4,
        "violations": [],
    }
    strict = _suite_file(
        tmp_path,
        {**ZEP_SCHEMA, "relations": {"PLAYS": ["Person", "Instrument"]}, "sources": ["ep-7"]},
    )
    assert main(["graph", str(recording), "--schema", str(strict)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"user bob of suite zs (result.graph): 3/4 elements keep to the graph_schema of {strict}",
        "  edge (Bob, IS, Bob): relation IS not declared, source ep-8 not among the sources",
    ]


def test_graph_schema_of_an_ingestion_refuses_sources_it_cannot_have_and_a_bad_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _bob(tmp_path)
    retrieved = _suite_file(tmp_path, {**ZEP_SCHEMA, "sources": "retrieved"})
    assert main(["graph", str(recording), "--schema", str(retrieved)]) == 2
    assert "an ingestion retrieves nothing" in capsys.readouterr().err
    assert main(["graph", str(recording), "--schema", str(_suite_file(tmp_path, None))]) == 2
    assert 'the suite declares no "graph_schema"' in capsys.readouterr().err
    wrong = _suite_file(tmp_path, {"node_types": ["A"], "relations": {"r": ["A", "B"]}})
    assert main(["graph", str(recording), "--schema", str(wrong)]) == 2
    assert "graph_schema is not valid: " in capsys.readouterr().err
    assert main(["graph", str(recording), "--schema", str(tmp_path / "none.json")]) == 2
    assert "none.json: no such file" in capsys.readouterr().err
