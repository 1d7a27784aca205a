"""HaluEval's first release names its label `hallucination_label` ("Yes" / "No", no spans), the
current one `hallucination` ("yes" / "no", with spans): `import halueval` reads both, and a record
with neither names the two fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.__main__ import main


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_the_first_releases_hallucination_label_is_read(in_project: Path) -> None:
    source = write(
        in_project / "general_data.json",
        [
            {
                "ID": 1,
                "user_query": "Who wrote Hamlet?",
                "chatgpt_response": "Shakespeare.",
                "hallucination_label": "No",
            },
            {
                "ID": 2,
                "user_query": "When did the lantern museum open?",
                "chatgpt_response": "In 1887, by Queen Ostra.",
                "hallucination_label": "Yes",
            },
        ],
    )

    assert main(["import", "halueval", str(source), "-o", "cases/set.json"]) == 0

    cases = json.loads((in_project / "cases/set.json").read_text())["cases"]
    assert [case["expect"] for case in cases] == ["pass", "fail"]
    assert cases[1]["defect"] == "hallucinated (the annotators' majority); no span marked"
    assert cases[1]["metadata"]["hallucination"] == "yes"


def test_a_record_with_neither_label_names_both_fields(
    in_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(
        in_project / "general_data.json",
        [{"ID": 7, "user_query": "q", "chatgpt_response": "a"}],
    )

    assert main(["import", "halueval", str(source), "-o", "cases/set.json"]) != 0

    err = capsys.readouterr().err
    assert "record 0 (7): field 'hallucination' is missing (and so is 'hallucination_label')" in err
    assert not (in_project / "cases/set.json").exists()
