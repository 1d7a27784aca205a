"""Replay benchmark: N recorded eval cases against N trivial parametrised tests.

    python benchmarks/replay.py [N] [-r R] [--files F] [--startup-repeats S] [--phase-rounds P]
                                [--keep | --reuse DIR] [--no-bare] [--profile FILE] [--imported]

A script, not a test: it prints figures and exits 0 whether or not the targets are met.

In a fresh temporary project it writes N cases over a trivial deterministic system, as one suite
file (or, with `--files F`, as F suite files of N/F cases each, beside F plain test files of N/F
tests each), records them with `pytest --live` (untimed), then times R rounds (default 7), each
running every command once, back to back, in an order that rotates from round to round so that
drift hits all of them:

  replay      python -m pytest -q -p no:cacheprovider cases/
  plain       python -m pytest -q -p no:cacheprovider plain/     N trivial parametrised tests
  plain-bare  the same with -p no:evalcases                       (the plugin switched off)

All three run in this virtualenv (sys.executable) with the same pytest.ini. Peak memory is each
child's own ru_maxrss, read with os.wait4 on that child (not RUSAGE_CHILDREN, which is a running
maximum over every child ever waited for). Start-up is collecting an empty folder, with and
without the plugin, in S paired rounds: the overhead is the median of the per-round differences.
Untimed diagnostic runs (P rounds of a replay and a plain run, default 3) report whether a replay
imported deepeval, openai or vcrpy, the time each run spent in the garbage collector, and each
run's wall, CPU and GC time split into phases: start-up, collection, the run loop, session
finish (our results document), terminal summary, exit. A tiny conftest does this when asked to;
its hooks are defined only then, so the timed runs carry none of them.

Each command's wall time is shown as min / median / max over the R rounds. The ratios replay /
plain and replay / plain-bare are taken per round (the two runs of a round are minutes apart at
most, so both see about the same machine) and shown as the median with the interquartile range
and the min-max of the R paired ratios; the CPU-time ratio likewise.

`--imported` makes the suite look as the LoCoMo importer writes one: LoCoMo categories, a
reference, gold context and the report-only `retrieval`, `locomo_f1` and `context_coverage`
stages (issue 22: "replay of imported suites stays within P1"; needs nltk, the benchmarks extra).

`--keep` keeps the recorded project; `--reuse DIR` times such a project again without writing
and recording it (at N = 100,000 the recording takes minutes); `--no-bare` leaves out the
plain-bare runs.

Targets (issue 2 at N = 10,000, issue 28 also at N = 100,000 in one file and in 100 files):
replay wall <= 1.0x plain on the median of the paired rounds (issue 19: one machine gave
0.84x-1.11x within an hour, wider than the margin), peak memory <= 1.2x plain, the plugin adds
<= 50 ms to start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PYTHON = sys.executable
WALL_TARGET = 1.0
DEFAULT_ROUNDS = 7  # ~15 s a round at N = 10,000 on the 2-vCPU machine
RSS_TARGET = 1.2
STARTUP_TARGET_MS = 50.0
MODULES_ENV = "EVALCASES_BENCH_MODULES"
PROJECT_META = "bench-project.json"  # what a kept project holds, for --reuse
FORBIDDEN = ("deepeval", "openai", "vcr")  # vcrpy's import name is `vcr`
ALSO_SHOWN = ("pydantic", "numpy", "jinja2")

# The same ini for every run. eval_cases / eval_cassettes keep their defaults ("cases",
# "cassettes"): written out, they would make -p no:evalcases warn about unknown ini keys.
PYTEST_INI = """\
[pytest]
addopts = -p no:deepeval -p no:langsmith_plugin -p no:cacheprovider
asyncio_default_fixture_loop_scope = function
"""

# Loaded in every run (so all runs pay for it alike); does something only in the untimed
# diagnostic runs: then it times the garbage collector and the phases of the run (its hooks are
# defined only then, so the timed runs carry none of them), and at the end writes which of the
# modules were imported, the GC totals and the phases' timestamps (time.time()).
CONFTEST = f'''\
import gc
import json
import os
import sys
import time

import pytest

TARGET = os.environ.get("{MODULES_ENV}")
GC = {{"seconds": 0.0, "full": 0, "started": 0.0}}
STAMPS = {{}}


def _gc_timer(phase, info):
    if phase == "start":
        GC["started"] = time.perf_counter()
    else:
        GC["seconds"] += time.perf_counter() - GC["started"]
        GC["full"] += info["generation"] == 2


if TARGET:
    gc.callbacks.append(_gc_timer)

    def _timed(name):
        STAMPS[name + "_start"] = (time.time(), time.process_time(), GC["seconds"])
        try:
            return (yield)  # the hook's result, unchanged
        finally:
            STAMPS[name + "_end"] = (time.time(), time.process_time(), GC["seconds"])

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(session):
        return (yield from _timed("collection"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(session):
        return (yield from _timed("run"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(session):
        return (yield from _timed("sessionfinish"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(terminalreporter):
        return (yield from _timed("summary"))


def pytest_unconfigure(config):
    if TARGET:
        names = {list(FORBIDDEN + ALSO_SHOWN)!r}
        doc = {{"modules": {{name: name in sys.modules for name in names}},
               "gc_seconds": GC["seconds"], "gc_full": GC["full"], "stamps": STAMPS}}
        with open(TARGET, "w", encoding="utf-8") as handle:
            json.dump(doc, handle)
'''

SYSTEM = '''\
"""A trivial deterministic system: the answer is the input."""


def run(case):
    return {
        "answer": case["input"],
        "tool_calls": [{"name": "search", "args": {}}],
        "retrieved": ["d1"],
        "context": ["..."],
    }
'''

PLAIN_TESTS = """\
import pytest


@pytest.mark.parametrize("i", range({start}, {stop}))
def test_plain(i):
    assert i >= 0
"""


@dataclass(slots=True)
class Run:
    wall: float  # seconds
    maxrss_kib: int  # the child's own peak resident set size
    cpu: float  # user + system seconds of the child
    returncode: int
    output: str
    spawned: float = 0.0  # time.time() at the spawn and at the exit: the phases' bounds
    exited: float = 0.0


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """Run one command; its wall time, and its own peak RSS and CPU time from wait4."""
    with tempfile.TemporaryFile() as out:
        spawned = time.time()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        exited = time.time()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, usage.ru_maxrss, cpu, proc.returncode, text, spawned, exited)


def clean_env(pycache: Path | None) -> dict[str, str]:
    """The children's environment: no PYTEST_* overrides; with `pycache`, bytecode is cached
    there (as a normal install caches it) instead of beside the sources, which stay untouched."""
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", MODULES_ENV):
        env.pop(name, None)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"
    env["DEEPEVAL_DISABLE_DOTENV"] = "1"
    return env


LOCOMO_CATEGORIES = ("multi_hop", "temporal", "open_domain", "single_hop", "adversarial")


def imported_suite(n: int) -> dict[str, Any]:
    """A suite shaped as the LoCoMo importer writes one (the answer is the input)."""
    cases = [
        {
            "id": f"conv-{i // 200:02d}-q{i % 200:03d}",
            "input": f"When did Mira adopt cat number {i}, and where?",
            "group": f"conv-{i // 200:02d}",
            "category": LOCOMO_CATEGORIES[i % 5],
            "expected_tools": ["search"],
            "expected_docs": ["d1"],
            "expected_context": [f"Mira adopted cat number {i} in Ostmere on 2 March 2023."],
            "reference": f"cat number {i}, 2 March 2023, Ostmere",
        }
        for i in range(n)
    ]
    return {
        "name": "bench",
        "version": 1,
        "system": "benchsys:run",
        "stages": ["tools"],
        "report_only": ["retrieval", "locomo_f1", "context_coverage"],
        "k": 10,
        "cases": cases,
    }


def suite_files(n: int, files: int) -> list[range]:
    """The case indices of each of `files` files: N split as evenly as it goes, in order."""
    return [range(n * f // files, n * (f + 1) // files) for f in range(files)]


def write_project(root: Path, n: int, imported: bool = False, files: int = 1) -> None:
    """The project: N cases in `files` case files (one suite each) and N plain tests in as many
    test files, so that both runs collect the same number of files."""
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "benchsys.py").write_text(SYSTEM, encoding="utf-8")
    (root / "cases").mkdir()
    (root / "plain").mkdir()
    (root / "empty").mkdir()
    whole = imported_suite(n) if imported else plain_suite(n)
    for f, indices in enumerate(suite_files(n, files)):
        stem = "bench" if files == 1 else f"bench_{f:03d}"
        tests = "test_plain" if files == 1 else f"test_plain_{f:03d}"
        test_text = PLAIN_TESTS.format(start=indices.start, stop=indices.stop)
        (root / "plain" / f"{tests}.py").write_text(test_text, encoding="utf-8")
        suite = {**whole, "name": stem, "cases": whole["cases"][indices.start : indices.stop]}
        text = json.dumps(suite, indent=1)
        (root / "cases" / f"{stem}.json").write_text(text, encoding="utf-8")
    (root / PROJECT_META).write_text(
        json.dumps({"n": n, "files": files, "imported": imported}), encoding="utf-8"
    )


def plain_suite(n: int) -> dict[str, Any]:
    """The default suite: `tools` and `retrieval` gating, `token_f1` report-only."""
    cases = [
        {
            "id": f"case-{i:05d}",
            "input": f"question number {i}",
            "category": f"cat{i % 4}",
            "expected_tools": ["search"],
            "expected_docs": ["d1"],
            "reference": f"question number {i}",
        }
        for i in range(n)
    ]
    return {
        "name": "bench",
        "version": 1,
        "system": "benchsys:run",
        "stages": ["tools", "retrieval"],
        "report_only": ["token_f1"],
        "k": 3,
        "cases": cases,
    }


def pytest_cmd(*args: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def passed_count(output: str) -> int:
    match = re.search(r"(\d+) passed", output.strip().splitlines()[-1] if output.strip() else "")
    return int(match.group(1)) if match else 0


def check_run(label: str, run: Run, expect_passed: int | None, expect_rc: int = 0) -> None:
    """A benchmark of a broken run means nothing: stop with its output."""
    ok = run.returncode == expect_rc
    if ok and expect_passed is not None:
        ok = passed_count(run.output) == expect_passed
    if not ok:
        tail = "\n".join(run.output.splitlines()[-40:])
        sys.exit(
            f"{label}: unexpected result (exit {run.returncode}, expected {expect_rc}"
            f"{'' if expect_passed is None else f', {expect_passed} passed'}):\n{tail}"
        )


def timed_rounds(
    commands: dict[str, list[str]],
    root: Path,
    env: dict[str, str],
    rounds: int,
    expect: dict[str, tuple[int | None, int]],
) -> dict[str, list[Run]]:
    """Each round runs every command once; the order rotates from round to round."""
    names = list(commands)
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            run = run_measured(commands[name], root, env)
            check_run(name, run, *expect[name])
            runs[name].append(run)
    return runs


def diagnostics(root: Path, env: dict[str, str], target: str) -> tuple[dict[str, Any], Run]:
    """An untimed run whose conftest reports the imported modules, the time spent in GC and
    the timestamps of the run's phases."""
    out = root / "diagnostics.json"
    run = run_measured(pytest_cmd(target), root, {**env, MODULES_ENV: str(out)})
    check_run(f"diagnostics {target}", run, None)
    return json.loads(out.read_text(encoding="utf-8")), run


PHASES = ("start-up", "collection", "run", "session finish", "terminal summary", "exit")


Phase = tuple[float, float, float]  # wall s, CPU s, wall s in the garbage collector


def phase_seconds(doc: dict[str, Any], run: Run) -> dict[str, Phase]:
    """A diagnostic run's time split into its phases (they add up to the whole but for the
    instants between two hooks): start-up to the start of collection, collection, the run loop,
    pytest_sessionfinish without the terminal summary (our results document, report files), the
    terminal summary (ours and pytest's), and the exit (unconfigure, the interpreter's teardown).
    Each as (wall, CPU, GC) seconds: on a busy machine the CPU time is the steadier one."""
    st = doc["stamps"]

    def span(start: str, end: str) -> Phase:
        return st[end][0] - st[start][0], st[end][1] - st[start][1], st[end][2] - st[start][2]

    summary = span("summary_start", "summary_end")
    finish = span("sessionfinish_start", "sessionfinish_end")
    last = st["sessionfinish_end"]
    return {
        "start-up": (st["collection_start"][0] - run.spawned, *st["collection_start"][1:]),
        "collection": span("collection_start", "collection_end"),
        "run": span("run_start", "run_end"),
        "session finish": (finish[0] - summary[0], finish[1] - summary[1], finish[2] - summary[2]),
        "terminal summary": summary,
        "exit": (run.exited - last[0], run.cpu - last[1], doc["gc_seconds"] - last[2]),
    }


def phase_table(phases: dict[str, list[dict[str, Phase]]], n: int) -> list[str]:
    """The medians of each phase over the diagnostic rounds, replay against plain: wall, CPU
    and the wall time spent in the garbage collector (gc.callbacks)."""
    rounds = len(phases["replay"])
    lines = [
        f"phases (untimed diagnostic runs with the GC timer on; median of {rounds} round"
        f"{'s' * (rounds != 1)}; us/case = replay s / N; GC s: replay / plain):",
        f"  {'phase':<17} {'replay s':>9} {'plain s':>8} {'ratio':>6} {'us/case':>8}"
        f" {'CPU: replay s':>14} {'plain s':>8} {'ratio':>6} {'us/case':>8} {'GC s':>13}",
    ]
    for phase in (*PHASES, "total"):
        values = {
            name: [
                statistics.median(
                    sum(one[p][kind] for p in PHASES) if phase == "total" else one[phase][kind]
                    for one in runs
                )
                for kind in (0, 1, 2)
            ]
            for name, runs in phases.items()
        }
        cells = []
        for kind, width in ((0, 9), (1, 14)):  # wall, CPU
            replay, plain = values["replay"][kind], values["plain"][kind]
            ratio = f"{replay / plain:5.2f}x" if plain > 0.0005 else f"{'-':>6}"
            cells.append(f"{replay:{width}.3f} {plain:8.3f} {ratio} {1e6 * replay / n:8.1f}")
        gc_cell = f"{values['replay'][2]:6.2f}/{values['plain'][2]:.2f}"
        lines.append(f"  {phase:<17} {cells[0]} {cells[1]} {gc_cell:>13}")
    return lines


def profile_replay(
    root: Path,
    env: dict[str, str],
    out: Path,
    top: int = 15,
    targets: tuple[str, ...] = ("cases/",),
) -> None:
    """cProfile one replay (of `targets`, pytest's arguments) and print the plugin's own
    functions, by cumulative and own time."""
    import pstats

    import pytest_evalcases

    cmd = [
        PYTHON,
        "-m",
        "cProfile",
        "-o",
        str(out),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *targets,
    ]
    run = run_measured(cmd, root, env)
    check_run("replay under cProfile", run, None)
    stats = pstats.Stats(str(out))
    total = stats.total_tt  # type: ignore[attr-defined]
    package = str(Path(pytest_evalcases.__file__).parent)
    rows = []
    for (file, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        if file.startswith(package):
            name = f"{Path(file).relative_to(package)}:{line}({func})"
            rows.append((cumtime, tottime, ncalls, name))
    print(f"\nprofile: {out} (wall under cProfile {run.wall:.2f} s, profiled total {total:.2f} s)")
    for title, key in (("cumulative", 0), ("own time", 1)):
        print(f"plugin functions by {title} (share of profiled total):")
        print(f"  {'cum s':>7} {'cum %':>6} {'own s':>7} {'own %':>6} {'calls':>8}  function")
        for cum, own, calls, name in sorted(rows, key=lambda row: row[key], reverse=True)[:top]:
            print(
                f"  {cum:7.3f} {100 * cum / total:5.1f}% {own:7.3f} {100 * own / total:5.1f}% "
                f"{calls:8d}  {name}"
            )
    own_total = sum(row[1] for row in rows)
    # Inclusive: time in plugin functions entered from pytest or pluggy, plus the import of the
    # entry-point module (which imports the rest); nested plugin calls are not counted twice.
    entry_modules = {
        str(Path(package, "__init__.py")),
        str(Path(package, "pytest_plugin", "__init__.py")),
        str(Path(package, "pytest_plugin", "hooks.py")),
    }
    inclusive = sum(
        edge[3]
        for (file, _, func), (*_, callers) in stats.stats.items()  # type: ignore[attr-defined]
        if file.startswith(package)
        for (caller_file, _, _), edge in callers.items()
        if not caller_file.startswith(package)
        and (caller_file != "~" or (func == "<module>" and file in entry_modules))
    )
    print(
        f"  all plugin functions: own time {own_total:.3f} s ({100 * own_total / total:.1f}%), "
        f"inclusive {inclusive:.3f} s ({100 * inclusive / total:.1f}%)"
    )
    print(
        "  (cProfile inflates many small calls; a garbage collection is charged to whichever "
        "function allocated when it started)"
    )


def verdict(met: bool) -> str:
    return "MET" if met else "NOT MET"


@dataclass(frozen=True, slots=True)
class Spread:
    """The median, the interquartile range and the extremes of a handful of values."""

    median: float
    q1: float
    q3: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        if len(values) < 2:
            return cls(values[0], values[0], values[0], values[0], values[0])
        q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return cls(median, q1, q3, min(values), max(values))

    def ratio_text(self) -> str:
        return (
            f"median {self.median:.3f}x, IQR {self.q1:.3f}-{self.q3:.3f}x, "
            f"min-max {self.low:.3f}-{self.high:.3f}x"
        )


def paired(runs: dict[str, list[Run]], top: str, bottom: str, value: str) -> Spread:
    """`top` / `bottom` in each round (the runs of one round are back to back), as a Spread."""
    return Spread.of(
        [
            getattr(a, value) / getattr(b, value)
            for a, b in zip(runs[top], runs[bottom], strict=True)
        ]
    )


def add_project_options(parser: argparse.ArgumentParser, same: str, replay: str = "replay") -> None:
    """--keep, --reuse DIR (a kept project holding `same`) and --profile FILE (of one `replay`)."""
    parser.add_argument("--keep", action="store_true", help="keep the temporary project")
    parser.add_argument(
        "--reuse",
        metavar="DIR",
        type=Path,
        help=f"time a project that --keep left (already recorded, {same}) instead of writing "
        "and recording a new one; it is kept",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        type=Path,
        help=f"also cProfile one {replay} into FILE and print the plugin's hotspots",
    )


def project_root(
    parser: argparse.ArgumentParser,
    reuse: Path | None,
    meta: str,
    wanted: dict[str, Any],
    prefix: str,
) -> Path:
    """The project to time: a new temporary folder, or the one `--reuse` names, which must hold
    what `meta` (written when it was made) says it holds; it gets this script's conftest."""
    if reuse is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    root = reuse.resolve()
    found = (
        json.loads((root / meta).read_text(encoding="utf-8")) if (root / meta).is_file() else None
    )
    if found != wanted:
        parser.error(f"--reuse {root}: holds {found}, not {wanted} (run with --keep first)")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")  # this script's own
    return root


@contextmanager
def kept_or_removed(root: Path, keep: bool) -> Iterator[Path]:
    """The project, removed at the end unless kept (then its path is printed)."""
    try:
        yield root
    finally:
        if keep:
            print(f"project kept at {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=10_000, help="number of cases (10000)")
    parser.add_argument(
        "-r",
        "--repeats",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"timed rounds ({DEFAULT_ROUNDS}); ratios are taken per round",
    )
    parser.add_argument(
        "--startup-repeats",
        type=int,
        default=10,
        help="start-up rounds (10): paired with/without runs",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=1,
        help="write the N cases as F case files (one suite each) and the N plain tests as F "
        "test files (1)",
    )
    parser.add_argument(
        "--phase-rounds",
        type=int,
        default=3,
        help="untimed diagnostic rounds (a replay and a plain run each) that split the wall time "
        "into collection, run and summary (3)",
    )
    parser.add_argument(
        "--no-bare",
        action="store_true",
        help="leave out the plain -p no:evalcases runs (a third of the time; at N = 100,000 a "
        "round takes minutes)",
    )
    add_project_options(parser, "same N, --files and --imported")
    parser.add_argument(
        "--imported",
        action="store_true",
        help="a suite as the LoCoMo importer writes one (report-only locomo_f1, context_coverage)",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="inherit the environment's bytecode setting (by default, bytecode "
        "is cached in the temporary project even if PYTHONDONTWRITEBYTECODE=1)",
    )
    args = parser.parse_args(argv)
    n = args.n

    if args.files < 1 or args.files > n:
        parser.error(f"--files must be between 1 and N ({n}), got {args.files}")

    load_before = os.getloadavg()[0]
    wanted = {"n": n, "files": args.files, "imported": args.imported}
    root = project_root(parser, args.reuse, PROJECT_META, wanted, "evalcases-bench-")
    args.keep = args.keep or args.reuse is not None
    env = clean_env(None if args.no_bytecode_cache else root / "pycache")
    with kept_or_removed(root, args.keep):
        if args.reuse is None:
            write_project(root, n, args.imported, args.files)
            started = time.perf_counter()
            record_cmd = pytest_cmd("--live", "--eval-concurrency", "32", "cases/")
            recorded = run_measured(record_cmd, root, env)
            check_run("record (--live)", recorded, n)
            took = time.perf_counter() - started
            print(
                f"recorded {n} cases in {args.files} file(s) with --live in {took:.1f} s (untimed)"
            )

        commands = {
            "replay": pytest_cmd("cases/"),
            "plain": pytest_cmd("plain/"),
            "plain-bare": pytest_cmd("-p", "no:evalcases", "plain/"),
        }
        if args.no_bare:
            del commands["plain-bare"]
        expect = {name: (n, 0) for name in commands}
        if args.reuse is None:  # a kept project has its bytecode; every timed run is checked
            timed_rounds(commands, root, env, 1, expect)  # warm-up: caches, bytecode, a check
        runs = timed_rounds(commands, root, env, args.repeats, expect)

        startup_cmds = {
            "with": pytest_cmd("empty/"),
            "without": pytest_cmd("-p", "no:evalcases", "empty/"),
        }
        startup_expect: dict[str, tuple[int | None, int]] = {
            name: (None, 5)
            for name in startup_cmds  # exit 5: no tests collected
        }
        timed_rounds(startup_cmds, root, env, 1, startup_expect)
        startup = timed_rounds(startup_cmds, root, env, args.startup_repeats, startup_expect)
        phases: dict[str, list[dict[str, Phase]]] = {"replay": [], "plain": []}
        for _ in range(max(1, args.phase_rounds)):
            replay_diag, replay_run = diagnostics(root, env, "cases/")
            plain_diag, plain_run = diagnostics(root, env, "plain/")
            phases["replay"].append(phase_seconds(replay_diag, replay_run))
            phases["plain"].append(phase_seconds(plain_diag, plain_run))
        modules = replay_diag["modules"]

        best = {name: min(r.wall for r in rs) for name, rs in runs.items()}
        median = {name: statistics.median(r.wall for r in rs) for name, rs in runs.items()}
        worst = {name: max(r.wall for r in rs) for name, rs in runs.items()}
        rss = {name: max(r.maxrss_kib for r in rs) / 1024 for name, rs in runs.items()}
        cpu = {name: statistics.median(r.cpu for r in rs) for name, rs in runs.items()}
        start_with = min(r.wall for r in startup["with"])
        start_without = min(r.wall for r in startup["without"])
        # Each round runs both, back to back: the median of the per-round differences is steadier
        # on a busy machine than the difference of two minimums (both are printed).
        overhead_ms = 1000 * statistics.median(
            a.wall - b.wall for a, b in zip(startup["with"], startup["without"], strict=True)
        )
        base = {"replay": start_with, "plain": start_with, "plain-bare": start_without}
        bottoms = [name for name in ("plain", "plain-bare") if name in runs]

        wall_ratio = paired(runs, "replay", "plain", "wall")
        rss_ratio = rss["replay"] / rss["plain"]
        print(
            f"\npytest-evalcases replay benchmark: N={n} in {args.files} file(s), {args.repeats} "
            f"rounds (the commands "
            f"back to back in each, the order rotated), peak RSS = max over runs of each child's "
            f"ru_maxrss (wait4)"
        )
        bytecode = (
            "inherited from the environment"
            if args.no_bytecode_cache
            else "cached (PYTHONPYCACHEPREFIX in the temporary project)"
        )
        print(f"python {sys.version.split()[0]}, {PYTHON}; bytecode {bytecode}")
        import pytest_evalcases

        print(
            f"plugin: pytest_evalcases {pytest_evalcases.__version__} from "
            f"{Path(pytest_evalcases.__file__).parent}"
        )
        print(
            f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f} on "
            f"{os.cpu_count()} CPUs (other load makes wall times noisy; CPU s is steadier)"
        )
        header = (
            f"{'run':<24} {'wall min s':>10} {'median':>8} {'max':>8} {'ms/test':>8} "
            f"{'net ms/test':>12} {'CPU s':>7} {'peak RSS MB':>12}"
        )
        print(header)
        print("-" * len(header))
        labels = {
            "replay": "replay cases/",
            "plain": "plain (plugin active)",
            "plain-bare": "plain -p no:evalcases",
        }
        for name, label in labels.items():
            if name not in runs:
                continue
            print(
                f"{label:<24} {best[name]:10.3f} {median[name]:8.3f} {worst[name]:8.3f} "
                f"{1000 * median[name] / n:8.3f} {1000 * (median[name] - base[name]) / n:12.3f} "
                f"{cpu[name]:7.2f} {rss[name]:12.1f}"
            )
        print(
            "(ms/test: the median wall over N; net: minus the empty-folder start-up of the same "
            "plugin set; CPU s: the median of the child's user + system time)"
        )
        print(f"paired ratios, one per round ({args.repeats} rounds):")
        for bottom in bottoms:
            wall_text = paired(runs, "replay", bottom, "wall").ratio_text()
            print(f"  replay / {bottom:<11} wall {wall_text}")
            print(f"  {'':20} CPU  {paired(runs, 'replay', bottom, 'cpu').ratio_text()}")
        bare_rss = (
            f", replay / plain-bare {rss['replay'] / rss['plain-bare']:.3f}x"
            if "plain-bare" in rss
            else ""
        )
        print(f"  peak RSS replay / plain {rss_ratio:.3f}x{bare_rss} (max over the rounds)")
        print(
            f"start-up (collect an empty folder, {args.startup_repeats} paired rounds): best "
            f"{1000 * start_with:.0f} ms with the plugin, {1000 * start_without:.0f} ms without; "
            f"median paired difference: the plugin adds {overhead_ms:+.0f} ms"
        )
        shown = ", ".join(f"{name} {'yes' if modules[name] else 'no'}" for name in modules)
        print(f"imported by a replay run: {shown}")
        gc_text = {
            name: f"{diag['gc_seconds']:.2f} s ({diag['gc_full']} full collections)"
            for name, diag in (("replay", replay_diag), ("plain", plain_diag))
        }
        print(
            f"time in the garbage collector (untimed runs): replay {gc_text['replay']}, "
            f"plain {gc_text['plain']}"
        )
        for line in phase_table(phases, n):
            print(line)

        print("targets:")
        print(
            f"  replay wall <= {WALL_TARGET:.1f}x plain on the median paired round: "
            f"{verdict(wall_ratio.median <= WALL_TARGET)} ({wall_ratio.ratio_text()})"
        )
        print(
            f"  peak memory <= {RSS_TARGET:.1f}x plain: {verdict(rss_ratio <= RSS_TARGET)} "
            f"({rss_ratio:.3f}x)"
        )
        print(
            f"  start-up <= +{STARTUP_TARGET_MS:.0f} ms: "
            f"{verdict(overhead_ms <= STARTUP_TARGET_MS)} ({overhead_ms:+.0f} ms)"
        )
        clean = not any(modules[name] for name in FORBIDDEN)
        print(f"  replay imports none of deepeval, openai, vcrpy: {verdict(clean)}")

        if args.profile:
            profile_replay(root, env, args.profile.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
