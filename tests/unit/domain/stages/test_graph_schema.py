"""The `graph_schema` stage (Episteme's schema and provenance check) against hand-worked figures:
a recorded graph's node types, relations, each relation's subject/object types and each
element's provenance, against the suite's declared schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import run_pytest_env_in_process

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES, prepare_stages

SCHEMA = {
    "node_types": ["Person", "Place", "Prize"],
    "relations": {"born_in": ["Person", "Place"], "won": ["Person", "Prize"], "knows": None},
    "provenance": "required",
    "sources": "retrieved",
}


def suite(schema: dict[str, Any] | None = SCHEMA, **fields: Any) -> Suite:
    doc: dict[str, Any] = {"name": "s", "stages": ["graph_schema"], "cases": [], **fields}
    if schema is not None:
        doc["graph_schema"] = schema
    result = Suite.model_validate(doc)
    prepare_stages(result, result.stages + result.report_only, Path("."))
    return result


def score(trace: dict[str, Any], the_suite: Suite | None = None):
    case = validate_case({"id": "c", "input": "q"})
    return STAGES["graph_schema"].score(case, trace, the_suite or suite(), None)


NODES = [
    {"id": "n1", "name": "Marie Curie", "type": "Person", "source": "curie-bio"},
    {"id": "n2", "name": "Warsaw", "type": "Place", "source": "curie-bio"},
    {"id": "n3", "name": "Nobel Prize", "type": "Prize", "source": "curie-bio"},
]
EDGES = [
    {"source": "n1", "target": "n2", "relation": "born_in", "provenance": "curie-bio"},
    {"source": "n1", "target": "n3", "relation": "won", "provenance": ["curie-bio"]},
]


def test_a_graph_that_keeps_to_the_schema_scores_one() -> None:
    trace = {"graph": {"nodes": NODES, "edges": EDGES}, "retrieved": ["curie-bio"]}

    result = score(trace)

    assert (result.score, result.passed) == (1.0, True)
    assert result.reason == "all 5 elements keep to the schema"
    assert result.metrics == {"elements": 5, "conforming": 5, "violations": []}


def test_each_kind_of_offence_is_named_and_the_score_is_the_share_that_conforms() -> None:
    """7 elements (4 nodes, 3 edges); 4 offend: a node of an undeclared type, a node with no
    source, an edge whose object has the wrong type, an edge of an undeclared relation whose
    source was not retrieved. 3/7 conform."""
    nodes = [
        *NODES,  # conform
        {"id": "n4", "name": "Paris", "type": "City", "source": "curie-bio"},  # type
    ]
    nodes[1] = {"id": "n2", "name": "Warsaw", "type": "Place"}  # no source
    edges = [
        EDGES[1],  # conforms
        {"source": "n1", "target": "n4", "relation": "born_in", "provenance": "curie-bio"},
        {"subject": "n1", "relation": "married", "object": "n2", "source": "web"},
    ]
    trace = {"graph": {"nodes": nodes, "edges": edges}, "retrieved": ["curie-bio"]}

    result = score(trace)

    assert result.score == pytest.approx(3 / 7)
    assert result.passed is False
    assert result.metrics["violations"] == [
        "node Warsaw: no source",
        "node Paris: type City not declared",
        "edge (Marie Curie, born_in, Paris): object Paris is a City; born_in takes Place",
        "edge (Marie Curie, married, Warsaw): relation married not declared, "
        "source web not retrieved",
    ]
    assert result.reason == (
        "3/7 elements keep to the schema (0.43 < 1.00); node Warsaw: no source; "
        "node Paris: type City not declared; edge (Marie Curie, born_in, Paris): object Paris "
        "is a City; born_in takes Place; and 1 more"
    )


def test_a_failure_shows_the_offending_elements_and_the_graph_it_read() -> None:
    schema = {"relations": {"r": None}}
    trace = {"triples": [["a", f"x{n}", "b"] for n in range(7)]}
    case = validate_case({"id": "c", "input": "q"})

    short = STAGES["graph_schema"].shows(case, trace, suite(schema), False)
    whole = STAGES["graph_schema"].shows(case, trace, suite(schema), True)

    assert short == [
        (
            "offending",
            " | ".join(f"edge (a, x{n}, b): relation x{n} not declared" for n in range(5))
            + " | … (2 more)",
        ),
        ("graph", "trace.triples: 0 nodes listed, 7 edges"),
    ]
    assert whole[0][1].endswith("edge (a, x6, b): relation x6 not declared")


def test_triples_carry_no_types_so_only_relations_and_provenance_are_checked() -> None:
    """The graph stage's `triples`: a signature cannot be met by an untyped node, a relation
    declared with null can; list triples name no source (provenance left optional here)."""
    schema = {"relations": {"born_in": ["Person", "Place"], "knows": None}}
    trace = {"triples": [["Ada", "knows", "Babbage"], ["Ada", "born_in", "London"]]}

    result = score(trace, suite(schema))

    assert result.score == 0.5
    assert result.metrics["violations"] == [
        "edge (Ada, born_in, London): subject Ada has no type, object London has no type"
    ]


def test_a_listed_set_of_sources_and_zeps_episodes() -> None:
    schema = {"provenance": "required", "sources": ["doc-1", "doc-2"]}
    edges = [
        {"subject": "A", "relation": "r", "object": "B", "episodes": ["doc-1", "doc-2"]},
        {"subject": "A", "relation": "r", "object": "C", "episodes": ["doc-1", "doc-9"]},
        {"subject": "A", "relation": "r", "object": "D"},
    ]

    result = score({"graph": {"edges": edges}}, suite(schema))

    assert result.score == pytest.approx(1 / 3)
    assert result.metrics["violations"] == [
        "edge (A, r, C): source doc-9 not among the sources",
        "edge (A, r, D): no source",
    ]


def test_a_node_with_several_labels_needs_each_declared() -> None:
    schema = {"node_types": ["Person"]}
    nodes = [{"name": "Ada", "labels": ["Entity", "Person"]}, {"name": "Bob", "labels": ["Person"]}]

    result = score({"graph": {"nodes": nodes}}, suite(schema))

    assert result.score == 0.5
    assert result.metrics["violations"] == ["node Ada: type Entity not declared"]


def test_a_threshold_lets_a_share_pass() -> None:
    schema = {"relations": {"r": None}}
    trace = {"triples": [["a", "r", "b"], ["a", "r", "c"], ["a", "r", "d"], ["a", "x", "e"]]}

    result = score(trace, suite(schema, thresholds={"graph_schema": 0.75}))

    assert (result.score, result.passed) == (0.75, True)
    assert result.reason.startswith("3/4 elements keep to the schema (0.75 >= 0.75); edge (a, x")


def test_no_graph_fails_an_empty_graph_is_skipped_a_bad_edge_says_where() -> None:
    missing = score({"answer": "x"})
    empty = score({"triples": []})
    bad = score({"graph": {"edges": [{"relation": "r"}]}})

    assert (missing.score, missing.passed) == (0.0, False)
    assert "the trace holds no graph" in missing.reason
    assert empty.skipped and empty.reason == "the recorded graph is empty"
    assert bad.passed is False
    assert "trace.graph.edges[0] has none of subject, source, from, head" in bad.reason


def test_the_stage_needs_a_schema_and_the_schema_its_stage() -> None:
    with pytest.raises(CaseFileError, match='needs the suite\'s "graph_schema"'):
        suite(None)
    with pytest.raises(CaseFileError, match='"graph_schema" configures the graph_schema stage'):
        suite(SCHEMA, stages=["exact_match"])


def test_a_relation_type_must_be_a_declared_node_type() -> None:
    with pytest.raises(ValueError, match="relation 'born_in': object type\\(s\\) 'City' are not"):
        Suite.model_validate(
            {
                "name": "s",
                "stages": ["graph_schema"],
                "cases": [],
                "graph_schema": {
                    "node_types": ["Person"],
                    "relations": {"born_in": ["Person", "City"]},
                },
            }
        )


# ---- on the knowledge-graph example's recorded traces ------------------------------------------
EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "knowledge-graph"


def test_the_knowledge_graph_examples_recorded_triples(tmp_path: Path) -> None:
    """A copy of the example, its suite running graph_schema report-only with a schema that
    declares four of its relations: the recorded triples replay and are checked (the stage is
    not in the key, so the cassettes stay fresh)."""
    root = tmp_path / "kg"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    suite_file = root / "cases" / "people.json"
    doc = json.loads(suite_file.read_text(encoding="utf-8"))
    doc["report_only"] = [*doc.get("report_only", []), "graph_schema"]
    doc["graph_schema"] = {
        "relations": {"birthplace": None, "spouse": None, "won": None, "discovered": None}
    }
    suite_file.write_text(json.dumps(doc), encoding="utf-8")

    result = run_pytest_env_in_process(
        root, "-p", "no:cacheprovider", "--eval-report", str(tmp_path / "out")
    )

    assert result.ret == 0, result.outlines
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    by_id = {case["id"]: case["stages"]["graph_schema"] for case in results["cases"]}
    assert all(case["recording"]["status"] == "replayed" for case in results["cases"])
    curie = by_id["curie-life"]
    assert curie["score"] == pytest.approx(4 / 5)  # worksFor is not declared
    assert curie["metrics"]["violations"] == [
        "edge (Marie Curie, worksFor, University of Paris): relation worksFor not declared"
    ]
    assert curie["gating"] is False
