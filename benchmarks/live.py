"""Live-recording benchmark: N cases x judged stages against the loopback judge server.

    python benchmarks/live.py [N] [--latency L] [--concurrency C]     (defaults 200, 0.05, 16)

A script, not a test: it prints figures and exits 0 whether or not the target is met.

It writes a temporary project with N cases over a trivial system and five judged stages, starts
the stdlib OpenAI-compatible server from tests/judge_server.py on 127.0.0.1 with L seconds of
latency per request, and times `pytest --live --eval-judge openai:bench --eval-concurrency C`
in a subprocess. The ideal is calls x L / C (every request waits L, C at a time, nothing else
costs anything). A second run with L = 0 measures the fixed overhead (interpreter, pytest,
importing deepeval, the metrics' own work), reported so the ratio can be read both ways.

Target (issue 3, at N = 200, L = 50 ms, C = 16): wall within 1.3x of the ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from judge_server import JudgeServer  # noqa: E402

STAGES = [
    "faithfulness",
    "contextual_recall",
    "answer_relevancy",
    "context_completeness",
    "answer_accuracy",
]
TARGET = 1.3

SYSTEM = """
def run(case):
    topic = case["input"].rstrip("?")
    return {"answer": f"{topic} is answered in chapter {case['n']}.",
            "retrieved": ["d1"], "context": [f"{topic} is answered in chapter {case['n']}."]}
"""


def write_project(folder: Path, n: int) -> None:
    (folder / "cases").mkdir()
    (folder / "benchsys.py").write_text(SYSTEM)
    (folder / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\n"
        "asyncio_default_fixture_loop_scope = function\n"
    )
    cases = [
        {
            "id": f"c{i}",
            "input": f"Where is topic {i} covered?",
            "n": i,
            "reference": f"Topic {i} is answered in chapter {i}.",
        }
        for i in range(n)
    ]
    suite = {
        "name": "bench",
        "system": "benchsys:run",
        "stages": STAGES,
        "threshold": 0.0,
        "accept_partial": True,
        "cases": cases,
    }
    (folder / "cases" / "bench.json").write_text(json.dumps(suite))


def record(folder: Path, server: JudgeServer, concurrency: int) -> tuple[float, str]:
    env = dict(
        os.environ,
        OPENAI_API_KEY="bench-key",
        OPENAI_BASE_URL=server.base_url,
        DEEPEVAL_TELEMETRY_OPT_OUT="1",
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--live",
        "--eval-judge",
        "openai:bench",
        "--eval-concurrency",
        str(concurrency),
        "cases/",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"the live run failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return wall, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    rows = []
    for latency in (args.latency, 0.0):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_project(folder, args.n)
            server = JudgeServer(latency=latency).start()
            try:
                wall, tail = record(folder, server, args.concurrency)
            finally:
                server.stop()
            rows.append((latency, wall, len(server.requests), server.max_in_flight, tail))

    (latency, wall, calls, peak, tail), (_, fixed, _, _, _) = rows
    ideal = calls * latency / args.concurrency
    print(
        f"N={args.n} cases x {len(STAGES)} judged stages, latency {latency * 1000:.0f} ms, "
        f"concurrency {args.concurrency}"
    )
    print(f"  pytest said:          {tail}")
    print(f"  judge requests:       {calls} (max in flight {peak}, limit {args.concurrency})")
    print(f"  wall:                 {wall:.2f} s")
    print(f"  ideal calls*L/C:      {ideal:.2f} s")
    print(
        f"  ratio wall/ideal:     {wall / ideal:.2f}x (target <= {TARGET}x: "
        f"{'met' if wall / ideal <= TARGET else 'NOT met'})"
    )
    print(
        f"  fixed overhead (L=0): {fixed:.2f} s; "
        f"(wall - fixed)/ideal = {(wall - fixed) / ideal:.2f}x"
    )


if __name__ == "__main__":
    main()
