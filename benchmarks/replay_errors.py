"""Replay benchmark for a red gate: every case stale, or every recording missing.

    python benchmarks/replay_errors.py [N] [-r R]

A script, not a test: it prints figures and exits 0 whether or not the target is met.

In a fresh temporary project it writes one suite of N cases over a trivial system, records them
with `pytest --live` (untimed), then times `python -m pytest -q cases/`, best of R rounds, three
ways: every recording current (the passing replay), every case stale (the system's fingerprint
changed), every recording missing (the cassettes folder moved away).

Target (issue 14): a replay where every case is missing or stale costs at most 2x a passing one.
pytest builds a full traceback for each error of a setup phase unless told otherwise; before the
fix, 1,000 missing or stale recordings took 82 s instead of ~0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
TARGET = 2.0

PYTEST_INI = """\
[pytest]
addopts = -p no:deepeval -p no:langsmith_plugin -p no:cacheprovider
"""

SYSTEM = """\
import json
from pathlib import Path

PROMPT = Path(__file__).with_name("prompt.txt")


class System:
    def fingerprint(self):
        return {"prompt": PROMPT.read_text()}

    def run(self, case):
        return {"answer": case["input"], "tool_calls": [{"name": "search", "args": {}}],
                "retrieved": ["d1"], "context": ["..."]}


system = System()
"""


def write_project(root: Path, n: int) -> None:
    (root / "pytest.ini").write_text(PYTEST_INI)
    (root / "benchsys.py").write_text(SYSTEM)
    (root / "prompt.txt").write_text("answer briefly")
    cases = [
        {
            "id": f"c{i:05d}",
            "input": f"question {i}",
            "expected_tools": ["search"],
            "expected_docs": ["d1"],
        }
        for i in range(n)
    ]
    suite = {
        "name": "bench",
        "system": "benchsys:system",
        "stages": ["tools", "retrieval"],
        "cases": cases,
    }
    (root / "cases").mkdir()
    (root / "cases" / "bench.json").write_text(json.dumps(suite))


def timed(root: Path, expect: str, *args: str) -> float:
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(root / ".pycache"))
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", *args, "cases/"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if expect not in last:
        sys.exit(f"expected {expect!r} in the last line, got {last!r}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=1000)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="evalcases-replay-errors-"))
    write_project(root, args.n)
    timed(root, "passed", "--live")
    passing = f"{args.n} passed"
    errors = f"{args.n} errors"

    def passing_run() -> float:
        return timed(root, passing)

    def stale_run() -> float:
        (root / "prompt.txt").write_text("answer at length")
        try:
            return timed(root, errors)
        finally:
            (root / "prompt.txt").write_text("answer briefly")

    def missing_run() -> float:
        (root / "cassettes").rename(root / "cassettes.away")
        try:
            return timed(root, errors)
        finally:
            (root / "cassettes.away").rename(root / "cassettes")

    runs = {"passing": passing_run, "stale": stale_run, "missing": missing_run}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():  # warm-up: bytecode, page cache
        run()
    for round_index in range(args.rounds):
        order = list(runs.items())
        for name, run in order[round_index % 3 :] + order[: round_index % 3]:
            times[name].append(run())
    best = {name: min(values) for name, values in times.items()}
    print(f"{args.n} cases, best of {args.rounds}:")
    for name, values in times.items():
        ratio = best[name] / best["passing"]
        print(
            f"  {name:8} {best[name]:6.2f} s  {ratio:5.2f}x the passing replay  "
            f"(rounds: {', '.join(f'{v:.2f}' for v in values)})"
        )
    worst = max(best["stale"], best["missing"]) / best["passing"]
    print(
        f"target: every case stale or missing <= {TARGET:.0f}x a passing replay: "
        f"{'MET' if worst <= TARGET else 'NOT MET'} ({worst:.2f}x)"
    )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
