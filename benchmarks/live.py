"""Live-recording benchmark: N cases x judged stages against the loopback judge server.

    python benchmarks/live.py [N] [--latency L] [--concurrency C] [-r R] [--stages 5|8]
                              [--no-bytecode-cache] [--changed]     (defaults 200, 0.05, 16, 3, 5)

A script, not a test: it prints figures and exits 0 whether or not the target is met.

It writes a temporary project with N cases over a trivial system and five judged stages (eight
with `--stages 8`: every judged stage but rubric), starts
the stdlib OpenAI-compatible server from tests/judge_server.py on 127.0.0.1, and times the whole
command `pytest --live --eval-judge openai:bench --eval-concurrency C` in a subprocess, from
spawn to exit, through deepeval's real metric code. The ideal is calls x L / C (every request
waits L, C at a time, and nothing else costs anything: no interpreter start, no deepeval import).

One untimed warm-up run comes first (it also fills the bytecode cache, see below); then R rounds,
each timing a run with latency L and one with no latency (the fixed and CPU cost). The best of
each is reported, with the median. The server also notes when the first and last requests
arrived, so the report splits the wall time into start-up, the requests, and the finish.

The first stretch (spawn to the first judge request) is reported over every timed run (min,
median, max), and split with the times a small conftest.py in the project writes (the clock is
CLOCK_MONOTONIC, shared by the processes): the conftest's import (Python, pytest and every
plugin loaded), the end of collection, the start of the run loop (the live batch starts there).

Bytecode: as in replay.py, PYTHONDONTWRITEBYTECODE is dropped for the child and its bytecode is
cached in the temporary project (PYTHONPYCACHEPREFIX), as a normal install would cache it;
`--no-bytecode-cache` keeps the environment's setting.

`--changed`: every run changes every answer (a run number in it), so each case is compared with
its old recording, described and written. Without it the timed runs re-record unchanged cases,
which (since issue 9) are compared and left unwritten.

Targets (at N = 200, L = 50 ms, C = 16): wall within 1.2x of the ideal (issue 3 set 1.3x;
with five and with eight judged stages); the first judge request within 0.8 s of the spawn
(issue 19).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
# Every judged stage but rubric (which needs rubric items in each case).
ALL_STAGES = [
    "faithfulness",
    "contextual_recall",
    "contextual_precision",
    "contextual_relevancy",
    "answer_relevancy",
    "correctness",
    "context_completeness",
    "answer_accuracy",
]
STAGE_SETS = {len(STAGES): STAGES, len(ALL_STAGES): ALL_STAGES}
TARGET = 1.2  # 1.3 until issue 28
FIRST_REQUEST_TARGET = 0.8  # seconds from spawn to the first judge request

# Loaded by every run (it costs nothing measurable): notes when the phases before the first
# judge request end, for the breakdown of the first stretch.
CONFTEST = """
import os
import time

import pytest

_TIMES = [("conftest", time.monotonic())]


def pytest_collection_finish(session):
    _TIMES.append(("collected", time.monotonic()))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    _TIMES.append(("batch", time.monotonic()))
    return (yield)


def pytest_unconfigure(config):
    target = os.environ.get("EVALCASES_BENCH_TIMELINE")
    if target:
        with open(target, "w") as out:
            out.write(" ".join(f"{name}={at!r}" for name, at in _TIMES))
"""

SYSTEM = """
from pathlib import Path

RUN = Path(__file__).with_name("run.txt")


def run(case):
    topic = case["input"].rstrip("?")
    stamp = RUN.read_text() if RUN.exists() else ""
    return {"answer": f"{topic} is answered in chapter {case['n']}.{stamp}",
            "retrieved": ["d1"], "context": [f"{topic} is answered in chapter {case['n']}."]}
"""


def write_project(folder: Path, n: int, stages: list[str] = STAGES) -> None:
    (folder / "cases").mkdir()
    (folder / "benchsys.py").write_text(SYSTEM)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin -p no:cacheprovider\n"
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
        "stages": stages,
        "threshold": 0.0,
        "accept_partial": True,
        "cases": cases,
    }
    (folder / "cases" / "bench.json").write_text(json.dumps(suite))


@dataclass
class Run:
    wall: float  # spawn to exit
    first: float  # spawn to the first judge request
    last: float  # spawn to the last judge request
    requests: int
    peak_in_flight: int
    served_ms: float  # the server's mean time per request, latency included
    tail: str  # pytest's last line
    phases: dict[str, float]  # spawn to: conftest imported, collection done, batch start
    first_cpu: float | None  # the child's CPU time (every thread) at its first judge request
    cpu: float  # the child's CPU time in all


def child_env(server: JudgeServer, pycache: Path | None) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    }
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env.update(
        OPENAI_API_KEY="bench-key",
        OPENAI_BASE_URL=server.base_url,
        DEEPEVAL_TELEMETRY_OPT_OUT="1",
    )
    return env


def record(
    folder: Path, server: JudgeServer, concurrency: int, env: dict[str, str], stamp: str = ""
) -> Run:
    """One timed `pytest --live` run; the server's request log is cleared first. `stamp` is
    appended to every answer (a new one makes every recording change)."""
    (folder / "run.txt").write_text(stamp)
    timeline = folder / "timeline.txt"
    timeline.unlink(missing_ok=True)
    env = {**env, "EVALCASES_BENCH_TIMELINE": str(timeline)}
    server.requests.clear()
    server.max_in_flight = 0
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
    cpu_before = _children_cpu()
    first_cpu: list[float | None] = []  # the child's CPU time when its first request arrived
    enter = server._enter  # the server calls it for every request it receives

    def noting_enter(request: Any) -> Any:
        if not first_cpu:
            first_cpu.append(cpu_seconds(child.pid))
        return enter(request)

    server._enter = noting_enter  # type: ignore[method-assign]
    try:
        started, spawned = time.perf_counter(), time.monotonic()
        child = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stdout, stderr = child.communicate()
        wall = time.perf_counter() - started
    finally:
        del server._enter
    if child.returncode != 0:
        sys.exit(f"the live run failed ({child.returncode}):\n{stdout[-3000:]}\n{stderr[-3000:]}")
    received = sorted(request.received for request in server.requests)
    served = [request.answered - request.received for request in server.requests]
    phases = {}
    if timeline.exists():
        for entry in timeline.read_text().split():
            name, at = entry.split("=")
            phases[name] = float(at) - spawned
    return Run(
        wall,
        received[0] - spawned,
        received[-1] - spawned,
        len(received),
        server.max_in_flight,
        1000 * statistics.mean(served),
        stdout.strip().splitlines()[-1],
        phases,
        first_cpu[0] if first_cpu else None,
        _children_cpu() - cpu_before,
    )


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system, every thread) process `pid` has used so far; None where
    there is no /proc (not Linux). Ticks of 10 ms."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """User + system time of the children waited for so far (one child runs at a time)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best_and_median(runs: list[Run]) -> tuple[Run, float]:
    return min(runs, key=lambda run: run.wall), statistics.median(run.wall for run in runs)


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
        f"max {max(values):.2f}, {len(values)} runs)"
    )


def first_stretch(runs: list[Run]) -> str:
    """Where the time to the first judge request went: the median of each phase's length."""
    timed = [run for run in runs if {"conftest", "collected", "batch"} <= run.phases.keys()]
    if not timed:
        return "no timeline (conftest.py not loaded)"

    def median(length: Any) -> float:
        return statistics.median(length(run) for run in timed)

    start = median(lambda run: run.phases["conftest"])
    collect = median(lambda run: run.phases["collected"] - run.phases["conftest"])
    to_batch = median(lambda run: run.phases["batch"] - run.phases["collected"])
    to_first = median(lambda run: run.first - run.phases["batch"])
    return (
        f"{start:.2f} s Python, pytest and plugins, {collect:.2f} s configure and "
        f"collection, {to_batch:.2f} s to the run loop, {to_first:.2f} s from the batch's "
        f"start to the first request (medians)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("-r", "--repeats", type=int, default=3)
    parser.add_argument(
        "--stages",
        type=int,
        choices=sorted(STAGE_SETS),
        default=len(STAGES),
        help="judged stages per case: 5 (the default) or 8 (all but rubric)",
    )
    parser.add_argument("--no-bytecode-cache", action="store_true")
    parser.add_argument(
        "--changed",
        action="store_true",
        help="change every answer in every run (each case is written)",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stages = STAGE_SETS[args.stages]
        write_project(folder, args.n, stages)
        server = JudgeServer().start()
        try:
            env = child_env(server, None if args.no_bytecode_cache else folder / "pycache")
            record(folder, server, args.concurrency, env)  # warm-up, untimed
            timed: dict[float, list[Run]] = {args.latency: [], 0.0: []}
            runs = 0
            for _ in range(args.repeats):
                for latency in timed:
                    server.latency = latency
                    runs += 1
                    stamp = f" Run {runs}." if args.changed else ""
                    timed[latency].append(record(folder, server, args.concurrency, env, stamp))
        finally:
            server.stop()

    run, median = best_and_median(timed[args.latency])
    fixed_runs = timed[0.0]
    fixed, fixed_median = best_and_median(fixed_runs)
    ideal = run.requests * args.latency / args.concurrency
    ratio = run.wall / ideal
    firsts = [r.first for runs in timed.values() for r in runs]
    first_median = statistics.median(firsts)
    print(
        f"N={args.n} cases x {len(stages)} judged stages, latency {args.latency * 1000:.0f} ms, "
        f"concurrency {args.concurrency}, best of {args.repeats} "
        f"(bytecode {'as in the environment' if args.no_bytecode_cache else 'cached'}"
        f"{'; every answer changed in every run' if args.changed else ''})"
    )
    print(f"  pytest said:          {run.tail}")
    print(
        f"  judge requests:       {run.requests} (max in flight {run.peak_in_flight}, "
        f"limit {args.concurrency})"
    )
    print(f"  wall:                 {run.wall:.2f} s (median {median:.2f} s)")
    print(f"  ideal calls*L/C:      {ideal:.2f} s")
    print(
        f"  ratio wall/ideal:     {ratio:.2f}x, median {median / ideal:.2f}x (target <= "
        f"{TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})"
    )
    print(
        f"  first judge request:  {spread(firsts)} after the spawn (target <= "
        f"{FIRST_REQUEST_TARGET} s: {'met' if first_median <= FIRST_REQUEST_TARGET else 'NOT met'}"
        f" on the median)"
    )
    print(f"    of which:           {first_stretch([r for runs in timed.values() for r in runs])}")
    cpu_first = [r.first_cpu for runs in timed.values() for r in runs if r.first_cpu is not None]
    if cpu_first:  # steadier than wall time when other processes share the machine
        print(f"    CPU by then:        {spread(cpu_first)} of the child's CPU time (all threads)")
    print(
        f"  where the wall went:  {run.first:.2f} s to the first request (interpreter, pytest, "
        f"collection), {run.last - run.first:.2f} s of requests, "
        f"{run.wall - run.last:.2f} s from the last request to exit"
    )
    print(
        f"  requests / ideal:     {(run.last - run.first + args.latency) / ideal:.2f}x "
        f"(the server took {run.served_ms:.1f} ms a request on average)"
    )
    print(f"  no latency (L=0):     {fixed.wall:.2f} s (median {fixed_median:.2f} s)")
    cpu, fixed_cpu = (statistics.median(r.cpu for r in runs) for runs in timed.values())
    print(f"  child CPU time:       median {cpu:.2f} s a run ({fixed_cpu:.2f} s with L=0)")
    import pytest_evalcases  # the child imports the same one (same sys.path, PYTHONPATH)

    print(
        f"  measured:             {Path(pytest_evalcases.__file__).parent}; load average "
        f"(1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, "
        f"{os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
