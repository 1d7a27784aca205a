"""--replay-http benchmark: what running the real system over recorded HTTP costs per case.

    python benchmarks/replay_http.py [N] [-r R] [--keep]

A script, not a test: it prints figures and exits 0 whether or not the target is met.

In a fresh temporary project it writes one suite of N cases over a system that makes 3 HTTP
requests a case with httpx (a sync client, reused) to a loopback JSON server, records them with
`pytest --live` (untimed; the server runs), stops the server, then times, best of R rounds:

  replay       python -m pytest -q cases/                  the recorded traces (no system run)
  replay-http  python -m pytest -q --replay-http cases/    the system runs, vcrpy answers it

and, in a child process, the system's own CPU time: the same N runs (3 requests each) against
the live loopback server, the client process's CPU only (what the system costs without us).

Target (issue 8): --replay-http costs at most 5 ms a case above the system's own time:
  (replay-http - replay) / N - system time / N <= 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PYTHON = sys.executable
TARGET_MS = 5.0
REQUESTS_PER_CASE = 3

PYTEST_INI = """\
[pytest]
addopts = -p no:deepeval -p no:langsmith_plugin -p no:cacheprovider
"""

SYSTEM = '''\
"""A system that asks a loopback service three questions per case (httpx, one client)."""
import os

import httpx

_client = None


def run(case):
    global _client
    if _client is None:
        _client = httpx.Client(base_url=os.environ["BENCH_URL"])
    answers = []
    for step in range(3):
        reply = _client.post("/v1/answer", json={"q": case["input"], "step": step})
        answers.append(reply.json()["a"])
    return {"answer": " ".join(answers), "tool_calls": [{"name": "search", "args": {}}],
            "retrieved": ["d1"], "context": ["..."]}
'''


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        reply = json.dumps({"a": f"{body['q']}-{body['step']}"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


def start_server() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def write_project(root: Path, n: int) -> None:
    (root / "pytest.ini").write_text(PYTEST_INI)
    (root / "benchsys.py").write_text(SYSTEM)
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
        "system": "benchsys:run",
        "stages": ["tools", "retrieval"],
        "cases": cases,
    }
    (root / "cases").mkdir()
    (root / "cases" / "bench.json").write_text(json.dumps(suite))


def pytest_run(root: Path, env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", *args, "cases/"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    if done.returncode != 0 or "passed" not in last:
        sys.exit(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return elapsed


def system_cpu_time(root: Path, url: str, n: int) -> float:
    """The system's own CPU time for N cases (its process only, so not the server's), against
    the live loopback server: what the system costs without us."""
    code = f"""
import os, sys, time
sys.path.insert(0, {str(root)!r})
os.environ["BENCH_URL"] = {url!r}
import benchsys
benchsys.run({{"input": "warm-up"}})
started = time.process_time()
for i in range({n}):
    benchsys.run({{"input": f"question {{i}}"}})
print(time.process_time() - started)
"""
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=1000)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="evalcases-replay-http-"))
    write_project(root, args.n)
    server, url = start_server()
    env = {**os.environ, "BENCH_URL": url}
    print(f"project: {root}; {args.n} cases x {REQUESTS_PER_CASE} requests")
    pytest_run(root, env, "--live")
    own_total = system_cpu_time(root, url, args.n)
    server.shutdown()
    server.server_close()  # from here on nothing answers: --replay-http must not need it

    pytest_run(root, env)  # warm-up: bytecode caches, page cache
    pytest_run(root, env, "--replay-http")
    replay: list[float] = []
    replay_http: list[float] = []
    for round_index in range(args.rounds):
        order = [("replay", ()), ("replay-http", ("--replay-http",))]
        for name, extra in order if round_index % 2 == 0 else reversed(order):
            (replay if name == "replay" else replay_http).append(pytest_run(root, env, *extra))

    best_replay, best_http = min(replay), min(replay_http)
    per_case_ms = (best_http - best_replay) / args.n * 1000
    own_ms = own_total / args.n * 1000
    overhead_ms = per_case_ms - own_ms
    print(
        f"replay       best {best_replay:.2f} s  (rounds: {', '.join(f'{t:.2f}' for t in replay)})"
    )
    print(
        f"replay-http  best {best_http:.2f} s  (rounds: "
        f"{', '.join(f'{t:.2f}' for t in replay_http)})"
    )
    print(f"replay-http minus replay: {per_case_ms:.2f} ms a case")
    print(
        f"the system's own CPU time (3 httpx requests to the live loopback server): "
        f"{own_ms:.2f} ms a case"
    )
    verdict = "met" if overhead_ms <= TARGET_MS else "NOT met"
    print(
        f"overhead above the system's own time: {overhead_ms:.2f} ms a case "
        f"(target <= {TARGET_MS:.0f} ms: {verdict})"
    )
    if args.keep:
        print(f"kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
