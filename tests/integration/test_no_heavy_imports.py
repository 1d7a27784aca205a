"""A replay run imports none of deepeval, vcrpy (`vcr`), openai, aiohttp (the judges' HTTP
client) or opentelemetry (--eval-otel's export): they belong to live recording. Nor jsonschema
unless a suite runs the `schema` stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bytecode import bytecode_env
from evalhelpers import Project, make_case, suite_doc

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "deepeval",
    "vcr",
    "openai",
    "aiohttp",
    "jsonschema",
    # the reports' own (results.json, dashboard.html): only with --eval-report, or for the
    # bootstrap intervals of judges' agreement with people when calibration cases ran
    "numpy",
    "jinja2",
    # the frameworks the trace adapters read: the plugin itself never imports them
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "agents",
    "opentelemetry",
)

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
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "COV_"))
    }
    env.update(bytecode_env())
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stdout.splitlines()
    exit_line = next(line for line in lines if line.startswith("EXIT "))
    heavy_line = next(line for line in lines if line.startswith("HEAVY "))
    heavy = [] if heavy_line == "HEAVY -" else heavy_line.removeprefix("HEAVY ").split(",")
    return int(exit_line.split()[1]), heavy, proc.stdout + proc.stderr


def test_demo_replay_imports_no_heavy_module() -> None:
    """The demo's eval cases; its calibration cases print their judge's agreement with people
    with kappa's bootstrap interval, which loads numpy (about 0.1 s), as a report does."""
    args = ["-q", "-p", "no:deepeval", "-p", "no:cacheprovider", "--eval-otel"]
    code, heavy, text = run_probe(REPO, "cases/", "-m", "not calibration", *args)

    assert code == 0, text
    assert "per-stage summary" in text and "replayed" in text, text
    assert heavy == [], text

    code, heavy, text = run_probe(REPO, "cases/", *args)
    assert code == 0 and "judge calibration" in text, text
    assert heavy == ["numpy"], text


def test_replay_with_failures_and_errors_imports_no_heavy_module(project: Project) -> None:
    project.write_suite(
        suite_doc(
            cases=[
                make_case("alpha", "alpha beta"),
                make_case("gamma", "gamma delta", expected_tools=["lookup"]),
                make_case("epsilon", "epsilon zeta"),
                make_case("omega", "omega"),
            ]
        )
    )
    project.run("--live", "-k", "not omega")  # omega stays missing
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"][2].update(input="stale"))
    project.write_text("cases/broken.json", "{")

    code, heavy, text = run_probe(project.root, "-q", "-p", "no:cacheprovider")

    assert code == pytest.ExitCode.TESTS_FAILED, text
    assert "1 passed" in text and "1 failed" in text and "3 errors" in text, text
    assert heavy == [], text


def test_lexical_path_imports_neither_deepeval_nor_openai() -> None:
    code = """
import asyncio, json, sys
from pytest_evalcases.judges import JudgeInput, judge_version, make_judge
judge = make_judge("lexical")
data = JudgeInput("Where is it?", "It is in Paris.", "Paris.", ["Paris."])
for stage in ("faithfulness", "answer_accuracy", "context_completeness"):
    asyncio.run(judge.evaluate(stage, data, {}))
judge_version("openai:gpt-4o-mini")
make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})  # built lazily
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("deepeval", "openai"))))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == []


def test_using_an_adapter_imports_no_framework() -> None:
    probe = (
        "import sys\n"
        "from pytest_evalcases.adapters import from_openai_messages, fingerprint_of\n"
        "from_openai_messages([{'role': 'assistant', 'content': 'hi'}])\n"
        "fingerprint_of([{'type': 'function', 'function': {'name': 'f'}}])\n"
        "heavy = {'openai', 'langchain_core', 'langgraph', 'pydantic_ai', 'agents',\n"
        "         'opentelemetry'}\n"
        "print(sorted({name.split('.')[0] for name in sys.modules} & heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_importing_scrub_imports_no_vcrpy() -> None:
    code = (
        "import sys, pytest_evalcases.http, pytest_evalcases.http.scrub; "
        "print(sorted(m for m in sys.modules if m == 'vcr' or m.startswith('vcr.')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert proc.stdout.strip() == "[]"


def test_the_four_stage_modules_load_on_first_use_only() -> None:
    import subprocess

    probe = (
        "import sys, pytest_evalcases.domain.stages as s, pytest_evalcases.pytest_plugin.collect\n"
        "loaded = lambda: [n for n in ('graph', 'citations', 'answer_schema', 'rubric')\n"
        "                  if f'pytest_evalcases.domain.stages.{n}' in sys.modules]\n"
        "print(loaded(), 'jsonschema' in sys.modules, 'rubric' in s.STAGES)\n"
        "from pytest_evalcases.core.schema import validate_case\n"
        "from pytest_evalcases.core.suite_schema import Suite\n"
        "suite = Suite.model_validate({'name': 'x', 'stages': ['citations'], 'cases': []})\n"
        "s.STAGES['citations'].score(validate_case({'id': 'c', 'input': 'q'}), {}, suite, None)\n"
        "print(loaded(), s.STAGES['citations'].score.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "[] False True",
        "['citations'] pytest_evalcases.domain.stages.citations",  # the real function took over
    ]
