"""Samples that keep the mix (`--limit N --stratify category`), exact selections (`--ids`) and
LoCoMo's `--max-sessions`: the figures a benchmark's headline depends on."""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.importers.sampling import placements, shares

SAMPLES = Path(__file__).parents[2] / "data" / "benchmarks"
LOCOMO_CATEGORIES = [282, 321, 96, 841, 446]  # the public release's questions per category 1-5


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def within_one_and_nested(sizes: list[int]) -> None:
    """At every sample size, each stratum is within one of its exact share; the places are
    handed out one at a time, so each size extends the one before (checked against `shares`)."""
    total, kept = sum(sizes), [0] * len(sizes)
    for limit, stratum in enumerate(placements(sizes), 1):
        kept[stratum] += 1
        assert all(
            abs(Fraction(limit * size, total) - n) < 1 for size, n in zip(sizes, kept, strict=True)
        )
    assert kept == sizes
    for limit in (1, total // 3, total // 2, total):
        assert shares(sizes, limit) == [
            sum(1 for s in itertools.islice(placements(sizes), limit) if s == i)
            for i in range(len(sizes))
        ]


def test_every_size_of_locomos_mix_keeps_each_share_within_one_and_extends_the_smaller():
    """Largest-remainder rounding of each size afresh loses a place at 84 of these sizes."""
    within_one_and_nested(LOCOMO_CATEGORIES)


def test_random_mixes_keep_each_share_within_one_and_nest():
    rng = random.Random(21)
    for _ in range(60):
        within_one_and_nested([rng.randint(1, 40) for _ in range(rng.randint(2, 7))])


def locomo_file(path: Path, per_category: dict[int, int]) -> Path:
    """One conversation with the given number of questions per LoCoMo category."""
    qa = [
        {"question": f"q{category}-{n}", "answer": "a", "evidence": ["D1:1"], "category": category}
        for category, count in per_category.items()
        for n in range(count)
    ]
    for question in qa:
        if question["category"] == 5:
            question["adversarial_answer"] = question.pop("answer")
    record = {
        "sample_id": "conv-9",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hello"}],
        },
        "qa": qa,
    }
    path.write_text(json.dumps([record]))
    return path


def import_ids(source: Path, *args: str) -> tuple[list[str], dict]:
    code = main(["import", "locomo", str(source), "-o", "cases/bench.json", "--force", *args])
    assert code == 0
    suite = json.loads(Path("cases/bench.json").read_text())
    return [case["id"] for case in suite["cases"]], suite


def test_a_stratified_limit_keeps_the_category_mix_and_a_larger_one_extends_it(project: Path):
    source = locomo_file(project / "locomo.json", {1: 14, 2: 16, 3: 5, 4: 42, 5: 23})
    small, suite = import_ids(source, "--limit", "20", "--stratify", "category")
    counts = {}
    for case in suite["cases"]:
        counts[case["category"]] = counts.get(case["category"], 0) + 1
    # exact shares of 20 from 100: 2.8, 3.2, 1.0, 8.4, 4.6
    assert counts == {
        "multi_hop": 3,
        "temporal": 3,
        "open_domain": 1,
        "single_hop": 8,
        "adversarial": 5,
    }
    larger, _ = import_ids(source, "--limit", "50", "--stratify", "category")
    assert set(small) <= set(larger)
    assert suite["source"]["sampling"].startswith("each category's share of the file kept")
    # the plain hash sample of the same size does not promise the mix
    plain, _ = import_ids(source, "--limit", "20")
    assert len(plain) == 20


def test_ids_import_exactly_the_named_cases_by_id_or_index(project: Path):
    ids_file = project / "ids.txt"
    ids_file.write_text("# the cases we report on\nconv-2-q002\n0\n\nconv-1-q004  # adversarial\n")
    picked, suite = import_ids(SAMPLES / "locomo.json", "--ids", str(ids_file))
    assert picked == ["conv-1-q001", "conv-1-q004", "conv-2-q002"]  # file order
    assert suite["source"]["ids"]["file"] == "ids.txt"
    assert suite["source"]["sampling"] == "exactly the cases the ids file names, in file order"
    as_json = project / "ids.json"
    as_json.write_text(json.dumps(["conv-2-q002", 0, 3]))
    assert import_ids(SAMPLES / "locomo.json", "--ids", str(as_json))[0] == [
        "conv-1-q001",
        "conv-1-q004",
        "conv-2-q002",
    ]


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("conv-1-q001\nconv-9-q001\n", (), "entry 2 ('conv-9-q001') names no case"),
        ("7\n", (), "entry 1 (7) names no case: no such index among the file's 7 cases"),
        ("0\n", ("--limit", "2"), "--ids imports exactly the cases it names"),
    ],
)
def test_an_ids_file_that_names_no_case_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture, content: str, args: tuple, message: str
):
    (project / "ids.txt").write_text(content)
    code = main(
        [
            "import",
            "locomo",
            str(SAMPLES / "locomo.json"),
            "-o",
            "cases/b.json",
            "--ids",
            "ids.txt",
            *args,
        ]
    )
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (project / "cases").exists()


def test_max_sessions_keeps_the_first_sessions_and_the_questions_they_answer(project: Path):
    picked, suite = import_ids(SAMPLES / "locomo.json", "--max-sessions", "1")
    # conv-1-q003's evidence reaches session 2: left out; every other question is in session 1
    assert picked == [
        "conv-1-q001",
        "conv-1-q002",
        "conv-1-q004",
        "conv-2-q001",
        "conv-2-q002",
        "conv-2-q003",
    ]
    conversations = json.loads(Path("data/bench/conv-1/conversations.json").read_text())
    assert [session["session"] for session in conversations["sessions"]] == [1]
    assert suite["source"]["max_sessions"] == 1
    assert suite["source"]["questions_beyond_sessions"] == 1
    assert suite["source"]["records"] == 6


def test_max_sessions_is_for_locomo_only(project: Path, capsys: pytest.CaptureFixture):
    code = main(
        [
            "import",
            "hotpotqa",
            str(SAMPLES / "hotpotqa.json"),
            "-o",
            "cases/h.json",
            "--max-sessions",
            "1",
        ]
    )
    assert code == 2 and "--max-sessions applies to locomo files only" in capsys.readouterr().err
