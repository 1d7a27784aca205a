"""The graph, citations, schema and rubric stages through pytest: recorded, replayed, gated at the
first failing stage, and shown in the summary and the reports."""

from __future__ import annotations

import json

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    output,
    run_live_openai,
    run_pytest_env,
    summary_section,
)
from judge_server import POISON, JudgeServer, judge_server_fixture

judge_server = judge_server_fixture()

SYSTEM = '''\
"""Answers from a table: triples, citations and a JSON answer per case id."""
import json

GOOD_ANSWER = json.dumps({"city": "Warsaw", "country": "Poland"})
TRACES = {
    "good": {"triples": [["Marie Curie", "born_in", "Warsaw"]], "citations": ["d1"],
             "answer": GOOD_ANSWER},
    "bad-graph": {"triples": [["Marie Curie", "born_in", "Paris"]], "citations": ["d9"],
                  "answer": GOOD_ANSWER},
    "bad-citation": {"triples": [["Marie Curie", "born in", "Warsaw"]],
                     "citations": [{"sentence": "Born in Warsaw.", "docs": ["d1"]},
                                   {"sentence": "In Poland.", "docs": ["d7"]}],
                     "answer": GOOD_ANSWER},
    "bad-schema": {"triples": [["marie curie", "bornIn", "warsaw"]], "citations": ["d1"],
                   "answer": json.dumps({"city": 7})},
}


def run(case):
    trace = dict(TRACES[case["id"]])
    trace["retrieved"] = ["d1", "d2"]
    trace["context"] = ["Marie Curie was born in Warsaw, Poland."]
    return trace
'''

SCHEMA = {
    "type": "object",
    "required": ["city", "country"],
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
}
RUBRIC = ["names the city Warsaw", {"item": "names the country Poland", "weight": 2}]


def kg_case(case_id: str, **fields) -> dict:
    doc = {
        "id": case_id,
        "input": "Where was Marie Curie born?",
        "expected_triples": [["Marie Curie", "born in", "Warsaw"]],
        "expected_docs": ["d1"],
        "answer_schema": SCHEMA,
        "rubric": RUBRIC,
    }
    doc.update(fields)
    return doc


def kg_suite(**fields) -> dict:
    doc = {
        "name": "kg",
        "system": "kgsys:run",
        "judge": "lexical",
        "stages": ["graph", "citations", "schema", "rubric"],
        "cases": [
            kg_case("good"),
            kg_case("bad-graph"),
            kg_case("bad-citation"),
            kg_case("bad-schema"),
        ],
    }
    doc.update(fields)
    return doc


@pytest.fixture
def kg(project: Project) -> Project:
    project.write_text("kgsys.py", SYSTEM)
    project.write_suite(kg_suite())
    return project


def test_recorded_replayed_and_gated_at_the_first_failing_stage(kg: Project) -> None:
    recorded = kg.run("--live", "-p", "no:cacheprovider")
    assert_not_aborted(recorded)
    verdict = kg.cassette("kg", "good")["verdicts"]["rubric"]
    assert [item["met"] for item in verdict["details"]["items"]] == [True, True]

    result = kg.run("-p", "no:cacheprovider", "--eval-report", "out")
    result.assert_outcomes(passed=1, failed=3)
    text = output(result)
    # bad-graph fails citations too, but graph comes first
    assert (
        "first failing stage: graph (F1 0.00 < 1.00 (precision 0.00, recall 0.00); "
        "omitted: (marie curie, born in, warsaw); hallucinated: (marie curie, born in, paris))"
        in error_block(result, "bad-graph")
    )
    assert (
        "first failing stage: citations (provenance 0.50 < 1.00; not retrieved: d7 "
        "(sentence 2))" in error_block(result, "bad-citation")
    )
    block = error_block(result, "bad-schema")
    assert (
        "first failing stage: schema (2 violations: $: 'country' is a required property; "
        "$.city: 7 is not of type 'string')" in block
    )
    # rubric is judged by the lexical judge on the JSON answer: scored after schema fails
    assert "rubric" in block and "replayed" in text

    summary = "\n".join(summary_section(result))
    for column in ("graph", "citations", "schema", "rubric"):
        assert column in summary

    doc = json.loads((kg.root / "out" / "results.json").read_text())
    graph = doc["stages"]["graph"]
    assert (graph["passed"], graph["failed"]) == (3, 1)
    assert graph["hallucination_rate"] == pytest.approx(0.25)  # 1 of 1 predicted, in 1 of 4
    assert graph["omission_rate"] == pytest.approx(0.25)
    assert doc["stages"]["citations"]["failed"] == 2
    report = (kg.root / "out" / "report.md").read_text()
    assert "graph: precision 0.750 · recall 0.750 · hallucination 0.250 · omission 0.250" in report
    dashboard = (kg.root / "out" / "dashboard.html").read_text()
    assert "hallucination 0.250" in dashboard
    assert "(marie curie, born in, paris)" in dashboard  # the unmatched edge, by name


def test_a_rubric_weight_is_applied_at_replay_an_item_text_stales_the_verdict(
    kg: Project,
) -> None:
    assert_not_aborted(kg.run("--live", "-p", "no:cacheprovider"))
    unmet = ["names the city Warsaw", {"item": "names the country Atlantis", "weight": 3}]
    kg.edit_suite("cases/kg.json", lambda doc: doc["cases"][0].update(rubric=unmet))
    stale = kg.run("-p", "no:cacheprovider", "-k", "good")
    assert "rubric" in error_block(stale, "good") and "stale" in output(stale).lower()

    assert_not_aborted(kg.run("--live-judges", "-p", "no:cacheprovider", "-k", "good"))
    failed = kg.run("-p", "no:cacheprovider", "-k", "good")
    failed.assert_outcomes(failed=1)
    assert (
        "first failing stage: rubric (0.25 < 0.50 (1 of 2 items met); unmet: names the "
        "country Atlantis)" in error_block(failed, "good")
    )

    # a weight is applied when scoring: no new verdict, a new score
    lighter = ["names the city Warsaw", {"item": "names the country Atlantis", "weight": 1}]
    kg.edit_suite("cases/kg.json", lambda doc: doc["cases"][0].update(rubric=lighter))
    passed = kg.run("-p", "no:cacheprovider", "-k", "good")
    passed.assert_outcomes(passed=1)


def test_suite_option_problems_name_the_file(kg: Project) -> None:
    kg.write_suite(kg_suite(name="kg2", graph={"similarity": "kgsys:missing"}))
    kg.write_suite(kg_suite(name="kg3", stages=["graph"], citations={"every_sentence": True}))
    result = kg.run("-p", "no:cacheprovider", "cases/kg2.json", "cases/kg3.json")
    text = output(result)
    assert (
        'cases/kg2.json: "graph": "similarity": cannot import \'kgsys:missing\': '
        "AttributeError" in text
    )
    assert (
        'cases/kg3.json: "citations" configures the citations stage, which this suite does '
        "not run" in text
    )


def test_rubric_with_the_llm_judge_one_request_per_item_replayed_without_a_key(
    kg: Project, judge_server: JudgeServer
) -> None:
    rubric = ["names the city Warsaw", {"item": f"names the country {POISON}", "weight": 3}]
    kg.write_suite(kg_suite(stages=["rubric"], cases=[kg_case("good", rubric=rubric)]))
    recorded = run_live_openai(kg, judge_server.base_url)
    assert_not_aborted(recorded)
    prompts = [r.prompt for r in judge_server.requests if r.kind == "rubric_item"]
    assert len(prompts) == 2 == len(judge_server.requests)  # item by item
    assert any("<rubric_item>\nnames the city Warsaw\n</rubric_item>" in p for p in prompts)
    verdict = kg.cassette("kg", "good")["verdicts"]["rubric"]
    assert verdict["judge"] == "openai:gpt-4o-mini" and verdict["calls"] == 2
    assert [item["met"] for item in verdict["details"]["items"]] == [True, False]
    assert verdict["score"] == 0.25 and set(verdict["key"]) == {
        "judge",
        "judge_version",
        "params",
        "rubric",
    }

    replayed, heavy = run_pytest_env(
        kg.root, "-p", "no:cacheprovider", "--eval-judge", "openai:gpt-4o-mini"
    )
    replayed.assert_outcomes(failed=1)
    assert heavy == []  # no key, no deepeval, no HTTP client: the verdict is replayed
    assert (
        f"first failing stage: rubric (0.25 < 0.50 (1 of 2 items met); unmet: names the "
        f"country {POISON})" in error_block(replayed, "good")
    )
