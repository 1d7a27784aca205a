"""`python -m pytest_evalcases init`, in process: what it writes for each framework, and that
it writes nothing when a file it would write exists or another pytest config would be shadowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.cli import main
from pytest_evalcases.cli.init import scaffold_files
from pytest_evalcases.cli.init_templates import FRAMEWORKS

COMMON = {
    "pytest.ini",
    "cases/assistant.json",
    "README.md",
    "my_agent/__init__.py",
    "my_agent/tools.py",
    "my_agent/stand_in.py",
    "my_agent/agent.py",
    "my_agent/system.py",
}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_init_writes_config_cases_agent_and_readme(
    framework: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--framework", framework, str(tmp_path / "proj")]) == 0
    written = {p.relative_to(tmp_path / "proj").as_posix() for p in tmp_path.rglob("*.*")}
    expected = COMMON | (set() if framework == "plain" else {"my_agent/model.py"})
    assert written == expected
    ini = (tmp_path / "proj/pytest.ini").read_text()
    assert "addopts = -p no:deepeval -p no:langsmith_plugin" in ini
    assert "eval_cases = cases" in ini and "eval_cassettes = cassettes" in ini
    assert "asyncio_default_fixture_loop_scope = function" in ini  # pytest-asyncio is in dev
    suite = json.loads((tmp_path / "proj/cases/assistant.json").read_text())
    assert suite["system"] == "my_agent.system:system" and suite["judge"] == "lexical"
    assert len(suite["cases"]) == 3
    out = capsys.readouterr().out
    assert f"wrote {len(expected)} files" in out and "pytest --live --eval-judge lexical" in out
    for name in expected:  # every Python file the scaffold writes compiles
        if name.endswith(".py"):
            compile((tmp_path / "proj" / name).read_text(), name, "exec")


def test_init_names_the_suite_after_name(tmp_path: Path) -> None:
    files = scaffold_files("plain", "support")
    assert "cases/support.json" in files and '"name": "support"' in files["cases/support.json"]
    assert main(["init", "--name", "bad name", str(tmp_path)]) == 2
    assert list(tmp_path.iterdir()) == []


def test_init_overwrites_nothing_and_names_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases/assistant.json").write_text("{}")
    (tmp_path / "README.md").write_text("mine")
    assert main(["init", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cases/assistant.json" in err and "README.md" in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["README.md", "assistant.json", "cases"]
    assert (tmp_path / "README.md").read_text() == "mine"


def test_init_refuses_to_shadow_a_pytest_config_in_pyproject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert main(["init", str(tmp_path)]) == 1
    assert "pyproject.toml ([tool.pytest.ini_options])" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]
