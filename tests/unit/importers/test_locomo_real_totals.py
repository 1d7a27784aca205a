"""The LoCoMo importer's totals on the real release (../shared/data/locomo10.json): the counts
each published figure is taken over (issue 32 part 6). Cognee's headline leaves out only the
open-domain questions (the adversarial ones stay in); Mem0's and Zep's, the adversarial ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.totals import resolve_totals

LOCOMO = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "locomo10.json"


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"the shared benchmark data is absent ({LOCOMO})")
def test_each_total_counts_the_questions_its_paper_reports_on(project: Path) -> None:
    gold = project / "gold.txt"
    # three ids, as a list names them; the third question is open-domain, left out already
    gold.write_text("conv-26-q001\nconv-26-q002\nconv-26-q003\n")
    assert main(["import", "locomo", str(LOCOMO), "-o", "cases/locomo.json"]) == 0
    assert (
        main(["import", "locomo", str(LOCOMO), "-o", "cases/gold.json", "--exclude-ids", str(gold)])
        == 0
    )

    counted = {}
    for name in ("locomo", "gold"):
        suite = Suite.model_validate(json.loads((project / "cases" / f"{name}.json").read_text()))
        cases = [validate_case(case) for case in suite.cases]
        for rule in resolve_totals(suite, project):
            counted[rule.name] = sum(rule.counts(case) for case in cases)
        counted["all"] = len(cases)

    # categories in the release: 282 multi-hop, 321 temporal, 96 open-domain, 841 single-hop,
    # 446 adversarial
    assert counted == {
        "all": 1986,
        "categories 1-4": 1986 - 446,
        "without open-domain": 1986 - 96,
        "without open-domain or gold exclusions": 1986 - 96 - 2,
    }
