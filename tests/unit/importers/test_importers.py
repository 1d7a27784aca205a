"""`python -m pytest_evalcases import FORMAT FILE -o OUT`: each format on small sample files
written for these tests (tests/data/benchmarks/, never copied from the benchmarks), stable
sampling, the `source` record, and malformed files (one error naming the record and the field,
nothing written)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.totals import resolve_totals

from .conftest import written_files

SAMPLES = Path(__file__).parents[2] / "data" / "benchmarks"
SAMPLE_FILES = {
    "hotpotqa": "hotpotqa.json",
    "musique": "musique.jsonl",
    "2wikimultihopqa": "2wikimultihopqa.json",
    "locomo": "locomo.json",
}


def run_import(fmt: str, source: Path | str, *args: str) -> int:
    return main(["import", fmt, str(source), "-o", "cases/bench.json", *args])


def imported(fmt: str, *args: str) -> dict[str, Any]:
    assert run_import(fmt, SAMPLES / SAMPLE_FILES[fmt], *args) == 0
    suite = json.loads(Path("cases/bench.json").read_text())
    resolve_totals(Suite.model_validate(suite), Path.cwd())  # the plugin loads it, totals too
    for case in suite["cases"]:
        validate_case(case)
    return suite


def data(path: str) -> Any:
    return json.loads(Path(path).read_text())


def test_hotpotqa_maps_answer_supporting_titles_type_and_a_corpus(project: Path) -> None:
    suite = imported("hotpotqa", "--system", "myagent:system")

    assert suite["name"] == "bench" and suite["system"] == "myagent:system"
    first = suite["cases"][0]
    assert first["id"] == "5a8b57f25542995d1e6f1371"
    assert first["input"].startswith("Which river runs through the town")
    assert first["reference"] == "the Vell"
    assert first["expected_docs"] == ["Harbour Lantern Museum", "Ostmere"]
    assert first["category"] == "bridge"
    assert first["metadata"] == {"type": "bridge", "level": "medium"}
    assert [c["category"] for c in suite["cases"]] == ["bridge", "comparison", "bridge"]
    assert suite["inputs"] == ["data/bench/paragraphs.json"]
    corpus = data("data/bench/paragraphs.json")
    # Paragraphs shared by several questions are indexed once.
    assert [p["title"] for p in corpus] == [
        "Harbour Lantern Museum",
        "Ostmere",
        "Vell Bridge",
        "Anna Brisk",
        "Tomas Hale",
    ]
    assert corpus[1]["text"] == (
        "Ostmere is a small port town. The river Vell runs through Ostmere to the sea."
    )
    assert suite["stages"] == ["retrieval", "context_completeness", "answer_accuracy"]


def test_musique_marks_unanswerable_questions_and_counts_hops(project: Path) -> None:
    suite = imported("musique")

    cases = {c["id"]: c for c in suite["cases"]}
    assert [c["category"] for c in suite["cases"]] == ["hop2", "hop3", "hop2"]
    answerable = cases["2hop__1001_2002"]
    assert answerable["expected_docs"] == ["Ostmere", "Vell"]
    assert answerable["reference"] == "the Grey Hills"
    assert "unanswerable" not in answerable
    assert answerable["metadata"]["answer_aliases"] == ["Grey Hills"]
    unanswerable = cases["2hop__6006_7007"]
    assert unanswerable["unanswerable"] is True
    assert "expected_docs" not in unanswerable
    assert unanswerable["metadata"]["answer"] == "the cello"  # kept, never given to the system
    assert unanswerable["reference"] == "The paragraphs do not answer this question."
    titles = [p["title"] for p in data("data/bench/paragraphs.json")]
    assert titles == ["Ostmere", "Vell", "Norland", "Grey Pier", "Ida Marsh", "Ostmere"]


def test_2wikimultihopqa_keeps_type_and_evidences(project: Path) -> None:
    suite = imported("2wikimultihopqa")

    assert [c["category"] for c in suite["cases"]] == [
        "compositional",
        "comparison",
        "bridge_comparison",
    ]
    first = suite["cases"][0]
    assert first["expected_docs"] == ["Grey Pier", "Ida Marsh"]
    assert first["reference"] == "Lotte Marsh"
    assert first["metadata"]["evidences"] == [
        ["Grey Pier", "director", "Ida Marsh"],
        ["Ida Marsh", "mother", "Lotte Marsh"],
    ]
    assert "evidences" not in first  # the system never sees the answer's triples


def test_locomo_makes_one_user_per_conversation_and_adversarial_unanswerable(
    project: Path,
) -> None:
    suite = imported("locomo")

    assert suite["users"] == [
        {"id": "conv-1", "conversations": "data/bench/conv-1/conversations.json"},
        {"id": "conv-2", "conversations": "data/bench/conv-2/conversations.json"},
    ]
    conversation = data("data/bench/conv-1/conversations.json")
    assert conversation["speaker_a"] == "Mira"
    assert [s["session"] for s in conversation["sessions"]] == [1, 2]
    assert conversation["sessions"][1]["date_time"] == "9:00 am on 20 March, 2023"
    assert conversation["sessions"][0]["turns"][0]["dia_id"] == "D1:1"
    cases = {c["id"]: c for c in suite["cases"]}
    assert list(cases) == [
        "conv-1-q001",
        "conv-1-q002",
        "conv-1-q003",
        "conv-1-q004",
        "conv-2-q001",
        "conv-2-q002",
        "conv-2-q003",
    ]
    assert [c["category"] for c in suite["cases"]] == [
        "single_hop",
        "temporal",
        "multi_hop",
        "adversarial",
        "single_hop",
        "open_domain",
        "adversarial",
    ]
    assert cases["conv-1-q003"]["expected_docs"] == ["D1:2", "D2:1"]
    assert cases["conv-1-q001"] | {} == {
        "id": "conv-1-q001",
        "input": "What is the name of Mira's cat?",
        "user": "conv-1",
        "category": "single_hop",
        "expected_docs": ["D1:1"],
        "expected_context": ["I adopted a grey cat called Pebble yesterday."],
        "reference": "Pebble",
    }
    adversarial = cases["conv-1-q004"]
    assert adversarial["unanswerable"] is True and adversarial["user"] == "conv-1"
    assert adversarial["metadata"] == {"adversarial_answer": "Pebble"}
    assert "inputs" not in suite  # the conversations are the users' files, not the corpus


def test_the_source_records_the_file_hash_and_the_sampling(project: Path) -> None:
    suite = imported("locomo", "--limit", "3", "--seed", "7")

    sample = SAMPLES / "locomo.json"
    assert suite["source"] == {
        "format": "locomo",
        "file": "locomo.json",
        "sha256": hashlib.sha256(sample.read_bytes()).hexdigest(),
        "records": 7,
        "cases": 3,
        "limit": 3,
        "seed": 7,
        "sampling": "the `limit` cases with the lowest sha256(seed:id), in file order",
    }
    # Only the users of the sampled cases are declared.
    assert {u["id"] for u in suite["users"]} == {c["user"] for c in suite["cases"]}


def test_sampling_is_stable_nested_and_independent_of_file_order(project: Path) -> None:
    def ids(source: Path, *args: str) -> list[str]:
        assert run_import("hotpotqa", source, "--force", *args) == 0
        return [c["id"] for c in data("cases/bench.json")["cases"]]

    original = SAMPLES / "hotpotqa.json"
    two = ids(original, "--limit", "2", "--seed", "3")
    assert ids(original, "--limit", "2", "--seed", "3") == two
    assert len(two) == 2 and set(ids(original, "--limit", "1", "--seed", "3")) <= set(two)
    reversed_file = project / "reversed.json"
    reversed_file.write_text(json.dumps(json.loads(original.read_text())[::-1]))
    assert sorted(ids(reversed_file, "--limit", "2", "--seed", "3")) == sorted(two)
    seeds = {tuple(ids(original, "--limit", "1", "--seed", str(seed))) for seed in range(8)}
    assert len(seeds) > 1  # the seed does choose


Mutation = Callable[[Any], None]


def _drop(path: list[Any]) -> Mutation:
    def edit(records: Any) -> None:
        target = records
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return edit


def _set(path: list[Any], value: Any) -> Mutation:
    def edit(records: Any) -> None:
        target = records
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


MALFORMED = [
    (
        "hotpotqa",
        _drop([1, "answer"]),
        "record 1 (5a8c7595554299585d9e36b6): field 'answer' is missing",
    ),
    (
        "hotpotqa",
        _set([0, "supporting_facts", 1], ["Ostmere", "1"]),
        "record 0 (5a8b57f25542995d1e6f1371): field 'supporting_facts[1]' must be a "
        "[title, sentence index] pair",
    ),
    (
        "hotpotqa",
        _set([2, "context", 0, 1], "one sentence"),
        "record 2 (5ae0185b55429942ec259c1b): field 'context[0][1]' must be a list of sentences",
    ),
    (
        "2wikimultihopqa",
        _set([1, "evidences", 0], ["Grey Pier", "1958"]),
        "record 1 (b7f2c9a4bb8d11ebba8a0242ac110002): field 'evidences[0]' must be a "
        "[subject, relation, object] triple",
    ),
    (
        "2wikimultihopqa",
        _set([0, "question"], 42),
        "record 0 (a1c3e2f0bb8d11ebba8a0242ac110002): field 'question' is int, expected str",
    ),
    (
        "musique",
        _drop([2, "paragraphs", 1, "paragraph_text"]),
        "record 2 (2hop__6006_7007): field 'paragraphs[1].paragraph_text' is missing",
    ),
    (
        "musique",
        _set([1, "question_decomposition"], []),
        "record 1 (3hop1__3003_4004_5005): field 'question_decomposition' is empty",
    ),
    (
        "locomo",
        _set([0, "qa", 2, "category"], 6),
        "record 0 (conv-1): field 'qa[2].category' is 6; LoCoMo categories are 1 to 5",
    ),
    (
        "locomo",
        _drop([1, "conversation", "session_1", 0, "text"]),
        "record 1 (conv-2): field 'conversation.session_1[0].text' is missing",
    ),
    ("locomo", _drop([1, "qa", 0, "answer"]), "record 1 (conv-2): field 'qa[0].answer' is missing"),
    (
        "locomo",
        _set([1, "sample_id"], "conv-1"),
        "record 1 (conv-1): field 'sample_id' repeats an earlier conversation's id",
    ),
]


def _write_sample(fmt: str, records: list[Any], folder: Path) -> Path:
    path = folder / SAMPLE_FILES[fmt]
    if fmt == "musique":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        path.write_text(json.dumps(records))
    return path


def _load_sample(fmt: str) -> list[Any]:
    text = (SAMPLES / SAMPLE_FILES[fmt]).read_text()
    if fmt == "musique":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


@pytest.mark.parametrize(
    ("fmt", "mutate", "message"), MALFORMED, ids=[f"{m[0]}-{i}" for i, m in enumerate(MALFORMED)]
)
def test_a_malformed_file_is_one_error_naming_record_and_field_and_nothing_is_written(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    mutate: Mutation,
    message: str,
) -> None:
    records = _load_sample(fmt)
    mutate(records)
    source = _write_sample(fmt, records, project)
    before = written_files(project)

    assert run_import(fmt, source.name) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"error: {source.name}: {message}"), err
    assert err.count("error:") == 1 and err.rstrip().endswith("nothing was written")
    assert written_files(project) == before


def test_a_file_that_is_not_json_and_bad_options_write_nothing(
    project: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "broken.json").write_text('[{"_id": "x",')
    assert run_import("hotpotqa", "broken.json") == 2
    assert "broken.json: not valid JSON (line 1" in capsys.readouterr().err

    sample = SAMPLES / "hotpotqa.json"
    assert (
        main(["import", "hotpotqa", str(sample), "-o", "cases/h.json", "--data", "cases/data"]) == 2
    )
    assert "would be collected as case files" in capsys.readouterr().err
    assert main(["import", "hotpotqa", str(sample), "-o", "cases/h.json", "--limit", "0"]) == 2
    assert "--limit 0: give at least 1 case" in capsys.readouterr().err
    assert written_files(project) == {"broken.json"}

    assert run_import("hotpotqa", sample) == 0
    assert run_import("hotpotqa", sample) == 2  # never silently replaced
    assert "cases/bench.json exists; pass --force" in capsys.readouterr().err


def test_a_record_that_is_not_an_object_is_named(
    project: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "musique.jsonl").write_text('{"id": "a"}\n[1, 2]\n')
    assert run_import("musique", "musique.jsonl") == 2
    err = capsys.readouterr().err
    assert "musique.jsonl: record 0 (a): field 'paragraphs' is missing" in err


def test_the_command_offers_every_importer() -> None:
    from pytest_evalcases.cli.importing import FORMAT_NAMES
    from pytest_evalcases.importers import FORMATS

    assert FORMAT_NAMES == tuple(FORMATS)


def test_a_hotpotqa_file_without_type_or_level_has_no_category(project: Path) -> None:
    records = _load_sample("hotpotqa")
    for record in records:
        del record["type"], record["level"]
    source = _write_sample("hotpotqa", records, project)

    assert run_import("hotpotqa", source.name) == 0

    case = data("cases/bench.json")["cases"][0]
    assert "category" not in case and "metadata" not in case
    assert case["expected_docs"] == ["Harbour Lantern Museum", "Ostmere"]


def test_an_unsafe_suite_name_is_refused(project: Path, capsys: pytest.CaptureFixture) -> None:
    assert run_import("hotpotqa", SAMPLES / "hotpotqa.json", "--name", "a::b") == 2
    assert "suite name 'a::b' cannot name the cassette folder" in capsys.readouterr().err
    assert written_files(project) == set()


@pytest.mark.parametrize(
    ("fmt", "report_only"),
    [
        ("hotpotqa", ["hotpotqa_em", "hotpotqa_f1", "hotpotqa_sp_f1", "context_coverage"]),
        (
            "2wikimultihopqa",
            [
                "2wikimultihopqa_em",
                "2wikimultihopqa_f1",
                "2wikimultihopqa_sp_f1",
                "context_coverage",
            ],
        ),
        ("musique", ["musique_em", "musique_f1", "musique_sp_f1", "context_coverage"]),
        ("locomo", ["retrieval", "locomo_f1", "context_coverage"]),
    ],
)
def test_each_importer_reports_its_benchmarks_own_scores(
    project: Path, fmt: str, report_only: list[str]
) -> None:
    assert imported(fmt)["report_only"] == report_only


def test_gold_supporting_facts_and_aliases_reach_the_cases(project: Path) -> None:
    hotpot = imported("hotpotqa")["cases"][0]
    assert hotpot["expected_facts"] == [["Harbour Lantern Museum", 0], ["Ostmere", 1]]
    musique = {case["id"]: case for case in imported("musique", "--force")["cases"]}
    assert musique["2hop__1001_2002"]["reference_aliases"] == ["Grey Hills"]
    assert "reference_aliases" not in musique["3hop1__3003_4004_5005"]  # it has none
    assert "reference_aliases" not in musique["2hop__6006_7007"]  # unanswerable: not scored


def test_gold_context_comes_from_supporting_sentences_paragraphs_and_evidence_turns(
    project: Path,
) -> None:
    hotpot = imported("hotpotqa")["cases"][0]
    records = json.loads((SAMPLES / "hotpotqa.json").read_text())
    sentences = dict((title, lines) for title, lines in records[0]["context"])
    assert hotpot["expected_context"] == [
        sentences[title][index].strip() for title, index in records[0]["supporting_facts"]
    ]
    musique = {case["id"]: case for case in imported("musique", "--force")["cases"]}
    assert musique["2hop__1001_2002"]["expected_context"] == [
        "Ostmere is a port town on the river Vell.",
        "The Vell rises in the Grey Hills.",
    ]
    locomo = {case["id"]: case for case in imported("locomo", "--force")["cases"]}
    assert len(locomo["conv-1-q003"]["expected_context"]) == 2  # two evidence turns


def test_locomo_declares_the_papers_totals_and_exclude_ids_a_gold_exclusion_total(
    project: Path,
) -> None:
    (project / "gold.txt").write_text("conv-1-q002\n5\n")
    suite = imported("locomo", "--exclude-ids", "gold.txt")

    assert suite["totals"] == [
        {"name": "categories 1-4", "exclude": {"category": ["adversarial"]}},
        {"name": "without open-domain", "exclude": {"category": ["open_domain"]}},
        {
            "name": "without open-domain or gold exclusions",
            "exclude": {"category": ["open_domain"], "ids": "data/bench/exclusions.json"},
        },
    ]
    assert data("data/bench/exclusions.json") == ["conv-1-q002", "conv-2-q002"]
    assert len(suite["cases"]) == 7  # the excluded cases stay in the suite and are run
    assert suite["source"]["exclusions"]["cases"] == 2
    assert "totals" not in imported("hotpotqa", "--force")  # HotpotQA papers report every case
    (project / "hotpot-gold.txt").write_text(imported("hotpotqa", "--force")["cases"][0]["id"])
    hotpot = imported("hotpotqa", "--force", "--exclude-ids", "hotpot-gold.txt")
    assert hotpot["totals"] == [  # a benchmark without a total of its own: the ids alone
        {"name": "without gold exclusions", "exclude": {"ids": "data/bench/exclusions.json"}}
    ]


def test_a_sample_keeps_in_its_totals_only_the_categories_and_ids_it_holds(project: Path) -> None:
    """A run refuses a total naming a category or an id no case has (tests/hostile/
    test_silent_figures.py): a small sample must not name the file's others."""
    (project / "gold.txt").write_text("conv-1-q002\n5\n")
    suite = imported("locomo", "--exclude-ids", "gold.txt", "--limit", "2")

    categories = {case.get("category") for case in suite["cases"]}
    ids = {case["id"] for case in suite["cases"]}
    for total in suite["totals"]:
        assert set(total["exclude"].get("category", ())) <= categories
    assert set(data("data/bench/exclusions.json")) <= ids
    assert suite["source"]["exclusions"]["cases"] == len(data("data/bench/exclusions.json"))
