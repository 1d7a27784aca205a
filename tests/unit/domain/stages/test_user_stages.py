"""Your own stages, unit by unit: the declaration (`ev.stage`, checked as it is made), what a
stage returns turned into a result, the read-only views it reads, and the registry (a name
taken is named with both places; a module imported again, or a past session's stage, is
not a clash)."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import sys
import types
from collections.abc import Iterator

import pytest

import pytest_evalcases as ev
from pytest_evalcases.core import stage_declarations
from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.scoring import failure_message, result_stages, score_case
from pytest_evalcases.domain.stages import registry
from pytest_evalcases.domain.stages.user import scored
from pytest_evalcases.domain.stages.views import CaseView, TraceView


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test declares into a registry of its own: the process's is left as it was."""
    monkeypatch.setattr(stage_declarations, "_DECLARED", [])
    monkeypatch.setattr(stage_declarations, "_SESSION", [0])
    stages, users = dict(registry.STAGES), dict(registry.USER_STAGES)
    monkeypatch.setattr(registry, "_ADOPTION", registry._Adoption())
    yield
    registry.STAGES.clear()  # the same dicts: other modules hold them
    registry.STAGES.update(stages)
    registry.USER_STAGES.clear()
    registry.USER_STAGES.update(users)
    for name in [name for name, module in sys.modules.items() if _made_here(module)]:
        del sys.modules[name]


def _made_here(module: object) -> bool:
    return str(getattr(module, "__file__", "")).startswith("/project/")


def _suite(**fields: object) -> Suite:
    return Suite.model_validate({"name": "s", "stages": ["tools"], "cases": [], **fields})


def _declare_in_module(name: str, source: str) -> types.ModuleType:
    """A module named `name`, its source run as an import would (declarations and all)."""
    module = types.ModuleType(name)
    module.__file__ = f"/project/{name}.py"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


STAGE_SOURCE = """
import pytest_evalcases as ev

@ev.stage("rows_match", threshold=0.9, reads=["expected_rows"])
def rows_match(case, trace):
    return case.fields["expected_rows"] == trace.rows
"""


# ---- the declaration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "two words"}, "a stage name is 1 to 64 letters, digits, '_' or '-'"),
        ({"name": "x", "threshold": 1.5}, "threshold=1.5; give a number in [0, 1]"),
        ({"name": "x", "threshold": math.nan}, "threshold=nan"),
        ({"name": "x", "threshold": True}, "threshold=True"),
        ({"name": "x", "reads": "expected_rows"}, "give a list of case field names"),
    ],
)
def test_a_bad_declaration_is_refused_where_it_is_made(
    arguments: dict[str, object], message: str
) -> None:
    name = arguments.pop("name")
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ev.stage(name, **arguments)  # type: ignore[arg-type]


def test_a_function_that_does_not_take_case_and_trace_is_refused() -> None:
    with pytest.raises(TypeError, match=r"'only_one' does not take those two arguments"):

        @ev.stage("x")
        def only_one(case: object) -> bool:
            return True


def test_the_decorator_returns_the_function_and_records_where() -> None:
    def rows(case: object, trace: object) -> bool:
        return True

    assert ev.stage("rows")(rows) is rows
    (declared,) = stage_declarations.declared_stages()
    assert declared.name == "rows" and declared.module == __name__
    assert declared.place.startswith("tests/unit/domain/stages/test_user_stages.py:")


# ---- what a stage returns ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "score", "passed"),
    [
        (True, 1.0, True),
        (False, 0.0, False),
        (0.75, 0.75, True),
        (0.25, 0.25, False),
        (1, 1.0, True),
    ],
)
def test_numbers_and_bools_are_scored_against_the_threshold(
    returned: object, score: float, passed: bool
) -> None:
    result = scored("mine", returned, 0.5)
    assert (result.score, result.passed, result.stage_error) == (score, passed, False)
    assert result.reason == f"mine {score:.2f} {'>=' if passed else '<'} 0.50"


def test_a_score_brings_its_reason_and_what_a_failure_shows() -> None:
    result = scored("mine", ev.Score(0.0, reason="3 rows", shows={"rows": [1, 2, 3]}), 1.0)
    assert (result.passed, result.reason, result.shows) == (False, "3 rows", {"rows": [1, 2, 3]})
    skipped = scored("mine", ev.Score(None, reason="no expected rows"), 1.0)
    assert (skipped.passed, skipped.reason) == (None, "no expected rows")


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        (None, "returned None (did the function forget to return?)"),
        ("0.5", "returned '0.5' (a str)"),
        (1.5, "returned 1.5 (a float, outside [0, 1])"),
        (math.nan, "returned nan (a float, not a number)"),
        (-0.1, "returned -0.1 (a float, outside [0, 1])"),
        (ev.Score(2), "returned 2 (an int, outside [0, 1])"),
        (ev.Score(1.0, reason=3), "a Score whose reason is 3 (an int), not text"),  # type: ignore[arg-type]
        (ev.Score(1.0, shows=["rows"]), "a Score whose shows is ['rows'] (a list)"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_return_is_an_error_naming_what_came_back(returned: object, named: str) -> None:
    result = scored("mine", returned, 0.5)
    assert result.stage_error and result.passed is False and result.score is None
    assert named in result.reason


# ---- the views -----------------------------------------------------------------------------------


def test_the_case_view_reads_every_field_and_the_case_files_own() -> None:
    case = validate_case(
        {"id": "c", "input": "q", "reference": "r", "expected_tools": [{"name": "s"}], "db": "x"}
    )
    view = CaseView(case)
    assert (view.id, view.input, view.reference, view.db) == ("c", "q", "r", "x")
    assert view.fields == {"db": "x"} and view.fields.get("nope") is None
    assert view.expected_tools[0].name == "s" and view.expected_tools[0]["args"] is None
    with pytest.raises(AttributeError, match=r"case 'c' has no field 'dbx' \(its own fields: db\)"):
        _ = view.dbx
    with pytest.raises(AttributeError, match="read-only"):
        view.input = "changed"  # type: ignore[misc]


def test_the_trace_view_gives_defaults_and_copies() -> None:
    trace = {"answer": "a", "tool_calls": [{"name": "search", "args": {"q": "x"}}], "sql": "S"}
    view = TraceView(trace)
    assert view.answer == "a" and view.context == [] and view.usage is None
    assert view.sql == view["sql"] == view.get("sql") == "S" and view.get("nope") is None
    call = view.tool_calls[0]
    assert (call.name, call.args.q) == ("search", "x")
    call.args["q"] = "changed"  # the stage's own copy: the recording stays as it was
    view.tool_calls.append("more")
    assert trace["tool_calls"] == [{"name": "search", "args": {"q": "x"}}]
    with pytest.raises(AttributeError, match=r"the trace has no field 'rows' \(its fields: answer"):
        _ = view.rows
    with pytest.raises(AttributeError, match="read-only"):
        view.answer = "b"  # type: ignore[misc]


# ---- the registry ------------------------------------------------------------------------------


def test_a_declared_stage_scores_in_suite_order_with_the_suites_threshold_first() -> None:
    _declare_in_module("checks", STAGE_SOURCE)
    registry.adopt_declared_stages()
    case = validate_case({"id": "c", "input": "q", "expected_rows": [[1]], "expected_tools": ["s"]})
    trace = {"answer": "a", "tool_calls": [{"name": "s"}], "rows": [[2]]}
    suite = _suite(stages=["tools", "rows_match"])
    scores = score_case(suite, case, trace, {}, ["tools", "rows_match"], [])
    assert scores.first_failure is not None and scores.first_failure[0] == "rows_match"
    assert result_stages(scores)["rows_match"]["threshold"] == 0.9
    own = _suite(stages=["tools", "rows_match"], thresholds={"rows_match": 0.0})
    assert score_case(own, case, trace, {}, ["tools", "rows_match"], []).first_failure is None


def test_a_stage_that_raises_errors_the_case_even_report_only() -> None:
    _declare_in_module(
        "boom",
        'import pytest_evalcases as ev\n\n@ev.stage("boom")\n'
        "def boom(case, trace):\n    return 1 / 0\n",
    )
    registry.adopt_declared_stages()
    case = validate_case({"id": "c", "input": "q", "expected_tools": ["s"]})
    trace = {"answer": "a", "tool_calls": [{"name": "s"}]}
    scores = score_case(_suite(report_only=["boom"]), case, trace, {}, ["tools"], ["boom"])
    assert scores.first_failure is not None and scores.first_failure[0] == "boom"
    message = failure_message(scores)
    assert message.splitlines()[0] == (
        "stage boom could not score this case: raised ZeroDivisionError: division by zero "
        "(at /project/boom.py:5)"
    )
    assert "boom (report only)" in message and "ERROR" in message
    assert result_stages(scores)["boom"]["stage_error"] is True


def test_an_async_stage_runs_inside_and_outside_a_running_loop() -> None:
    _declare_in_module(
        "slow",
        "import asyncio\nimport pytest_evalcases as ev\n\n"
        '@ev.stage("slow")\nasync def slow(case, trace):\n'
        "    await asyncio.sleep(0)\n    return trace.answer == 'a'\n",
    )
    registry.adopt_declared_stages()
    stage = registry.STAGES["slow"]
    case = validate_case({"id": "c", "input": "q"})
    assert stage.score(case, {"answer": "a"}, _suite(), None).passed is True

    async def inside() -> bool | None:  # a live run scores as it records, in its event loop
        return stage.score(case, {"answer": "b"}, _suite(), None).passed

    assert asyncio.run(inside()) is False


def test_a_name_taken_twice_names_both_places() -> None:
    _declare_in_module("first", STAGE_SOURCE)
    _declare_in_module("second", "\n\n" + STAGE_SOURCE)
    with pytest.raises(CaseFileError) as error:
        registry.adopt_declared_stages()
    assert str(error.value) == (
        "stage name 'rows_match' is declared twice: at /project/first.py:4 (module first) and at "
        "/project/second.py:6 (module second); a stage name names one stage: rename one"
    )
    with pytest.raises(CaseFileError, match="declared twice"):  # every suite collected sees it
        registry.adopt_declared_stages()


def test_a_built_in_name_is_taken() -> None:
    _declare_in_module(
        "mine",
        'import pytest_evalcases as ev\n\n@ev.stage("tools")\n'
        "def t(case, trace):\n    return True\n",
    )
    with pytest.raises(CaseFileError, match=r"stage name 'tools' is a built-in stage's \(module "):
        registry.adopt_declared_stages()
    assert registry.USER_STAGES == {}


def test_a_module_imported_again_or_a_past_sessions_stage_is_replaced() -> None:
    _declare_in_module("checks", STAGE_SOURCE)
    registry.adopt_declared_stages()
    _declare_in_module("checks", STAGE_SOURCE)  # the same place: a module imported again
    registry.adopt_declared_stages()
    stage_declarations.end_declaration_session()
    _declare_in_module("other_checks", STAGE_SOURCE)  # the next session's conftest
    registry.adopt_declared_stages()
    assert registry.USER_STAGES["rows_match"].module == "other_checks"


def test_a_past_sessions_stage_whose_module_is_gone_is_forgotten() -> None:
    _declare_in_module("gone", STAGE_SOURCE)
    registry.adopt_declared_stages()
    del sys.modules["gone"]
    stage_declarations.end_declaration_session()
    registry.adopt_declared_stages()
    assert "rows_match" not in registry.STAGES


def test_the_fields_a_suites_stages_read() -> None:
    _declare_in_module(
        "fields",
        "import pytest_evalcases as ev\n\n"
        '@ev.stage("a", reads=["rows", "db"])\ndef a(case, trace):\n    return True\n\n'
        '@ev.stage("b", reads=["db"], share_with_system=True)\ndef b(case, trace):\n'
        "    return True\n",
    )
    registry.adopt_declared_stages()
    assert registry.stage_field_names(["tools", "a"]) == ({"rows", "db"}, frozenset())
    assert registry.stage_field_names(["a", "b"]) == ({"rows"}, {"db"})


def test_a_conversation_scores_a_user_stage_on_each_scored_turn() -> None:
    _declare_in_module(
        "turns",
        "import pytest_evalcases as ev\n\n"
        '@ev.stage("mentions", reads=["must_mention"])\ndef mentions(case, trace):\n'
        "    return case.fields['must_mention'] in trace.answer\n",
    )
    registry.adopt_declared_stages()
    case = validate_case({"id": "c", "turns": ["hi", "and then?"], "must_mention": "order"})
    case = dataclasses.replace(case, extra=None, stage_fields={"must_mention": "order"})
    trace = {"answer": "", "turns": [{"answer": "order 1"}, {"answer": "nothing"}]}
    scores = score_case(_suite(stages=["mentions"]), case, trace, {}, ["mentions"], [])
    assert scores.failure_turn == 2 and scores.first_failure is not None
    assert scores.first_failure[1].reason == "mentions 0.00 < 0.50"
