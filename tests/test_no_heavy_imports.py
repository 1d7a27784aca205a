"""A replay run imports none of deepeval, vcrpy (`vcr`), openai, aiohttp (the judges' HTTP
client) or opentelemetry (--eval-otel's export): they belong to live recording. Nor jsonschema
unless a suite runs the `schema` stage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from evalhelpers import Project, make_case, suite_doc

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("deepeval", "vcr", "openai", "aiohttp", "jsonschema",
         # the reports' own (results.json, dashboard.html): only with --eval-report
         "numpy", "jinja2",
         # the frameworks the trace adapters read: the plugin itself never imports them
         "langchain_core", "langgraph", "pydantic_ai", "agents", "opentelemetry")

# Runs pytest in this interpreter, then reports the heavy top-level modules it imported.
PROBE = f"""
import sys
import pytest

code = pytest.main(sys.argv[1:])
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
print("EXIT", int(code))
print("HEAVY", ",".join(heavy) or "-")
"""


def run_probe(cwd: Path, *args: str) -> tuple[int, list[str], str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYTEST_", "COV_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    exit_line = next(line for line in lines if line.startswith("EXIT "))
    heavy_line = next(line for line in lines if line.startswith("HEAVY "))
    heavy = [] if heavy_line == "HEAVY -" else heavy_line.removeprefix("HEAVY ").split(",")
    return int(exit_line.split()[1]), heavy, proc.stdout + proc.stderr


def test_demo_replay_imports_no_heavy_module() -> None:
    code, heavy, text = run_probe(REPO, "cases/", "-q", "-p", "no:deepeval",
                                  "-p", "no:cacheprovider", "--eval-otel")

    assert code == 0, text
    assert "per-stage summary" in text and "replayed" in text, text
    assert heavy == [], text


def test_replay_with_failures_and_errors_imports_no_heavy_module(project: Project) -> None:
    project.write_suite(suite_doc(cases=[
        make_case("alpha", "alpha beta"),
        make_case("gamma", "gamma delta", expected_tools=["lookup"]),
        make_case("epsilon", "epsilon zeta"),
        make_case("omega", "omega"),
    ]))
    project.run("--live", "-k", "not omega")  # omega stays missing
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"][2].update(input="stale"))
    project.write_text("cases/broken.json", "{")

    code, heavy, text = run_probe(project.root, "-q", "-p", "no:cacheprovider")

    assert code == pytest.ExitCode.TESTS_FAILED, text
    assert "1 passed" in text and "1 failed" in text and "3 errors" in text, text
    assert heavy == [], text
