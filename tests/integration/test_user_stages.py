"""Your own stages, end to end (issue 29 part 1): declared with `@ev.stage` in conftest.py, in a
suite's `stage_modules`, or by an installed stage pack (an entry point), and run on replay like
the built-in stages: stage order and first failure, report-only, thresholds, the summary,
results.json, report.md, the failure block, errors that stay the case's."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc, summary_section

# The user's stages: the answer's word count against the case's own `expected_words` (a field
# a near-miss check would take for `expected_docs`, were it not read by a stage), and an async
# stage that reads a trace field the built-in stages do not know.
CONFTEST = """\
import asyncio

import pytest_evalcases as ev


@ev.stage("word_count", threshold=1.0, reads=["expected_words"])
def word_count(case, trace):
    expected = case.fields.get("expected_words")
    if expected is None:
        return ev.Score(None, reason="no expected_words")
    words = trace.answer.split()
    return ev.Score(
        float(len(words) == expected),
        reason=f"{len(words)} words, expected {expected}",
        shows={"words": words, "expected_words": expected},
    )


@ev.stage("searched_once")
async def searched_once(case, trace):
    await asyncio.sleep(0)
    return [call.name for call in trace.tool_calls] == ["search"]
"""


def _cases() -> list[dict]:
    return [
        make_case("two", "alpha beta", expected_words=2),
        make_case("three", "gamma delta", expected_words=3),  # fails word_count
        make_case("none", "epsilon zeta"),  # word_count does not apply
    ]


@pytest.fixture
def recorded(project: Project) -> Project:
    project.write_text("conftest.py", CONFTEST)
    project.write_suite(
        suite_doc(
            cases=_cases(),
            stages=["tools", "word_count", "exact_match"],
            report_only=["searched_once"],
        )
    )
    result = project.run("--live", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    return project


def test_a_user_stage_replays_like_a_built_in_one(recorded: Project) -> None:
    result = recorded.run("-q", "--eval-report", "reports")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    # The first failure: the user stage, with what its Score shows.
    block = error_block(result, "three")
    assert "first failing stage: word_count (2 words, expected 3)" in block
    assert "words:" in block and "['gamma', 'delta']" in block
    assert "expected_words: 3" in block
    # The per-stage summary: a row of its own, in the suite's order, and the report-only one.
    summary = "\n".join(summary_section(result))
    assert "word_count" in summary and "searched_once" in summary
    rows = [line.split()[0] for line in summary_section(result) if line.split()]
    assert rows.index("word_count") < rows.index("exact_match")
    # results.json: every stage's result per case, the first failure and its details.
    results = json.loads((recorded.root / "reports" / "results.json").read_text())
    cases = {case["id"]: case for case in results["cases"]}
    assert cases["three"]["first_failure"]["stage"] == "word_count"
    assert ["words", "['gamma', 'delta']"] in cases["three"]["first_failure"]["details"]
    two = cases["two"]["stages"]
    assert two["word_count"]["score"] == 1.0 and two["word_count"]["gating"] is True
    assert two["searched_once"] == {**two["searched_once"], "passed": True, "gating": False}
    assert cases["none"]["stages"]["word_count"]["passed"] is None
    assert cases["none"]["outcome"] == "passed"
    # The expectation never reached the system: not a typo, not an input, not in the key.
    assert "expected_words" not in json.dumps(recorded.cassette("suite", "two")["key"])
    markdown = (recorded.root / "reports" / "report.md").read_text()
    assert "| word_count |" in markdown and "searched_once" in markdown
    assert (
        'data-first-failure="word_count"'
        in (recorded.root / "reports" / "dashboard.html").read_text()
    )

    # The expectation edited: no re-record (the system never saw it), and the baseline gate
    # names the case that regressed at the user's stage.
    recorded.edit_suite("cases/suite.json", lambda doc: doc["cases"][0].update(expected_words=5))
    result = recorded.run("-q", "--eval-baseline", "reports/results.json")
    assert "suite::two: passed -> failed at word_count: 2 words, expected 5" in output(result)
    assert "stale" not in output(result).replace("0 stale", "")


def test_the_suites_thresholds_win_over_the_declared_one(recorded: Project) -> None:
    recorded.edit_suite("cases/suite.json", lambda doc: doc.update(thresholds={"word_count": 0.0}))
    result = recorded.run("-q")
    assert result.ret == pytest.ExitCode.OK, output(result)


def test_a_stage_that_raises_errors_its_case_only(recorded: Project) -> None:
    recorded.write_text(
        "conftest.py",
        CONFTEST.replace(
            "    words = trace.answer.split()\n",
            "    words = trace.answer.split()\n"
            "    if case.id == 'two':\n"
            "        raise ZeroDivisionError('no rows')\n",
        ),
    )
    result = recorded.run("-q", "--eval-report", "reports")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    block = error_block(result, "two")
    assert (
        "stage word_count could not score this case: raised ZeroDivisionError: no rows "
        "(at conftest.py:13)"
    ) in block
    row = next(line for line in summary_section(result) if line.startswith("suite::two "))
    assert row.split()[2:4] == ["error", "1.00"] and row.split()[4] == "ERROR", row
    results = json.loads((recorded.root / "reports" / "results.json").read_text())
    assert results["cases"][0]["stages"]["word_count"]["stage_error"] is True
    outcomes = {case["id"]: case["outcome"] for case in results["cases"]}
    assert outcomes == {"two": "error", "three": "failed", "none": "passed"}


def test_a_wrong_return_names_the_stage_and_the_value(recorded: Project) -> None:
    recorded.write_text(
        "conftest.py", CONFTEST.replace("    return [call.name", "    return 1.5 or [call.name")
    )
    result = recorded.run("-q")
    block = error_block(result, "two")
    assert "stage searched_once could not score this case: returned 1.5 (a float, outside" in block


def test_stage_modules_and_a_clash_with_a_built_in(project: Project) -> None:
    project.write_text("checks/__init__.py", "")
    project.write_text("checks/answers.py", CONFTEST)
    project.write_suite(
        suite_doc(
            cases=_cases()[:1],
            stages=["tools", "word_count"],
            stage_modules=["checks.answers"],
        )
    )
    project.write_suite(
        suite_doc(name="other", stages=["tools", "word_cuont"], stage_modules=["checks.answers"]),
        "cases/other.json",
    )
    result = project.run("-q", "--live", "-n", "2")  # each worker imports the stage module
    text = output(result)
    assert "1 passed" in text, text
    assert "unknown stage(s) word_cuont (did you mean 'word_count'?)" in text

    project.write_text(
        "conftest.py",
        "import pytest_evalcases as ev\n\n\n"
        '@ev.stage("exact_match")\ndef mine(case, trace):\n    return True\n',
    )
    text = output(project.run("-q"))
    assert re.search(
        r"stage name 'exact_match' is a built-in stage's \(module "
        r"pytest_evalcases\.domain\.stages\.text, line \d+\), declared again at conftest\.py:4 "
        r"\(module conftest\)",
        text,
    ), text


def test_a_stage_pack_installed_with_pip(project: Project) -> None:
    """A distribution's entry point, read by importlib.metadata from a *.dist-info folder on
    sys.path, loaded only because the suite names its stage."""
    site = project.root / "site"
    package = site / "answer_checks"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(CONFTEST)
    info = site / "answer_checks-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: answer-checks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [pytest_evalcases.stages]
            word_count = answer_checks:word_count
            searched_once = answer_checks:searched_once
            """
        )
    )
    project.write_suite(suite_doc(cases=_cases()[:1], stages=["tools", "word_count"]))
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        result = project.run("-q", "--live")
        assert result.ret == pytest.ExitCode.OK, output(result)
        result = project.run("-q")
        assert result.ret == pytest.ExitCode.OK, output(result)
    assert "1 passed" in output(result)
    # Uninstalled (off sys.path), the stage is unknown again: nothing was left registered.
    assert "unknown stage(s) word_count" in output(project.run("-q"))


def test_a_read_field_shared_with_the_system_keys_its_recordings(project: Project) -> None:
    shared = CONFTEST.replace(
        'reads=["expected_words"])', 'reads=["expected_words"], share_with_system=True)'
    )
    project.write_text("conftest.py", shared)
    project.write_suite(suite_doc(cases=_cases()[:1], stages=["tools", "word_count"]))
    result = project.run("-q", "--live")
    assert result.ret == pytest.ExitCode.OK, output(result)  # not taken for a typo
    # Kept from the system now: the recording was made with it, so it is stale, and says why.
    project.write_text("conftest.py", CONFTEST)
    result = project.run("-q")
    assert 'case changed ({"expected_words":2,"input":"alpha beta"} -> "alpha beta")' in (
        error_block(result, "two")
    )
