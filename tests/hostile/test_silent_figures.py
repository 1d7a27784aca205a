"""Silent wrong figures (issue 30, "What to build" 4): a total's `exclude` that names an id or a
category no case has, and `--stratify` on a field no case of the file has, are errors naming
the name; before, the total equalled the overall figure and the sample claimed shares it never
kept, exit 0, no word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc

from pytest_evalcases.__main__ import main

SAMPLES = Path(__file__).parents[1] / "data" / "benchmarks"
CASES = [
    make_case("alpha", "alpha beta", category="single_hop"),
    make_case("gamma", "gamma delta", category="adversarial"),
]


@pytest.mark.parametrize(
    ("exclude", "named"),
    [
        ({"ids": ["alpah"]}, "the id 'alpah' (did you mean 'alpha'?)"),
        ({"category": ["adversarail"]}, "the category 'adversarail' (did you mean 'adversarial'?)"),
    ],
)
def test_a_total_excluding_a_name_no_case_has_errors_the_suite_with_a_did_you_mean(
    project: Project, exclude: dict[str, list[str]], named: str
) -> None:
    totals = [{"name": "headline", "exclude": exclude}]
    project.write_suite(suite_doc("bench", CASES, totals=totals), "cases/bench.json")

    result = project.run("-q")

    block = error_block(result, "suite")
    assert "cases/bench.json: total 'headline': \"exclude\"" in block, output(result)
    assert f"no case of the suite has {named}" in block, output(result)
    assert "fix the" in block and "or remove it from the total" in block, output(result)
    assert result.ret != 0


def test_an_ids_file_naming_an_unknown_id_errors_naming_the_file(project: Project) -> None:
    project.write_text("data/gold.json", json.dumps(["gamma", "zzz-unrelated"]))
    totals = [{"name": "gold", "exclude": {"ids": "data/gold.json"}}]
    project.write_suite(suite_doc("bench", CASES, totals=totals), "cases/bench.json")

    result = project.run("-q")

    block = error_block(result, "suite")
    assert "total 'gold': \"exclude\": {\"ids\": 'data/gold.json'}" in block, output(result)
    assert "no case of the suite has the id 'zzz-unrelated', so" in block, output(result)


def test_a_total_naming_only_known_names_still_counts(project: Project) -> None:
    totals = [{"name": "headline", "exclude": {"ids": ["alpha"], "category": ["adversarial"]}}]
    project.write_suite(suite_doc("bench", CASES, totals=totals), "cases/bench.json")
    project.run("--live", "-q").assert_outcomes(passed=2)


def test_stratify_on_a_field_the_file_lacks_is_an_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    source = SAMPLES / "hotpotqa.json"  # no users
    args = ["import", "hotpotqa", str(source), "-o", "cases/hot.json", "--limit", "2"]

    code = main([*args, "--stratify", "user"])

    err = capsys.readouterr().err
    assert code != 0
    assert "--stratify user: no case of the file has a 'user' field" in err, err
    assert "its cases have: " in err and "id" in err and str(source) in err, err
    assert not (tmp_path / "cases").exists() and not (tmp_path / "data").exists()
    assert main([*args, "--stratify", "category"]) == 0  # a field the cases have still works
