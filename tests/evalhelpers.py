"""Shared pieces of the pytester end-to-end tests of the spine.

Each test builds a tiny project: a `pytest.ini`, a deterministic system module `mysys.py`, an
input file and case files under `cases/`. The system computes its trace from `case["input"]`;
`behaviour.json` (read on every call) lets a test change what it does between runs, and every
`setup()` / `run()` call is appended to `calls.log` so a test can see which cases really ran.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bytecode import bytecode_env
from inprocess import run_pytest_in_process
from judge_server import JUDGE_SETTINGS

INI = (
    "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
    "asyncio_default_fixture_loop_scope = function\n"
)

# The terminal width of every pytest run the tests start (the summary's per-case table
# fits it): wide enough that the tables which parse it find one line a case with full stage
# names; tests of the layout set their own.
TEST_COLUMNS = "200"

SYSTEM_SOURCE = '''\
"""Test system: deterministic, steered by behaviour.json, logging every call to calls.log."""
import asyncio
import json
import os
import signal
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def behaviour():
    path = ROOT / "behaviour.json"
    return json.loads(path.read_text()) if path.exists() else {}


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


def trace_for(case):
    steer = behaviour()
    if case["id"] in steer.get("raise", []):
        raise RuntimeError(f"system exploded on {case['id']}")
    if case["id"] in steer.get("interrupt", []):
        os.kill(os.getpid(), signal.SIGINT)  # as if the user pressed Ctrl-C during this case
        time.sleep(1)
    if case["id"] in steer.get("exit", []):
        raise SystemExit(3)
    if case["id"] in steer.get("hang", []):
        log(f"hang {case['id']}")
        time.sleep(600)
    if case["id"] in steer.get("not_json", []):
        return {"answer": "x", "tool_outputs": [{"tool": "search", "content": b"\\xff"}]}
    if case["id"] in steer.get("malformed", []):
        return {"answer": 42, "tool_calls": [{"args": {}}], "retrieved": "not-a-list"}
    text = case["input"]
    return {
        "answer": text + steer.get("suffix", ""),
        "tool_calls": [{"name": "search", "args": {"query": text}}],
        "tool_outputs": [{"tool": "search", "content": text}],
        "retrieved": text.split(),
        "context": [text],
        "usage": {"prompt_tokens": len(text.split()), "completion_tokens": 1, "cost_usd": 0.0},
        "latency_ms": 1.0,
    }


class System:
    def __init__(self, name="system"):
        self.name = name

    def fingerprint(self):
        steer = behaviour()
        default = steer.get("fingerprint", {"prompt": "answer briefly", "model": "echo-1"})
        return steer.get("fingerprints", {}).get(self.name, default)

    def setup(self, suite):
        name = getattr(suite, "name", None) or suite["name"]
        log(f"setup {name}")
        if behaviour().get("setup_raises"):
            raise RuntimeError("setup exploded")

    def run(self, case):
        log(f"run {case['id']}")
        return trace_for(case)


class AsyncSystem(System):
    async def run(self, case):
        asyncio.get_running_loop()  # raises when not called inside an event loop
        await asyncio.sleep(0)
        log(f"arun {case['id']}")
        return trace_for(case)


def plain_run(case):
    log(f"plain {case['id']}")
    return trace_for(case)


system = System()
other_system = System("other_system")
async_system = AsyncSystem("async_system")
# Separate instances, so a test can change one suite's fingerprint ("fingerprints": {name: ...}).
fp_prompt, fp_model, fp_added = System("fp_prompt"), System("fp_model"), System("fp_added")
'''

# A second system, for tests that need two suites with separate set-up and fingerprints.
OTHER_SYSTEM_SOURCE = """\
from mysys import System, log


class Second(System):
    def setup(self, suite):
        log(f"setup2 {suite.name}")


system = Second("second")
"""


def make_case(case_id: str, text: str, **fields: Any) -> dict[str, Any]:
    """A case that passes every stage against the test system unless `fields` say otherwise."""
    case: dict[str, Any] = {
        "id": case_id,
        "input": text,
        "expected_tools": ["search"],
        "expected_docs": [text.split()[0]],
        "reference": text,
    }
    case.update(fields)
    return case


def default_cases() -> list[dict[str, Any]]:
    return [
        make_case("alpha", "alpha beta", category="storage", marks=["smoke"]),
        make_case("gamma", "gamma delta", category="sync"),
        make_case("epsilon", "epsilon zeta", category="sync"),
    ]


def suite_doc(name: str = "suite", cases: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": name,
        "system": "mysys:system",
        "inputs": ["data/kb.txt"],
        "stages": ["tools", "retrieval", "exact_match"],
        "cases": default_cases() if cases is None else cases,
    }
    doc.update(fields)
    return doc


def run_pytest(root: Path, *args: str) -> pytest.RunResult:
    """pytest with `root` as working directory, in this process (for module-scoped projects and
    the examples; see inprocess.py)."""
    return run_pytest_in_process(root, *args, env={"COLUMNS": TEST_COLUMNS})


# A system that writes down the fields each case handed it (the peer-name tests' witness).
SPY_SYSTEM = """
import json, pathlib

def run(case):
    with open(pathlib.Path(__file__).parent / "seen.jsonl", "a") as seen:
        seen.write(json.dumps(sorted(case)) + "\\n")
    return {"answer": case["input"], "tool_calls": [], "retrieved": [], "context": []}
"""


def seen_fields(project: Project) -> list[list[str]]:
    """The field names of each case SPY_SYSTEM was handed, in call order."""
    path = project.root / "seen.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Project:
    """A tiny pytest-evalcases project rooted at `root`."""

    def __init__(
        self,
        root: Path,
        runner: Callable[..., pytest.RunResult] | None = None,
        subprocess_runner: Callable[..., pytest.RunResult] | None = None,
    ) -> None:
        self.root = root
        self._runner = runner
        self._subprocess_runner = subprocess_runner

    # ---- writing ----------------------------------------------------------------------------
    def write_base(self, ini: str = INI) -> Project:
        (self.root / "pytest.ini").write_text(ini)
        (self.root / "mysys.py").write_text(SYSTEM_SOURCE)
        (self.root / "othersys.py").write_text(OTHER_SYSTEM_SOURCE)
        (self.root / "data").mkdir(exist_ok=True)
        (self.root / "data" / "kb.txt").write_text("alpha beta gamma delta epsilon zeta\n")
        return self

    def write_suite(self, doc: dict[str, Any], file: str | None = None) -> Path:
        path = self.root / (file or f"cases/{doc['name']}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1))
        return path

    def write_text(self, relpath: str, text: str | bytes) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path

    def edit_suite(self, file: str, edit: Callable[[dict[str, Any]], Any]) -> None:
        path = self.root / file
        doc = json.loads(path.read_text())
        edit(doc)
        path.write_text(json.dumps(doc, indent=1))

    def steer(self, **behaviour: Any) -> None:
        (self.root / "behaviour.json").write_text(json.dumps(behaviour))

    # ---- running ----------------------------------------------------------------------------
    def run(self, *args: str) -> pytest.RunResult:
        if self._runner is not None:
            return self._runner(*args)
        return run_pytest(self.root, *args)

    def run_in_subprocess(self, *args: str) -> pytest.RunResult:
        """One run in a fresh interpreter, where the other runs of the test are in its process:
        the run that must be a process of its own (a signal, `os._exit`, asyncio's noise as an
        interpreter ends). The `project` fixture's projects have one."""
        assert self._subprocess_runner is not None, "a project of the `project` fixture has one"
        return self._subprocess_runner(*args)

    # ---- reading ----------------------------------------------------------------------------
    def cassette_path(self, suite: str, case_id: str) -> Path:
        return self.root / "cassettes" / suite / f"{case_id}.json"

    def cassette(self, suite: str, case_id: str) -> dict[str, Any]:
        return json.loads(self.cassette_path(suite, case_id).read_text())

    def files(self, folder: str = "cassettes", http: bool = False) -> dict[str, tuple[bytes, int]]:
        """Every file under `folder`: relative path -> (content, mtime_ns). The HTTP recordings
        beside the cassettes (`*.http.json`) only with `http`."""
        base = self.root / folder
        if not base.exists():
            return {}
        return {
            p.relative_to(self.root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(base.rglob("*"))
            if p.is_file() and (http or not p.name.endswith(".http.json"))
        }

    def all_files(self) -> set[str]:
        """Every file of the project except pytest's own temp and cache folders and the output
        files pytester writes."""
        skip = (".basetemp", ".pytest_cache", "__pycache__")
        return {
            rel.as_posix()
            for rel in (p.relative_to(self.root) for p in self.root.rglob("*") if p.is_file())
            if rel.as_posix() not in ("stdout", "stderr")
            and not any(part in skip or part.startswith("runpytest-") for part in rel.parts)
        }

    def calls(self) -> list[str]:
        path = self.root / "calls.log"
        return path.read_text().splitlines() if path.exists() else []

    def clear_calls(self) -> None:
        (self.root / "calls.log").unlink(missing_ok=True)

    def copy_from(self, template: Path) -> None:
        shutil.copytree(
            template,
            self.root,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(".basetemp", ".pytest_cache"),
        )


_FINAL_LINE = re.compile(r"^\d+ (passed|failed|skipped|errors?|xfailed|xpassed|deselected)\b.* in ")


def summary_section(result: pytest.RunResult) -> list[str]:
    """The lines of the `per-stage summary` section (without its title line)."""
    lines = result.outlines
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ per-stage summary =+", line)]
    assert len(starts) == 1, "expected one 'per-stage summary' section:\n" + "\n".join(lines)
    section = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("=") or _FINAL_LINE.match(line):
            break
        section.append(line)
    return section


def changes_section(result: pytest.RunResult) -> list[str]:
    """The lines of a live run's `recording changes` section (without its title line)."""
    lines = result.outlines
    starts = [
        i
        for i, line in enumerate(lines)
        if re.fullmatch(r"=+ recording changes( \(dry run\))? =+", line)
    ]
    assert len(starts) == 1, "expected one 'recording changes' section:\n" + "\n".join(lines)
    section = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith(("=", "eval reports: ")) or _FINAL_LINE.match(line):
            break
        section.append(line)
    return section


def output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def assert_not_aborted(result: pytest.RunResult) -> None:
    """The run went through every item: no collection error, internal error or interruption."""
    text = output(result)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text
    for marker in ("error during collection", "INTERNALERROR", "Interrupted", "ERROR collecting"):
        assert marker not in text, f"{marker!r} in output:\n{text}"


def error_block(result: pytest.RunResult, nodeid_part: str) -> str:
    """The text of the `ERROR at setup of ...` / `FAILED` block whose title names `nodeid_part`
    (`ERROR at call of ...`: a case that could not be evaluated, e.g. a judge error)."""
    lines = result.outlines
    title = re.compile(r"^_{3,} (ERROR at (?:setup|call|teardown) of )?(.*?) _{3,}$")
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        match = title.match(line)
        if match:
            current = blocks.setdefault(match.group(2), [])
            continue
        if line.startswith("====") and current is not None:
            current = None
            continue
        if current is not None:
            current.append(line)
    found = [name for name in blocks if nodeid_part in name]
    assert found, f"no error block for {nodeid_part!r} among {list(blocks)}:\n" + "\n".join(lines)
    return "\n".join(line for name in found for line in blocks[name])


def record_template(root: Path, *suites: dict[str, Any]) -> Project:
    """Write a project under `root` and record it with --live (for module-scoped templates)."""
    project = Project(root).write_base()
    for doc in suites or (suite_doc(),):
        project.write_suite(doc)
    result = project.run("--live", "-p", "no:cacheprovider")
    assert_not_aborted(result)
    project.clear_calls()
    return project


# Variables a judged run may read; `run_pytest_env` starts from none of them, so a test states
# exactly which key and endpoint (if any) the run sees.
JUDGE_ENV_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "OLLAMA_HOST",
    "OPENAI_COST_PER_INPUT_TOKEN",
    "OPENAI_COST_PER_OUTPUT_TOKEN",
    *JUDGE_SETTINGS,
)

# Runs pytest in a fresh interpreter, then prints which heavy top-level modules it imported.
_HEAVY_PROBE = """
import sys
import pytest

code = pytest.main(sys.argv[1:])
heavy = {"deepeval", "openai", "vcr", "aiohttp"} & {name.split(".")[0] for name in sys.modules}
heavy = sorted(heavy)
sys.stdout.flush()
print("HEAVY-MODULES", ",".join(heavy) or "-")
raise SystemExit(int(code))
"""


def run_pytest_env(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[pytest.RunResult, list[str]]:
    """pytest in a subprocess under `root`, with the judge variables of JUDGE_ENV_VARS unset and
    then `env` applied. Returns the result (its last output line is the probe's) and the heavy
    modules (deepeval, openai, vcr) the run imported."""
    base = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "COV_")) and name not in JUDGE_ENV_VARS
    }
    base.update(bytecode_env())
    base["COLUMNS"] = TEST_COLUMNS
    base.update(env or {})
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _HEAVY_PROBE, f"--basetemp={root / '.basetemp'}", *args],
        cwd=root,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    lines = proc.stdout.splitlines()
    probe = [line for line in lines if line.startswith("HEAVY-MODULES ")]
    heavy = probe[-1].removeprefix("HEAVY-MODULES ").split(",") if probe else []
    result = pytest.RunResult(
        proc.returncode,
        [line for line in lines if not line.startswith("HEAVY-MODULES ")],
        proc.stderr.splitlines(),
        time.perf_counter() - started,
    )
    return result, [name for name in heavy if name != "-"]


def run_pytest_env_in_process(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> pytest.RunResult:
    """pytest under `root` in this process (see inprocess.py), with the judge variables of
    JUDGE_ENV_VARS unset and then `env` applied: `run_pytest_env` for a run whose imports do
    not matter."""
    return run_pytest_in_process(
        root, *args, env={"COLUMNS": TEST_COLUMNS, **(env or {})}, unset=JUDGE_ENV_VARS
    )


def run_live_openai(project: Project, base_url: str, *args: str, **env: str) -> pytest.RunResult:
    """`pytest --live --eval-judge openai:gpt-4o-mini` in this process, against the
    OpenAI-compatible server at `base_url` with a test key (see `run_pytest_env_in_process`)."""
    return run_pytest_env_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        "--live",
        "--eval-judge",
        "openai:gpt-4o-mini",
        *args,
        env={"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": base_url, **env},
    )


def git(root: Path, *args: str) -> str:
    """A git command in `root` as a test's author (no global configuration needed); its
    output, unstripped (`status --porcelain` lines start with a space)."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
