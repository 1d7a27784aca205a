"""Code fingerprints end to end: a small project recorded with each kind of `code` entry; a
comment edit stales nothing, a docstring edit stales the replay naming the `code.<module>` field,
an entry that names nothing is an error (the fingerprint itself: tests/unit/domain/test_code.py)."""

from __future__ import annotations

import re

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc, summary_section

HELPERS = '"""Helpers the system does not import."""\n\nGREETING = "hello"\n'
EXPLOSIVE = 'raise RuntimeError("importing explosive.py is a bug")\nVALUE = 1\n'


def stale_message(result: pytest.RunResult, case: str) -> str:
    block = error_block(result, case)
    return next((line for line in block.splitlines() if "stale recording" in line), block)


def test_code_edits_stale_replay_and_comments_do_not(project: Project) -> None:
    project.write_text("helpers.py", HELPERS)
    project.write_text("lib/a.py", "A = 1\n")
    project.write_text("lib/b.py", "B = 2\n")
    project.write_text("explosive.py", EXPLOSIVE)
    one = [make_case("alpha", "alpha beta")]
    project.write_suite(suite_doc("default", cases=one))
    project.write_suite(suite_doc("optout", cases=one, code=[]))
    project.write_suite(
        suite_doc("listed", cases=one, code=["helpers", "lib/", "othersys.py", "explosive"])
    )

    recorded = project.run("--live", "-p", "no:cacheprovider")

    recorded.assert_outcomes(passed=3)
    code_fields = {
        suite: {
            name: value
            for name, value in project.cassette(suite, "alpha")["key"].items()
            if name.startswith("code.")
        }
        for suite in ("default", "optout", "listed")
    }
    assert list(code_fields["default"]) == ["code.mysys"]  # the system's module, by default
    assert code_fields["optout"] == {}
    assert sorted(code_fields["listed"]) == [
        "code.explosive",
        "code.helpers",
        "code.lib.a",
        "code.lib.b",
        "code.othersys",
    ]

    # A comment and a blank line: no code change, nothing stale.
    source = (project.root / "mysys.py").read_text()
    project.write_text(
        "mysys.py", source.replace("import asyncio\n", "import asyncio  # for AsyncSystem\n\n")
    )
    assert project.run("-p", "no:cacheprovider").ret == 0

    # A docstring (what a tool description is) and a constant in a module the system never
    # imports; a suite whose "code" names nothing that exists.
    project.write_text(
        "mysys.py",
        source.replace('"""Test system: deterministic', '"""Test system (v2): deterministic'),
    )
    project.write_text("explosive.py", EXPLOSIVE.replace("VALUE = 1", "VALUE = 2"))
    project.write_suite(suite_doc("typo", cases=one, code=["helpers", "lib/missing/"]))
    result = project.run("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, errors=3)  # optout passes; default, listed stale; typo
    new_hash = project.cassette("default", "alpha")["key"]["code.mysys"]  # replay wrote nothing
    assert re.fullmatch(
        rf"stale recording: code\.mysys changed \({new_hash[:6]} -> [0-9a-f]{{6}}\); re-record "
        r"with --live, or check it offline with --replay-http",
        stale_message(result, "default::alpha").strip(),
    ), output(result)
    assert (
        stale_message(result, "listed::alpha")
        .strip()
        .startswith("stale recording: code.explosive changed (")
    )
    assert "lib/missing/" in error_block(result, "typo.json")
    rows = {
        line.split()[0]: line.split()[2]
        for line in summary_section(result)
        if "::" in line.split(" ", 1)[0]
    }
    # The cases that did not pass (optout::alpha passed: not listed).
    assert rows == {"default::alpha": "stale", "listed::alpha": "stale", "typo::suite": "error"}
