"""Calibration replay benchmark: N recorded calibration items against N recorded eval cases.

    python benchmarks/calibration_replay.py [N] [-r R] [--keep | --reuse DIR] [--profile FILE]

A script, not a test: it prints figures and exits 0 whether or not the target is met.

In one fresh temporary project it writes:

- N eval cases over a trivial deterministic system, `cases/bench.json`, exactly as
  benchmarks/replay.py writes them (its `write_project`: `tools` and `retrieval` gating,
  `token_f1` report-only; its ini, conftest and plain tests come along, unused here);
- a labels file of N rows (`labels.jsonl`: a question, an answer, a reference and a pass/fail
  label; a pass answer is its reference, a fail answer shares no word with it, so the lexical
  judge agrees with every label), imported as a calibration suite with
  `python -m pytest_evalcases import labelled labels.jsonl --stage correctness`, to
  `cases/calibration.json`;

records both with `pytest --live` (untimed; the calibration items with `--eval-judge lexical`),
then times R rounds (default 5), each replaying both, back to back, in an order that alternates
from round to round:

  eval         python -m pytest -q -p no:cacheprovider cases/bench.json
  calibration  python -m pytest -q -p no:cacheprovider --eval-judge lexical cases/calibration.json

(the ini adds -p no:deepeval -p no:langsmith_plugin). Only the calibration run names a judge:
it pays for configuring one, the eval cases (no judged stage) do not. It prints each command's
median wall and CPU time and the median of the per-round ratios calibration / eval (issue 31:
"a replay of 5,000 recorded calibration items stays as fast as 5,000 eval cases", <= 1.0x).

`--keep` keeps the recorded project and prints its path; `--reuse DIR` times such a project
again without writing and recording it (N must be the one it was written with). `--profile FILE`
also runs one calibration replay under cProfile into FILE and prints the plugin's hotspots.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

from replay import (
    Spread,
    add_project_options,
    check_run,
    clean_env,
    kept_or_removed,
    paired,
    profile_replay,
    project_root,
    pytest_cmd,
    run_measured,
    timed_rounds,
    write_project,
)

DEFAULT_ROUNDS = 5
TARGET = 1.0
PROJECT_META = "calibration-bench.json"  # what a kept project holds, for --reuse
EVAL_SUITE = "cases/bench.json"
CALIBRATION_SUITE = "cases/calibration.json"
JUDGE = ("--eval-judge", "lexical")
WORDS = (
    "alpha beta gamma delta epsilon iota kappa lambda sigma omega theta harbor river stone "
    "lantern signal"
).split()


def labels_rows(n: int, seed: int = 0) -> list[dict[str, str]]:
    """N labelled answers, half of each label: a pass answer is its reference, a fail answer
    shares none of its words (so the lexical judge agrees with people on every row)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        reference = " ".join(rng.sample(WORDS, 6))
        if i % 2 == 0:
            answer, label = reference, "pass"
        else:
            answer, label = " ".join(f"{w.upper()}x" for w in rng.sample(WORDS, 6)), "fail"
        rows.append(
            {
                "input": f"What is item {i}?",
                "answer": answer,
                "reference": reference,
                "label": label,
            }
        )
    return rows


def write_calibration(root: Path, n: int, env: dict[str, str]) -> None:
    """The labels file, imported as the calibration suite (`import labelled`)."""
    text = "".join(json.dumps(row) + "\n" for row in labels_rows(n))
    (root / "labels.jsonl").write_text(text, encoding="utf-8")
    command = [sys.executable, "-m", "pytest_evalcases", "import", "labelled", "labels.jsonl"]
    command += ["--stage", "correctness", "-o", CALIBRATION_SUITE]
    run = run_measured(command, root, env)
    check_run("import labelled", run, None)


def record(root: Path, env: dict[str, str], n: int) -> None:
    for label, args in (
        ("record the eval cases (--live)", ("--eval-concurrency", "32", EVAL_SUITE)),
        ("record the calibration items (--live)", (*JUDGE, CALIBRATION_SUITE)),
    ):
        started = time.perf_counter()
        run = run_measured(pytest_cmd("--live", *args), root, env)
        check_run(label, run, n)
        print(f"{label}: {n} in {time.perf_counter() - started:.1f} s (untimed)")


def baseline_cmd(src: Path, command: list[str]) -> list[str]:
    """`command` with the plugin imported from `src` (run through `env`, so the children's
    environment stays the one every other run gets but for PYTHONPATH)."""
    path = os.pathsep.join(filter(None, (str(src), os.environ.get("PYTHONPATH", ""))))
    return ["env", f"PYTHONPATH={path}", *command]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=5_000, help="items of each kind (5000)")
    parser.add_argument(
        "-r",
        "--repeats",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"timed rounds ({DEFAULT_ROUNDS}); the ratio is taken per round",
    )
    add_project_options(parser, "same N", "calibration replay")
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        type=Path,
        help="also time the calibration replay with the plugin of SRC (a src folder, put first "
        "on PYTHONPATH), in the same rounds: before and after a change, on the same machine",
    )
    args = parser.parse_args(argv)
    n = args.n
    load_before = os.getloadavg()[0]
    root = project_root(parser, args.reuse, PROJECT_META, {"n": n}, "evalcases-calbench-")
    args.keep = args.keep or args.reuse is not None
    env = clean_env(root / "pycache")
    with kept_or_removed(root, args.keep):
        if args.reuse is None:
            write_project(root, n)
            write_calibration(root, n, env)
            record(root, env, n)
            (root / PROJECT_META).write_text(json.dumps({"n": n}), encoding="utf-8")
        commands = {
            "eval": pytest_cmd(EVAL_SUITE),
            "calibration": pytest_cmd(*JUDGE, CALIBRATION_SUITE),
        }
        if args.baseline is not None:
            commands["baseline"] = baseline_cmd(args.baseline.resolve(), commands["calibration"])
        expect: dict[str, tuple[int | None, int]] = {name: (n, 0) for name in commands}
        # warm-up, kept projects too: bytecode (a --baseline tree's may not be cached yet), the
        # file cache, and a check
        timed_rounds(commands, root, env, 1, expect)
        runs = timed_rounds(commands, root, env, args.repeats, expect)

        import pytest_evalcases

        print(
            f"\ncalibration replay benchmark: N={n} calibration items against N eval cases, "
            f"{args.repeats} rounds (both back to back in each, the order alternating)"
        )
        print(
            f"python {sys.version.split()[0]}; plugin from {Path(pytest_evalcases.__file__).parent}"
        )
        print(
            f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f} on "
            f"{os.cpu_count()} CPUs"
        )
        print(
            f"{'run':<12} {'wall min s':>10} {'median':>8} {'max':>8} {'us/item':>8} {'CPU s':>7}"
        )
        for name, rs in runs.items():
            walls = [r.wall for r in rs]
            median = statistics.median(walls)
            print(
                f"{name:<12} {min(walls):10.3f} {median:8.3f} {max(walls):8.3f} "
                f"{1e6 * median / n:8.1f} {statistics.median(r.cpu for r in rs):7.2f}"
            )
        wall: Spread = paired(runs, "calibration", "eval", "wall")
        print(f"paired ratios calibration / eval, one per round ({args.repeats} rounds):")
        print(f"  wall {wall.ratio_text()}")
        print(f"  CPU  {paired(runs, 'calibration', 'eval', 'cpu').ratio_text()}")
        if "baseline" in runs:
            print(f"paired ratios baseline ({args.baseline}) / eval:")
            print(f"  wall {paired(runs, 'baseline', 'eval', 'wall').ratio_text()}")
            print(f"  CPU  {paired(runs, 'baseline', 'eval', 'cpu').ratio_text()}")
        met = "MET" if wall.median <= TARGET else "NOT MET"
        print(f"target: calibration replay <= {TARGET:.1f}x the eval cases' (median): {met}")
        if args.profile:
            profile_replay(root, env, args.profile.resolve(), targets=(*JUDGE, CALIBRATION_SUITE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
