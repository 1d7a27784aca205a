"""End to end: a case's own `"inputs"`, which replace the suite's for that case, so editing a data
file stales only the cases that read it. `inputs` is not part of what the system receives nor of
the `case` hash; each path must resolve inside the rootdir, as the suite's do."""

from __future__ import annotations

from typing import Any

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc

KEYS_SYSTEM = '''\
"""Answers with the names of the fields it was given."""
def run(case):
    return {"answer": " ".join(sorted(case)), "tool_calls": [{"name": "search", "args": {}}],
            "retrieved": [case["input"].split()[0]]}
'''


def inputs_suite(**fields: Any) -> dict[str, Any]:
    """`alpha` reads the suite's kb.txt, `gamma` only orders.txt, `epsilon` no file at all."""
    return suite_doc(
        cases=[
            make_case("alpha", "alpha beta"),
            make_case("gamma", "gamma delta", inputs=["data/orders.txt"]),
            make_case("epsilon", "epsilon zeta", inputs=[]),
        ],
        **fields,
    )


def stale_cases(result: Any) -> list[str]:
    text = output(result)
    return sorted(
        case for case in ("alpha", "gamma", "epsilon") if f"ERROR cases/suite.json::{case}" in text
    )


@pytest.fixture
def recorded(project: Project) -> Project:
    project.write_text("data/orders.txt", "order 17 shipped\n")
    project.write_suite(inputs_suite())
    project.run("--live").assert_outcomes(passed=3)
    project.clear_calls()
    return project


def test_each_case_is_keyed_by_the_files_it_reads(recorded: Project) -> None:
    keys = {case: recorded.cassette("suite", case)["key"] for case in ("alpha", "gamma", "epsilon")}

    assert "data/kb.txt" in keys["alpha"] and "data/orders.txt" not in keys["alpha"]
    assert "data/orders.txt" in keys["gamma"] and "data/kb.txt" not in keys["gamma"]
    assert not {"data/kb.txt", "data/orders.txt"} & set(keys["epsilon"])


def test_a_data_file_edit_stales_only_the_cases_that_read_it(recorded: Project) -> None:
    recorded.write_text("data/kb.txt", "a new knowledge base\n")

    kb_edit = recorded.run()

    kb_edit.assert_outcomes(passed=2, errors=1)
    assert stale_cases(kb_edit) == ["alpha"]
    assert "data/kb.txt changed" in error_block(kb_edit, "suite::alpha")

    recorded.write_text("data/orders.txt", "order 17 returned\n")
    orders_edit = recorded.run()

    orders_edit.assert_outcomes(passed=1, errors=2)
    assert stale_cases(orders_edit) == ["alpha", "gamma"]
    assert "data/orders.txt changed" in error_block(orders_edit, "suite::gamma")

    restale = recorded.run("--live-stale")

    restale.assert_outcomes(passed=3)
    assert sorted(recorded.calls()) == ["run alpha", "run gamma", "setup suite"]


def test_inputs_reach_neither_the_system_nor_the_case_hash(project: Project) -> None:
    project.write_text("keys.py", KEYS_SYSTEM)
    project.write_text("data/copy.txt", (project.root / "data/kb.txt").read_bytes())
    project.write_suite(
        suite_doc(
            system="keys:run",
            stages=["tools"],
            cases=[make_case("alpha", "alpha beta", inputs=["data/kb.txt"], tone="dry")],
        )
    )
    project.run("--live").assert_outcomes(passed=1)
    assert project.cassette("suite", "alpha")["trace"]["answer"] == "id input tone"

    project.edit_suite(
        "cases/suite.json", lambda doc: doc["cases"][0].update(inputs=["data/copy.txt"])
    )
    result = project.run()

    result.assert_outcomes(errors=1)
    message = error_block(result, "suite::alpha")
    assert "data/copy.txt added" in message and "data/kb.txt removed" in message
    assert "case changed" not in message  # the same bytes under another name: the case is as it was


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("/etc/hostname", "is an absolute path"),
        ("../outside.txt", "outside the rootdir"),
        ("data/none.txt", "cannot be read"),
    ],
)
def test_a_bad_case_input_errors_that_case_only(project: Project, entry: str, problem: str) -> None:
    project.write_text("data/orders.txt", "order 17 shipped\n")
    doc = inputs_suite()
    doc["cases"][1]["inputs"] = ["data/orders.txt", entry]
    project.write_suite(doc)

    result = project.run("--live")

    result.assert_outcomes(passed=2, errors=1)
    block = error_block(result, "suite.json::gamma")
    assert "cases/suite.json: case 'gamma' (cases[1]): input " in block, block
    assert repr(entry) in block and problem in block
    assert "relative to" in block  # the next step: name a file inside the rootdir
    assert not project.cassette_path("suite", "gamma").exists()


def test_inputs_must_be_a_list_of_paths(project: Project) -> None:
    doc = inputs_suite()
    doc["cases"][2]["inputs"] = "data/kb.txt"
    project.write_suite(doc)

    result = project.run()

    result.assert_outcomes(errors=3)  # alpha and gamma: no recording yet
    assert "cases[2].inputs: Input should be a valid list" in error_block(result, "epsilon")
