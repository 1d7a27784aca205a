"""`--eval-report-cases all` on the repository's recorded RAG suite (cases/docs.json, replayed
from cassettes/docs-assistant; report-only contextual_precision, contextual_relevancy,
correctness, exact_match, token_f1): seed 003's columns, and the per-suite line whole."""

from __future__ import annotations

import re
from pathlib import Path

from evalhelpers import run_pytest_env_in_process

REPO = Path(__file__).resolve().parents[2]


def test_the_recorded_rag_suite_gets_seed_003s_per_case_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_pytest_env_in_process(
        REPO,
        "cases/docs.json",
        "-p",
        "no:cacheprovider",
        f"--basetemp={tmp_path / 'basetemp'}",
        "--eval-report",
        str(out),
        "--eval-report-cases",
        "all",
    )
    assert result.ret == 0, result.outlines
    md = (out / "report.md").read_text(encoding="utf-8")

    # The line of the suite holds its report-only means to the last (cut at 200 chars before).
    head = " ".join(line.strip() for line in md.split("Pass rate")[0].splitlines())
    assert "answer_accuracy 11/13, contextual_precision 0.803, contextual_relevancy 1.000, " in head
    assert head.rstrip().endswith("correctness 0.799, exact_match 0.769, token_f1 0.802")

    table = md.split("### All cases (13)\n\n")[1].splitlines()
    assert table[0] == (
        "| case | category | tools called | tools | hit@3 | recall@3 | RR | context_completeness "
        "| faithfulness | contextual_recall | answer_relevancy | answer_accuracy "
        "| contextual_precision | contextual_relevancy | correctness | exact_match | token_f1 "
        "| first failure |"
    )
    rows = {row.split(" | ")[0].removeprefix("| "): row for row in table[2:15]}
    assert rows["docs-assistant::config-file"] == (
        "| docs-assistant::config-file | config | search_docs | 1.000 | yes | 1.000 | 1.000 "
        "| 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 0.833 | 1.000 | 1.000 | 1.000 | 1.000 | – |"
    )
    assert rows["docs-assistant::encryption-password"].startswith(
        "| docs-assistant::encryption-password | encryption | search_docs | 1.000 | no | 0.000 "
        "| 0.000 |"
    )
    assert rows["docs-assistant::encryption-password"].endswith(
        "| retrieval: recall@3 0.00 &lt; 1.00; missing: encryption |"
    )
    # no expected docs nor context: retrieval and the context judges did not run for it
    assert rows["docs-assistant::greeting"] == (
        "| docs-assistant::greeting | chitchat | – | 1.000 | – | – | – | – | – | – | 1.000 "
        "| 1.000 | – | – | 1.000 | 1.000 | 1.000 | – |"
    )
    assert table[16] == (
        "_report-only (never fail a case): contextual_precision, contextual_relevancy, "
        "correctness, exact_match, token_f1_"
    )

    # The dashboard's case table gains the tools called, hit@3 and RR after the stages' scores.
    page = (out / "dashboard.html").read_text(encoding="utf-8")
    cases_table = page[page.index('<table id="cases"') :]
    head = cases_table[: cases_table.index("</thead>")]
    headers = re.findall(
        r'<th data-col="(\d+)" data-type="(\w+)"[^>]*><button type="button">'
        r"([^<]*)",
        head,
    )
    assert headers[-3:] == [
        ("17", "text", "tools called"),
        ("18", "text", "hit@3"),
        ("19", "num", "RR"),
    ]
    assert 'colspan="20"' in cases_table
    row = cases_table[cases_table.index('data-n="10"') :]
    row = row[: row.index("</tr>")]  # encryption-password: retrieved, but not the expected doc
    assert row.rstrip().endswith(
        '<td data-sort="search_docs">search_docs</td><td data-sort="no">no</td>'
        '<td data-sort="0.000" class="r">0.000</td>'
    ), row[-300:]
