"""Recording under a provider's rate limit: N cases x seven judged stages against the loopback
judge server limited to RPM requests a minute.

    python benchmarks/ratelimit.py [N] [--rpm RPM] [--latency L] [--concurrency C] [-r R]
                                   [--no-limit-headers] [--bucket [--whole-seconds]] [--eval-rpm N]
                                                            (defaults 100, 3000, 0.05, 16, 1)

A script, not a test: it prints figures and exits 0 whether or not the targets are met.

The server (tests/judge_server.py with a `RateLimit`) refills RPM/60 requests a second and holds
at most one second's worth; the excess is refused at once with 429 and a Retry-After in whole
seconds (at least 1), and every reply announces the limit in x-ratelimit-limit-requests /
-remaining-requests / -reset-requests, as OpenAI does (`--no-limit-headers`: it announces
nothing, so the client only has the 429s and their Retry-After to go by). `--bucket`: the same
token bucket as many proxies and self-hosted servers run it: no x-ratelimit-* headers, and a
Retry-After of the exact fractional seconds until the next token ("0.013"; `--whole-seconds`:
rounded up to whole seconds, at least 1, as the default server does). Admitted requests
take L seconds. The command timed, from spawn to exit, is
`pytest --live --eval-judge openai:bench --eval-concurrency C cases/` over N cases with
faithfulness, contextual_recall, contextual_precision, answer_relevancy, correctness,
context_completeness and answer_accuracy (14 judge requests a case, and one GEval steps request).

Figures: cases lost (not recorded: a judge error or any other failure), the wall time against
served requests / (RPM/60) (the least time the limit allows), the same from the first request
on (the pacing alone: pytest's start-up, 2-6 s on a busy machine, left out), and the share of
rate-limited replies among all requests. Targets (issues 15 and 30, at N = 100, RPM = 3000,
L = 50 ms, C = 16, on every server): 0 cases lost, wall <= 1.25x, rate-limited replies <= 10%
of requests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from judge_server import JudgeServer, RateLimit  # noqa: E402
from live import child_env, write_project  # noqa: E402

STAGES = [
    "faithfulness",
    "contextual_recall",
    "contextual_precision",
    "answer_relevancy",
    "correctness",
    "context_completeness",
    "answer_accuracy",
]
TARGET_RATIO, TARGET_LIMITED = 1.25, 0.10


@dataclass
class Run:
    wall: float
    recorded: int
    served: int  # requests answered 200
    refused: int  # 429s
    total: int
    first: float  # spawn to the first request
    tail: str  # pytest's last line
    rate_limited_line: str  # the live summary's "judge rate-limited: ..." line, if any


def record(folder: Path, server: JudgeServer, args: argparse.Namespace, env: dict[str, str]) -> Run:
    server.requests.clear()
    server.rate_limit = RateLimit(
        args.rpm,
        announce=not (args.no_limit_headers or args.bucket),
        fractional=args.bucket and not args.whole_seconds,
    )
    shutil.rmtree(folder / "cassettes", ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--live",
        "--eval-judge",
        "openai:bench",
        "--eval-concurrency",
        str(args.concurrency),
        "cases/",
    ]
    if args.eval_rpm:
        command += ["--eval-rpm", str(args.eval_rpm)]
    started, spawned = time.perf_counter(), time.monotonic()
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=3600
    )
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    statuses = [request.status for request in server.requests]
    received = min((request.received for request in server.requests), default=spawned)
    return Run(
        wall=wall,
        recorded=sum(  # a case's cassette, not its HTTP recording beside it
            not path.name.endswith(".http.json") for path in (folder / "cassettes").rglob("*.json")
        ),
        served=statuses.count(200),
        refused=statuses.count(429),
        total=len(statuses),
        first=received - spawned,
        tail=lines[-1] if lines else done.stderr.strip()[-300:],
        rate_limited_line=next((line for line in lines if "judge rate-limited:" in line), "-"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=100)
    parser.add_argument("--rpm", type=float, default=3000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("-r", "--repeats", type=int, default=1)
    parser.add_argument("--no-limit-headers", action="store_true")
    parser.add_argument(
        "--bucket",
        action="store_true",
        help="a server without x-ratelimit-* headers whose Retry-After is the exact fractional "
        "seconds until the next token",
    )
    parser.add_argument(
        "--whole-seconds",
        action="store_true",
        help="with --bucket: Retry-After rounded up to whole seconds (at least 1)",
    )
    parser.add_argument(
        "--eval-rpm", type=float, default=None, help="also pass --eval-rpm N (a client-side limit)"
    )
    args = parser.parse_args()
    if args.whole_seconds and not args.bucket:
        parser.error("--whole-seconds goes with --bucket (the default server's are whole already)")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, args.n, STAGES)
        server = JudgeServer(latency=args.latency).start()
        try:
            env = child_env(server, folder / "pycache")
            env.pop("EVALCASES_RPM", None), env.pop("EVALCASES_TPM", None)
            runs = [record(folder, server, args, env) for _ in range(args.repeats)]
        finally:
            server.stop()

    print(
        f"N={args.n} cases x {len(STAGES)} judged stages, server limit {args.rpm:g} RPM "
        f"({server_kind(args)}), latency "
        f"{args.latency * 1000:.0f} ms, --eval-concurrency {args.concurrency}"
        + (f", --eval-rpm {args.eval_rpm:g}" if args.eval_rpm else "")
        + f", {args.repeats} run(s); package: {package_folder()}"
    )
    for number, run in enumerate(runs, start=1):
        ideal = run.served / (args.rpm / 60)
        ratio = run.wall / ideal if ideal else float("inf")
        share = run.refused / run.total if run.total else 0.0
        lost = args.n - run.recorded
        print(f"run {number}: pytest said: {run.tail}")
        print(f"  live summary:          {run.rate_limited_line.strip()}")
        print(
            f"  cases lost:            {lost} of {args.n} (target 0: "
            f"{'met' if lost == 0 else 'NOT met'})"
        )
        print(
            f"  requests:              {run.total} ({run.served} served, {run.refused} "
            f"rate-limited, {run.total - run.served - run.refused} other)"
        )
        print(f"  wall:                  {run.wall:.2f} s ({run.first:.2f} s to the first request)")
        print(f"  served / (RPM/60):     {ideal:.2f} s")
        paced = (run.wall - run.first) / ideal if ideal else float("inf")
        print(f"  from the first request: {paced:.2f}x (the pacing alone, without start-up)")
        print(
            f"  ratio wall/ideal:      {ratio:.2f}x (target <= {TARGET_RATIO}x: "
            f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})"
        )
        print(
            f"  rate-limited share:    {100 * share:.1f}% (target <= "
            f"{100 * TARGET_LIMITED:.0f}%: {'met' if share <= TARGET_LIMITED else 'NOT met'})"
        )
    if len(runs) > 1:
        ratios = [run.wall / (run.served / (args.rpm / 60)) for run in runs if run.served]
        print(
            f"ratio wall/ideal over {len(runs)} runs: best {min(ratios):.2f}x, median "
            f"{statistics.median(ratios):.2f}x"
        )


def server_kind(args: argparse.Namespace) -> str:
    if args.bucket:
        whole = args.whole_seconds
        return f"not announced, Retry-After {'whole seconds' if whole else 'exact, fractional'}"
    announced = "not announced" if args.no_limit_headers else "announced"
    return f"{announced}, Retry-After whole seconds"


def package_folder() -> str:
    """Which pytest_evalcases the children import (PYTHONPATH may point at a snapshot)."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import pytest_evalcases, os; print(os.path.dirname(pytest_evalcases.__file__))",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    ).stdout.strip()


if __name__ == "__main__":
    main()
