"""First contact (issue 20, part 5): a typo in a case field or a stage is named with the field it
was meant to be; `-k <suite name>` selects a suite; `pytest --markers` lists the categories;
--replay-http without vcrpy says what to install, once; a replay with deepeval's or langsmith's
pytest plugin loaded says how to switch them off."""

from __future__ import annotations

import sys

import pytest
from evalhelpers import Project, error_block, make_case, output, suite_doc

from pytest_evalcases.pytest_plugin.settings import noisy_plugins_line, read_settings


def test_a_case_field_near_a_known_one_is_an_error_naming_it(project: Project) -> None:
    project.write_suite(
        suite_doc(
            cases=[
                make_case("typo", "alpha beta", expected_doc=["alpha"]),
                make_case("input-field", "gamma delta", customer_tier="gold"),
            ]
        )
    )
    result = project.run("--live", "-q")
    block = error_block(result, "typo")
    assert "cases[0].expected_doc: not a case field; did you mean 'expected_docs'?" in block, (
        output(result)
    )
    # a field far from every known one still reaches the system: that case records and passes
    assert "input-field" not in output(result).split("short test summary")[-1], output(result)
    assert project.cassette_path("suite", "input-field").exists()


def test_an_unknown_stage_names_the_stage_it_is_close_to(project: Project) -> None:
    project.write_suite(suite_doc(stages=["tools", "retreival"]))
    result = project.run("-q")
    assert "unknown stage(s) retreival (did you mean 'retrieval'?)" in output(result)


def test_k_with_a_suite_name_selects_its_cases(project: Project) -> None:
    # file names that do not hold the suite names: -k matched file names before
    project.write_suite(suite_doc("billing", cases=[make_case("b1", "alpha beta")]), "cases/a.json")
    project.write_suite(
        suite_doc("shipping", cases=[make_case("s1", "gamma delta"), make_case("s2", "alpha x")]),
        "cases/b.json",
    )
    assert project.run("--live", "-q").ret == pytest.ExitCode.OK
    result = project.run("-q", "-k", "shipping")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert "2 passed, 1 deselected" in output(result)


def test_markers_lists_the_case_files_categories_and_marks(project: Project) -> None:
    project.write_suite(suite_doc())  # categories storage, sync; mark smoke
    result = project.run("--markers")
    listed = output(result)
    for name in ("storage", "sync", "smoke"):
        assert f"@pytest.mark.{name}: eval case category or mark" in listed, listed


def test_replay_http_without_vcrpy_is_one_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "vcr", None)  # importlib finds no vcrpy
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n")
    result = pytester.runpytest_inprocess("--replay-http")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines == [
        "ERROR: --replay-http needs vcrpy, which records and serves each case's HTTP: pip install "
        '"pytest-evalcases[live]"',
        "",
    ] or any('pip install "pytest-evalcases[live]"' in line for line in result.stderr.lines)


def test_a_replay_with_deepevals_plugin_loaded_says_how_to_switch_it_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.mkdir("cases")
    # No plugin loads by itself: ours is named, deepeval's stands in below (the real one would
    # import deepeval into this process and write .deepeval/).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    config = pytester.parseconfigure("-p", "pytest_evalcases.pytest_plugin.hooks")
    settings = read_settings(config)
    assert noisy_plugins_line(config, settings) is None
    config.pluginmanager.register(object(), "deepeval")  # as pytest registers its entry point
    line = noisy_plugins_line(config, settings)
    assert line is not None
    assert "deepeval loaded" in line and "-p no:deepeval -p no:langsmith_plugin" in line
